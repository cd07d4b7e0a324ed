// fn_enqueue.cpp: awa.enqueue and awa.enqueue_many.
//
// A due job is appended to its lane: the enqueue reserves lane_seqs from the
// lane's enqueue sequence, bracketed by the ring epoch so it knows the
// queue-ring position at the reservation instant, then inserts the ready rows
// and their ready segments into that queue slot with one statement. A
// job whose run_at is in the future goes to deferred_jobs. Everything is in
// the caller's transaction and commits with the session's synchronous_commit.
#include "core/validate.hpp"
#include "pg/arguments.hpp"
#include "pg/direct_insert.hpp"
#include "pg/errors.hpp"
#include "pg/guard.hpp"
#include "pg/lanes.hpp"
#include "pg/rings.hpp"
#include "pg/sequences.hpp"
#include "pg/spi_plans.hpp"

namespace awa::pg {

namespace {

constexpr int16 kDefaultPriority = 2;

Oid
JobIdSequence()
{
	return get_relname_relid("job_id_seq", get_namespace_oid("awa", false));
}

// Reserves one lane_seq per job (in order) and returns the ring position that
// held at the reservation instant. The epoch bracket (rings.hpp) makes ready
// generations non-decreasing along a lane without any lock shared by
// enqueuers; nextval itself holds RowExclusiveLock on the lane's enqueue
// sequence until this transaction ends, which is what a claim's gap proof
// waits for (lane_locks.hpp). If a rotation committed during the reservation,
// the reserved lane_seqs are abandoned (they become gaps that claims prove
// dead once this transaction ends) and the reservation is made again.
RingPositions
ReserveLaneSeqs(const Lane &lane, int count, int64 *lane_seqs)
{
	for (;;) {
		int64 epoch;
		RingPositions ring = CurrentRings(&epoch);
		for (int i = 0; i < count; i++)
			lane_seqs[i] = SequenceNext(lane.enqueue_seq);
		if (epoch % 2 == 0 && RingEpoch() == epoch)
			return ring;
		if (ReadRingPositions().queue_generation == ring.queue_generation)
			return ring;
	}
}

// opts: {"metadata": {...}, "tags": ["..."]}. Returns the payload to store
// (NULL when there is nothing to keep).
Jsonb *
PayloadFromOpts(Jsonb *opts)
{
	if (opts == NULL)
		return NULL;
	RequireJsonObject(opts, "opts");
	int pairs = JB_ROOT_COUNT(opts);
	if (pairs == 0)
		return NULL;

	static const char *const kUnsupported[] = {"unique", "unique_key"};
	for (const char *name : kUnsupported) {
		JsonbValue key;
		key.type = jbvString;
		key.val.string.val = const_cast<char *>(name);
		key.val.string.len = static_cast<int>(strlen(name));
		if (findJsonbValueFromContainer(&opts->root, JB_FOBJECT, &key) != NULL)
			ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("opts key \"%s\" is not supported yet", name),
			                errhint("Unique jobs are not part of this release.")));
	}

	int known = 0;
	JsonbValue key;
	key.type = jbvString;
	key.val.string.val = const_cast<char *>("metadata");
	key.val.string.len = 8;
	if (JsonbValue *metadata = findJsonbValueFromContainer(&opts->root, JB_FOBJECT, &key)) {
		known++;
		if (metadata->type != jbvBinary || !JsonContainerIsObject(metadata->val.binary.data))
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("opts.metadata must be a JSON object"),
			                errhint("Pass metadata as '{\"metadata\": {\"key\": \"value\"}}'.")));
	}
	key.val.string.val = const_cast<char *>("tags");
	key.val.string.len = 4;
	if (JsonbValue *tags = findJsonbValueFromContainer(&opts->root, JB_FOBJECT, &key)) {
		known++;
		bool valid = tags->type == jbvBinary && JsonContainerIsArray(tags->val.binary.data) &&
		             JsonContainerSize(tags->val.binary.data) <= 20;
		for (uint32 i = 0; valid && i < JsonContainerSize(tags->val.binary.data); i++) {
			JsonbValue *tag = getIthJsonbValueFromContainer(tags->val.binary.data, i);
			valid = tag != NULL && tag->type == jbvString && tag->val.string.len > 0;
		}
		if (!valid)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			                errmsg("opts.tags must be an array of at most 20 non-empty strings"),
			                errhint("Pass tags as '{\"tags\": [\"billing\", \"eu\"]}'.")));
	}
	if (known != pairs)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("opts has an unknown key"),
		                errhint("opts accepts \"metadata\" (object) and \"tags\" (array of strings).")));
	return opts;
}

}  // namespace

}  // namespace awa::pg

using namespace awa::pg;

