// fn_claim.cpp: awa.claim.
//
// One server-side step. For each lane of the queue, most urgent first, whose
// claim cursor is behind its enqueue cursor: try-lock the lane (never wait; a
// busy lane is some other claimer's), then under the lock
//   1. load what is visible beyond the cursor: committed ready segments and
//      the lanes already handed out by committed claims (attempt batches);
//   2. plan (src/core/claim_plan): move the cursor over the spent prefix, take
//      up to max_jobs committed unspent lanes from one generation;
//   3. on a hole below a committed lane, prove it dead by taking ShareLock on
//      the lane's enqueue sequence (every transaction that reserved a
//      lane_seq has then ended) and looking again; a hole that is still
//      empty is spent;
//   4. write the claim evidence (attempt batch in the ready slot, compact
//      claim batch in the claim slot) and return the jobs.
// The claim never moves the cursor past its own lanes: that happens at the
// next claim of the lane, from this claim's evidence, once it is committed and
// visible. A claim lost before its commit reached disk therefore leaves its
// jobs claimable, and an advance can only apply where its evidence exists.
#include "core/lifecycle.hpp"
#include "core/receipt.hpp"
#include "core/ring.hpp"
#include "core/validate.hpp"
#include "pg/arguments.hpp"
#include "pg/claim_bridge.hpp"
#include "pg/counters.hpp"
#include "pg/direct_insert.hpp"
#include "pg/errors.hpp"
#include "pg/guard.hpp"
#include "pg/gucs.hpp"
#include "pg/inflight.hpp"
#include "pg/lane_locks.hpp"
#include "pg/lanes.hpp"
#include "pg/queue_settings.hpp"
#include "pg/rings.hpp"
#include "pg/sequences.hpp"
#include "pg/spi_plans.hpp"

