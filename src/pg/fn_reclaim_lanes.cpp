// fn_reclaim_lanes.cpp: awa._reclaim_idle_lanes, maintenance's reclaim of
// lanes that have been drained and idle (docs/architecture.md, "A drained,
// idle lane's row is reclaimed").
//
// A lane's row is bookkeeping: its two cursors. Lanes are made on first use
// (per queue and priority, and per concurrency key), so a database whose
// keys come and go (a key per customer, per tenant) gathers rows for lanes
// that will never be used again, as does a producer that created a lane and
// rolled back. A lane whose claim cursor has reached its enqueue cursor, with
// neither moving for awa.lane_reclaim_after and no row of it left in any live
// slot of the queue ring, holds nothing: its row is deleted. A producer that
// still has the lane cached finds its row gone when it reserves and makes the
// lane again (RefindLane, a new lane_id); a claimer finds no work in it.
//
// Each pass looks at up to `max_lanes` lanes in lane_id order after the last
// one the previous pass of this backend looked at (the maintenance worker's
// passes go round all lanes), and remembers, for each lane, its enqueue
// cursor and since when it saw it there; a later pass that finds the same
// enqueue cursor idle_after or more later, the lane drained and none of its
// rows in the ring, reclaims it. The memory is this backend's (the worker's),
// at most kMaxIdleLanes entries, and, while more than half full, forgets at
// each round's end the lanes that were in use; a new backend, or one whose
// memory is full, starts the lanes' clocks again, which only delays a
// reclaim.
//
// Correctness rests on the last look and the delete being made under locks
// that keep every writer of the lane out: the lane claim lock (claims, cursor
// moves, cancels of ready jobs) and the lane's and the database's reserve
// locks in a mode that conflicts with reservations
// (TryLockOutLaneReservations; every position and every cancel of a deferred
// job takes one of them first); then on the deleted row, which every writer
// waits for (ReclaimUnderLocks). None of the locks is waited for: a lane whose
// lock another transaction holds is left for a later pass.
#include "pg/claim_walk.hpp"
#include "pg/guard.hpp"
#include "pg/gucs.hpp"
#include "pg/lane_cursors.hpp"
#include "pg/lane_locks.hpp"
#include "pg/lanes.hpp"
#include "pg/rings.hpp"
#include "pg/spi_plans.hpp"

extern "C" {
#include "access/xlog.h"
#include "catalog/pg_type_d.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
}

