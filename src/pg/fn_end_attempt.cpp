// fn_end_attempt.cpp: awa.retry, awa.snooze and awa.fail (and the
// maintenance's awa._rescue_attempt), plus awa._backoff, the SQL face of the
// retry backoff they use (core/lifecycle.hpp is the rule).
//
// Each ends a running attempt other than by success, in one transaction:
//   retry   -> retryable (deferred_jobs, run_at = now + delay or backoff), or
//              failed / dlq when the attempt was the last one;
//   snooze  -> scheduled (deferred_jobs, run_at = now + delay), the attempt
//              given back;
//   fail    -> failed (done_entries), or dlq when the queue has DLQ on.
// The attempt is inspected under its claim batch lock (attempts.hpp), then
// closed with the outcome (which also drops its heartbeat row, frees a unique
// key the new state does not hold and moves the counters), then the job's new
// row is written. A stale attempt changes nothing and answers 'stale'.
// Written in C with per-slot prepared statements: as PL/pgSQL over the
// partitioned parents, planning and executor start-up made a retry cost three
// completions (docs/lifecycle.md §2).
#include "pg/core_calls.hpp"
#include "pg/arguments.hpp"
#include "pg/attempts.hpp"
#include "pg/counters.hpp"
#include "pg/errors.hpp"
#include "pg/guard.hpp"
#include "pg/lane_locks.hpp"
#include "pg/rings.hpp"
#include "pg/queue_settings.hpp"
#include "pg/spi_plans.hpp"
#include "pg/wakeups.hpp"

extern "C" {
#include "common/pg_prng.h"
}

namespace awa::pg {

namespace {

enum class EndAction { kRetry, kSnooze, kFail, kRescue };

text *
ErrorArgument(FunctionCallInfo fcinfo, int index)
{
	if (PG_ARGISNULL(index))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("error must not be NULL"),
		                errhint("Pass the error message; it is kept in the job's error history.")));
	return PG_GETARG_TEXT_PP(index);
}

// A delay must not be negative, as applied to the current time (so
// '1 day -25 hours' is refused too).
void
RequireDelay(Interval *delay, const char *hint)
{
	core::Violation violation;
	Require(core::CheckDelay(delay->month, delay->day, delay->time, &violation), violation);
	bool far_negative = core::DelayFarNegative(delay->month, delay->day, delay->time);
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz then = far_negative ? now - 1
	                                : DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(now),
	                                                                          PointerGetDatum(delay)));
	if (then < now)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("delay must not be negative"),
		                errhint("%s", hint)));
}

// The retry backoff after failed attempt `attempt`: core::BackoffMicros with
// a jitter drawn from PostgreSQL's global PRNG. Used by a retry without a
// delay, a rescue and awa._backoff.
int64
RetryBackoffMicros(int64 attempt)
{
	return core::BackoffMicros(attempt, pg_prng_double(&pg_global_prng_state));
}

// An SPI nulls string of `n` not-null columns.
void
NoNulls(char *nulls, int n)
{
	memset(nulls, ' ', n);
	nulls[n] = '\0';
}

// Why maintenance rescues an open attempt, judged under its claim batch lock:
// its deadline passed, or its last sign of life (heartbeat, else the claim)
// is older than `stale_before`. NULL: the attempt is alive.
const char *
RescueReason(const Attempt &attempt, TimestampTz now, TimestampTz stale_before, const char **error)
{
	if (attempt.deadline_at < now) {
		*error = "hard deadline exceeded";
		return "deadline_expired";
	}
	TimestampTz alive_at = attempt.claimed_at;
	Datum key[2] = {Int64GetDatum(attempt.job_id), Int64GetDatum(attempt.run_lease)};
	ExecuteLatest(Stmt::kAttemptHeartbeat, 0, key, NULL, 1);
	if (SPI_processed == 1) {
		bool isnull;
		Datum heartbeat = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (!isnull)
			alive_at = DatumGetTimestampTz(heartbeat);
	}
	if (alive_at < stale_before) {
		*error = "heartbeat stale: worker presumed dead";
		return "rescued";
	}
	return NULL;
}

