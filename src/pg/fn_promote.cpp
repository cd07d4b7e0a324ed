// fn_promote.cpp: awa.promote_due and awa._requeue_jobs.
//
// Promotion moves deferred jobs (scheduled: a future run_at or a snooze;
// retryable: a retry's backoff) into the ready ring in one transaction: it
// deletes the deferred rows (FOR UPDATE SKIP LOCKED, so concurrent promoters
// and cancels never wait for each other) and appends them to their lanes
// through the enqueue path (job_insert.hpp), keeping job_id, run_lease,
// attempt, errors and unique key. Jobs of a paused queue are not promoted.
// A requeue (a DLQ retry, a retry of a finished job, a move) appends rows its
// caller built the same way, without a deferred row.
//
// The ready rows are written, and their lane positions taken, when the
// calling transaction commits (ReadyAt::kCommit, pending_enqueues.hpp), as
// an enqueue's are: an admin transaction left open holds no lane position,
// so it holds back no claim (docs/architecture.md, "Lane positions are taken
// at commit"; test/specs/open_admin_passed.spec).
#include "pg/core_calls.hpp"
#include "pg/arguments.hpp"
#include "pg/counters.hpp"
#include "pg/errors.hpp"
#include "pg/guard.hpp"
#include "pg/job_insert.hpp"
#include "pg/spi_plans.hpp"

namespace awa::pg {

namespace {

int
CompareDue(const void *a, const void *b)
{
	const JobRow &x = *static_cast<const JobRow *>(a);
	const JobRow &y = *static_cast<const JobRow *>(b);
	if (x.run_at != y.run_at)
		return x.run_at < y.run_at ? -1 : 1;
	if (x.priority != y.priority)
		return x.priority < y.priority ? -1 : 1;
	return x.job_id < y.job_id ? -1 : (x.job_id > y.job_id ? 1 : 0);
}

int
CompareIds(const void *a, const void *b)
{
	int64 x = *static_cast<const int64 *>(a);
	int64 y = *static_cast<const int64 *>(b);
	return x < y ? -1 : (x > y ? 1 : 0);
}

// The rows of a requeue (SPI_tuptable) as deferred_jobs's constraints would
// have them: no NULL where the table has NOT NULL, a deferred state, a
// priority of 1 to 4, each job once (two rows of one job would give it two
// ready rows). Its callers build them that way; this keeps a hand-made call
// (superusers only) from appending a broken row. Raises 22004 or 22023.
void
CheckRequeueRows()
{
	int n = static_cast<int>(SPI_processed);
	TupleDesc desc = SPI_tuptable->tupdesc;
	int64 *ids = static_cast<int64 *>(palloc(sizeof(int64) * (n + 1)));
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();
		HeapTuple tuple = SPI_tuptable->vals[i];
		bool isnull;
		for (int column = 1; column <= 11; column++) {  // job_id .. created_at
			(void)SPI_getbinval(tuple, desc, column, &isnull);
			if (isnull)
				ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				                errmsg("a job to requeue has a NULL %s", SPI_fname(desc, column)),
				                errhint("Every column that awa.deferred_jobs declares NOT NULL must be set.")));
		}
		char *state = TextDatumGetCString(SPI_getbinval(tuple, desc, 6, &isnull));
		int16 priority = DatumGetInt16(SPI_getbinval(tuple, desc, 3, &isnull));
		if ((strcmp(state, "scheduled") != 0 && strcmp(state, "retryable") != 0) || priority < 1 || priority > 4)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			                errmsg("a job to requeue has state %s and priority %d", state, priority),
			                errhint("The state is scheduled or retryable, the priority 1 to 4.")));
		ids[i] = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
	}
	qsort(ids, n, sizeof(int64), CompareIds);
	for (int i = 1; i < n; i++)
		if (ids[i] == ids[i - 1])
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			                errmsg("job " INT64_FORMAT " is given twice", ids[i]),
			                errhint("Each job is requeued once.")));
	pfree(ids);
}

// How often the maintenance worker's promotion looks for parked jobs of
// queues that are not paused (awa_promote_due).
constexpr int64 kParkedSweepMicros = 5 * USECS_PER_SEC;