namespace awa::pg {

namespace {

// ---------------------------------------------------------------------------
// Per-backend hint: a generation floor for a lane's head. An entry says "every
// lane_seq above `cursor` is in `generation` or a later one"; it is learnt
// from a visible committed lane <= cursor (lanes take generations in lane
// order), never from what a claim planned: a claim above the cursor may still
// roll back and leave its lanes, in an earlier generation, as the head
// (issue 9, finding 1). The claim cursor only moves forward, so an entry stays
// true while the lane's cursor is at or past its `cursor`. Keyed by the lane's
// claim sequence OID (unique per lane incarnation).
// ---------------------------------------------------------------------------
constexpr int kHeadCacheSize = 256;
struct HeadCacheEntry {
	Oid claim_seq;
	int64 cursor;
	int64 generation;
};
HeadCacheEntry head_cache[kHeadCacheSize];

// The floor known for lanes above `cursor`, or `fallback`.
int64
HeadGenerationFloor(Oid claim_seq, int64 cursor, int64 fallback)
{
	const HeadCacheEntry &entry = head_cache[claim_seq % kHeadCacheSize];
	if (entry.claim_seq != claim_seq || cursor < entry.cursor)
		return fallback;
	return Max(entry.generation, fallback);
}

void
RememberHeadGenerationFloor(Oid claim_seq, int64 cursor, int64 generation)
{
	if (generation < 0)
		return;
	head_cache[claim_seq % kHeadCacheSize] = HeadCacheEntry{claim_seq, cursor, generation};
}

// ---------------------------------------------------------------------------
// What the claimer has loaded of one lane.
// ---------------------------------------------------------------------------
struct LaneView {
	BridgeCommitted *committed;
	int committed_count;
	int committed_capacity;
	BridgeRange *spent;
	int spent_count;
	int spent_capacity;
	BridgeRange *own;  // lanes this transaction claimed (uncommitted): reserved, not spent
	int own_count;
	int own_capacity;
	int64 first_generation;
	int64 last_generation;  // loaded generations: [first, last]
	bool page_full;           // the last segments page of last_generation was full
	int64 page_after;         // ... and ended at this next_lane_seq
	bool evidence_truncated;  // more evidence than one page: stop at what is known
};

void
AddCommitted(LaneView *view, int64 first, int64 next, int64 generation)
{
	if (view->committed_count == view->committed_capacity) {
		view->committed_capacity *= 2;
		view->committed = static_cast<BridgeCommitted *>(
		    repalloc(view->committed, sizeof(BridgeCommitted) * view->committed_capacity));
	}
	view->committed[view->committed_count++] = BridgeCommitted{first, next, generation};
}

void
AddSpent(LaneView *view, int64 first, int64 next)
{
	if (view->spent_count == view->spent_capacity) {
		view->spent_capacity *= 2;
		view->spent = static_cast<BridgeRange *>(repalloc(view->spent, sizeof(BridgeRange) * view->spent_capacity));
	}
	view->spent[view->spent_count++] = BridgeRange{first, next};
}

void
AddOwn(LaneView *view, int64 first, int64 next)
{
	if (view->own_count == view->own_capacity) {
		view->own_capacity *= 2;
		view->own = static_cast<BridgeRange *>(repalloc(view->own, sizeof(BridgeRange) * view->own_capacity));
	}
	view->own[view->own_count++] = BridgeRange{first, next};
}

struct LaneQuery {
	text *queue;
	int16 priority;
	int64 cursor;
	int slot_count;
	int64 page;
};

// Loads one page of committed segments of `generation` after lane `after`.
void
LoadSegments(LaneView *view, const LaneQuery &q, int64 generation, int64 after)
{
	int slot = core::SlotOf(generation, q.slot_count);
	Datum values[5] = {PointerGetDatum(q.queue), Int16GetDatum(q.priority), Int64GetDatum(generation),
	                   Int64GetDatum(after), Int64GetDatum(q.page)};
	ExecuteLatest(Stmt::kLaneSegments, slot, values, NULL);
	TupleDesc desc = SPI_tuptable->tupdesc;
	int64 last_next = after;
	for (uint64 i = 0; i < SPI_processed; i++) {
		bool isnull;
		int64 first = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], desc, 1, &isnull));
		int64 next = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], desc, 2, &isnull));
		AddCommitted(view, first, next, generation);
		last_next = next;
	}
	view->page_full = static_cast<int64>(SPI_processed) == q.page;
	view->page_after = last_next;
}

// Loads a generation: its first segments page and its claim evidence. The
// evidence is read in lane order, at most kEvidencePage batches; when more
// exist, what is known to be spent ends at the last batch read, so committed
// ranges beyond that bound are dropped from the view (they are claimed by a
// later call once the cursor has moved). Nothing unproven is ever planned.
constexpr int64 kEvidencePage = 4096;
constexpr int64 kMaxSegmentPage = 65536;

