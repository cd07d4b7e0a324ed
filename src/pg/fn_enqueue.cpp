// fn_enqueue.cpp: awa.enqueue and awa.enqueue_many.
//
// A due job is appended to its lane (job_insert.hpp): the enqueue reserves
// lane_seqs from the lane's enqueue sequence, bracketed by the ring epoch so it
// knows the queue-ring position at the reservation instant, then inserts the
// ready rows into that queue slot. A job whose run_at
// is in the future goes to deferred_jobs. Unique jobs claim their key first
// (23505 on a duplicate: nothing is written; with unique.on_conflict "skip"
// the duplicate's element returns the holder's job_id and writes nothing,
// while the call and its transaction go on). Everything is in the caller's
// transaction and commits with the session's synchronous_commit.
#include "pg/core_calls.hpp"
#include <type_traits>

#include "pg/arguments.hpp"
#include "pg/counters.hpp"
#include "pg/errors.hpp"
#include "pg/guard.hpp"
#include "pg/gucs.hpp"
#include "pg/job_insert.hpp"
#include "pg/job_options.hpp"
#include "pg/pending_enqueues.hpp"
#include "pg/rings.hpp"
#include "pg/sequences.hpp"

namespace awa::pg {

namespace {


Oid
JobIdSequence()
{
	return AwaObjectOid(AwaObject::kJobIdSeq);
}

}  // namespace

}  // namespace awa::pg

using namespace awa::pg;

namespace {

// The arguments of awa.enqueue, checked (each bad one raises 22004 or 22023
// with a hint before anything is written).
struct EnqueueArguments {
	text *kind;
	Jsonb *args;
	text *queue;
	int16 priority;
	TimestampTz run_at;
	int16 max_attempts;
	TimestampTz now;
	JobOptions options;
};
// It lives in frames that an ERROR longjmps through.
static_assert(std::is_trivially_destructible_v<EnqueueArguments>, "EnqueueArguments must be trivially destructible");

void
ReadEnqueueArguments(FunctionCallInfo fcinfo, EnqueueArguments *out)
{
	out->kind = KindArgument(fcinfo, 0);
	RequireArgument(fcinfo, 1, "args", true);
	out->args = PG_GETARG_JSONB_P(1);
	RequireJsonObject(out->args, "args");
	out->queue = QueueArgument(fcinfo, 2);
	out->priority = PriorityArgument(fcinfo, 3);
	out->max_attempts = MaxAttemptsArgument(fcinfo, 5);
	out->now = GetCurrentTimestamp();
	out->run_at = PG_ARGISNULL(4) ? out->now : PG_GETARG_TIMESTAMPTZ(4);
	// Last: the job's size (54000 past awa.max_job_bytes) is checked there.
	out->options = ParseJobOptions(PG_ARGISNULL(6) ? NULL : PG_GETARG_JSONB_P(6), "opts", 0, out->kind, out->queue,
	                               out->args, out->now);
}

}  // namespace

// awa._check_job(kind, args, queue, priority, run_at, max_attempts, opts):
// raises what awa.enqueue would raise for these arguments, and writes
// nothing (awa.schedule_periodic checks the jobs it will enqueue).
AWA_FUNCTION(awa_internal_check_job)
{
	EnqueueArguments arguments;
	ReadEnqueueArguments(fcinfo, &arguments);
	PG_RETURN_VOID();
}

// awa._flush_enqueues() -> int: this transaction's pending ready jobs go in
// now (pending_enqueues.hpp); returns how many.
AWA_FUNCTION(awa_internal_flush_enqueues)
{
	PG_RETURN_INT32(FlushPendingEnqueues());
}

// awa.enqueue(kind, args, queue, priority, run_at, max_attempts, opts) -> job_id
AWA_FUNCTION(awa_enqueue)
{
	EnqueueArguments arguments;
	ReadEnqueueArguments(fcinfo, &arguments);
	text *kind = arguments.kind;
	Jsonb *args = arguments.args;
	text *queue = arguments.queue;
	int16 priority = arguments.priority;
	TimestampTz run_at = arguments.run_at;
	int16 max_attempts = arguments.max_attempts;
	TimestampTz now = arguments.now;
	JobOptions options = arguments.options;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	JobRow row;
	row.job_id = SequenceNext(JobIdSequence());
	row.queue = queue;
	row.priority = priority;
	row.kind = kind;
	row.args = args;
	row.run_at = run_at;
	row.run_lease = 0;
	row.attempt = 0;
	row.max_attempts = max_attempts;
	row.created_at = now;
	row.unique_key = options.unique_key;
	row.unique_states = options.unique_states;
	row.payload = options.payload;
	row.from_state = kNoState;
	row.skip_duplicate = options.unique_skip;
	row.skipped = false;
	InsertJobs(&row, 1, now, ReadyAt::kCommit);
	SPI_finish();
	PG_RETURN_INT64(row.job_id);
}

