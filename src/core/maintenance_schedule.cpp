// maintenance_schedule.cpp: see maintenance_schedule.hpp.
#include "core/maintenance_schedule.hpp"

#include <cstring>

#include "core/core_only.hpp"  // last: proves no PostgreSQL header came in

namespace awa::core {

namespace {

constexpr const char *kTaskNames[kMaintenanceTaskCount] = {
    "counters",    "promote",      "periodic",     "rescue",     "prune_queue", "rotate_queue",
    "prune_claim", "rotate_claim", "prune_lease", "rotate_lease", "dlq_retention", "history",
    "reclaim_lanes"};

}  // namespace

const char *
TaskName(MaintenanceTask task) noexcept
{
	int index = static_cast<int>(task);
	return index >= 0 && index < kMaintenanceTaskCount ? kTaskNames[index] : "unknown";
}

bool
ParseTaskName(const char *name, MaintenanceTask *task) noexcept
{
	for (int i = 0; i < kMaintenanceTaskCount; i++)
		if (std::strcmp(name, kTaskNames[i]) == 0) {
			*task = static_cast<MaintenanceTask>(i);
			return true;
		}
	return false;
}

bool
PruneBackoff::TakeTick() noexcept
{
	if (skip_remaining_ > 0) {
		skip_remaining_--;
		return false;
	}
	return true;
}

void
PruneBackoff::Record(bool reclaimable_later, int max_level) noexcept
{
	if (!reclaimable_later) {
		level_ = 0;
		skip_remaining_ = 0;
		return;
	}
	if (level_ < max_level)
		level_++;
	if (level_ > max_level)
		level_ = max_level < 0 ? 0 : max_level;
	skip_remaining_ = (int64_t{1} << level_) - 1;
}

bool
TaskClock::Due(MaintenanceTask task, int64_t now) const noexcept
{
	return now >= next_due_[static_cast<int>(task)];
}

void
TaskClock::Ran(MaintenanceTask task, int64_t now, int64_t interval) noexcept
{
	next_due_[static_cast<int>(task)] = now + (interval > 0 ? interval : 0);
}

int64_t
TaskClock::UntilNextDue(int64_t now, int64_t cap) const noexcept
{
	int64_t best = cap;
	for (int64_t due : next_due_) {
		int64_t wait = due - now;
		if (wait < 0)
			wait = 0;
		if (wait < best)
			best = wait;
	}
	return best;
}

int64_t
ClockPair::WallAt(int64_t monotonic_now) const noexcept
{
	return wall + (monotonic_now - monotonic);
}

int64_t
DelayUntilDeadline(int64_t deadline, int64_t now, int64_t cap) noexcept
{
	if (cap < 0)
		cap = 0;
	if (deadline <= now)
		return 0;
	// Unsigned: deadline - now may exceed INT64_MAX (an 'infinity' run_at).
	uint64_t ahead = static_cast<uint64_t>(deadline) - static_cast<uint64_t>(now);
	return ahead < static_cast<uint64_t>(cap) ? static_cast<int64_t>(ahead) : cap;
}

}  // namespace awa::core