void
LoadGeneration(LaneView *view, const LaneQuery &q, int64 generation)
{
	int slot = core::SlotOf(generation, q.slot_count);
	LoadSegments(view, q, generation, q.cursor);
	Datum values[5] = {PointerGetDatum(q.queue), Int16GetDatum(q.priority), Int64GetDatum(generation),
	                   Int64GetDatum(q.cursor), Int64GetDatum(kEvidencePage)};
	ExecuteLatest(Stmt::kLaneEvidence, slot, values, NULL);
	TupleDesc desc = SPI_tuptable->tupdesc;
	TypeCacheEntry *multirange_type = lookup_type_cache(INT8MULTIRANGEOID, TYPECACHE_MULTIRANGE_INFO);
	TypeCacheEntry *range_type = multirange_type->rngtype;
	int64 known_until = PG_INT64_MAX;
	for (uint64 i = 0; i < SPI_processed; i++) {
		bool isnull;
		MultirangeType *ranges = DatumGetMultirangeTypeP(SPI_getbinval(SPI_tuptable->vals[i], desc, 1, &isnull));
		bool own = TransactionIdIsCurrentTransactionId(
		    DatumGetTransactionId(SPI_getbinval(SPI_tuptable->vals[i], desc, 3, &isnull)));
		int32 range_count;
		RangeType **items;
		multirange_deserialize(range_type, ranges, &range_count, &items);
		for (int32 r = 0; r < range_count; r++) {
			RangeBound lower, upper;
			bool empty;
			range_deserialize(range_type, items[r], &lower, &upper, &empty);
			if (empty)
				continue;
			// Evidence written by this transaction is not committed: it
			// could still roll back, so the cursor must not pass it.
			if (own)
				AddOwn(view, DatumGetInt64(lower.val), DatumGetInt64(upper.val));
			else
				AddSpent(view, DatumGetInt64(lower.val), DatumGetInt64(upper.val));
		}
		known_until = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], desc, 2, &isnull));
	}
	bool evidence_full = static_cast<int64>(SPI_processed) == kEvidencePage;
	if (!evidence_full)
		known_until = PG_INT64_MAX;
	// Tombstones (cancelled available jobs) are spent lanes too.
	ExecuteLatest(Stmt::kLaneTombstones, slot, values, NULL);
	desc = SPI_tuptable->tupdesc;
	for (uint64 i = 0; i < SPI_processed; i++) {
		bool isnull;
		int64 lane = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], desc, 1, &isnull));
		bool own = TransactionIdIsCurrentTransactionId(
		    DatumGetTransactionId(SPI_getbinval(SPI_tuptable->vals[i], desc, 2, &isnull)));
		if (own)
			AddOwn(view, lane, lane + 1);
		else
			AddSpent(view, lane, lane + 1);
		if (static_cast<int64>(SPI_processed) == kEvidencePage && i + 1 == SPI_processed)
			known_until = Min(known_until, lane + 1);
	}
	if (evidence_full || static_cast<int64>(SPI_processed) == kEvidencePage) {
		int kept = 0;
		for (int i = 0; i < view->committed_count; i++) {
			BridgeCommitted range = view->committed[i];
			if (range.first >= known_until)
				continue;
			range.next = Min(range.next, known_until);
			view->committed[kept++] = range;
		}
		view->committed_count = kept;
		view->page_full = false;
		view->evidence_truncated = true;
	}
	view->last_generation = generation;
}

void
ResetView(LaneView *view, int64 first_generation)
{
	view->committed_count = 0;
	view->spent_count = 0;
	view->own_count = 0;
	view->first_generation = first_generation;
	view->last_generation = first_generation - 1;
	view->page_full = false;
	view->page_after = 0;
	view->evidence_truncated = false;
}

// An empty view whose walk starts at `first_generation`.
LaneView
NewView(int64 first_generation)
{
	LaneView view;
	view.committed_capacity = 64;
	view.committed = static_cast<BridgeCommitted *>(palloc(sizeof(BridgeCommitted) * view.committed_capacity));
	view.spent_capacity = 16;
	view.spent = static_cast<BridgeRange *>(palloc(sizeof(BridgeRange) * view.spent_capacity));
	view.own_capacity = 16;
	view.own = static_cast<BridgeRange *>(palloc(sizeof(BridgeRange) * view.own_capacity));
	ResetView(&view, first_generation);
	return view;
}

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

