// fn_attempt.cpp: awa._attempt, the attempt primitive that awa.cancel
// (PL/pgSQL, sql/install/31_cancel.sql) is built on. Retry, snooze and fail are C
// (fn_end_attempt.cpp) and close attempts through the same code
// (attempts.hpp) without it. Not granted to any role: awa's own SECURITY
// DEFINER functions call it.
//
// awa._attempt(job_id, run_lease, receipt_id, outcome) locks the attempt's
// claim batch for the rest of the transaction and reports the attempt; with
// an outcome (the name of the state the job enters: retryable, scheduled,
// failed, dlq or cancelled, parsed by core::ParseJobState), it also closes the
// attempt when it is open: closure evidence with that outcome, the attempt's
// heartbeat row dropped, a unique key the new state does not hold freed, and
// the job moved from `running` to that state in the counters. The caller
// writes the job's new row in the same transaction.
#include "pg/arguments.hpp"
#include "pg/attempts.hpp"
#include "pg/core_calls.hpp"
#include "pg/guard.hpp"

using namespace awa::pg;
using awa::core::JobState;

namespace {

namespace core = awa::core;

// The outcomes awa._attempt closes an attempt with, by the state the job
// enters: retry, snooze, fail (or its DLQ) and cancel. Completion has its own
// path (awa.complete), and a rescue its own outcomes (awa._rescue_attempt).
constexpr core::StateMask kClosingOutcomes = core::MaskOf(JobState::kRetryable) | core::MaskOf(JobState::kScheduled) |
                                             core::MaskOf(JobState::kFailed) | core::MaskOf(JobState::kDlq) |
                                             core::MaskOf(JobState::kCancelled);

}  // namespace

// -> (status, closed_outcome, queue, priority, ready_slot, ready_generation,
//     lane_seq, attempt, max_attempts, claimed_at)
AWA_FUNCTION(awa_internal_attempt)
{
	Attempt attempt = AttemptArgument(fcinfo, 0);
	char *outcome = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	JobState state;
	if (outcome != NULL &&
	    (!core::ParseJobState(outcome, strlen(outcome), &state) || !core::MaskHolds(kClosingOutcomes, state)))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unknown outcome \"%s\"", outcome),
		                errhint("Use retryable, scheduled, failed, dlq or cancelled.")));

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	MemoryContext caller = CurrentMemoryContext;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	ProcessAttempts(&attempt, 1, outcome == NULL ? AttemptAction::kInspect : AttemptAction::kClose, outcome, caller);
	SPI_finish();

	Datum values[10];
	bool nulls[10] = {false};
	const char *status = attempt.status == AttemptStatus::kOpen ? "open"
	                     : attempt.status == AttemptStatus::kClosed ? "closed"
	                                                                : "stale";
	if (attempt.closed_now)
		status = "closed_now";
	values[0] = PointerGetDatum(cstring_to_text(status));
	bool known = attempt.status != AttemptStatus::kStale;
	nulls[1] = attempt.status != AttemptStatus::kClosed;
	values[1] = nulls[1] ? (Datum)0 : PointerGetDatum(cstring_to_text(attempt.closed_outcome));
	values[2] = attempt.queue;
	values[3] = Int32GetDatum(attempt.priority);
	values[4] = Int32GetDatum(attempt.ready_slot);
	values[5] = Int64GetDatum(attempt.ready_generation);
	values[6] = Int64GetDatum(attempt.lane_seq);
	values[7] = Int32GetDatum(attempt.attempt);
	values[8] = Int32GetDatum(attempt.max_attempts);
	values[9] = TimestampTzGetDatum(attempt.claimed_at);
	for (int i = 2; i < 10; i++)
		nulls[i] = !known;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum)0;
}
