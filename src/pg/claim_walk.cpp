// claim_walk.cpp: see claim_walk.hpp.
#include "pg/claim_walk.hpp"

#include "pg/lane_scan.hpp"

#include <type_traits>

extern "C" {
#include "access/htup_details.h"
#include "access/transam.h"
}

#include "pg/core_calls.hpp"
#include "pg/durability.hpp"
#include "pg/claim_head_cache.hpp"
#include "pg/gucs.hpp"
#include "pg/inflight.hpp"
#include "pg/lane_locks.hpp"
#include "pg/lane_cursors.hpp"
#include "pg/spi_plans.hpp"

namespace awa::pg {

namespace {

// ---------------------------------------------------------------------------
// What the walk has loaded of one lane.
// ---------------------------------------------------------------------------
constexpr int kMaxWalkGenerations = 65;  // a ring has at most 64 live generations

// The ready rows of one generation are read in pages; beyond a full page,
// what lies in that generation is unknown, not missing.
struct ReadyPage {
	int64 generation;
	bool full;     // the last page read was full ...
	int64 after;   // ... and ended below this lane (the last row's lane_seq + 1)
};

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
	ReadyPage pages[kMaxWalkGenerations];
	int page_count;
	int64 last_generation;    // the newest generation loaded
	bool evidence_truncated;  // more evidence than one page: stop at what is known
	// The WAL a cursor move over what the view read relies on (LaneWalk's
	// passed_commits_end), and the first lane position of a row read whose
	// commit was not flushed when it was read (durable_below): kept across
	// ResetView, they cover every row read.
	XLogRecPtr passed_commits_end;
	int64 durable_below;
	bool notes_commits;  // only a walk that may move the cursor notes them
};
static_assert(std::is_trivially_destructible_v<LaneView>, "lives across PostgreSQL errors");

struct LaneQuery {
	int64 lane_id;  // the ring rows of the lane are keyed by it
	int64 cursor;
	// The lane's enqueue cursor, read with `cursor` (raised to a gap proof's
	// horizon after the proof): no ready row lies past it but one of an
	// enqueue that reserved its lane later, which a walk that decides nothing
	// about lanes past it need not see (it may as well have read the lane
	// before that enqueue). A gap proof decides lanes up to its horizon.
	int64 enqueue;
	int slot_count;
	int64 page;
	// Lanes other claims in flight hold (the registry's ranges, read before
	// any evidence): never planned, so their ready rows are not read.
	const BridgeRange *reserved;
	int reserved_count;
};

// The query of a lane's walk: its cursors read together, and no lane held
// by other claims (a claim's walk sets those, and its page, itself).
LaneQuery
QueryOf(const Lane &lane, const RingPositions &ring, int64 page)
{
	LaneCursors cursors = ReadLaneCursors(lane);
	LaneQuery q;
	q.lane_id = lane.lane_id;
	q.cursor = cursors.claim;
	q.enqueue = cursors.enqueue;
	q.slot_count = ring.queue_slot_count;
	q.page = page;
	q.reserved = NULL;
	q.reserved_count = 0;
	return q;
}

template <typename T>
void
Append(T **items, int *count, int *capacity, T item)
{
	if (*count == *capacity) {
		*capacity *= 2;
		*items = static_cast<T *>(repalloc(*items, sizeof(T) * *capacity));
	}
	(*items)[(*count)++] = item;
}

void
AddCommitted(LaneView *view, int64 first, int64 next, int64 generation, int64 origin)
{
	if (view->committed_count > 0) {
		BridgeCommitted &last = view->committed[view->committed_count - 1];
		if (last.next == first && last.generation == generation && last.origin == origin) {
			last.next = next;
			return;
		}
	}
	Append(&view->committed, &view->committed_count, &view->committed_capacity,
	       BridgeCommitted{first, next, generation, origin});
}

// Appends [first, next), joined to the last range when they touch. Evidence is
// read in lane order and claims take consecutive lanes, so most ranges join
// the last one: the view stays small however many batches are read (the
// planner merges the rest).
void
AppendJoined(BridgeRange **items, int *count, int *capacity, int64 first, int64 next)
{
	if (*count > 0) {
		BridgeRange &last = (*items)[*count - 1];
		if (first <= last.next && next >= last.first) {
			last.first = Min(last.first, first);
			last.next = Max(last.next, next);
			return;
		}
	}
	Append(items, count, capacity, BridgeRange{first, next});
}

void
AddSpent(LaneView *view, int64 first, int64 next)
{
	AppendJoined(&view->spent, &view->spent_count, &view->spent_capacity, first, next);
}

void
AddOwn(LaneView *view, int64 first, int64 next)
{
	AppendJoined(&view->own, &view->own_count, &view->own_capacity, first, next);
}

// Loads one page of committed ready rows of page->generation at or after
// page->after. Each row is the committed range [lane_seq, lane_seq + 1);
// consecutive rows of one origin join into one range, so the view stays
// small however many rows a walk reads.
//
// Each scan first reads the lanes the page needs, bounded above: a B-tree
// scan reads the whole leaf page of its first match, every later entry of
// the lane checked against its keys, and a lane's entries fill their pages
// (some 290 to a page), so an unbounded scan for the 3 rows of a batch-1
// claim's page checked about 145 entries: 5 % of a batch-1 job's
// instructions (bench/drain_instructions.sh). Only when that window holds
// fewer rows than the page needs (a hole, rows in other generations, the
// lane's end) and a lane past it was reserved (q.enqueue) is the rest read
// unbounded. The two scans take two snapshots: a row that commits inside the
// window between them is missed while later ones are seen, which looks like
// a hole, and a hole is proven, with fresh reads, before anything is decided.
void
LoadReadyRows(LaneView *view, const LaneQuery &q, ReadyPage *page)
{
	struct Context {
		LaneView *view;
		ReadyPage *page;
		const LaneQuery *q;
		int64 skip_to;  // the end of the reserved range the scan stopped at, or -1
	} context{view, page, &q, -1};
	static_assert(std::is_trivially_destructible_v<Context>, "lives across PostgreSQL errors");
	auto visit = [](const LaneRow &row, void *arg) {
		Context &c = *static_cast<Context *>(arg);
		int64 lane = DatumGetInt64(row.values[0]);
		for (int i = 0; i < c.q->reserved_count; i++)
			if (c.q->reserved[i].first <= lane && lane < c.q->reserved[i].next) {
				c.skip_to = c.q->reserved[i].next;
				return false;
			}
		AddCommitted(c.view, lane, lane + 1, c.page->generation, DatumGetInt64(row.values[2]));
		c.page->after = lane + 1;
		return true;
	};
	int slot = core::SlotOf(page->generation, q.slot_count);
	int64 rows = 0;
	for (;;) {
		context.skip_to = -1;
		int64 want = q.page - rows;
		int64 window_end = page->after + want;
		rows += ScanLane(LaneFamily::kReady, slot, q.lane_id, page->after, page->generation, want, visit, &context,
		                 window_end);
		if (context.skip_to < 0 && rows < q.page && window_end <= q.enqueue)
			rows += ScanLane(LaneFamily::kReady, slot, q.lane_id, window_end, page->generation, q.page - rows, visit,
			                 &context);
		if (context.skip_to < 0 || rows >= q.page)
			break;
		// A claim in flight holds the lanes up to skip_to: what lies there
		// is never planned (the planner skips reserved lanes), so the scan
		// goes on past them instead of reading them (16 workers claiming 10
		// jobs each hold some 150 lanes above the cursor).
		CHECK_FOR_INTERRUPTS();
		page->after = context.skip_to;
	}
	page->full = rows == q.page;
}

// Loads the next generation: its first page of ready rows, its claim evidence and
// its tombstones. Evidence and tombstones are read in lane order, in pages of
// kEvidencePage rows, up to kMaxEvidenceRows each; only beyond that does what
// is known to be spent end at the last row read, committed ranges beyond it
// being dropped from the view (claimed by a later call once the cursor has
// moved). Nothing unproven is ever planned.
//
// (Reading one page only, the walk stopped at 4,096 batches above the cursor:
// a claim held open in a transaction keeps the cursor below its lanes, and
// 4,096 claims after it left every claim of the lane empty with jobs
// available until it ended: test/specs/open_claim_many_batches.spec. Past
// such a claim, walks start at the lane's frontier instead of reading all
// that evidence: WalkLane, docs/architecture.md "Claims past an open claim".)
constexpr int64 kEvidencePage = 4096;
constexpr int64 kMaxEvidenceRows = 1 << 20;
// How far below the lane's frontier a claim in flight must hold the cursor
// before walks start at the frontier (WalkLane): nearer, reading the evidence
// from the cursor costs at most this many lanes' worth, and moves the cursor.
constexpr int64 kFrontierMinLag = 1024;
constexpr int64 kMaxReadyPage = 65536;

// Reads rows of `family` after `after` in pages until a page is short or
// `max_rows` were read; *last is the lane column of the last row read (the
// visitor sets it).
// Returns true when rows may remain unread.
bool
ScanLanePages(LaneFamily family, int slot, int64 lane_id, int64 after, int64 generation, int64 max_rows,
              bool (*visit)(const LaneRow &row, void *context), void *context, const int64 *last)
{
	int64 read = 0;
	for (;;) {
		int rows = ScanLane(family, slot, lane_id, after, generation, kEvidencePage, visit, context);
		read += rows;
		if (rows < kEvidencePage)
			return false;
		if (read >= max_rows)
			return true;
		CHECK_FOR_INTERRUPTS();
		// The next page starts at the last row's lane column, not after it:
		// a row sharing it is read again (spent twice is spent), never
		// skipped. A page of one lane column only moves on past it.
		after = *last - 1 > after ? *last - 1 : *last;
	}
}

// Notes the commit of another transaction's evidence or tombstone row that
// the view read (visible, so committed), whose lanes start at `first`: a
// synchronous commit is flushed before it is visible and its transaction
// status carries no LSN of its own (its group's, if another transaction of
// the group committed asynchronously); an asynchronous one's carries the end
// of its commit record (of its group of transactions: at or past it), which
// a cursor move over the row waits for before it is written without a record
// (lane_cursors.hpp). A frozen row's status is not looked up (its xid may be
// older than the status kept): the whole WAL inserted so far, as before. A
// row whose commit is not flushed yet and lies above the move (the walk
// reads claims above the lane where its move stops) does not hold it back
// (durable_below).
void
NotePassedCommit(LaneView *view, const LaneRow &row, int64 first)
{
	if (!view->notes_commits)
		return;
	XLogRecPtr end = HeapTupleHeaderXminFrozen(row.tuple->t_data) || !TransactionIdIsNormal(row.xmin)
	                     ? InsertedWalEnd()
	                     : TransactionIdGetCommitLSN(row.xmin);
	if (end > view->passed_commits_end)
		view->passed_commits_end = end;
	if (first < view->durable_below && XLogNeedsFlush(end))
		view->durable_below = first;
}

// `max_rows`: a claim reads up to kMaxEvidenceRows; the head lookups (priority
// aging, queue_metrics), which have a fallback, one page.
void
LoadGeneration(LaneView *view, const LaneQuery &q, int64 generation, bool skip_empty = false,
               int64 max_rows = kMaxEvidenceRows)
{
	if (view->page_count == kMaxWalkGenerations)
		elog(ERROR, "awa: claim walk over more than %d generations", kMaxWalkGenerations);
	int slot = core::SlotOf(generation, q.slot_count);
	ReadyPage *page = &view->pages[view->page_count++];
	*page = ReadyPage{generation, false, q.cursor};
	LoadReadyRows(view, q, page);
	view->last_generation = generation;
	// A generation that holds no lane of this lane's past the cursor holds
	// no evidence or tombstone that matters either (they sit in their ready
	// row's slot, and a carried row takes its evidence along).
	if (skip_empty && !page->full && page->after == q.cursor)
		return;

	struct Context {
		LaneView *view;
		TypeCacheEntry *range_type;
		int64 last;  // the lane column of the last row read
	} context{view, lookup_type_cache(INT8MULTIRANGEOID, TYPECACHE_MULTIRANGE_INFO)->rngtype, 0};
	static_assert(std::is_trivially_destructible_v<Context>, "lives across PostgreSQL errors");
	int64 known_until = PG_INT64_MAX;
	bool evidence_full = ScanLanePages(
	    LaneFamily::kEvidence, slot, q.lane_id, q.cursor, generation, max_rows,
	    [](const LaneRow &row, void *arg) {
		    Context &c = *static_cast<Context *>(arg);
		    bool own = TransactionIdIsCurrentTransactionId(row.xmin);
		    c.last = DatumGetInt64(row.values[1]);
		    if (!own)
			    NotePassedCommit(c.view, row, DatumGetInt64(row.values[2]));
		    // No lane_ranges: the one range [first_lane_seq, next_lane_seq).
		    if (row.values[0] == (Datum)0) {
			    if (own)
				    AddOwn(c.view, DatumGetInt64(row.values[2]), c.last);
			    else
				    AddSpent(c.view, DatumGetInt64(row.values[2]), c.last);
			    return true;
		    }
		    MultirangeType *ranges = DatumGetMultirangeTypeP(row.values[0]);
		    int32 range_count;
		    RangeType **items;
		    multirange_deserialize(c.range_type, ranges, &range_count, &items);
		    for (int32 r = 0; r < range_count; r++) {
			    RangeBound lower, upper;
			    bool empty;
			    range_deserialize(c.range_type, items[r], &lower, &upper, &empty);
			    if (empty)
				    continue;
			    // Evidence written by this transaction is not committed: it
			    // could still roll back, so the cursor must not pass it.
			    if (own)
				    AddOwn(c.view, DatumGetInt64(lower.val), DatumGetInt64(upper.val));
			    else
				    AddSpent(c.view, DatumGetInt64(lower.val), DatumGetInt64(upper.val));
		    }
		    return true;
	    },
	    &context, &context.last);
	if (evidence_full)
		known_until = context.last;
	// Tombstones (cancelled available jobs) are spent lanes too.
	bool tombstones_full = ScanLanePages(
	    LaneFamily::kTombstones, slot, q.lane_id, q.cursor, generation, max_rows,
	    [](const LaneRow &row, void *arg) {
		    Context &c = *static_cast<Context *>(arg);
		    int64 lane = DatumGetInt64(row.values[0]);
		    if (TransactionIdIsCurrentTransactionId(row.xmin)) {
			    AddOwn(c.view, lane, lane + 1);
		    } else {
			    NotePassedCommit(c.view, row, lane);
			    AddSpent(c.view, lane, lane + 1);
		    }
		    c.last = lane;
		    return true;
	    },
	    &context, &context.last);
	if (tombstones_full)
		known_until = Min(known_until, context.last + 1);
	if (evidence_full || tombstones_full) {
		int kept = 0;
		for (int i = 0; i < view->committed_count; i++) {
			BridgeCommitted range = view->committed[i];
			if (range.first >= known_until)
				continue;
			range.next = Min(range.next, known_until);
			view->committed[kept++] = range;
		}
		view->committed_count = kept;
		for (int i = 0; i < view->page_count; i++)
			view->pages[i].full = false;
		view->evidence_truncated = true;
	}
}

void
ResetView(LaneView *view, int64 first_generation)
{
	view->committed_count = 0;
	view->spent_count = 0;
	view->own_count = 0;
	view->page_count = 0;
	view->last_generation = first_generation - 1;
	view->evidence_truncated = false;
}

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
	view.passed_commits_end = InvalidXLogRecPtr;
	view.durable_below = PG_INT64_MAX;
	view.notes_commits = false;
	ResetView(&view, first_generation);
	return view;
}