namespace {

// enqueue_many's arguments, deconstructed once; its elements are read from
// here in each pass.
struct ManyInput {
	text *queue;
	int16 max_attempts;
	int count;
	Datum *kinds, *args, *priorities, *run_ats, *opts;
	bool *kind_nulls, *args_nulls, *priority_nulls, *run_at_nulls, *opts_nulls;
	int args_count, priority_count, run_at_count, opts_count;  // -1: the array is NULL
	Jsonb *empty_object;
	TimestampTz now;
};
static_assert(std::is_trivially_destructible_v<ManyInput>, "lives across PostgreSQL errors");

// Jobs validated, formed, inserted and returned together. A call of more jobs
// first checks every element (nothing is written before the last one passed),
// then goes through its jobs chunk by chunk, each chunk's memory freed after
// it, so a call holds its arguments plus one chunk, whatever its length.
constexpr int kJobsPerChunk = 10000;

// Checks element i (0-based) of the call and fills *row (its job_id is drawn
// later); adds its size to *call_bytes and checks the call's. May ereport.
void
FillElement(ManyInput *in, int i, JobRow *row, int64 *call_bytes)
{
	awa::core::Violation violation;
	text *kind = in->kind_nulls[i] ? NULL : DatumGetTextPP(in->kinds[i]);
	if (!awa::core::CheckKind(kind, kind ? TextChars(kind) : 0, &violation))
		ReportElementViolation("kinds", i + 1, violation);
	Jsonb *args;
	if (in->args_count < 0) {
		args = in->empty_object;
	} else {
		if (in->args_nulls[i])
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("args[%d] must not be NULL", i + 1),
			                errhint("Pass '{}' for a job without arguments.")));
		args = DatumGetJsonbP(in->args[i]);
		if (!JB_ROOT_IS_OBJECT(args) || JB_ROOT_IS_SCALAR(args))
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("args[%d] must be a JSON object", i + 1),
			                errhint("Pass an object such as '{\"id\": 42}'.")));
	}
	int32 priority = static_cast<int32>(awa::core::kDefaultPriority);
	if (in->priority_count >= 0) {
		if (in->priority_nulls[i])
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("priorities[%d] must not be NULL", i + 1),
			                errhint("Pass NULL for the whole array to use priority 2.")));
		priority = DatumGetInt32(in->priorities[i]);
		if (!awa::core::CheckPriority(priority, &violation))
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			                errmsg("priorities[%d]: %s", i + 1, violation.message), errhint("%s", violation.hint)));
	}
	*row = JobRow{};
	row->queue = in->queue;
	row->priority = static_cast<int16>(priority);
	row->kind = kind;
	row->args = args;
	row->run_at = (in->run_at_count < 0 || in->run_at_nulls[i]) ? in->now : DatumGetTimestampTz(in->run_ats[i]);
	row->max_attempts = in->max_attempts;
	row->created_at = in->now;
	row->from_state = kNoState;
	// Every element, with options or not: the job's size is checked there
	// (54000 naming jobs[i] past awa.max_job_bytes). `where` only names
	// options in their errors, so it is formatted only for an element that
	// has some.
	Jsonb *element_opts = (in->opts_count >= 0 && !in->opts_nulls[i]) ? DatumGetJsonbP(in->opts[i]) : NULL;
	char where[32] = "opts";
	if (element_opts != NULL)
		snprintf(where, sizeof(where), "opts[%d]", i + 1);
	JobOptions options = ParseJobOptions(element_opts, where, i + 1, kind, in->queue, args, in->now);
	row->unique_key = options.unique_key;
	row->unique_states = options.unique_states;
	row->payload = options.payload;
	row->skip_duplicate = options.unique_skip;
	*call_bytes += options.bytes;
	Require(awa::core::CheckCallBytes(*call_bytes, static_cast<size_t>(i) + 1, awa_max_call_bytes, &violation),
	        violation);
}

}  // namespace