// When the lane's head became due: first_run_at of the segment holding the
// first lane past the cursor and past the claimed lanes right after it (the
// cursor lags until the next claim of the lane); `fallback` when the lane
// shows none.
TimestampTz
HeadRunAt(text *queue, const Lane &lane, const RingPositions &ring, TimestampTz fallback)
{
	LaneQuery q;
	q.queue = queue;
	q.priority = lane.priority;
	q.cursor = SequenceValue(lane.claim_seq);
	q.slot_count = ring.queue_slot_count;
	q.page = 64;
	int64 oldest = core::OldestLiveGeneration(ring.queue_generation, ring.queue_slot_count);
	int64 start = Min(HeadGenerationFloor(lane.claim_seq, q.cursor, oldest), ring.queue_generation);
	LaneView view = NewView(start);
	LoadGeneration(&view, q, start);
	// Walk over the spent prefix (claimed, own or tombstoned lanes).
	int64 position = q.cursor + 1;
	for (bool moved = true; moved;) {
		moved = false;
		for (int i = 0; i < view.spent_count; i++)
			if (view.spent[i].first <= position && position < view.spent[i].next) {
				position = view.spent[i].next;
				moved = true;
			}
		for (int i = 0; i < view.own_count; i++)
			if (view.own[i].first <= position && position < view.own[i].next) {
				position = view.own[i].next;
				moved = true;
			}
	}
	for (int64 generation = start; generation <= ring.queue_generation; generation++) {
		// The segment holding `position` is the first whose end is past it.
		Datum values[4] = {PointerGetDatum(queue), Int16GetDatum(lane.priority), Int64GetDatum(position),
		                   Int64GetDatum(generation)};
		ExecuteLatest(Stmt::kHeadRunAt, core::SlotOf(generation, ring.queue_slot_count), values, NULL, 1);
		if (SPI_processed == 1) {
			bool isnull;
			return DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		}
	}
	return fallback;
}

struct LaneOrder {
	int index;
	int effective;
	TimestampTz head;
};

int
CompareLaneOrder(const void *a, const void *b)
{
	const LaneOrder &x = *static_cast<const LaneOrder *>(a);
	const LaneOrder &y = *static_cast<const LaneOrder *>(b);
	if (x.effective != y.effective)
		return x.effective < y.effective ? -1 : 1;
	if (x.head != y.head)
		return x.head < y.head ? -1 : 1;  // equal urgency: the longer wait first
	return x.index < y.index ? -1 : (x.index > y.index ? 1 : 0);
}

struct ClaimRequest {
	text *queue;
	int32 max_jobs;
	Interval *deadline;
	ReturnSetInfo *rsinfo;
	// Only move the cursor over the lane's spent prefix (maintenance of an
	// idle lane, whose cursor otherwise lags until its next claim); claim
	// nothing and never wait for a gap proof.
	bool advance_only;
};