// Ends the attempt. For kRescue, `stale_before` is the heartbeat cutoff and
// an attempt that turns out alive under its lock is left alone ("alive").
const char *
EndAttempt(Attempt *attempt, EndAction action, text *error, Interval *delay, TimestampTz stale_before = 0)
{
	MemoryContext caller = CurrentMemoryContext;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	ProcessAttempts(attempt, 1, AttemptAction::kInspect, NULL, caller);
	if (attempt->status != AttemptStatus::kOpen) {
		SPI_finish();
		return "stale";
	}
	const char *rescue_outcome = NULL;
	if (action == EndAction::kRescue) {
		const char *reason;
		rescue_outcome = RescueReason(*attempt, GetCurrentTimestamp(), stale_before, &reason);
		if (rescue_outcome == NULL) {
			SPI_finish();
			return "alive";
		}
		error = cstring_to_text(reason);
	}
	text *queue = DatumGetTextPP(attempt->queue);
	QueueSettings settings = SettingsOf(queue);
	const char *outcome;
	if (action == EndAction::kSnooze)
		outcome = "scheduled";
	else if ((action == EndAction::kRetry || action == EndAction::kRescue) && attempt->attempt < attempt->max_attempts)
		outcome = "retryable";
	else
		outcome = settings.dlq_enabled ? "dlq" : "failed";
	// The closure records why a rescued attempt ended; the job is retryable.
	const char *close_as = rescue_outcome != NULL && strcmp(outcome, "retryable") == 0 ? rescue_outcome : outcome;

	// The job's body, from its ready row, read with a fresh snapshot: a prune
	// may have carried the row into another slot after this transaction's
	// snapshot was taken (REPEATABLE READ); attempts.cpp found it there and
	// holds its slot, so it stays put until this transaction ends.
	Datum key[2] = {Int64GetDatum(attempt->lane_id), Int64GetDatum(attempt->lane_seq)};
	ExecuteLatest(Stmt::kReadyBody, attempt->ready_slot, key, NULL, 1);
	if (SPI_processed != 1)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
		                errmsg("awa: job " INT64_FORMAT " has claim evidence but no ready row", attempt->job_id)));
	HeapTuple body = SPI_copytuple(SPI_tuptable->vals[0]);
	TupleDesc body_desc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
	bool kind_null, args_null, run_at_null, created_null, key_null, states_null, payload_null;
	Datum kind = SPI_getbinval(body, body_desc, 1, &kind_null);
	Datum args = SPI_getbinval(body, body_desc, 2, &args_null);
	Datum run_at = SPI_getbinval(body, body_desc, 3, &run_at_null);
	Datum created_at = SPI_getbinval(body, body_desc, 4, &created_null);
	Datum unique_key = SPI_getbinval(body, body_desc, 5, &key_null);
	Datum unique_states = SPI_getbinval(body, body_desc, 6, &states_null);
	Datum payload = SPI_getbinval(body, body_desc, 7, &payload_null);

	// Progress reported by heartbeats survives the retry or snooze.
	Datum progress = (Datum)0;
	bool progress_null = true;
	Datum attempt_key[2] = {Int64GetDatum(attempt->job_id), Int64GetDatum(attempt->run_lease)};
	Execute(Stmt::kAttemptProgress, 0, attempt_key, NULL, 1);
	if (SPI_processed == 1) {
		progress = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &progress_null);
		if (!progress_null)
			progress = PointerGetDatum(DatumGetJsonbPCopy(progress));
	}

	ProcessAttempts(attempt, 1, AttemptAction::kClose, close_as, caller);
	if (!attempt->closed_now)
		elog(ERROR, "awa: attempt of job " INT64_FORMAT " closed under its lock", attempt->job_id);
	// A rescue of the last attempt closes as failed (or dlq), counted as a
	// failure; it is a rescue too (a rescue that leaves the job retryable
	// closes as rescued or deadline_expired, counted as rescued only).
	if (rescue_outcome != NULL && close_as != rescue_outcome)
		CountMove(DatumGetTextPP(attempt->queue), kNoState, kNoState, 1, core::JobEvent::kRescued);

	Datum payload_args[4] = {payload, PointerGetDatum(error), Int32GetDatum(attempt->attempt), progress};
	char payload_nulls[5] = {payload_null ? 'n' : ' ', action == EndAction::kSnooze ? 'n' : ' ', ' ',
	                         progress_null ? 'n' : ' ', '\0'};
	Execute(Stmt::kEndPayload, 0, payload_args, payload_nulls, 1);
	bool new_payload_null;
	Datum new_payload = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &new_payload_null);

	char key_nulls = key_null ? 'n' : ' ';
	char states_nulls = states_null ? 'n' : ' ';
	char new_payload_nulls = new_payload_null ? 'n' : ' ';
	if (strcmp(outcome, "retryable") == 0 || strcmp(outcome, "scheduled") == 0) {
		TimestampTz now = GetCurrentTimestamp();
		TimestampTz next;
		if (delay != NULL)
			next = DatumGetTimestampTz(
			    DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(now), PointerGetDatum(delay)));
		else
			next = now + RetryBackoffMicros(attempt->attempt);
		int16 attempts_used = outcome[0] == 's' ? attempt->attempt - 1 : attempt->attempt;
		Datum values[14] = {Int64GetDatum(attempt->job_id), attempt->queue,         Int16GetDatum(attempt->priority),
		                    kind,                           args,                   CStringGetTextDatum(outcome),
		                    TimestampTzGetDatum(next),      Int64GetDatum(attempt->run_lease),
		                    Int16GetDatum(attempts_used),   Int16GetDatum(attempt->max_attempts),
		                    created_at,                     unique_key,             unique_states,
		                    new_payload};
		char nulls[15];
		NoNulls(nulls, 14);
		nulls[11] = key_nulls;
		nulls[12] = states_nulls;
		nulls[13] = new_payload_nulls;
		Execute(Stmt::kInsertRetryable, 0, values, nulls);
		WakeWorkerForDeferred(next);
	} else if (strcmp(outcome, "dlq") == 0) {
		Datum values[14] = {Int64GetDatum(attempt->job_id),      attempt->queue, Int16GetDatum(attempt->priority),
		                    kind,                                args,           Int64GetDatum(attempt->run_lease),
		                    Int16GetDatum(attempt->attempt),     Int16GetDatum(attempt->max_attempts),
		                    run_at,                              created_at,     unique_key,
		                    unique_states,                       new_payload,    PointerGetDatum(error)};
		char nulls[15];
		NoNulls(nulls, 14);
		nulls[10] = key_nulls;
		nulls[11] = states_nulls;
		nulls[12] = new_payload_nulls;
		Execute(Stmt::kInsertDlq, 0, values, nulls);
	} else {
		Datum values[15] = {Int64GetDatum(attempt->ready_generation), attempt->queue,
		                    Int16GetDatum(attempt->priority),         Int64GetDatum(attempt->lane_seq),
		                    Int64GetDatum(attempt->job_id),           Int64GetDatum(attempt->run_lease),
		                    Int16GetDatum(attempt->attempt),          kind,
		                    args,                                     Int16GetDatum(attempt->max_attempts),
		                    run_at,                                   created_at,
		                    unique_key,                               new_payload,
		                    Int64GetDatum(attempt->lane_id)};
		char nulls[16];
		NoNulls(nulls, 15);
		nulls[12] = key_nulls;
		nulls[13] = new_payload_nulls;
		Execute(Stmt::kInsertFailed, attempt->ready_slot, values, nulls);
	}
	SPI_finish();
	return close_as;
}

}  // namespace

}  // namespace awa::pg