// awa.enqueue_many(kinds, args, queue, priorities, run_at, max_attempts, opts) -> SETOF job_id
AWA_FUNCTION(awa_enqueue_many)
{
	awa::core::Violation violation;
	RequireArgument(fcinfo, 0, "kinds", false);
	ManyInput in{};
	in.queue = QueueArgument(fcinfo, 2);
	in.max_attempts = MaxAttemptsArgument(fcinfo, 5);
	in.count = ArrayElements(PG_GETARG_ARRAYTYPE_P(0), TEXTOID, "kinds", &in.kinds, &in.kind_nulls);
	in.args_count = ArrayElements(PG_ARGISNULL(1) ? NULL : PG_GETARG_ARRAYTYPE_P(1), JSONBOID, "args", &in.args,
	                              &in.args_nulls);
	in.priority_count = ArrayElements(PG_ARGISNULL(3) ? NULL : PG_GETARG_ARRAYTYPE_P(3), INT4OID, "priorities",
	                                  &in.priorities, &in.priority_nulls);
	in.run_at_count = ArrayElements(PG_ARGISNULL(4) ? NULL : PG_GETARG_ARRAYTYPE_P(4), TIMESTAMPTZOID, "run_at",
	                                &in.run_ats, &in.run_at_nulls);
	if (in.args_count >= 0)
		Require(awa::core::CheckSameLength("args", in.args_count, "kinds", in.count, &violation), violation);
	if (in.priority_count >= 0)
		Require(awa::core::CheckSameLength("priorities", in.priority_count, "kinds", in.count, &violation), violation);
	if (in.run_at_count >= 0)
		Require(awa::core::CheckSameLength("run_at", in.run_at_count, "kinds", in.count, &violation), violation);
	in.opts_count = ArrayElements(PG_ARGISNULL(6) ? NULL : PG_GETARG_ARRAYTYPE_P(6), JSONBOID, "opts", &in.opts,
	                              &in.opts_nulls);
	if (in.opts_count >= 0)
		Require(awa::core::CheckSameLength("opts", in.opts_count, "kinds", in.count, &violation), violation);
	in.now = GetCurrentTimestamp();
	if (in.args_count < 0)
		in.empty_object = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));

	MemoryContext caller = CurrentMemoryContext;
	MemoryContext chunk_context = AllocSetContextCreate(caller, "awa enqueue_many chunk", ALLOCSET_DEFAULT_SIZES);
	// A call of more than one chunk: every element is checked before anything
	// is written (the errors, their SQLSTATEs and their order are those of a
	// single pass).
	if (in.count > kJobsPerChunk) {
		int64 call_bytes = 0;
		JobRow scratch;
		MemoryContextSwitchTo(chunk_context);
		for (int i = 0; i < in.count; i++) {
			CHECK_FOR_INTERRUPTS();  // every loop over a call's jobs can be cancelled
			FillElement(&in, i, &scratch, &call_bytes);
			if (i % 1024 == 1023)
				MemoryContextReset(chunk_context);
		}
		MemoryContextSwitchTo(caller);
		MemoryContextReset(chunk_context);
	}

	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	int chunk_jobs = in.count < kJobsPerChunk ? in.count : kJobsPerChunk;
	JobRow *rows = static_cast<JobRow *>(palloc0(sizeof(JobRow) * (chunk_jobs + 1)));
	int64 call_bytes = 0;
	for (int first = 0; first < in.count; first += chunk_jobs) {
		int n = in.count - first < chunk_jobs ? in.count - first : chunk_jobs;
		MemoryContextSwitchTo(chunk_context);
		for (int k = 0; k < n; k++) {
			CHECK_FOR_INTERRUPTS();
			FillElement(&in, first + k, &rows[k], &call_bytes);
		}
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "awa: SPI_connect failed");
		Oid job_seq = JobIdSequence();
		for (int k = 0; k < n; k++) {
			CHECK_FOR_INTERRUPTS();
			rows[k].job_id = SequenceNext(job_seq);
		}
		// Unique keys of a later chunk meet those of earlier ones as keys
		// this transaction holds: 23505, or with skip the earlier job's id.
		InsertJobs(rows, n, in.now, ReadyAt::kCommit);
		SPI_finish();
		MemoryContextSwitchTo(caller);
		for (int k = 0; k < n; k++) {
			CHECK_FOR_INTERRUPTS();
			bool isnull = false;
			Datum job_id = Int64GetDatum(rows[k].job_id);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &job_id, &isnull);
		}
		MemoryContextReset(chunk_context);
	}
	MemoryContextDelete(chunk_context);
	return (Datum)0;
}
