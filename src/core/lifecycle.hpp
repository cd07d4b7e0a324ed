// lifecycle.hpp: the rules of a job's life that need no database: job states
// and their bit masks (unique jobs), retry backoff, priority aging. Plain
// functions that allocate nothing and never throw (noexcept), so src/pg calls
// them directly, without a bridge (docs/cpp-boundary.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace awa::core {

// Every state a job can be in, in the column order of awa.queue_counts. The
// value is also the state's bit in a unique-states mask (bit 0 = available).
enum class JobState : int {
	kAvailable = 0,
	kScheduled = 1,
	kRetryable = 2,
	kRunning = 3,
	kCompleted = 4,
	kFailed = 5,
	kCancelled = 6,
	kDlq = 7,
};
constexpr int kJobStateCount = 8;

// "available", "scheduled", ... (the names used in SQL).
const char *JobStateName(JobState state) noexcept;
// The state named `name` (length `length`); false if it names none.
bool ParseJobState(const char *name, size_t length, JobState *out) noexcept;

// What happened to jobs, counted per queue since the server started (the
// totals of awa.job_event_totals): derived from a state move, except a rescue,
// which its caller names (its move, running -> retryable, is also a retry's).
enum class JobEvent : int {
	kEnqueued = 0,  // a new job: -> available or scheduled
	kClaimed,       // -> running
	kCompleted,     // running -> completed
	kRetried,       // running -> retryable or available (the worker's retry)
	kSnoozed,       // running -> scheduled
	kFailed,        // running -> failed or dlq (fail, or retry of the last attempt)
	kRescued,       // a dead worker's or an expired attempt, closed by maintenance
	kNone,          // a move that is none of these (promotion, cancel, DLQ retry, ...)
};
constexpr int kJobEventCount = static_cast<int>(JobEvent::kNone);
// kNoJobState: a move's missing end (a new job, a forgotten one).
constexpr int kNoJobState = -1;

// "enqueued", "claimed", ... (the column names of awa.job_event_totals).
const char *JobEventName(JobEvent event) noexcept;
// The event a move of jobs from state `from` to `to` is (either may be kNoJobState).
JobEvent EventOfMove(int from, int to) noexcept;

using StateMask = uint8_t;
constexpr StateMask MaskOf(JobState state) noexcept { return static_cast<StateMask>(1u << static_cast<int>(state)); }
// A unique job blocks duplicates while it is in any state of its mask. The
// default: every state that can still lead to a run.
constexpr StateMask kDefaultUniqueMask = MaskOf(JobState::kAvailable) | MaskOf(JobState::kScheduled) |
                                         MaskOf(JobState::kRetryable) | MaskOf(JobState::kRunning);
// A mask must contain every non-terminal state: the uniqueness claim is taken
// at enqueue and held until the job reaches a terminal state outside the mask,
// so a job can never re-enter the mask without a check (docs/lifecycle.md).
constexpr StateMask kRequiredUniqueMask = kDefaultUniqueMask;
inline bool MaskHolds(StateMask mask, JobState state) noexcept { return (mask & MaskOf(state)) != 0; }

// Retry backoff after failed attempt `attempt` (1-based): 2^attempt seconds
// plus a jitter of up to a quarter of that, capped at 24 hours. `jitter` is
// uniform in [0, 1). Returns microseconds.
constexpr int64_t kMaxBackoffMicros = int64_t{24} * 3600 * 1000000;
int64_t BackoffMicros(int64_t attempt, double jitter) noexcept;

// Priority aging: a job that has waited `waited_micros` in a lane of
// `priority` competes as if it were `waited / aging` levels more urgent, never
// above 1. aging_micros <= 0 means strict priorities.
int EffectivePriority(int priority, int64_t waited_micros, int64_t aging_micros) noexcept;

}  // namespace awa::core