// A loaded generation whose ready rows beyond a full page could hold `position`
// (its next page must be read before anything is decided there), or NULL.
ReadyPage *
UnreadPageAt(LaneView *view, int64 position)
{
	for (int i = 0; i < view->page_count; i++)
		if (view->pages[i].full && position >= view->pages[i].after)
			return &view->pages[i];
	return NULL;
}

// Where a walk from generation floor `floor` starts: the first live
// generation at or after it (a floor may name a generation number skipped
// past a kept slot), the newest at most.
int64
FirstLiveGenerationFrom(const RingPositions &ring, int64 floor)
{
	int64 start = NextQueueGeneration(ring, Min(floor, ring.queue_generation) - 1);
	return start >= 0 ? start : ring.queue_generation;
}

// The queue ring now (every rotation committed before this call is seen: the
// per-backend cache is keyed by the ring epoch, which a rotation moves before
// its ledger append and again after its commit). A hole is declared dead only
// after every live generation up to its newest was looked at.
RingPositions
RingNow()
{
	int64 epoch;
	return CurrentRings(&epoch);
}

}  // namespace

namespace {

bool
InRange(const BridgeRange *ranges, int count, int64 lane, int64 *next)
{
	for (int i = 0; i < count; i++)
		if (ranges[i].first <= lane && lane < ranges[i].next) {
			*next = ranges[i].next;
			return true;
		}
	return false;
}

// The committed range of the view holding `lane`, or NULL.
const BridgeCommitted *
CommittedAt(const LaneView &view, int64 lane)
{
	for (int i = 0; i < view.committed_count; i++)
		if (view.committed[i].first <= lane && lane < view.committed[i].next)
			return &view.committed[i];
	return NULL;
}

// The first lane at or after `position` that the view holds neither as
// spent nor in `skip`.
int64
SkipSpent(const LaneView &view, int64 position, const BridgeRange *skip, int skip_count)
{
	for (bool moved = true; moved;) {
		CHECK_FOR_INTERRUPTS();
		moved = false;
		int64 next;
		if (InRange(view.spent, view.spent_count, position, &next) || InRange(skip, skip_count, position, &next)) {
			position = next;
			moved = true;
		}
	}
	return position;
}

// What the claim's view tells of the lane's head once its lanes are gone
// (counters.hpp): the lanes from the new cursor are spent or its own up to
// the next head; that head is known when the view holds it committed in the
// claim's generation (its run_at is read with the claim's rows, or by one
// probe elsewhere), the lane is empty when no lane_seq past it was reserved,
// else it is unknown.
void
LearnNextHead(LaneWalk *walk, const LaneView &view, const Lane &lane)
{
	walk->head.took_head = walk->plan.claimed > 0 && walk->claim[0].first == walk->plan.new_cursor + 1;
	walk->head.next = LaneHead{kHeadUnknown, 0, 0};
	if (!walk->head.took_head || view.evidence_truncated)
		return;
	int64 next = SkipSpent(view, walk->plan.new_cursor + 1, walk->claim, walk->plan.range_count);
	if (UnreadPageAt(const_cast<LaneView *>(&view), next) != NULL)
		return;
	if (const BridgeCommitted *range = CommittedAt(view, next)) {
		walk->head.next = LaneHead{kHeadKnown, next, 0};
		walk->next_generation = range->generation;
		return;
	}
	// Nothing committed at `next` in the view: the lane is empty if no
	// lane_seq from `next` on was ever reserved (then no row, in no
	// generation, is there or can appear but by a later enqueue, whose
	// commit lowers the kept head itself); otherwise not known.
	if (ReadLaneCursors(lane).enqueue < next)
		walk->head.next = LaneHead{kHeadEmpty, 0, 0};
}

}  // namespace

