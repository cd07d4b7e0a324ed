// fn_heartbeat.cpp: awa.heartbeat and awa.heartbeat_many.
//
// A heartbeat names running attempts and says, for each, `alive` (it is the
// live attempt: its heartbeat time, and progress when given, are stored in
// attempt_state), `cancel_requested` (an operator cancelled the job while it
// ran: the attempt is closed, the worker should stop) or `stale` (any other
// attempt: completed, retried, rescued, re-claimed, unknown). Jobs that never
// heartbeat create no attempt_state row.
#include "pg/arguments.hpp"
#include "pg/attempts.hpp"
#include "pg/errors.hpp"
#include "pg/guard.hpp"
#include "pg/spi_plans.hpp"

namespace awa::pg {

namespace {

const char *
StatusOf(const Attempt &attempt)
{
	if (attempt.status == AttemptStatus::kOpen)
		return "alive";
	if (attempt.status == AttemptStatus::kClosed && strcmp(attempt.closed_outcome, "cancelled") == 0)
		return "cancel_requested";
	return "stale";
}

// Inspects the attempts and stores a heartbeat for the live ones.
// progress[i] may be NULL (keep the stored progress).
// The attempts qsort orders for CompareAttempts (qsort passes no context).
const Attempt *sorted_attempts = NULL;

int
CompareAttempts(const void *left, const void *right)
{
	int l = *static_cast<const int *>(left), r = *static_cast<const int *>(right);
	const Attempt &a = sorted_attempts[l], &b = sorted_attempts[r];
	if (a.job_id != b.job_id)
		return a.job_id < b.job_id ? -1 : 1;
	if (a.run_lease != b.run_lease)
		return a.run_lease < b.run_lease ? -1 : 1;
	return l < r ? -1 : (l > r ? 1 : 0);
}

void
Heartbeat(Attempt *attempts, int n, Datum *progress, const bool *progress_nulls, MemoryContext caller)
{
	ProcessAttempts(attempts, n, AttemptAction::kInspect, NULL, caller);
	Datum *jobs = static_cast<Datum *>(palloc(sizeof(Datum) * (n + 1)));
	Datum *leases = static_cast<Datum *>(palloc(sizeof(Datum) * (n + 1)));
	Datum *progresses = static_cast<Datum *>(palloc(sizeof(Datum) * (n + 1)));
	bool *progress_null = static_cast<bool *>(palloc(sizeof(bool) * (n + 1)));
	// One row per attempt, the first progress given winning: the open
	// attempts' positions sorted by (job_id, run_lease, position), the first
	// of each run kept. O(n log n); a comparison of each with the ones kept
	// before it made 100,000 attempts cost seconds.
	int *order = static_cast<int *>(palloc(sizeof(int) * (n + 1)));
	int open = 0;
	for (int i = 0; i < n; i++)
		if (attempts[i].status == AttemptStatus::kOpen)
			order[open++] = i;
	sorted_attempts = attempts;
	qsort(order, open, sizeof(int), CompareAttempts);
	int alive = 0;
	for (int k = 0; k < open; k++) {
		CHECK_FOR_INTERRUPTS();  // every loop over a call's jobs can be cancelled
		const Attempt &a = attempts[order[k]];
		if (k > 0 && attempts[order[k - 1]].job_id == a.job_id && attempts[order[k - 1]].run_lease == a.run_lease)
			continue;
		jobs[alive] = Int64GetDatum(a.job_id);
		leases[alive] = Int64GetDatum(a.run_lease);
		progress_null[alive] = progress == NULL || progress_nulls[order[k]];
		progresses[alive] = progress_null[alive] ? (Datum)0 : progress[order[k]];
		alive++;
	}
	if (alive == 0)
		return;
	int dims[1] = {alive};
	int lbs[1] = {1};
	Datum values[3] = {
	    PointerGetDatum(construct_array(jobs, alive, INT8OID, 8, true, TYPALIGN_DOUBLE)),
	    PointerGetDatum(construct_array(leases, alive, INT8OID, 8, true, TYPALIGN_DOUBLE)),
	    PointerGetDatum(construct_md_array(progresses, progress_null, 1, dims, lbs, JSONBOID, -1, false, TYPALIGN_INT))};
	Execute(Stmt::kUpsertAttemptState, 0, values, NULL);
}

void
RequireProgress(Datum value, int position)
{
	Jsonb *progress = DatumGetJsonbP(value);
	if (!JB_ROOT_IS_OBJECT(progress) || JB_ROOT_IS_SCALAR(progress)) {
		if (position > 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			                errmsg("progress[%d] must be a JSON object", position),
			                errhint("Pass progress as an object such as '{\"done\": 40, \"total\": 100}', or NULL.")));
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("progress must be a JSON object"),
		                errhint("Pass progress as an object such as '{\"done\": 40, \"total\": 100}', or NULL.")));
	}
}

}  // namespace

}  // namespace awa::pg

using namespace awa::pg;

// awa.heartbeat(job_id, run_lease, receipt_id, progress) -> alive | cancel_requested | stale
AWA_FUNCTION(awa_heartbeat)
{
	Attempt attempt = AttemptArgument(fcinfo, 0);
	Datum progress = PG_ARGISNULL(3) ? (Datum)0 : PG_GETARG_DATUM(3);
	bool progress_null = PG_ARGISNULL(3);
	if (!progress_null)
		RequireProgress(progress, 0);
	MemoryContext caller = CurrentMemoryContext;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	Heartbeat(&attempt, 1, &progress, &progress_null, caller);
	SPI_finish();
	PG_RETURN_TEXT_P(cstring_to_text(StatusOf(attempt)));
}

// awa.heartbeat_many(job_ids, run_leases, receipt_ids, progress[]) -> (job_id, run_lease, status)
AWA_FUNCTION(awa_heartbeat_many)
{
	awa::core::Violation violation;
	Attempt *attempts;
	int n = AttemptArrays(fcinfo, 0, &attempts);
	Datum *progress = NULL;
	bool *progress_nulls = NULL;
	int progress_count =
	    ArrayElements(PG_ARGISNULL(3) ? NULL : PG_GETARG_ARRAYTYPE_P(3), JSONBOID, "progress", &progress, &progress_nulls);
	if (progress_count >= 0) {
		Require(awa::core::CheckSameLength("progress", progress_count, "job_ids", n, &violation), violation);
		for (int i = 0; i < n; i++) {
			CHECK_FOR_INTERRUPTS();
			if (!progress_nulls[i])
				RequireProgress(progress[i], i + 1);
		}
	}
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	if (n == 0)
		return (Datum)0;
	MemoryContext caller = CurrentMemoryContext;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	Heartbeat(attempts, n, progress, progress_nulls, caller);
	SPI_finish();
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();
		Datum values[3] = {Int64GetDatum(attempts[i].job_id), Int64GetDatum(attempts[i].run_lease),
		                   PointerGetDatum(cstring_to_text(StatusOf(attempts[i])))};
		bool nulls[3] = {false, false, false};
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum)0;
}