// awa.enqueue(kind, args, queue, priority, run_at, max_attempts, opts) -> job_id
AWA_FUNCTION(awa_enqueue)
{
	text *kind = KindArgument(fcinfo, 0);
	RequireArgument(fcinfo, 1, "args", true);
	Jsonb *args = PG_GETARG_JSONB_P(1);
	RequireJsonObject(args, "args");
	text *queue = QueueArgument(fcinfo, 2);
	int16 priority = PriorityArgument(fcinfo, 3);
	bool scheduled = !PG_ARGISNULL(4);
	TimestampTz run_at = scheduled ? PG_GETARG_TIMESTAMPTZ(4) : 0;
	int16 max_attempts = MaxAttemptsArgument(fcinfo, 5);
	Jsonb *payload = PayloadFromOpts(PG_ARGISNULL(6) ? NULL : PG_GETARG_JSONB_P(6));

	TimestampTz now = GetCurrentTimestamp();
	if (!scheduled)
		run_at = now;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	int64 job_id = SequenceNext(JobIdSequence());
	if (run_at > now) {
		Datum values[9] = {Int64GetDatum(job_id),   PointerGetDatum(queue),  Int16GetDatum(priority),
		                   PointerGetDatum(kind),   PointerGetDatum(args),   TimestampTzGetDatum(run_at),
		                   Int16GetDatum(max_attempts), TimestampTzGetDatum(now), PointerGetDatum(payload)};
		char nulls[10] = "         ";
		if (payload == NULL)
			nulls[8] = 'n';
		Execute(Stmt::kInsertDeferredOne, 0, values, nulls);
	} else {
		Lane lane = EnsureLane(queue, priority);
		int64 lane_seq;
		RingPositions ring = ReserveLaneSeqs(lane, 1, &lane_seq);
		Datum ready[17] = {Int16GetDatum(ring.queue_slot),  Int64GetDatum(ring.queue_generation),
		                   PointerGetDatum(queue),          Int16GetDatum(priority),
		                   Int64GetDatum(lane_seq),         Int64GetDatum(job_id),
		                   Int64GetDatum(0),                Int16GetDatum(0),
		                   Int16GetDatum(max_attempts),     PointerGetDatum(kind),
		                   PointerGetDatum(args),           TimestampTzGetDatum(run_at),
		                   TimestampTzGetDatum(now),        (Datum)0,
		                   (Datum)0,                        (Datum)0,
		                   PointerGetDatum(payload)};
		bool ready_nulls[17] = {false};
		ready_nulls[13] = ready_nulls[14] = ready_nulls[15] = true;  // attempted_at, unique_key, unique_states
		ready_nulls[16] = payload == NULL;
		InsertRingRow(RingTable::kReadyEntries, ring.queue_slot, ready, ready_nulls, 17);
		Datum segment[8] = {Int16GetDatum(ring.queue_slot), Int64GetDatum(ring.queue_generation),
		                    PointerGetDatum(queue),         Int16GetDatum(priority),
		                    Int64GetDatum(lane_seq),        Int64GetDatum(lane_seq + 1),
		                    TimestampTzGetDatum(run_at),    TimestampTzGetDatum(now)};
		bool segment_nulls[8] = {false};
		InsertRingRow(RingTable::kReadySegments, ring.queue_slot, segment, segment_nulls, 8);
	}
	SPI_finish();
	PG_RETURN_INT64(job_id);
}