// The position of a row in promotion order (run_at, priority, job_id).
struct DueKey {
	TimestampTz run_at;
	int16 priority;
	int64 job_id;
};

// Turns the deferred rows just deleted, or the rows of a requeue
// (SPI_tuptable, deferred_jobs's columns as kPromoteDue returns them), into
// ready rows, or parks them if their queue is paused and `paused` says so.
// `last`, if given, gets the greatest row's position.
int
PromoteDeleted(Paused paused, DueKey *last = NULL)
{
	int n = static_cast<int>(SPI_processed);
	if (n == 0)
		return 0;
	SPITupleTable *table = SPI_tuptable;
	TupleDesc desc = table->tupdesc;
	JobRow *rows = static_cast<JobRow *>(palloc0(sizeof(JobRow) * (n + 1)));
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();  // every loop over rows can be cancelled
		HeapTuple tuple = table->vals[i];
		bool isnull;
		JobRow &row = rows[i];
		row.job_id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		row.queue = DatumGetTextPP(SPI_getbinval(tuple, desc, 2, &isnull));
		row.priority = DatumGetInt16(SPI_getbinval(tuple, desc, 3, &isnull));
		row.kind = DatumGetTextPP(SPI_getbinval(tuple, desc, 4, &isnull));
		row.args = DatumGetJsonbP(SPI_getbinval(tuple, desc, 5, &isnull));
		char *state = TextDatumGetCString(SPI_getbinval(tuple, desc, 6, &isnull));
		row.from_state = static_cast<int>(strcmp(state, "retryable") == 0   ? core::JobState::kRetryable
		                                  : strcmp(state, "available") == 0 ? core::JobState::kAvailable
		                                                                    : core::JobState::kScheduled);
		row.run_at = DatumGetTimestampTz(SPI_getbinval(tuple, desc, 7, &isnull));
		row.run_lease = DatumGetInt64(SPI_getbinval(tuple, desc, 8, &isnull));
		row.attempt = DatumGetInt16(SPI_getbinval(tuple, desc, 9, &isnull));
		row.max_attempts = DatumGetInt16(SPI_getbinval(tuple, desc, 10, &isnull));
		row.created_at = DatumGetTimestampTz(SPI_getbinval(tuple, desc, 11, &isnull));
		Datum key = SPI_getbinval(tuple, desc, 12, &isnull);
		row.unique_key = isnull ? NULL : DatumGetByteaPP(key);
		Datum states = SPI_getbinval(tuple, desc, 13, &isnull);
		row.unique_states = isnull ? 0 : DatumGetInt16(states);
		Datum payload = SPI_getbinval(tuple, desc, 14, &isnull);
		row.payload = isnull ? NULL : DatumGetJsonbP(payload);
	}
	// Lanes get the jobs in (run_at, priority, job_id) order, whatever order
	// the DELETE's plan returned them in (its RETURNING follows the join, not
	// the subquery's ORDER BY).
	qsort(rows, n, sizeof(JobRow), CompareDue);
	if (last != NULL)
		*last = DueKey{rows[n - 1].run_at, rows[n - 1].priority, rows[n - 1].job_id};
	// Due now at the latest: a job is never promoted into the future.
	TimestampTz now = GetCurrentTimestamp();
	for (int i = 0; i < n; i++)
		if (rows[i].run_at > now)
			rows[i].run_at = now;
	InsertJobs(rows, n, now, ReadyAt::kCommit, paused);
	return n;
}

}  // namespace

}  // namespace awa::pg

using namespace awa::pg;

