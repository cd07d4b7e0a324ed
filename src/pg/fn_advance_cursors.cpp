// fn_advance_cursors.cpp: awa._advance_cursors, the claim walk's advance-only
// mode, run by maintenance.
//
// A lane's cursor moves past claimed lanes only at the lane's next claim, so
// the cursor of a lane that went idle stays behind its last claimed jobs. For
// every lane whose cursor is behind its enqueue cursor and that no claimer
// holds (try-lock), this walks the lane exactly as a claim would
// (claim_walk.hpp), from visible evidence only, moves the cursor over the
// spent prefix and claims nothing. Prune runs it first, so the lanes it
// carries forward are only the live ones.
#include "pg/claim_walk.hpp"
#include "pg/guard.hpp"
#include "pg/lane_locks.hpp"
#include "pg/lanes.hpp"
#include "pg/rings.hpp"
#include "pg/sequences.hpp"
#include "pg/spi_plans.hpp"

extern "C" {
#include "utils/resowner.h"
}

namespace awa::pg {

namespace {

// Moves one lane's cursor over its spent prefix if no claimer holds the lane.
// Returns whether it moved.
bool
AdvanceLaneCursor(text *queue, const Lane &lane, const RingPositions &ring)
{
	if (!TryLockLaneClaim(lane.lane_id))
		return false;
	LaneWalk walk = WalkLane(queue, lane, ring, 1, WalkMode::kAdvanceOnly);
	bool moved = ApplyCursorAdvance(lane, walk);
	// setval keeps RowExclusiveLock on the cursor to the end of the
	// transaction, an interlock with DDL only (setval is not transactional,
	// and no proof reads the claim cursor's lock): released per lane, so one
	// call over thousands of lanes does not fill the lock table. sequence.c
	// takes it under the top transaction's resource owner, so it is released
	// there. (Its per-backend cache still thinks the lock held: a later setval
	// of this cursor in this transaction would not take it again, which only
	// loses that DDL interlock for the rest of this maintenance transaction.)
	if (moved) {
		ResourceOwner saved = CurrentResourceOwner;
		CurrentResourceOwner = TopTransactionResourceOwner;
		UnlockRelationOid(lane.claim_seq, RowExclusiveLock);
		CurrentResourceOwner = saved;
	}
	UnlockLaneClaim(lane.lane_id);
	return moved;
}

}  // namespace

}  // namespace awa::pg

using namespace awa::pg;

// awa._advance_cursors() -> number of lanes whose claim cursor moved.
AWA_FUNCTION(awa_internal_advance_cursors)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	ExecuteLatest(Stmt::kAllLanes, 0, NULL, NULL);
	int count = static_cast<int>(SPI_processed);
	Lane *lanes = static_cast<Lane *>(palloc(sizeof(Lane) * (count + 1)));
	text **queues = static_cast<text **>(palloc(sizeof(text *) * (count + 1)));
	for (int i = 0; i < count; i++) {
		CHECK_FOR_INTERRUPTS();  // every loop over lanes can be cancelled
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
		CHECK_FOR_INTERRUPTS();  // between lanes: no lane lock is held here
		// A look, not a hold: the lock is released at once, or a call over
		// thousands of lanes kept two relation locks per lane to its end and
		// ran out of the shared lock table (review of issue 19: about 7,000
		// lanes; test/t/018_many_queues.pl counts them).
		if (SequenceValue(lanes[i].claim_seq, false) >= SequenceValue(lanes[i].enqueue_seq, false))
			continue;
		if (!have_ring) {
			int64 epoch;
			ring = CurrentRings(&epoch);
			have_ring = true;
		}
		if (AdvanceLaneCursor(queues[i], lanes[i], ring))
			moved++;
	}
	SPI_finish();
	PG_RETURN_INT32(moved);
}