using namespace awa::pg;

// awa.retry(job_id, run_lease, receipt_id, error, delay) -> retryable | failed | dlq | stale
AWA_FUNCTION(awa_retry)
{
	Attempt attempt = AttemptArgument(fcinfo, 0);
	text *error = ErrorArgument(fcinfo, 3);
	Interval *delay = PG_ARGISNULL(4) ? NULL : PG_GETARG_INTERVAL_P(4);
	if (delay != NULL)
		RequireDelay(delay, "Pass a delay of zero or more, or NULL for exponential backoff.");
	PG_RETURN_TEXT_P(cstring_to_text(EndAttempt(&attempt, EndAction::kRetry, error, delay)));
}

// awa.snooze(job_id, run_lease, receipt_id, delay) -> scheduled | stale
AWA_FUNCTION(awa_snooze)
{
	Attempt attempt = AttemptArgument(fcinfo, 0);
	if (PG_ARGISNULL(3))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("delay must not be NULL"),
		                errhint("Pass how long to wait, such as interval '30 seconds'.")));
	Interval *delay = PG_GETARG_INTERVAL_P(3);
	RequireDelay(delay, "Pass a delay of zero or more.");
	PG_RETURN_TEXT_P(cstring_to_text(EndAttempt(&attempt, EndAction::kSnooze, NULL, delay)));
}