// Claims from one lane the caller holds the claim lock of. Returns the number
// of jobs emitted; *released says whether the lane lock could be released
// before commit (the planned lanes are in the in-flight registry).
int
ClaimFromLane(const Lane &lane, const RingPositions &ring, const ClaimRequest &request, bool *released)
{
	*released = false;
	// Other claims' planned lanes, read before any evidence snapshot: a claim
	// that leaves the registry has already made its outcome visible.
	BridgeRange reserved[kMaxInflightPerLane];
	int reserved_count = InflightRanges(lane.lane_id, reserved);

	LaneQuery q;
	q.queue = request.queue;
	q.priority = lane.priority;
	q.cursor = SequenceValue(lane.claim_seq);
	q.slot_count = ring.queue_slot_count;
	// Segments per page: the first page covers the claim and a short lag of
	// the cursor; a walk that runs past it loads pages twice as large each
	// time (a cursor lagging behind many in-flight single-job claims).
	q.page = 2 * static_cast<int64>(request.max_jobs) + 32;

	int64 oldest = core::OldestLiveGeneration(ring.queue_generation, ring.queue_slot_count);
	int64 start = Min(HeadGenerationFloor(lane.claim_seq, q.cursor, oldest), ring.queue_generation);

	LaneView view = NewView(start);
	LoadGeneration(&view, q, start);

	// An advance plans one lane: the planner walks the spent prefix first.
	int32 plan_max = request.advance_only ? 1 : request.max_jobs;
	int gap_timeout_ms = request.advance_only ? 0 : awa_gap_proof_lock_timeout_ms;
	BridgeRange *claim = static_cast<BridgeRange *>(palloc(sizeof(BridgeRange) * plan_max));
	BridgePlan plan;
	// Lanes up to proof_horizon were reserved before a gap proof was granted:
	// a hole among them that is still empty after the proof's re-read is dead.
	// Holes above it were reserved later and need a proof of their own.
	int64 proof_horizon = 0;
	char error[256];
	for (int step = 0;; step++) {
		if (step > 100000)
			elog(ERROR, "awa: claim on lane " INT64_FORMAT " made no progress", lane.lane_id);
		// Reserved = other claims in flight + this transaction's own claims.
		int all_reserved = reserved_count + view.own_count;
		BridgeRange *reserved_all = static_cast<BridgeRange *>(palloc(sizeof(BridgeRange) * (all_reserved + 1)));
		memcpy(reserved_all, reserved, sizeof(BridgeRange) * reserved_count);
		memcpy(reserved_all + reserved_count, view.own, sizeof(BridgeRange) * view.own_count);
		if (!PlanClaimBridge(q.cursor, view.committed, view.committed_count, view.spent, view.spent_count,
		                     reserved_all, all_reserved, plan_max, &plan, claim, error, sizeof(error)))
			elog(ERROR, "awa: claim planning failed: %s", error);
		pfree(reserved_all);
		if (plan.claimed >= plan_max || view.evidence_truncated)
			break;
		// The walk reached lanes beyond the loaded segments: what lies there
		// is unknown, not missing. Load more before deciding anything.
		if (view.page_full && plan.position >= view.page_after) {
			q.page = Min(q.page * 2, kMaxSegmentPage);
			LoadSegments(&view, q, view.last_generation, view.page_after);
			continue;
		}
		if (plan.stop == kStopGap) {
			if (plan.gap.first > proof_horizon) {
				// Wait (bounded) until no transaction holds a reservation of
				// this lane, note how far reservations went, and look again
				// from the start generation with a fresh snapshot (the loop
				// pages forward as before). Then let producers go on.
				if (!LockLaneReservations(lane.enqueue_seq, gap_timeout_ms))
					break;
				proof_horizon = SequenceValue(lane.enqueue_seq);
				ResetView(&view, start);
				LoadGeneration(&view, q, start);
				UnlockLaneReservations(lane.enqueue_seq);
				continue;
			}
			// Still empty although every reservation up to the horizon had
			// ended when the view was read: the enqueue that reserved it
			// rolled back (or died in a crash). It holds nothing.
			AddSpent(&view, plan.gap.first, Min(plan.gap.next, proof_horizon + 1));
			continue;
		}
		if (plan.stop == kStopEnd && plan.claimed == 0 && view.last_generation < ring.queue_generation) {
			LoadGeneration(&view, q, view.last_generation + 1);
			continue;
		}
		break;
	}

	if (plan.new_cursor > q.cursor)
		SequenceSet(lane.claim_seq, plan.new_cursor);
	RememberHeadGenerationFloor(lane.claim_seq, plan.new_cursor, plan.head_generation_floor);
	if (request.advance_only)
		return plan.new_cursor > q.cursor ? 1 : 0;
	if (plan.claimed == 0)
		return 0;

	// The planned lanes are decided. Once they are in the in-flight registry
	// no other claim can plan them, so the lane is free for the next claimer
	// while this one reads its rows, writes its evidence and commits.
	if (awa_early_lane_release && RegisterInflight(lane.lane_id, claim, plan.range_count)) {
		UnlockLaneClaim(lane.lane_id);
		*released = true;
	}

	// Read the planned rows.
	int ready_slot = core::SlotOf(plan.generation, ring.queue_slot_count);
	int64 span_first = claim[0].first;
	int64 span_next = claim[plan.range_count - 1].next;
	{
		Datum values[5] = {PointerGetDatum(request.queue), Int16GetDatum(lane.priority), Int64GetDatum(span_first),
		                   Int64GetDatum(span_next), Int64GetDatum(plan.generation)};
		ExecuteLatest(Stmt::kReadyRows, ready_slot, values, NULL);
	}
	SPITupleTable *rows = SPI_tuptable;
	uint64 row_count = SPI_processed;

	int n = static_cast<int>(plan.claimed);
	Datum *job_ids = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	Datum *run_leases = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	Datum *lane_seqs = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	Datum *attempts = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	Datum *max_attempts = static_cast<Datum *>(palloc(sizeof(Datum) * n));
	HeapTuple *chosen = static_cast<HeapTuple *>(palloc(sizeof(HeapTuple) * n));
	int found = 0;
	for (uint64 i = 0; i < row_count; i++) {
		bool isnull;
		HeapTuple tuple = rows->vals[i];
		int64 lane_seq = DatumGetInt64(SPI_getbinval(tuple, rows->tupdesc, 1, &isnull));
		if (!InRanges(claim, plan.range_count, lane_seq))
			continue;
		if (found == n)
			break;
		chosen[found] = tuple;
		lane_seqs[found] = Int64GetDatum(lane_seq);
		job_ids[found] = SPI_getbinval(tuple, rows->tupdesc, 2, &isnull);
		run_leases[found] = Int64GetDatum(DatumGetInt64(SPI_getbinval(tuple, rows->tupdesc, 3, &isnull)) + 1);
		attempts[found] = Int16GetDatum(DatumGetInt16(SPI_getbinval(tuple, rows->tupdesc, 4, &isnull)) + 1);
		max_attempts[found] = SPI_getbinval(tuple, rows->tupdesc, 5, &isnull);
		found++;
	}
	if (found != n)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
		                errmsg("awa: lane (%s, %d) has segments for %d ready rows it does not hold",
		                       text_to_cstring(request.queue), lane.priority, n - found)));

	int64 batch_id = SequenceNext(AwaObjectOid(AwaObject::kClaimBatchIdSeq));
	if (batch_id > core::kMaxClaimBatchId)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED), errmsg("awa: claim batch ids are exhausted")));
	TimestampTz claimed_at = GetCurrentTimestamp();
	Datum deadline_at =
	    DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(claimed_at), PointerGetDatum(request.deadline));

	Datum attempt_batch[12] = {Int16GetDatum(ready_slot),
	                           Int64GetDatum(plan.generation),
	                           Int64GetDatum(batch_id),
	                           PointerGetDatum(request.queue),
	                           Int16GetDatum(lane.priority),
	                           Int16GetDatum(ring.claim_slot),
	                           Int64GetDatum(ring.claim_generation),
	                           Int64GetDatum(span_first),
	                           Int64GetDatum(span_next),
	                           Int32GetDatum(n),
	                           LaneRanges(claim, plan.range_count),
	                           TimestampTzGetDatum(claimed_at)};
	bool attempt_nulls[12] = {false};
	InsertRingRow(RingTable::kAttemptBatches, ready_slot, attempt_batch, attempt_nulls, 12);
	Datum claim_batch[15] = {Int16GetDatum(ring.claim_slot),
	                         Int64GetDatum(ring.claim_generation),
	                         Int64GetDatum(batch_id),
	                         Int16GetDatum(ready_slot),
	                         Int64GetDatum(plan.generation),
	                         PointerGetDatum(request.queue),
	                         Int16GetDatum(lane.priority),
	                         Int32GetDatum(n),
	                         PointerGetDatum(construct_array(job_ids, n, INT8OID, 8, true, TYPALIGN_DOUBLE)),
	                         PointerGetDatum(construct_array(run_leases, n, INT8OID, 8, true, TYPALIGN_DOUBLE)),
	                         PointerGetDatum(construct_array(lane_seqs, n, INT8OID, 8, true, TYPALIGN_DOUBLE)),
	                         PointerGetDatum(construct_array(attempts, n, INT2OID, 2, true, TYPALIGN_SHORT)),
	                         PointerGetDatum(construct_array(max_attempts, n, INT2OID, 2, true, TYPALIGN_SHORT)),
	                         deadline_at,
	                         TimestampTzGetDatum(claimed_at)};
	bool claim_nulls[15] = {false};
	InsertRingRow(RingTable::kClaimBatches, ring.claim_slot, claim_batch, claim_nulls, 15);
	CountMove(request.queue, static_cast<int>(core::JobState::kAvailable), static_cast<int>(core::JobState::kRunning), n);

	// Emit: job_id, run_lease, receipt_id, kind, args, queue, priority,
	// attempt, max_attempts, deadline_at, created_at, metadata.
	for (int i = 0; i < n; i++) {
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
		out[5] = PointerGetDatum(request.queue);
		out[6] = Int32GetDatum(lane.priority);
		out[7] = Int32GetDatum(DatumGetInt16(attempts[i]));
		out[8] = Int32GetDatum(DatumGetInt16(max_attempts[i]));
		out[9] = deadline_at;
		out[10] = SPI_getbinval(tuple, rows->tupdesc, 8, &isnull);
		out[11] = SPI_getbinval(tuple, rows->tupdesc, 9, &isnull);
		tuplestore_putvalues(request.rsinfo->setResult, request.rsinfo->setDesc, out, out_nulls);
	}
	return n;
}