// awa.enqueue_many(kinds, args, queue, priorities, run_at, max_attempts) -> SETOF job_id
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

	Jsonb *empty_object = NULL;
	int16 *job_priority = static_cast<int16 *>(palloc(sizeof(int16) * (count + 1)));
	for (int i = 0; i < count; i++) {
		text *kind = kind_nulls[i] ? NULL : DatumGetTextPP(kinds[i]);
		if (!awa::core::CheckKind(kind, kind ? TextChars(kind) : 0, &violation))
			ereport(ERROR, (errcode(violation.code == awa::core::ViolationCode::kNullValue
			                            ? ERRCODE_NULL_VALUE_NOT_ALLOWED
			                            : ERRCODE_INVALID_PARAMETER_VALUE),
			                errmsg("kinds[%d]: %s", i + 1, violation.message), errhint("%s", violation.hint)));
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
		int32 priority = kDefaultPriority;
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
	}

	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);

	// Allocated before SPI_connect: SPI_finish frees what is allocated after it.
	Datum *job_ids = static_cast<Datum *>(palloc(sizeof(Datum) * (count + 1)));
	TimestampTz *job_run_at = static_cast<TimestampTz *>(palloc(sizeof(TimestampTz) * (count + 1)));
	TimestampTz now = GetCurrentTimestamp();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	Oid job_seq = JobIdSequence();
	for (int i = 0; i < count; i++) {
		job_ids[i] = Int64GetDatum(SequenceNext(job_seq));
		job_run_at[i] = (run_at_count < 0 || run_at_nulls[i]) ? now : DatumGetTimestampTz(run_ats[i]);
	}

	// One set-based insert per lane, lanes in priority order (the lock order).
	Datum *group_ids = static_cast<Datum *>(palloc(sizeof(Datum) * (count + 1)));
	Datum *group_kinds = static_cast<Datum *>(palloc(sizeof(Datum) * (count + 1)));
	Datum *group_args = static_cast<Datum *>(palloc(sizeof(Datum) * (count + 1)));
	Datum *group_run_at = static_cast<Datum *>(palloc(sizeof(Datum) * (count + 1)));
	Datum *group_priority = static_cast<Datum *>(palloc(sizeof(Datum) * (count + 1)));
	int64 *group_lanes = static_cast<int64 *>(palloc(sizeof(int64) * (count + 1)));
	Datum *group_lane_datums = static_cast<Datum *>(palloc(sizeof(Datum) * (count + 1)));
	Datum *run_firsts = static_cast<Datum *>(palloc(sizeof(Datum) * (count + 1)));
	Datum *run_nexts = static_cast<Datum *>(palloc(sizeof(Datum) * (count + 1)));
	for (int16 priority = 1; priority <= 4; priority++) {
		int n = 0;
		TimestampTz first_run_at = DT_NOEND;
		for (int i = 0; i < count; i++) {
			if (job_priority[i] != priority || job_run_at[i] > now)
				continue;
			group_ids[n] = job_ids[i];
			group_kinds[n] = kinds[i];
			group_args[n] = args_count < 0 ? PointerGetDatum(empty_object) : args[i];
			group_run_at[n] = TimestampTzGetDatum(job_run_at[i]);
			first_run_at = Min(first_run_at, job_run_at[i]);
			n++;
		}
		if (n == 0)
			continue;
		Lane lane = EnsureLane(queue, priority);
		RingPositions ring = ReserveLaneSeqs(lane, n, group_lanes);
		// One segment per contiguous run of lane_seqs (one run unless another
		// enqueuer of this lane interleaved).
		int runs = 0;
		for (int i = 0; i < n; i++) {
			group_lane_datums[i] = Int64GetDatum(group_lanes[i]);
			if (runs > 0 && DatumGetInt64(run_nexts[runs - 1]) == group_lanes[i]) {
				run_nexts[runs - 1] = Int64GetDatum(group_lanes[i] + 1);
			} else {
				run_firsts[runs] = Int64GetDatum(group_lanes[i]);
				run_nexts[runs] = Int64GetDatum(group_lanes[i] + 1);
				runs++;
			}
		}
		Datum values[13] = {Int64GetDatum(ring.queue_generation),
		                    PointerGetDatum(queue),
		                    Int16GetDatum(priority),
		                    PointerGetDatum(construct_array(group_lane_datums, n, INT8OID, 8, true, TYPALIGN_DOUBLE)),
		                    Int16GetDatum(max_attempts),
		                    PointerGetDatum(construct_array(group_ids, n, INT8OID, 8, true, TYPALIGN_DOUBLE)),
		                    PointerGetDatum(construct_array(group_kinds, n, TEXTOID, -1, false, TYPALIGN_INT)),
		                    PointerGetDatum(construct_array(group_args, n, JSONBOID, -1, false, TYPALIGN_INT)),
		                    PointerGetDatum(construct_array(group_run_at, n, TIMESTAMPTZOID, 8, true, TYPALIGN_DOUBLE)),
		                    TimestampTzGetDatum(now),
		                    PointerGetDatum(construct_array(run_firsts, runs, INT8OID, 8, true, TYPALIGN_DOUBLE)),
		                    PointerGetDatum(construct_array(run_nexts, runs, INT8OID, 8, true, TYPALIGN_DOUBLE)),
		                    TimestampTzGetDatum(first_run_at)};
		Execute(Stmt::kInsertReadyMany, ring.queue_slot, values, NULL);
	}

	int deferred = 0;
	for (int i = 0; i < count; i++) {
		if (job_run_at[i] <= now)
			continue;
		group_ids[deferred] = job_ids[i];
		group_kinds[deferred] = kinds[i];
		group_args[deferred] = args_count < 0 ? PointerGetDatum(empty_object) : args[i];
		group_run_at[deferred] = TimestampTzGetDatum(job_run_at[i]);
		group_priority[deferred] = Int16GetDatum(job_priority[i]);
		deferred++;
	}
	if (deferred > 0) {
		Datum values[8] = {PointerGetDatum(construct_array(group_ids, deferred, INT8OID, 8, true, TYPALIGN_DOUBLE)),
		                   PointerGetDatum(queue),
		                   PointerGetDatum(construct_array(group_priority, deferred, INT2OID, 2, true, TYPALIGN_SHORT)),
		                   PointerGetDatum(construct_array(group_kinds, deferred, TEXTOID, -1, false, TYPALIGN_INT)),
		                   PointerGetDatum(construct_array(group_args, deferred, JSONBOID, -1, false, TYPALIGN_INT)),
		                   PointerGetDatum(
		                       construct_array(group_run_at, deferred, TIMESTAMPTZOID, 8, true, TYPALIGN_DOUBLE)),
		                   Int16GetDatum(max_attempts),
		                   TimestampTzGetDatum(now)};
		Execute(Stmt::kInsertDeferredMany, 0, values, NULL);
	}
	SPI_finish();

	for (int i = 0; i < count; i++) {
		bool isnull = false;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &job_ids[i], &isnull);
	}
	return (Datum)0;
}