LaneWalk
WalkLane(text *queue, const Lane &lane, const RingPositions &ring, int32 max_jobs, WalkMode mode)
{
	bool advance_only = mode == WalkMode::kAdvanceOnly;
	// The queue's head generation before any snapshot of this walk (counters.hpp).
	uint64 head_generation = advance_only ? 0 : HeadGeneration(queue);
	// Other claims' planned lanes, read before any evidence snapshot: a claim
	// that leaves the registry has already made its outcome visible.
	BridgeRange reserved[kMaxInflightPerLane];
	InflightFrontier frontier;
	int reserved_count = InflightRanges(lane.lane_id, reserved, &frontier);

	LaneQuery q = QueryOf(lane, ring, 0);
	// A claim still in flight below the lane's frontier holds the cursor
	// back: start at the frontier rather than read all the evidence above
	// the cursor (docs/architecture.md, "Claims past an open claim"). When
	// none is, the walk starts at the cursor and moves it over what is spent.
	// Only when that claim is far behind the frontier (kFrontierMinLag):
	// the claims in flight near the tip, as several workers keep, leave the
	// walk at the cursor, which it moves as before (from the frontier it
	// would move no cursor while any claim is in flight: found by review).
	bool from_frontier = false;
	if (!advance_only && frontier.position > q.cursor) {
		int64 lowest = PG_INT64_MAX;
		for (int i = 0; i < reserved_count; i++)
			lowest = Min(lowest, reserved[i].first);
		from_frontier = lowest <= frontier.position && frontier.position - lowest >= kFrontierMinLag;
	}
	if (from_frontier)
		q.cursor = frontier.position;
	// Ready rows per page, one per lane: the first page covers the claim, the
	// cursor's lane and the one the last claim took (the cursor lags until the
	// next claim moves it), and as many lanes as the claims in flight hold: the
	// rows of those still held are skipped, not read, but claims that committed
	// among them left spent lanes the walk reads. A walk that runs past the
	// page loads pages twice as large each time. (Reading 2 * max_jobs
	// + 32 rows, the page that suited one range row per enqueue call, cost a
	// batch-1 drain 17 % more instructions per job: bench/drain_instructions.sh.)
	int64 held = 0;
	for (int i = 0; i < reserved_count; i++)
		if (reserved[i].next > q.cursor)
			held += reserved[i].next - Max(reserved[i].first, q.cursor + 1);
	q.page = Min(static_cast<int64>(max_jobs) + held + 2, kMaxReadyPage);
	q.reserved = reserved;
	q.reserved_count = reserved_count;

	// The live generations the walk goes through, oldest first: usually the
	// last slot_count, plus any slot kept out of the rotation.
	RingPositions live = ring;
	int64 newest = live.queue_generation;
	int64 oldest = OldestQueueGeneration(live);
	int64 start = FirstLiveGenerationFrom(live, HeadGenerationFloor(lane.lane_id, q.cursor, oldest));

	// A claim reads the evidence above the cursor up to kMaxEvidenceRows; the
	// maintenance's advance-only walk (every lane behind, before each prune)
	// one page, as before: it moves the cursor at most that far per pass, and
	// claims move it the rest of the way.
	int64 max_rows = advance_only ? kEvidencePage : kMaxEvidenceRows;
	LaneView view = NewView(start);
	view.notes_commits = true;
	LoadGeneration(&view, q, start, false, max_rows);

	// An advance plans one lane: the planner walks the spent prefix first.
	int32 plan_max = advance_only ? 1 : max_jobs;
	int gap_timeout_ms = advance_only ? 0 : awa_gap_proof_lock_timeout_ms;
	LaneWalk walk;
	walk.cursor = q.cursor;
	walk.from_frontier = from_frontier;
	walk.head = ClaimHeadNote{head_generation, false, LaneHead{kHeadUnknown, 0, 0}};
	walk.next_generation = -1;
	walk.claim = static_cast<BridgeRange *>(palloc(sizeof(BridgeRange) * plan_max));
	// Lanes up to proof_horizon were reserved before a gap proof was granted:
	// a hole among them that is still empty after the proof's re-read of
	// every generation is dead. Holes above it need a proof of their own.
	int64 proof_horizon = 0;
	// The newest generation was read from the ledger after the last generation
	// the view holds was loaded (-1: not since the last load).
	int64 newest_checked_at = -1;
	char error[256];
	for (int step = 0;; step++) {
		// Each step plans over what is loaded and may load more: a walk
		// can be cancelled between steps (a row scan, between rows).
		CHECK_FOR_INTERRUPTS();
		if (step > 100000)
			elog(ERROR, "awa: claim on lane " INT64_FORMAT " made no progress", lane.lane_id);
		// Reserved = other claims in flight + this transaction's own claims.
		int all_reserved = reserved_count + view.own_count;
		BridgeRange *reserved_all = static_cast<BridgeRange *>(palloc(sizeof(BridgeRange) * (all_reserved + 1)));
		memcpy(reserved_all, reserved, sizeof(BridgeRange) * reserved_count);
		memcpy(reserved_all + reserved_count, view.own, sizeof(BridgeRange) * view.own_count);
		if (!PlanClaimBridge(q.cursor, view.committed, view.committed_count, view.spent, view.spent_count,
		                     reserved_all, all_reserved, plan_max, &walk.plan, walk.claim, error, sizeof(error)))
			elog(ERROR, "awa: claim planning failed: %s", error);
		pfree(reserved_all);
		const BridgePlan &plan = walk.plan;
		if (plan.claimed >= plan_max || view.evidence_truncated)
			break;
		// The walk reached lanes beyond a loaded page: what lies there is
		// unknown, not missing. Load more before deciding anything.
		if (ReadyPage *page = UnreadPageAt(&view, plan.position)) {
			q.page = Min(q.page * 2, kMaxReadyPage);
			LoadReadyRows(&view, q, page);
			continue;
		}
		// Nothing (more) to take from what is loaded, or a hole: look at the
		// later generations first. A hole's row may be there: lanes take
		// generations in lane order when enqueued, but a prune carries a live
		// row forward into the newest generation. So may the lanes after the
		// last one loaded, while the claim has room and the enqueue cursor
		// says a position there was reserved (a job promoted or enqueued
		// after a rotation: a claim of 10 took 1 of 2 available jobs, found
		// by review); past the enqueue cursor nothing is there to find.
		bool room = plan.claimed == 0 || (plan.claimed < plan_max && plan.position <= q.enqueue);
		bool looking = plan.stop == kStopGap || (plan.stop == kStopEnd && room);
		if (looking && view.last_generation < newest) {
			int64 next = NextQueueGeneration(live, view.last_generation);
			if (next >= 0) {
				LoadGeneration(&view, q, next, false, max_rows);
				continue;
			}
		}
		// The hole to prove dead: the one before committed lanes; or, for
		// the maintenance's advance, a trailing one. Nothing is committed at
		// or after `position`, yet lanes up to the enqueue cursor were
		// reserved: a last enqueue that rolled back, or (after a restart,
		// a crash or a promotion) the positions the enqueue cursor logged
		// ahead and never handed out (lane_cursors.hpp). Proven dead, the
		// cursor reaches the enqueue cursor, and the maintenance's later
		// passes skip the lane instead of walking it every time
		// (test/t/067_trailing_hole_after_restart.pl).
		BridgeRange hole = plan.gap;
		if (plan.stop != kStopGap) {
			if (!advance_only || plan.stop != kStopEnd || plan.claimed != 0 || view.evidence_truncated ||
			    plan.position > ReadLaneCursors(lane).enqueue)
				break;
			hole = BridgeRange{plan.position, PG_INT64_MAX};
		}
		if (hole.first > proof_horizon) {
			// Wait (bounded) until every transaction that had reserved a
			// lane position when the proof began has ended, then look again
			// at every generation from the start with fresh snapshots.
			int64 horizon;
			if (!ProveLaneReservationsEnded(lane, gap_timeout_ms, &horizon))
				break;
			proof_horizon = horizon;
			// The proof declares dead every lane up to the horizon that the
			// re-read below does not find, so the re-read reads up to it:
			// LoadReadyRows reads past its window only up to q.enqueue, read
			// at the walk's start, and an enqueue that reserved a lane since
			// and committed before the proof would be passed for good
			// (test/specs/advance_past_late_enqueue.spec; found by review).
			q.enqueue = Max(q.enqueue, horizon);
			live = RingNow();
			newest = live.queue_generation;
			newest_checked_at = -1;
			ResetView(&view, start);
			LoadGeneration(&view, q, start, false, max_rows);
			continue;
		}
		// Every generation up to `newest` was looked at after the proof. A
		// rotation and a prune that carried the hole's row into a generation
		// after `newest` may have committed meanwhile: read the ledger once
		// more before deciding. (A carry only moves a row forward, into the
		// newest generation, and each read takes a fresh snapshot after its
		// child's lock: a row in a generation already read was found there,
		// and that child stays locked; a child where the lane had nothing is
		// released at once, lane_scan.cpp.)
		if (newest_checked_at != view.last_generation) {
			live = RingNow();
			newest = live.queue_generation;
			newest_checked_at = view.last_generation;
			if (NextQueueGeneration(live, view.last_generation) >= 0)
				continue;
		}
		// Still empty although every reservation up to the horizon had ended
		// when the view was read: the enqueue that reserved it rolled back
		// (or died in a crash). It holds nothing.
		AddSpent(&view, hole.first, Min(hole.next, proof_horizon + 1));
	}
	if (!advance_only) {
		// The frontier this walk proves: from where it started, the lanes
		// spent in its view or held by the ranges it read from the registry
		// (its own plan is not in them: registered, the next walk reads it).
		RaiseInflightFrontier(lane.lane_id, frontier, SkipSpent(view, q.cursor + 1, reserved, reserved_count) - 1);
		if (!from_frontier)
			LearnNextHead(&walk, view, lane);
		else
			walk.head.next = LaneHead{kHeadUnknown, 0, 0};
	}
	walk.passed_commits_end = view.passed_commits_end;
	walk.durable_until = view.durable_below == PG_INT64_MAX ? PG_INT64_MAX : view.durable_below - 1;
	return walk;
}

