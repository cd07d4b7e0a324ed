// fn_enqueue.cpp: awa.enqueue and awa.enqueue_many.
//
// A due job is appended to its lane (job_insert.hpp): the enqueue reserves
// lane_seqs from the lane's enqueue sequence, bracketed by the ring epoch so it
// knows the queue-ring position at the reservation instant, then inserts the
// ready rows and their ready segments into that queue slot. A job whose run_at
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
	InsertJobs(&row, 1, now);
	SPI_finish();
	PG_RETURN_INT64(row.job_id);
}

// awa.enqueue_many(kinds, args, queue, priorities, run_at, max_attempts, opts) -> SETOF job_id
AWA_FUNCTION(awa_enqueue_many)
{
	awa::core::Violation violation;
	RequireArgument(fcinfo, 0, "kinds", false);
	text *queue = QueueArgument(fcinfo, 2);
	int16 max_attempts = MaxAttemptsArgument(fcinfo, 5);

	Datum *kinds, *args = NULL, *priorities = NULL, *run_ats = NULL;
	bool *kind_nulls, *args_nulls = NULL, *priority_nulls = NULL, *run_at_nulls = NULL;
	int count = ArrayElements(PG_GETARG_ARRAYTYPE_P(0), TEXTOID, "kinds", &kinds, &kind_nulls);
	int args_count = ArrayElements(PG_ARGISNULL(1) ? NULL : PG_GETARG_ARRAYTYPE_P(1), JSONBOID, "args", &args,
	                               &args_nulls);
	int priority_count = ArrayElements(PG_ARGISNULL(3) ? NULL : PG_GETARG_ARRAYTYPE_P(3), INT4OID, "priorities",
	                                   &priorities, &priority_nulls);
	int run_at_count = ArrayElements(PG_ARGISNULL(4) ? NULL : PG_GETARG_ARRAYTYPE_P(4), TIMESTAMPTZOID, "run_at",
	                                 &run_ats, &run_at_nulls);
	if (args_count >= 0)
		Require(awa::core::CheckSameLength("args", args_count, "kinds", count, &violation), violation);
	if (priority_count >= 0)
		Require(awa::core::CheckSameLength("priorities", priority_count, "kinds", count, &violation), violation);
	if (run_at_count >= 0)
		Require(awa::core::CheckSameLength("run_at", run_at_count, "kinds", count, &violation), violation);
	Datum *opts = NULL;
	bool *opts_nulls = NULL;
	int opts_count = ArrayElements(PG_ARGISNULL(6) ? NULL : PG_GETARG_ARRAYTYPE_P(6), JSONBOID, "opts", &opts, &opts_nulls);
	if (opts_count >= 0)
		Require(awa::core::CheckSameLength("opts", opts_count, "kinds", count, &violation), violation);
	TimestampTz now = GetCurrentTimestamp();
	JobRow *rows = static_cast<JobRow *>(palloc0(sizeof(JobRow) * (count + 1)));
	int64 call_bytes = 0;  // sizes of jobs[1..i], checked against awa.max_call_bytes as they are added

	Jsonb *empty_object = NULL;
	int16 *job_priority = static_cast<int16 *>(palloc(sizeof(int16) * (count + 1)));
	for (int i = 0; i < count; i++) {
		CHECK_FOR_INTERRUPTS();  // every loop over a call's jobs can be cancelled
		text *kind = kind_nulls[i] ? NULL : DatumGetTextPP(kinds[i]);
		if (!awa::core::CheckKind(kind, kind ? TextChars(kind) : 0, &violation))
			ReportElementViolation("kinds", i + 1, violation);
		kinds[i] = PointerGetDatum(kind);
		if (args_count < 0) {
			if (empty_object == NULL)
				empty_object = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));
		} else {
			if (args_nulls[i])
				ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("args[%d] must not be NULL", i + 1),
				                errhint("Pass '{}' for a job without arguments.")));
			Jsonb *arg = DatumGetJsonbP(args[i]);
			if (!JB_ROOT_IS_OBJECT(arg) || JB_ROOT_IS_SCALAR(arg))
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("args[%d] must be a JSON object", i + 1),
				                errhint("Pass an object such as '{\"id\": 42}'.")));
		}
		int32 priority = static_cast<int32>(awa::core::kDefaultPriority);
		if (priority_count >= 0) {
			if (priority_nulls[i])
				ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("priorities[%d] must not be NULL", i + 1),
				                errhint("Pass NULL for the whole array to use priority 2.")));
			priority = DatumGetInt32(priorities[i]);
			if (!awa::core::CheckPriority(priority, &violation))
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				                errmsg("priorities[%d]: %s", i + 1, violation.message), errhint("%s", violation.hint)));
		}
		job_priority[i] = static_cast<int16>(priority);
		JobRow &row = rows[i];
		row.queue = queue;
		row.priority = job_priority[i];
		row.kind = kind;
		row.args = args_count < 0 ? empty_object : DatumGetJsonbP(args[i]);
		row.run_at = (run_at_count < 0 || run_at_nulls[i]) ? now : DatumGetTimestampTz(run_ats[i]);
		row.max_attempts = max_attempts;
		row.created_at = now;
		row.from_state = kNoState;
		// Every element, with options or not: the job's size is checked there
		// (54000 naming jobs[i] past awa.max_job_bytes). `where` only names
		// options in their errors, so it is formatted only for an element that
		// has some.
		Jsonb *element_opts = (opts_count >= 0 && !opts_nulls[i]) ? DatumGetJsonbP(opts[i]) : NULL;
		char where[32] = "opts";
		if (element_opts != NULL)
			snprintf(where, sizeof(where), "opts[%d]", i + 1);
		JobOptions options = ParseJobOptions(element_opts, where, i + 1, kind, queue, row.args, now);
		row.unique_key = options.unique_key;
		row.unique_states = options.unique_states;
		row.payload = options.payload;
		row.skip_duplicate = options.unique_skip;
		call_bytes += options.bytes;
		Require(awa::core::CheckCallBytes(call_bytes, static_cast<size_t>(i) + 1, awa_max_call_bytes, &violation),
		        violation);
	}

	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	Oid job_seq = JobIdSequence();
	for (int i = 0; i < count; i++) {
		CHECK_FOR_INTERRUPTS();
		rows[i].job_id = SequenceNext(job_seq);
	}
	InsertJobs(rows, count, now);
	SPI_finish();

	for (int i = 0; i < count; i++) {
		CHECK_FOR_INTERRUPTS();
		bool isnull = false;
		Datum job_id = Int64GetDatum(rows[i].job_id);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &job_id, &isnull);
	}
	return (Datum)0;
}
