// maintenance_schedule.hpp: when the background worker runs each maintenance
// task, and how prune backs off when a slot cannot be reclaimed yet.
//
// Pure C++ (no PostgreSQL header), unit-tested in test/unit.
#pragma once

#include <cstdint>

namespace awa::core {

// The maintenance tasks, in the order one worker tick runs the due ones.
enum class MaintenanceTask : int {
	kCounters = 0,   // rebuild the shared-memory counters when untrusted
	kPromote,        // due scheduled and retryable jobs -> available
	kPeriodic,       // enqueue the due ticks of periodic jobs (docs/periodic.md); before
	                 // any rotation, since a transaction that rotated cannot enqueue
	kRescue,         // expired deadlines and stale heartbeats -> retryable / failed / dlq
	kPruneQueue,     // TRUNCATE the oldest sealed queue-ring slot on proof
	kRotateQueue,    // append the next queue-ring generation
	kPruneClaim,
	kRotateClaim,
	kPruneLease,
	kRotateLease,
	kDlqRetention,   // delete dead letters older than the retention
	kHistory,        // reclaim history slots older than the retention, rotate the history ring
	kReclaimLanes,   // delete the rows of lanes drained and idle for awa.lane_reclaim_after
	kCount
};
constexpr int kMaintenanceTaskCount = static_cast<int>(MaintenanceTask::kCount);

// The task's name as awa.run_maintenance and awa.storage_status spell it.
const char *TaskName(MaintenanceTask task) noexcept;

// Parses a task name; false when unknown.
bool ParseTaskName(const char *name, MaintenanceTask *task) noexcept;

// Exponential back-off of one ring's prune: after a prune that could not
// reclaim its slot (skipped_active, blocked), the next 2^level - 1 ticks are
// skipped, level growing by one per failure up to max_level; a prune that
// reclaimed (pruned) or found nothing to do (already_pruned) resets it.
class PruneBackoff {
public:
	// Whether this tick may prune; consumes one skipped tick when not.
	bool TakeTick() noexcept;
	// Records the outcome of a prune that ran.
	void Record(bool reclaimable_later, int max_level) noexcept;
	int level() const noexcept { return level_; }
	int skip_remaining() const noexcept { return skip_remaining_; }

private:
	int level_ = 0;
	int64_t skip_remaining_ = 0;
};

// Due times of the periodic tasks, in microseconds of a monotonic clock (the
// worker feeds it CLOCK_MONOTONIC, which setting the system clock does not
// move; docs/maintenance.md §1).
class TaskClock {
public:
	// True when `task` is due at `now`.
	bool Due(MaintenanceTask task, int64_t now) const noexcept;
	// The task ran at `now`; it is next due `interval` later.
	void Ran(MaintenanceTask task, int64_t now, int64_t interval) noexcept;
	// Microseconds from `now` until the earliest due task, at most `cap`.
	int64_t UntilNextDue(int64_t now, int64_t cap) const noexcept;

private:
	int64_t next_due_[kMaintenanceTaskCount] = {};
};

// A reading of the wall clock paired with a reading of the monotonic clock
// taken just after it (microseconds both). Wall times later on are estimated
// from the monotonic clock, so a jump of the system clock after the pair was
// read moves no estimate.
struct ClockPair {
	int64_t wall = 0;
	int64_t monotonic = 0;
	// The wall time at `monotonic_now`.
	int64_t WallAt(int64_t monotonic_now) const noexcept;
};

// Microseconds from `now` until the wall-clock `deadline` (a job's run_at, a
// schedule's next tick), at least 0 and at most `cap` (a task's cadence).
// `now` must be a reading of the clock the deadline was chosen against: then
// a deadline can never be postponed beyond `cap`, however far back that clock
// was set, and a deadline not yet reached is never made due at once.
int64_t DelayUntilDeadline(int64_t deadline, int64_t now, int64_t cap) noexcept;

}  // namespace awa::core