// awa.promote_due(max_jobs) -> number of jobs made available
AWA_FUNCTION(awa_promote_due)
{
	RequireArgument(fcinfo, 0, "max_jobs", true);
	int32 max_jobs = PG_GETARG_INT32(0);
	if (max_jobs < 1 || max_jobs > 100000)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("max_jobs must be between 1 and 100000"),
		                errhint("Promote at most 100000 jobs per call; the default is 4096.")));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	Datum values[2] = {Int32GetDatum(max_jobs), TimestampTzGetDatum(GetCurrentTimestamp())};
	Execute(Stmt::kPromoteDue, 0, values, NULL);
	// Due jobs of a paused queue are parked, not appended.
	int promoted = PromoteDeleted(Paused::kParkPaused);
	// Parked jobs of the queues that are not paused: rare (a race with a
	// resume, a move), so the maintenance worker looks for them every
	// kParkedSweepMicros rather than at every promotion: after a resume, the
	// index entries of the jobs it appended are dead until vacuum, and while
	// an old snapshot keeps them from being marked dead the skip scan visits
	// each one (40 ms a look for 200,000, docs/architecture.md §6). Any
	// other caller looks every time.
	static TimestampTz last_sweep = 0;
	TimestampTz now = GetCurrentTimestamp();
	if (promoted < max_jobs && (!IsBackgroundWorker || now - last_sweep >= kParkedSweepMicros || now < last_sweep)) {
		last_sweep = now;
		// (the statement reads queue_meta: append them whatever this
		// backend's settings cache says)
		Datum limit[1] = {Int32GetDatum(max_jobs - promoted)};
		Execute(Stmt::kPromoteParked, 0, limit, NULL);
		promoted += PromoteDeleted(Paused::kAppend);
	}
	SPI_finish();
	PG_RETURN_INT32(promoted);
}

// awa._unpark_queue(queue) -> number of the queue's parked jobs appended to
// their lanes, in order, a page of 10,000 at a time (awa.resume_queue, after
// it marked the queue resumed in this transaction).
AWA_FUNCTION(awa_internal_unpark_queue)
{
	RequireArgument(fcinfo, 0, "queue", false);
	text *queue = PG_GETARG_TEXT_PP(0);
	constexpr int kPage = 10000;
	DueKey after = {DT_NOBEGIN, 0, 0};
	int64 unparked = 0;
	for (;;) {
		CHECK_FOR_INTERRUPTS();
		// A SPI connection per page: SPI_finish frees the page's rows, the
		// arrays built from them and the results of the statements the
		// appends ran (every SPI call returns into the connection's
		// context), so memory stays that of one page, whatever the number
		// of parked jobs. (A memory context reset per page did not: the
		// allocations went to the SPI context. Found in review: 541 MB for
		// 500,000 jobs.)
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "awa: SPI_connect failed");
		Datum values[5] = {Int32GetDatum(kPage), PointerGetDatum(queue), TimestampTzGetDatum(after.run_at),
		                   Int16GetDatum(after.priority), Int64GetDatum(after.job_id)};
		Execute(Stmt::kUnparkQueue, 0, values, NULL);
		int n = PromoteDeleted(Paused::kAppend, &after);
		SPI_finish();
		unparked += n;
		if (n < kPage)
			break;
	}
	PG_RETURN_INT64(unparked);
}

// awa._requeue_jobs(jobs awa.deferred_jobs[]) -> number of the given jobs
// appended to their lanes, whatever their run_at (due now; written at the
// transaction's commit, or where it reads its jobs back). The array is read by a
// statement planned per call (its type, awa.deferred_jobs[], has no fixed
// OID for the statement table of spi_plans.cpp; a plan of an unnest is a
// fraction of what appending the jobs costs).
AWA_FUNCTION(awa_internal_requeue_jobs)
{
	RequireArgument(fcinfo, 0, "jobs", false);
	Oid type = get_fn_expr_argtype(fcinfo->flinfo, 0);
	if (!OidIsValid(type))
		elog(ERROR, "awa: could not determine the type of awa._requeue_jobs's argument");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	Datum values[1] = {PG_GETARG_DATUM(0)};
	int rc = SPI_execute_with_args(
	    "SELECT j.job_id, j.queue, j.priority, j.kind, j.args, j.state, j.run_at, j.run_lease, j.attempt,"
	    "       j.max_attempts, j.created_at, j.unique_key, j.unique_states, j.payload"
	    "  FROM pg_catalog.unnest($1) j",
	    1, &type, values, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "awa: reading the jobs to requeue failed: %s", SPI_result_code_string(rc));
	CheckRequeueRows();
	int requeued = PromoteDeleted(Paused::kParkPaused);
	SPI_finish();
	PG_RETURN_INT32(requeued);
}