bool
ApplyCursorAdvance(const Lane &lane, const LaneWalk &walk)
{
	if (walk.from_frontier)
		return false;
	RememberHeadGenerationFloor(lane.lane_id, walk.plan.new_cursor, walk.plan.head_generation_floor);
	bool moved = walk.plan.new_cursor > walk.cursor &&
	             AdvanceClaimCursor(lane, walk.plan.new_cursor, walk.passed_commits_end, walk.durable_until);
	// The lane's cursor is now at or past new_cursor (moved here, or by
	// another walk before), and cursors only move forward: the floor holds
	// for every claimer of the lane from now on, whatever backend it runs in.
	ShareHeadGenerationFloor(lane.lane_id, walk.plan.new_cursor, walk.plan.head_generation_floor);
	return moved;
}

LaneHead
LaneHeadNow(text *queue, const Lane &lane, const RingPositions &ring, bool *fallback)
{
	*fallback = false;
	// The lock is released at once: awa.queue_metrics walks every lane of
	// every queue whose head is not kept, 10,000 of them after a restart,
	// more than the lock table holds for one transaction. Lanes other claims
	// hold count as available here (no reserved ranges).
	LaneQuery q = QueryOf(lane, ring, 64);
	int64 newest = ring.queue_generation;
	int64 start = FirstLiveGenerationFrom(ring, HeadGenerationFloor(lane.lane_id, q.cursor, OldestQueueGeneration(ring)));
	LaneView view = NewView(start);
	LoadGeneration(&view, q, start, true, kEvidencePage);
	for (int step = 0;; step++) {
		CHECK_FOR_INTERRUPTS();
		if (step > 100000)
			elog(ERROR, "awa: head of lane " INT64_FORMAT " not found", lane.lane_id);
		if (view.evidence_truncated) {
			*fallback = true;
			return LaneHead{kHeadUnknown, 0, 0};
		}
		// Lanes claimed by other open transactions count as available: only
		// committed evidence, tombstones and this transaction's own claims
		// are skipped.
		int64 position = SkipSpent(view, q.cursor + 1, view.own, view.own_count);
		bool crossed_hole = false;
		const BridgeCommitted *range = NULL;
		ReadyPage *unread = NULL;
		for (;;) {
			CHECK_FOR_INTERRUPTS();
			if ((unread = UnreadPageAt(&view, position)) != NULL)
				break;
			if ((range = CommittedAt(view, position)) != NULL)
				break;
			// A hole: the next committed lane past it, if any.
			int64 next = PG_INT64_MAX;
			for (int i = 0; i < view.committed_count; i++)
				if (view.committed[i].first > position)
					next = Min(next, view.committed[i].first);
			crossed_hole = true;
			if (next == PG_INT64_MAX)
				break;
			position = SkipSpent(view, next, view.own, view.own_count);
		}
		if (unread != NULL) {
			q.page = Min(q.page * 2, kMaxReadyPage);
			LoadReadyRows(&view, q, unread);
			continue;
		}
		// A hole's row may sit in a later generation (a prune carried it):
		// decide past a hole only once every generation is loaded.
		if ((crossed_hole || range == NULL) && view.last_generation < newest) {
			int64 next = NextQueueGeneration(ring, view.last_generation);
			if (next >= 0) {
				LoadGeneration(&view, q, next, true, kEvidencePage);
				continue;
			}
		}
		if (range == NULL)
			return LaneHead{kHeadEmpty, 0, 0};
		Datum values[4] = {Int64GetDatum(lane.lane_id), Int64GetDatum(position), Int64GetDatum(position + 1),
		                   Int64GetDatum(range->generation)};
		ExecuteLatest(Stmt::kReadyRows, core::SlotOf(range->generation, ring.queue_slot_count), values, NULL, 1);
		if (SPI_processed != 1)
			return LaneHead{kHeadUnknown, 0, 0};
		bool isnull;
		TimestampTz run_at = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
		                                                       kReadyRowsRunAtColumn, &isnull));
		return LaneHead{kHeadKnown, position, run_at};
	}
}