// awa.fail(job_id, run_lease, receipt_id, error) -> failed | dlq | stale
AWA_FUNCTION(awa_fail)
{
	Attempt attempt = AttemptArgument(fcinfo, 0);
	text *error = ErrorArgument(fcinfo, 3);
	PG_RETURN_TEXT_P(cstring_to_text(EndAttempt(&attempt, EndAction::kFail, error, NULL)));
}

// awa._rescue_attempt(job_id, run_lease, receipt_id, stale_before)
//   -> deadline_expired | rescued | failed | dlq | alive | busy | stale
// Maintenance: closes an attempt whose deadline passed or whose last heartbeat
// (else its claim) is older than stale_before, first, so the old worker's late
// writes are refused; the job becomes retryable with backoff, or failed / dlq
// when that was its last attempt. Judged again under the claim batch lock: an
// attempt that heartbeated meanwhile stays ("alive").
AWA_FUNCTION(awa_internal_rescue_attempt)
{
	Attempt attempt = AttemptArgument(fcinfo, 0);
	if (PG_ARGISNULL(3))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("stale_before must not be NULL"),
		                errhint("Pass the heartbeat cutoff, such as now() - interval '90 seconds'.")));
	TimestampTz stale_before = PG_GETARG_TIMESTAMPTZ(3);
	// Maintenance never waits: an attempt being closed right now is busy.
	int64 epoch;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	RingPositions ring = CurrentRings(&epoch);
	SPI_finish();
	std::optional<awa::core::Receipt> receipt = awa::core::DecodeReceipt(attempt.receipt_id, ring.claim_slot_count);
	if (receipt.has_value() && !TryLockClaimBatch(receipt->claim_batch_id))
		PG_RETURN_TEXT_P(cstring_to_text("busy"));
	const char *result = EndAttempt(&attempt, EndAction::kRescue, NULL, NULL, stale_before);
	PG_RETURN_TEXT_P(cstring_to_text(result));
}

// awa._backoff(attempt) -> the retry delay after failed attempt `attempt`:
// 2^attempt seconds plus up to 25 % jitter, at most 24 hours.
AWA_FUNCTION(awa_internal_backoff)
{
	int32 attempt = PG_ARGISNULL(0) ? 1 : PG_GETARG_INT32(0);
	Interval *result = static_cast<Interval *>(palloc0(sizeof(Interval)));
	result->time = RetryBackoffMicros(attempt);
	PG_RETURN_INTERVAL_P(result);
}