// Judges a deadline as the claim will apply it (calendar months and days), so
// an interval like '1 month -29 days' that can end before it starts is refused.
void
CheckClaimDeadline(Interval *deadline, TimestampTz now)
{
	core::Violation violation;
	TimestampTz probe = DatumGetTimestampTz(
	    DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(now), PointerGetDatum(deadline)));
	Require(core::CheckDeadline(probe - now, &violation), violation);
}

}  // namespace

}  // namespace awa::pg

using namespace awa::pg;

// awa.claim(queue, max_jobs, deadline) -> SETOF jobs
AWA_FUNCTION(awa_claim)
{
	ClaimRequest request;
	request.queue = QueueArgument(fcinfo, 0);
	request.max_jobs = MaxJobsArgument(fcinfo, 1);
	request.deadline = PG_ARGISNULL(2) ? NULL : PG_GETARG_INTERVAL_P(2);
	TimestampTz now = GetCurrentTimestamp();
	if (request.deadline != NULL)
		CheckClaimDeadline(request.deadline, now);

	request.advance_only = false;
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	request.rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	QueueSettings settings = SettingsOf(request.queue);
	if (settings.paused) {
		SPI_finish();
		return (Datum)0;
	}
	if (request.deadline == NULL) {
		// The queue's default deadline, else five minutes.
		request.deadline = static_cast<Interval *>(palloc0(sizeof(Interval)));
		if (settings.has_deadline)
			*request.deadline = settings.deadline;
		else
			request.deadline->time = 5 * 60 * USECS_PER_SEC;
	}

	// A claim that is its own transaction does not wait for its WAL flush
	// while it holds the lane (docs/architecture.md, "Asynchronous claim
	// commit"); inside a client's transaction block the client's setting stands.
	if (awa_async_claim_commit && !IsTransactionBlock())
		(void)set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0,
		                        false);

	Lane lanes[kMaxLanesPerQueue];
	int lane_count = LanesOfQueue(request.queue, lanes);
	LaneOrder order[kMaxLanesPerQueue];
	int candidates = 0;
	for (int i = 0; i < lane_count; i++) {
		// Cheap check first: an empty lane costs two sequence reads.
		if (SequenceValue(lanes[i].claim_seq) >= SequenceValue(lanes[i].enqueue_seq))
			continue;
		order[candidates++] = LaneOrder{i, lanes[i].priority, 0};
	}
	bool have_ring = false;
	RingPositions ring;
	if (candidates > 1 && settings.aging_micros > 0) {
		// Priority aging: a lane whose head has waited competes as if it
		// were one level more urgent per aging interval; it keeps its lane.
		int64 epoch;
		ring = CurrentRings(&epoch);
		have_ring = true;
		for (int i = 0; i < candidates; i++) {
			order[i].head = HeadRunAt(request.queue, lanes[order[i].index], ring, now);
			order[i].effective =
			    awa::core::EffectivePriority(lanes[order[i].index].priority, now - order[i].head, settings.aging_micros);
		}
		qsort(order, candidates, sizeof(LaneOrder), CompareLaneOrder);
	}
	for (int i = 0; i < candidates; i++) {
		const Lane &lane = lanes[order[i].index];
		// A lane another claimer holds is skipped, never waited for.
		if (!TryLockLaneClaim(lane.lane_id))
			continue;
		if (!have_ring) {
			int64 epoch;
			ring = CurrentRings(&epoch);
			have_ring = true;
		}
		bool released;
		if (ClaimFromLane(lane, ring, request, &released) > 0)
			break;
		UnlockLaneClaim(lane.lane_id);
	}
	SPI_finish();
	return (Datum)0;
}