TimestampTz
LaneHeadRunAt(text *queue, const Lane &lane, const RingPositions &ring, TimestampTz fallback)
{
	LaneQuery q = QueryOf(lane, ring, 64);  // lanes other claims hold count as available here
	int64 start = FirstLiveGenerationFrom(ring, HeadGenerationFloor(lane.lane_id, q.cursor, OldestQueueGeneration(ring)));
	LaneView view = NewView(start);
	// One page: an estimate for ordering lanes (priority aging) is not worth
	// reading the evidence above an open claim on every claim.
	LoadGeneration(&view, q, start, false, kEvidencePage);
	// Walk over the spent prefix (claimed, own or tombstoned lanes).
	int64 position = q.cursor + 1;
	for (bool moved = true; moved;) {
		CHECK_FOR_INTERRUPTS();
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
	// The ready row at `position`; a carried row may sit in a later
	// generation than the lanes after it, so the first row found that
	// starts after `position` is only kept in case none holds it. Read
	// through ScanLane, which releases at once the lock of a child where the
	// lane has nothing: a statement's lock (this read was one, kHeadRunAt,
	// until stop 44) lasts to the end of the transaction, and for a lane whose
	// head is empty the loop reads every live generation, so a worker left
	// idle in its transaction after one claim held every queue slot and the
	// ring stopped at its cap (found by an adversarial review;
	// test/sql/idle_locks.sql).
	struct Head {
		bool found;
		int64 first;
		TimestampTz run_at;
	};
	static_assert(std::is_trivially_destructible_v<Head>, "lives across PostgreSQL errors");
	auto visit = [](const LaneRow &row, void *arg) {
		Head &head = *static_cast<Head *>(arg);
		CheckReadyColumns(row.desc);
		bool isnull;
		head.found = true;
		head.first = DatumGetInt64(row.values[0]);
		head.run_at = DatumGetTimestampTz(heap_getattr(row.tuple, kReadyRunAt, row.desc, &isnull));
		return true;
	};
	Head best{false, 0, fallback};
	for (int64 generation = start; generation >= 0; generation = NextQueueGeneration(ring, generation)) {
		CHECK_FOR_INTERRUPTS();
		Head head{false, 0, 0};
		(void)ScanLane(LaneFamily::kReady, core::SlotOf(generation, ring.queue_slot_count), lane.lane_id, position,
		               generation, 1, visit, &head);
		if (!head.found)
			continue;
		if (head.first <= position)
			return head.run_at;
		if (!best.found || head.first < best.first)
			best = head;
	}
	return best.run_at;
}

bool
AdvanceIdleLaneCursor(text *queue, const Lane &lane, const RingPositions &ring)
{
	if (!TryLockLaneClaim(lane.lane_id))
		return false;
	LaneWalk walk = WalkLane(queue, lane, ring, 1, WalkMode::kAdvanceOnly);
	bool moved = ApplyCursorAdvance(lane, walk);
	UnlockLaneClaim(lane.lane_id);
	return moved;
}

}  // namespace awa::pg
