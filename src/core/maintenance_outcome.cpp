// maintenance_outcome.cpp: see maintenance_outcome.hpp.
#include "core/maintenance_outcome.hpp"

#include <cstring>

#include "core/core_only.hpp"  // last: proves no PostgreSQL header came in

namespace awa::core {

namespace {

constexpr const char *kOutcomeNames[] = {
    "",           "rotated",  "pruned",  "already_pruned", "skipped_busy", "skipped_idle",
    "skipped_active", "blocked", "nothing_due", "promoted", "rescued",   "purged",
    "enqueued",   "failed",   "trusted", "unavailable",    "error",   "reclaimed"};
static_assert(sizeof(kOutcomeNames) / sizeof(kOutcomeNames[0]) == kStepOutcomeCount,
              "one name per StepOutcome, in enum order");

}  // namespace

const char *
OutcomeName(StepOutcome outcome) noexcept
{
	int index = static_cast<int>(outcome);
	return index >= 0 && index < kStepOutcomeCount ? kOutcomeNames[index] : "";
}

bool
ParseOutcome(const char *name, StepOutcome *outcome) noexcept
{
	if (name == nullptr || name[0] == '\0')
		return false;
	for (int i = 1; i < kStepOutcomeCount; i++)
		if (std::strcmp(name, kOutcomeNames[i]) == 0) {
			*outcome = static_cast<StepOutcome>(i);
			return true;
		}
	return false;
}

bool
PruneReclaimableLater(StepOutcome outcome) noexcept
{
	return outcome == StepOutcome::kSkippedActive || outcome == StepOutcome::kBlocked;
}

}  // namespace awa::core