namespace awa::pg {

namespace {

// A lane as the passes of this backend saw it: its enqueue cursor and since
// when it has not moved.
struct IdleLane {
	int64 lane_id;  // hash key
	int64 enqueue;  // its enqueue cursor
	TimestampTz since;  // when a pass first saw it at that cursor
	uint32 seen_round;  // the last round of passes over all lanes that saw it
	uint32 moved_round;  // the last round in which its cursor moved (0: none)
};
static_assert(std::is_trivially_destructible_v<IdleLane>, "lives in a dynahash");

constexpr int kMaxLanesPerPass = 100000;
constexpr int kMaxReclaimsPerPass = 100;
constexpr long kMaxIdleLanes = 100000;  // about 6 MB of this backend's memory at most

HTAB *idle_lanes = NULL;
Oid idle_lanes_incarnation = InvalidOid;
int64 next_after = 0;  // the lane_id the next pass starts after
uint32 pass_round = 1;  // a round is one pass over all lanes, in pieces

HTAB *
IdleLanes()
{
	Oid incarnation = ExtensionIncarnation();
	if (idle_lanes != NULL && idle_lanes_incarnation != incarnation) {
		// The extension was made again: its lane_ids start over.
		hash_destroy(idle_lanes);
		idle_lanes = NULL;
		next_after = 0;
	}
	if (idle_lanes == NULL) {
		HASHCTL ctl;
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(IdleLane);
		ctl.hcxt = TopMemoryContext;
		idle_lanes = hash_create("awa idle lanes", 1024, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		idle_lanes_incarnation = incarnation;
	}
	return idle_lanes;
}

// At the end of a round: the entries of lanes no pass of it saw (reclaimed,
// or deleted by hand) go; and, while the memory is more than half full, those
// of lanes whose cursor moved in it (in use: their clocks start again at their
// next look), so lanes in use do not keep idle ones out round after round.
void
EndRound(HTAB *lanes)
{
	bool crowded = hash_get_num_entries(lanes) > kMaxIdleLanes / 2;
	HASH_SEQ_STATUS scan;
	hash_seq_init(&scan, lanes);
	while (IdleLane *entry = static_cast<IdleLane *>(hash_seq_search(&scan))) {
		CHECK_FOR_INTERRUPTS();  // hash_seq_term is not needed: it is scanned to its end
		if (entry->seen_round != pass_round || (crowded && entry->moved_round == pass_round))
			(void)hash_search(lanes, &entry->lane_id, HASH_REMOVE, NULL);
	}
}

// Whether the lane's enqueue cursor has stayed at `enqueue` for idle_after_s
// seconds (0: at once), as far as this backend's passes have seen; records
// the cursor, and now, if it was not seen at that value before. A lane not
// remembered (the memory full) is not idle long enough yet.
bool
IdleLongEnough(HTAB *lanes, int64 lane_id, int64 enqueue, TimestampTz now, int32 idle_after_s)
{
	bool found;
	IdleLane *entry = static_cast<IdleLane *>(hash_search(lanes, &lane_id, HASH_FIND, NULL));
	if (entry == NULL) {
		if (hash_get_num_entries(lanes) >= kMaxIdleLanes)
			return idle_after_s == 0;
		entry = static_cast<IdleLane *>(hash_search(lanes, &lane_id, HASH_ENTER, &found));
		entry->enqueue = enqueue;
		entry->since = now;
		entry->moved_round = 0;
	} else if (entry->enqueue != enqueue) {
		entry->enqueue = enqueue;
		entry->since = now;
		entry->moved_round = pass_round;
	}
	entry->seen_round = pass_round;
	return idle_after_s == 0 || now - entry->since >= int64{idle_after_s} * USECS_PER_SEC;
}

void
Forget(HTAB *lanes, int64 lane_id)
{
	(void)hash_search(lanes, &lane_id, HASH_REMOVE, NULL);
}

// The one boolean the statement just run returned (false if none), its
// result freed: a pass runs several statements per lane, and each result
// would otherwise live until the pass's end.
bool
SingleBool()
{
	bool isnull = true;
	bool value = SPI_processed == 1 && DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return value && !isnull;
}

bool
HasRingRows(int64 lane_id)
{
	Datum values[1] = {Int64GetDatum(lane_id)};
	// The latest snapshot, taken after the caller's look at the cursors (and
	// after its locks): every row committed before either is seen.
	ExecuteLatest(Stmt::kLaneHasRingRows, 0, values, NULL, 1);
	return SingleBool();
}

struct PassLane {
	Lane lane;
	text *queue;
	int64 enqueue;  // the cursors as the first look read them (equal)
};

struct PassCounts {
	int64 examined;   // lanes looked at
	int64 drained;    // claim cursor at the enqueue cursor
	int64 reclaimed;  // rows deleted
	int64 busy;       // left: a transaction held one of its locks
};

// Whether the lane's queue stays listed without it, or has nothing a listing
// would show (kLaneMayLeaveQueue): the queues awa.queue_counts and
// awa.queue_metrics list are those with a lane or settings, so the last lane
// of a queue that still has a scheduled, retryable or parked job or a dead
// letter stays. With the latest snapshot: this pass's own deletes count.
bool
MayLeaveQueue(const PassLane &p)
{
	Datum values[2] = {PointerGetDatum(p.queue), Int64GetDatum(p.lane.lane_id)};
	ExecuteLatest(Stmt::kLaneMayLeaveQueue, 0, values, NULL, 1);
	return SingleBool();
}

// The first look, with no lock: idle long enough (the enqueue cursor has not
// moved), drained (after advancing a claim cursor that is behind, as the
// prune's advance would: only for a lane already idle, so a pass does not
// walk, nor wait on gap proofs of, the lanes in use), no ring row.
bool
FirstLook(HTAB *lanes, PassLane *p, const RingPositions *ring, TimestampTz now, int32 idle_after_s,
          PassCounts *counts)
{
	LaneCursors cursors = ReadLaneCursors(p->lane);
	if (cursors.gone || !IdleLongEnough(lanes, p->lane.lane_id, cursors.enqueue, now, idle_after_s))
		return false;
	if (cursors.claim < cursors.enqueue) {
		// A claim cursor that no claim moved on: behind its last claimed jobs,
		// or below a hole of a producer that rolled back (a lane whose only
		// producer rolled back is such a lane).
		if (!AdvanceIdleLaneCursor(p->queue, p->lane, *ring))
			return false;
		cursors = ReadLaneCursors(p->lane);
		if (cursors.gone || cursors.claim < cursors.enqueue)
			return false;
	}
	counts->drained++;
	p->enqueue = cursors.enqueue;
	// Both again under the locks; here first, so that the relations they read
	// are locked by this transaction before any lane lock is taken (the last
	// look then waits for no relation lock while it holds lane locks).
	return !HasRingRows(p->lane.lane_id) && MayLeaveQueue(*p);
}

// The last look, under the locks that keep every writer of the lane out, then
// the delete. Returns whether the row went. The locks are given back before
// returning, so a pass holds at most five of them at any moment, whatever
// the number of lanes it reclaims (held to the commit, a pass of 1,000
// reclaims held 2,001 entries of the cluster's shared lock table, and a loop
// of passes in one transaction ran it out: "out of shared memory"). What
// keeps a writer that comes after them from using the row before the delete
// commits is the row itself: a reservation, a claim cursor move and
// awa._ensure_lane look at it under its page's exclusive lock, find it deleted
// by a transaction still open, wait for that transaction, and then find it
// gone (lane_cursors.cpp, LockRow); a claim that reads it sees both cursors
// equal and nothing to walk.
bool
ReclaimUnderLocks(const PassLane &p, PassCounts *counts)
{
	int64 lane_id = p.lane.lane_id;
	if (!TryLockLaneClaim(lane_id)) {
		counts->busy++;
		return false;
	}
	if (!TryLockOutLaneReservations(lane_id)) {
		UnlockLaneClaim(lane_id);
		counts->busy++;
		return false;
	}
	// Nothing can be reserved, claimed or cancelled in the lane now; what the
	// first look saw must still hold.
	bool deleted = false;
	LaneCursors cursors = ReadLaneCursors(p.lane);
	if (!cursors.gone && cursors.claim == cursors.enqueue && cursors.enqueue == p.enqueue && !HasRingRows(lane_id) &&
	    MayLeaveQueue(p)) {
		Datum values[1] = {Int64GetDatum(lane_id)};
		NoteLanesReclaimed();
		ExecuteLatest(Stmt::kDeleteLane, 0, values, NULL, 0);
		deleted = SPI_processed == 1;
		if (!deleted)
			counts->busy++;  // locked by hand: SELECT ... FOR UPDATE
	}
	UnlockOutLaneReservations(lane_id);
	UnlockLaneClaim(lane_id);
	return deleted;
}

}  // namespace

}  // namespace awa::pg

using namespace awa::pg;

// awa._reclaim_idle_lanes(max_lanes int, idle_after_s int) -> bigint[]
// {examined, drained, reclaimed, busy, skipped}: one pass of the lane reclaim
// over at most max_lanes lanes (above). idle_after_s NULL:
// awa.lane_reclaim_after; -1: nothing is reclaimed. skipped 1: another pass of
// this database was running (the lane reclaim lock, lane_locks.hpp).
AWA_FUNCTION(awa_internal_reclaim_idle_lanes)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("awa: max_lanes must not be NULL"),
		                errhint("Pass the number of lanes to look at.")));
	int32 max_lanes = PG_GETARG_INT32(0);
	int32 idle_after_s = PG_ARGISNULL(1) ? awa_lane_reclaim_after_s : PG_GETARG_INT32(1);
	if (idle_after_s < -1)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		                errmsg("awa: a lane idle time of %d seconds is out of range", idle_after_s),
		                errhint("Pass -1 (never reclaim), 0 (at once) or a number of seconds.")));
	if (max_lanes < 1 || max_lanes > kMaxLanesPerPass)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		                errmsg("awa: a lane reclaim pass over %d lanes is out of range", max_lanes),
		                errhint("Look at 1 to 100000 lanes per pass.")));
	if (RecoveryInProgress())
		ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION), errmsg("awa: lanes cannot be reclaimed during recovery"),
		                errhint("Run maintenance on the primary.")));
	PassCounts counts{0, 0, 0, 0};
	bool skipped = false;
	if (idle_after_s >= 0 && !TryLockLaneReclaim()) {
		// Another pass of this database runs (the worker's, or a call):
		// two at once could each leave the other's last lane of a queue.
		skipped = true;
	} else if (idle_after_s >= 0) {
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "awa: SPI_connect failed");
		HTAB *lanes = IdleLanes();
		Datum after[1] = {Int64GetDatum(next_after)};
		ExecuteLatest(Stmt::kLanesAfter, 0, after, NULL, max_lanes);
		int count = static_cast<int>(SPI_processed);
		PassLane *pass = static_cast<PassLane *>(palloc(sizeof(PassLane) * (count + 1)));
		for (int i = 0; i < count; i++) {
			CHECK_FOR_INTERRUPTS();
			HeapTuple tuple = SPI_tuptable->vals[i];
			TupleDesc desc = SPI_tuptable->tupdesc;
			bool isnull;
			pass[i].lane = LaneOfRow(tuple, desc);  // keyed from the "keyed" column
			pass[i].queue = DatumGetTextPCopy(SPI_getbinval(tuple, desc, 4, &isnull));
			pass[i].enqueue = 0;
		}
		bool round_ends = count < max_lanes;
		next_after = round_ends || count == 0 ? 0 : pass[count - 1].lane.lane_id;
		TimestampTz now = GetCurrentTimestamp();
		int64 epoch;
		RingPositions ring = CurrentRings(&epoch);
		bool *candidate = static_cast<bool *>(palloc0(sizeof(bool) * (count + 1)));
		// What a look allocates (a walk's view of the lane) is freed after it.
		MemoryContext look_context = AllocSetContextCreate(CurrentMemoryContext, "awa lane reclaim look",
		                                                   ALLOCSET_DEFAULT_SIZES);
		// A producer of a lane deleted here waits for this transaction's
		// commit, so the deletes come after every first look and there are at
		// most kMaxReclaimsPerPass of them: that wait is one pass's last looks
		// and deletes, tens of milliseconds. A pass that finds that many
		// candidates ends at the last of them; the next pass starts after it,
		// and the worker runs it within a second (maintenance_worker.cpp).
		int candidates = 0;
		for (int i = 0; i < count; i++) {
			CHECK_FOR_INTERRUPTS();  // between lanes: no lane lock is held here
			counts.examined++;
			MemoryContext caller = MemoryContextSwitchTo(look_context);
			candidate[i] = FirstLook(lanes, &pass[i], &ring, now, idle_after_s, &counts);
			MemoryContextSwitchTo(caller);
			MemoryContextReset(look_context);
			if (candidate[i] && ++candidates == kMaxReclaimsPerPass && i < count - 1) {
				next_after = pass[i].lane.lane_id;
				round_ends = false;
				count = i + 1;
			}
		}
		for (int i = 0; i < count; i++) {
			CHECK_FOR_INTERRUPTS();
			if (candidate[i] && ReclaimUnderLocks(pass[i], &counts)) {
				counts.reclaimed++;
				Forget(lanes, pass[i].lane.lane_id);
			}
		}
		if (counts.reclaimed > 0)
			// Every backend's caches of lanes (LanesOfQueue, LaneById) forget
			// them when this commits; standbys' too (the commit record
			// carries it). A backend that still holds one finds its row gone.
			CacheInvalidateRelcacheByRelid(AwaObjectOid(AwaObject::kQueueLanes));
		if (round_ends) {
			EndRound(lanes);
			pass_round++;
		}
		SPI_finish();
	}
	Datum out[5] = {Int64GetDatum(counts.examined), Int64GetDatum(counts.drained), Int64GetDatum(counts.reclaimed),
	                Int64GetDatum(counts.busy), Int64GetDatum(skipped ? 1 : 0)};
	PG_RETURN_ARRAYTYPE_P(construct_array(out, 5, INT8OID, 8, true, TYPALIGN_DOUBLE));
}