// awa._advance_cursors() -> number of lanes whose claim cursor moved.
//
// Maintenance: a lane's cursor moves past claimed lanes only at the lane's
// next claim, so the cursor of a lane that went idle stays behind its last
// claimed jobs, and prune (which needs every ready row of a slot behind its
// lane's cursor) could never reclaim their slot. For every lane whose cursor
// is behind its enqueue cursor and that no claimer holds (try-lock), this
// moves the cursor over the spent prefix exactly as a claim would, from
// visible evidence only, and claims nothing.
AWA_FUNCTION(awa_internal_advance_cursors)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	ExecuteLatest(Stmt::kAllLanes, 0, NULL, NULL);
	int count = static_cast<int>(SPI_processed);
	Lane *lanes = static_cast<Lane *>(palloc(sizeof(Lane) * (count + 1)));
	text **queues = static_cast<text **>(palloc(sizeof(text *) * (count + 1)));
	for (int i = 0; i < count; i++) {
		HeapTuple tuple = SPI_tuptable->vals[i];
		TupleDesc desc = SPI_tuptable->tupdesc;
		bool isnull;
		queues[i] = DatumGetTextPCopy(SPI_getbinval(tuple, desc, 1, &isnull));
		lanes[i].priority = DatumGetInt16(SPI_getbinval(tuple, desc, 2, &isnull));
		lanes[i].lane_id = DatumGetInt64(SPI_getbinval(tuple, desc, 3, &isnull));
		lanes[i].enqueue_seq = DatumGetObjectId(SPI_getbinval(tuple, desc, 4, &isnull));
		lanes[i].claim_seq = DatumGetObjectId(SPI_getbinval(tuple, desc, 5, &isnull));
	}
	int moved = 0;
	bool have_ring = false;
	RingPositions ring;
	for (int i = 0; i < count; i++) {
		if (SequenceValue(lanes[i].claim_seq) >= SequenceValue(lanes[i].enqueue_seq))
			continue;
		if (!TryLockLaneClaim(lanes[i].lane_id))
			continue;
		if (!have_ring) {
			int64 epoch;
			ring = CurrentRings(&epoch);
			have_ring = true;
		}
		ClaimRequest request;
		memset(&request, 0, sizeof(request));
		request.queue = queues[i];
		request.max_jobs = 1;
		request.advance_only = true;
		bool released;
		moved += ClaimFromLane(lanes[i], ring, request, &released);
		UnlockLaneClaim(lanes[i].lane_id);
	}
	SPI_finish();
	PG_RETURN_INT32(moved);
}
