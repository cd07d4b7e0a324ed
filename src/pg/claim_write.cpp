// claim_write.cpp: see claim_write.hpp.
#include "pg/claim_write.hpp"

#include "pg/enqueue_generations.hpp"

#include "pg/key_limits.hpp"

#include "pg/core_calls.hpp"
#include "pg/claim_fence.hpp"
#include "pg/counters.hpp"
#include "pg/direct_insert.hpp"
#include "pg/rings.hpp"
#include "pg/sequences.hpp"
#include "pg/spi_plans.hpp"

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
	{
		Datum values[4] = {Int64GetDatum(lane.lane_id), Int64GetDatum(span_first),
		                   Int64GetDatum(read_next ? span_next + 1 : span_next), Int64GetDatum(walk.plan.generation)};
		ExecuteLatest(Stmt::kReadyRows, ready_slot, values, NULL);
	}
	SPITupleTable *rows = SPI_tuptable;
	uint64 row_count = SPI_processed;

	int n = static_cast<int>(walk.plan.claimed);
	Datum *job_ids = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	Datum *run_leases = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	Datum *lane_seqs = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	Datum *attempts = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	Datum *max_attempts = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	HeapTuple *chosen = static_cast<HeapTuple *>(palloc(sizeof(HeapTuple) * n));
	int found = 0;
	bool next_found = false;
	for (uint64 i = 0; i < row_count; i++) {
		CHECK_FOR_INTERRUPTS();  // every loop over rows can be cancelled
		bool isnull;
		HeapTuple tuple = rows->vals[i];
		int64 lane_seq = DatumGetInt64(SPI_getbinval(tuple, rows->tupdesc, 1, &isnull));
		if (read_next && lane_seq == head.next.seq) {
			head.next.run_at = DatumGetTimestampTz(SPI_getbinval(tuple, rows->tupdesc, kReadyRowsRunAtColumn, &isnull));
			next_found = true;
			continue;
		}
		if (!InRanges(walk.claim, walk.plan.range_count, lane_seq))
			continue;
		if (found == n)
			continue;
		chosen[found] = tuple;
		lane_seqs[found] = Int64GetDatum(lane_seq);
		job_ids[found] = SPI_getbinval(tuple, rows->tupdesc, 2, &isnull);
		run_leases[found] = Int64GetDatum(DatumGetInt64(SPI_getbinval(tuple, rows->tupdesc, 3, &isnull)) + 1);
		attempts[found] = Int16GetDatum(DatumGetInt16(SPI_getbinval(tuple, rows->tupdesc, 4, &isnull)) + 1);
		max_attempts[found] = SPI_getbinval(tuple, rows->tupdesc, 5, &isnull);
		found++;
	}
	if (read_next && !next_found)
		head.next.state = kHeadUnknown;
	if (head.next.state == kHeadKnown && !read_next) {
		// The next head is elsewhere (past cancelled jobs, in another slot):
		// one probe, rare (once per ring generation a lane crosses).
		Datum values[4] = {Int64GetDatum(lane.lane_id), Int64GetDatum(head.next.seq), Int64GetDatum(head.next.seq + 1),
		                   Int64GetDatum(walk.next_generation)};
		ExecuteLatest(Stmt::kReadyRows, core::SlotOf(walk.next_generation, ring.queue_slot_count), values, NULL, 1);
		bool isnull;
		if (SPI_processed == 1)
			head.next.run_at = DatumGetTimestampTz(
			    SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, kReadyRowsRunAtColumn, &isnull));
		else
			head.next.state = kHeadUnknown;
	}
	if (found != n)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
		                errmsg("awa: lane (%s, %d) planned %d ready rows it does not hold",
		                       text_to_cstring(queue), lane.priority, n - found)));

	FenceClaimBatchIds();
	int64 batch_id = SequenceNext(AwaObjectOid(AwaObject::kClaimBatchIdSeq));
	if (batch_id > core::kMaxClaimBatchId)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED), errmsg("awa: claim batch ids are exhausted")));
	TimestampTz claimed_at = GetCurrentTimestamp();
	Datum deadline_at =
	    DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(claimed_at), PointerGetDatum(deadline));

	// Column order of awa.ready_claim_attempt_batches and awa.lease_claim_batches
	// (04_queue_ring.sql, 05_claim_ring.sql, then 12_ring_partitions.sql).
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
	                           LaneRanges(walk.claim, walk.plan.range_count),
	                           TimestampTzGetDatum(claimed_at),
	                           Int32GetDatum(n)};
	bool attempt_nulls[13] = {false};
	// Noted before the evidence is written: the rotation leaves a ring
	// alone only while no claim has written into its current generation
	// (enqueue_generations.hpp).
	NoteQueueGenerationClaimed(walk.plan.generation);
	InsertRingRow(RingTable::kAttemptBatches, ready_slot, attempt_batch, attempt_nulls, 13);
	Datum claim_batch[16] = {Int16GetDatum(ring.claim_slot),
	                         Int16GetDatum(ready_slot),
	                         Int16GetDatum(lane.priority),
	                         Int64GetDatum(ring.claim_generation),
	                         Int64GetDatum(batch_id),
	                         Int64GetDatum(walk.plan.generation),
	                         Int64GetDatum(lane.lane_id),
	                         PointerGetDatum(queue),
	                         PointerGetDatum(construct_array(job_ids, n, INT8OID, 8, true, TYPALIGN_DOUBLE)),
	                         PointerGetDatum(construct_array(lane_seqs, n, INT8OID, 8, true, TYPALIGN_DOUBLE)),
	                         deadline_at,
	                         TimestampTzGetDatum(claimed_at),
	                         Int32GetDatum(n),
	                         PointerGetDatum(construct_array(run_leases, n, INT8OID, 8, true, TYPALIGN_DOUBLE)),
	                         PointerGetDatum(construct_array(attempts, n, INT2OID, 2, true, TYPALIGN_SHORT)),
	                         PointerGetDatum(construct_array(max_attempts, n, INT2OID, 2, true, TYPALIGN_SHORT))};
	bool claim_nulls[16] = {false};
	InsertRingRow(RingTable::kClaimBatches, ring.claim_slot, claim_batch, claim_nulls, 16);
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
		bool isnull;
		HeapTuple tuple = chosen[i];
		Datum out[12];
		bool out_nulls[12] = {false};
		core::Receipt receipt{batch_id, i, ring.claim_slot};
		out[0] = job_ids[i];
		out[1] = run_leases[i];
		out[2] = Int64GetDatum(core::EncodeReceipt(receipt));
		out[3] = SPI_getbinval(tuple, rows->tupdesc, 6, &isnull);
		out[4] = SPI_getbinval(tuple, rows->tupdesc, 7, &isnull);
		out[5] = PointerGetDatum(queue);
		out[6] = Int32GetDatum(lane.priority);
		out[7] = Int32GetDatum(DatumGetInt16(attempts[i]));
		out[8] = Int32GetDatum(DatumGetInt16(max_attempts[i]));
		out[9] = deadline_at;
		out[10] = SPI_getbinval(tuple, rows->tupdesc, 8, &isnull);
		out[11] = SPI_getbinval(tuple, rows->tupdesc, 9, &isnull);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, out_nulls);
		if (last_job_id != NULL)
			*last_job_id = Max(*last_job_id, DatumGetInt64(job_ids[i]));
	}
	return n;
}

}  // namespace awa::pg
