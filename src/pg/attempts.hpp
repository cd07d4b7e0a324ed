// attempts.hpp: finding, checking and closing running attempts.
//
// An attempt is live while its claim evidence exists and no closure evidence
// covers it. Every call that acts on a running attempt names it by
// (job_id, run_lease, receipt_id) as awa.claim returned it. The receipt id
// decodes to the claim batch; the attempts of one call are grouped by claim
// batch (one batch = one lane and one ready slot) and each batch is locked
// (serializing every close of its attempts) before its claim row and its
// closures are read with a fresh snapshot, so a close committed while this
// call waited for the lock is seen, also under REPEATABLE READ.
#pragma once

#include "pg/postgres_headers.hpp"
#include <type_traits>

namespace awa::pg {

enum class AttemptStatus {
	kStale,   // no such attempt (wrong job, lease or receipt; truncated claim)
	kOpen,    // live
	kClosed,  // closed by a completion, retry, snooze, fail, cancel or rescue
};

struct Attempt {
	// Input.
	int64 job_id;
	int64 run_lease;
	int64 receipt_id;
	// Found (valid unless kStale). Datums live in the caller's memory context.
	AttemptStatus status;
	char closed_outcome[20];  // the outcome that closed it (kClosed)
	bool closed_now;          // this call closed it
	int64 claim_batch_id;
	int32 index;
	int32 claim_slot;
	int16 ready_slot;
	int64 ready_generation;
	Datum queue;  // text
	int16 priority;
	int64 lane_id;  // the lane's awa.queue_lanes.lane_id: ring rows are keyed by it
	int64 lane_seq;
	int16 attempt;
	int16 max_attempts;
	TimestampTz claimed_at;
	TimestampTz deadline_at;
};
static_assert(std::is_trivially_destructible_v<Attempt>, "lives across PostgreSQL errors");

enum class AttemptAction {
	kInspect,   // lock and report only
	kComplete,  // close as completed, with terminal history
	kClose,     // close with `outcome` (retryable, scheduled, failed, dlq, cancelled,
	            // rescued, deadline_expired: the last two leave the job retryable)
};

// Resolves attempts[0..n) and applies `action` to the open ones. Sets status,
// closed_outcome and closed_now. Requires SPI; values that outlive SPI are
// copied into `result_context`. May ereport.
void ProcessAttempts(Attempt *attempts, int n, AttemptAction action, const char *outcome,
                     MemoryContext result_context);

// Reads the (job_id, run_lease, receipt_id) arguments first_arg.. of a
// single-attempt call (22004 when one is NULL).
Attempt AttemptArgument(FunctionCallInfo fcinfo, int first_arg);

// Reads the attempt arrays of awa.complete_many/heartbeat_many-style calls.
// Returns the number of attempts (palloc'd into *out).
int AttemptArrays(FunctionCallInfo fcinfo, int first_arg, Attempt **out);

}  // namespace awa::pg
