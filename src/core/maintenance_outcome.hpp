// maintenance_outcome.hpp: what a maintenance step reports, one vocabulary for
// the PL/pgSQL steps that write it and the C++ that reads it.
//
// The steps (awa._rotate, _prune, _history, _rescue, _promote, _dlq_retention,
// _periodic, _reclaim_lanes; sql/install/4x-60) return an outcome as text. awa._note_outcome
// parses it here and refuses a word this list does not hold, so a misspelt
// outcome fails its step instead of silently turning a rule off (the worker's
// prune back-off reads kSkippedActive and kBlocked). awa._outcome_names()
// gives SQL the list; test/sql/maintenance.sql checks that every outcome the
// steps' sources write is in it.
//
// Pure C++ (no PostgreSQL header), unit-tested in test/unit.
#pragma once

#include <cstdint>

namespace awa::core {

enum class StepOutcome : int {
	kNone = 0,       // no outcome: the step failed, or found the extension gone
	kRotated,        // a ring moved to its next generation (history: also pruned)
	kPruned,         // a slot was truncated
	kAlreadyPruned,  // the prune target had no block on disk
	kSkippedBusy,    // another session held the ring lock (or a DROP EXTENSION ran)
	kSkippedIdle,    // nothing to rotate or prune yet
	kSkippedActive,  // the prune target still holds what it cannot carry now
	kBlocked,        // a reader or writer held the slot past the lock timeout
	kNothingDue,     // nothing for the step to do
	kPromoted,       // due jobs moved to available
	kRescued,        // expired attempts closed
	kPurged,         // dead letters past their retention deleted
	kEnqueued,       // periodic ticks enqueued
	kFailed,         // periodic: every due schedule failed to enqueue
	kTrusted,        // counters: trusted (rebuilt if they were not)
	kUnavailable,    // counters: no shared memory, or the table is full
	kError,          // recorded for a step that raised an error
	kReclaimed,      // reclaim_lanes: rows of drained, idle lanes deleted
	kCount
};
constexpr int kStepOutcomeCount = static_cast<int>(StepOutcome::kCount);

// The outcome's word as the steps write it and awa.storage_status shows it
// ("" for kNone).
const char *OutcomeName(StepOutcome outcome) noexcept;

// Parses an outcome word; false when unknown (or empty).
bool ParseOutcome(const char *name, StepOutcome *outcome) noexcept;

// Whether a prune with this outcome left a slot that can be reclaimed later,
// so the worker backs that prune off (maintenance.md §1, "Prune back-off").
bool PruneReclaimableLater(StepOutcome outcome) noexcept;

}  // namespace awa::core
