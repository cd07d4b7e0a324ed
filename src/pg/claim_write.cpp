// claim_write.cpp: see claim_write.hpp.
#include "pg/claim_write.hpp"

#include <type_traits>

#include "pg/enqueue_generations.hpp"

#include "pg/key_limits.hpp"

#include "pg/core_calls.hpp"
#include "pg/claim_fence.hpp"
#include "pg/counters.hpp"
#include "pg/direct_insert.hpp"
#include "pg/lane_scan.hpp"
#include "pg/rings.hpp"
#include "pg/sequences.hpp"
#include "pg/spi_plans.hpp"

extern "C" {
#include "access/htup_details.h"
#include "utils/datum.h"
}

namespace awa::pg {

namespace {

// Multirange of the planned lane ranges.
Datum
LaneRanges(const BridgeRange *ranges, int count)
{
	TypeCacheEntry *range_type = lookup_type_cache(INT8RANGEOID, TYPECACHE_RANGE_INFO);
	RangeType **items = static_cast<RangeType **>(palloc(sizeof(RangeType *) * count));
	for (int i = 0; i < count; i++) {
		RangeBound lower = {Int64GetDatum(ranges[i].first), false, true, true};
		RangeBound upper = {Int64GetDatum(ranges[i].next), false, false, false};
		items[i] = make_range(range_type, &lower, &upper, false);
	}
	return PointerGetDatum(make_multirange(INT8MULTIRANGEOID, range_type, count, items));
}

bool
InRanges(const BridgeRange *ranges, int count, int64 lane)
{
	for (int i = 0; i < count; i++)
		if (lane >= ranges[i].first && lane < ranges[i].next)
			return true;
	return false;
}

// What a claim reads of its planned ready rows (and of the row after them,
// the lane's next head, when it is in the same slot).
struct ReadyRead {
	const BridgeRange *claim;
	int range_count;
	int64 end;        // the lane position the read stops at (exclusive)
	bool read_next;   // the position before `end` is the next head's
	int64 next_seq;
	int n;            // rows planned
	int found;
	bool next_found;
	TimestampTz next_run_at;
	Datum empty_object;  // '{}', the metadata of a job without any
	Datum *job_ids, *run_leases, *lane_seqs, *attempts, *max_attempts, *kinds, *args, *created_ats, *metadata;
};
static_assert(std::is_trivially_destructible_v<ReadyRead>, "lives across PostgreSQL errors");

void
AllocReadyRead(ReadyRead *read)
{
	Datum **all[] = {&read->job_ids, &read->run_leases,  &read->lane_seqs, &read->attempts, &read->max_attempts,
	                 &read->kinds,   &read->args,        &read->created_ats, &read->metadata};
	for (Datum **column : all)
		*column = static_cast<Datum *>(palloc(sizeof(Datum) * (read->n + 1)));
	read->empty_object = DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"));
}

// payload -> 'metadata', or '{}' when absent (as the statement this
// replaces computed it: coalesce(payload -> 'metadata', '{}'::jsonb)), in
// memory of its own; the payload detoasted to find it is freed (a claim of
// many jobs with large payloads otherwise kept every one of them to the end
// of the call: found in review).
Datum
MetadataOf(HeapTuple tuple, TupleDesc desc, Datum empty_object)
{
	bool isnull;
	Datum payload = heap_getattr(tuple, kReadyPayload, desc, &isnull);
	if (isnull)
		return empty_object;
	Jsonb *jsonb = DatumGetJsonbP(payload);
	Datum metadata = empty_object;
	if (JB_ROOT_IS_OBJECT(jsonb)) {
		JsonbValue value;
		JsonbValue *found = getKeyJsonValueFromContainer(&jsonb->root, "metadata", 8, &value);
		if (found != NULL)
			metadata = JsonbPGetDatum(JsonbValueToJsonb(found));  // (a copy)
	}
	if (reinterpret_cast<Pointer>(jsonb) != DatumGetPointer(payload))
		pfree(jsonb);
	return metadata;
}

bool
VisitReadyRow(const LaneRow &row, void *arg)
{
	ReadyRead &read = *static_cast<ReadyRead *>(arg);
	int64 lane_seq = DatumGetInt64(row.values[0]);
	if (lane_seq >= read.end)
		return false;
	CheckReadyColumns(row.desc);
	bool isnull;
	if (read.read_next && lane_seq == read.next_seq) {
		read.next_run_at = DatumGetTimestampTz(heap_getattr(row.tuple, kReadyRunAt, row.desc, &isnull));
		read.next_found = true;
		return true;
	}
	if (!InRanges(read.claim, read.range_count, lane_seq) || read.found == read.n)
		return true;
	int k = read.found++;
	read.lane_seqs[k] = Int64GetDatum(lane_seq);
	read.job_ids[k] = heap_getattr(row.tuple, kReadyJobId, row.desc, &isnull);
	read.run_leases[k] = Int64GetDatum(DatumGetInt64(heap_getattr(row.tuple, kReadyRunLease, row.desc, &isnull)) + 1);
	read.attempts[k] = Int16GetDatum(DatumGetInt16(heap_getattr(row.tuple, kReadyAttempt, row.desc, &isnull)) + 1);
	read.max_attempts[k] = heap_getattr(row.tuple, kReadyMaxAttempts, row.desc, &isnull);
	read.created_ats[k] = heap_getattr(row.tuple, kReadyCreatedAt, row.desc, &isnull);
	// (copied: the row's buffer is released after the visit)
	read.kinds[k] = datumCopy(heap_getattr(row.tuple, kReadyKind, row.desc, &isnull), false, -1);
	read.args[k] = datumCopy(heap_getattr(row.tuple, kReadyArgs, row.desc, &isnull), false, -1);
	read.metadata[k] = MetadataOf(row.tuple, row.desc, read.empty_object);
	return true;
}

// The run_at of the lane's next head at `seq`, when a probe of its slot finds it.
struct NextHead {
	int64 seq;
	bool found;
	TimestampTz run_at;
};
static_assert(std::is_trivially_destructible_v<NextHead>, "lives across PostgreSQL errors");

bool
VisitNextHead(const LaneRow &row, void *arg)
{
	NextHead &next = *static_cast<NextHead *>(arg);
	if (DatumGetInt64(row.values[0]) != next.seq)
		return false;
	CheckReadyColumns(row.desc);
	bool isnull;
	next.run_at = DatumGetTimestampTz(heap_getattr(row.tuple, kReadyRunAt, row.desc, &isnull));
	next.found = true;
	return true;  // counted: the child stays locked, as the statement's read kept it (the limit is 1)
}

}  // namespace

int
WriteClaim(text *queue, const Lane &lane, const RingPositions &ring, const LaneWalk &walk, Interval *deadline,
           ReturnSetInfo *rsinfo, int64 *last_job_id)
{
	// Read the planned rows, and the lane's next head when it is the row
	// right after them in the same slot (its run_at: counters.hpp, "oldest
	// available job"); a next head elsewhere is left unknown.
	int ready_slot = core::SlotOf(walk.plan.generation, ring.queue_slot_count);
	int64 span_first = walk.claim[0].first;
	int64 span_next = walk.claim[walk.plan.range_count - 1].next;
	ClaimHeadNote head = walk.head;
	bool read_next = head.next.state == kHeadKnown && head.next.seq == span_next &&
	                 walk.next_generation == walk.plan.generation;

	int n = static_cast<int>(walk.plan.claimed);
	ReadyRead read{};
	read.claim = walk.claim;
	read.range_count = walk.plan.range_count;
	read.end = read_next ? span_next + 1 : span_next;
	read.read_next = read_next;
	read.next_seq = head.next.seq;
	read.n = n;
	AllocReadyRead(&read);
	// Through the lane index, without the executor (lane_scan.hpp): the
	// statement it replaces cost some 46,000 instructions a claim, most of
	// them the executor's start (callgrind, bench/drain_instructions.sh).
	(void)ScanLane(LaneFamily::kReady, ready_slot, lane.lane_id, span_first, walk.plan.generation,
	               read.end - span_first, VisitReadyRow, &read, read.end);
	int found = read.found;
	if (read_next)
		head.next.run_at = read.next_run_at;
	if (read_next && !read.next_found)
		head.next.state = kHeadUnknown;
	if (head.next.state == kHeadKnown && !read_next) {
		// The next head is elsewhere (past cancelled jobs, in another slot):
		// one probe, rare (once per ring generation a lane crosses).
		NextHead next{head.next.seq, false, 0};
		(void)ScanLane(LaneFamily::kReady, core::SlotOf(walk.next_generation, ring.queue_slot_count), lane.lane_id,
		               head.next.seq, walk.next_generation, 1, VisitNextHead, &next, head.next.seq + 1);
		if (next.found)
			head.next.run_at = next.run_at;
		else
			head.next.state = kHeadUnknown;
	}
	if (found != n)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
		                errmsg("awa: lane (%s, %d) planned %d ready rows it does not hold",
		                       text_to_cstring(queue), lane.priority, n - found)));
	Datum *job_ids = read.job_ids;
	Datum *run_leases = read.run_leases;
	Datum *lane_seqs = read.lane_seqs;
	Datum *attempts = read.attempts;
	Datum *max_attempts = read.max_attempts;

	FenceClaimBatchIds();
	int64 batch_id = SequenceNext(AwaObjectOid(AwaObject::kClaimBatchIdSeq));
	if (batch_id > core::kMaxClaimBatchId)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED), errmsg("awa: claim batch ids are exhausted")));
	TimestampTz claimed_at = GetCurrentTimestamp();
	Datum deadline_at =
	    DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(claimed_at), PointerGetDatum(deadline));

	// Column order of awa.ready_claim_attempt_batches and awa.lease_claim_batches
	// (04_queue_ring.sql, 05_claim_ring.sql, then 12_ring_partitions.sql).
	// lane_ranges is NULL when the claim took the one range [span_first,
	// span_next) (every claim that passed no open enqueue): the row then ends
	// before it (04_queue_ring.sql).
	bool one_range = walk.plan.range_count == 1 && walk.claim[0].first == span_first && walk.claim[0].next == span_next;
	Datum attempt_batch[13] = {Int16GetDatum(ready_slot),
	                           Int16GetDatum(lane.priority),
	                           Int16GetDatum(ring.claim_slot),
	                           Int64GetDatum(walk.plan.generation),
	                           Int64GetDatum(batch_id),
	                           Int64GetDatum(lane.lane_id),
	                           PointerGetDatum(queue),
	                           Int64GetDatum(ring.claim_generation),
	                           Int64GetDatum(span_first),
	                           Int64GetDatum(span_next),
	                           TimestampTzGetDatum(claimed_at),
	                           Int32GetDatum(n),
	                           one_range ? (Datum)0 : LaneRanges(walk.claim, walk.plan.range_count)};
	bool attempt_nulls[13] = {false};
	attempt_nulls[12] = one_range;
	// Noted before the evidence is written: the rotation leaves a ring
	// alone only while no claim has written into its current generation
	// (enqueue_generations.hpp).
	NoteQueueGenerationClaimed(walk.plan.generation);
	InsertRingRow(RingTable::kAttemptBatches, ready_slot, attempt_batch, attempt_nulls, 13);
	// lane_seqs is NULL when the positions are first, first + 1, ... in claim
	// order (core/lane_positions.hpp): a batch-1 claim's row then ends before it.
	bool consecutive = core::FollowFirst(n, [lane_seqs](int32 i) { return DatumGetInt64(lane_seqs[i]); });
	// job_ids likewise when the ids are first, first + 1, ... (one job, or
	// jobs enqueued together): the row stores first_job_id only.
	bool consecutive_ids = core::FollowFirst(n, [job_ids](int32 i) { return DatumGetInt64(job_ids[i]); });
	Datum claim_batch[18] = {
	    Int16GetDatum(ring.claim_slot),
	    Int16GetDatum(ready_slot),
	    Int16GetDatum(lane.priority),
	    Int64GetDatum(ring.claim_generation),
	    Int64GetDatum(batch_id),
	    Int64GetDatum(walk.plan.generation),
	    Int64GetDatum(lane.lane_id),
	    lane_seqs[0],
	    PointerGetDatum(queue),
	    job_ids[0],
	    deadline_at,
	    TimestampTzGetDatum(claimed_at),
	    Int32GetDatum(n),
	    PointerGetDatum(construct_array(run_leases, n, INT8OID, 8, true, TYPALIGN_DOUBLE)),
	    PointerGetDatum(construct_array(attempts, n, INT2OID, 2, true, TYPALIGN_SHORT)),
	    PointerGetDatum(construct_array(max_attempts, n, INT2OID, 2, true, TYPALIGN_SHORT)),
	    consecutive_ids ? (Datum)0 : PointerGetDatum(construct_array(job_ids, n, INT8OID, 8, true, TYPALIGN_DOUBLE)),
	    consecutive ? (Datum)0 : PointerGetDatum(construct_array(lane_seqs, n, INT8OID, 8, true, TYPALIGN_DOUBLE))};
	bool claim_nulls[18] = {false};
	claim_nulls[16] = consecutive_ids;
	claim_nulls[17] = consecutive;
	InsertRingRow(RingTable::kClaimBatches, ring.claim_slot, claim_batch, claim_nulls, 18);
	CountMove(queue, static_cast<int>(core::JobState::kAvailable), static_cast<int>(core::JobState::kRunning), n);
	CountKeyedAttemptsStarted(queue, lane.lane_id, lane.keyed, n);
	if (lane.keyed)
		NoteKeyedAvailable(queue, n);  // the heads kept are of the lanes without a key
	else
		NoteHeadClaim(queue, lane.priority, span_first, n, head);

	// Emit: job_id, run_lease, receipt_id, kind, args, queue, priority,
	// attempt, max_attempts, deadline_at, created_at, metadata.
	for (int i = 0; i < n; i++) {
		CHECK_FOR_INTERRUPTS();
		Datum out[12];
		bool out_nulls[12] = {false};
		core::Receipt receipt{batch_id, i, ring.claim_slot};
		out[0] = job_ids[i];
		out[1] = run_leases[i];
		out[2] = Int64GetDatum(core::EncodeReceipt(receipt));
		out[3] = read.kinds[i];
		out[4] = read.args[i];
		out[5] = PointerGetDatum(queue);
		out[6] = Int32GetDatum(lane.priority);
		out[7] = Int32GetDatum(DatumGetInt16(attempts[i]));
		out[8] = Int32GetDatum(DatumGetInt16(max_attempts[i]));
		out[9] = deadline_at;
		out[10] = read.created_ats[i];
		out[11] = read.metadata[i];
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, out_nulls);
		if (last_job_id != NULL)
			*last_job_id = Max(*last_job_id, DatumGetInt64(job_ids[i]));
	}
	return n;
}

}  // namespace awa::pg
