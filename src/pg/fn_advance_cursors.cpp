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
#include "pg/lane_cursors.hpp"
#include "pg/spi_plans.hpp"
#include "pg/server_run_key.hpp"

extern "C" {
#include "access/xlog.h"
}

using namespace awa::pg;

// awa._advance_cursors() -> number of lanes whose claim cursor moved.
AWA_FUNCTION(awa_internal_advance_cursors)
{
	if (RecoveryInProgress())
		ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
		                errmsg("awa: claim cursors cannot be advanced during recovery"),
		                errhint("Run maintenance on the primary.")));
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
		lanes[i] = LaneOfRow(tuple, desc);
		queues[i] = DatumGetTextPCopy(SPI_getbinval(tuple, desc, 4, &isnull));
	}
	int moved = 0;
	bool have_ring = false;
	RingPositions ring;
	for (int i = 0; i < count; i++) {
		CHECK_FOR_INTERRUPTS();  // between lanes: no lane lock is held here
		// No lock per lane (test/t/018_many_queues.pl counts them: a
		// relation lock per lane once ran out of the shared lock table).
		LaneCursors cursors = ReadLaneCursors(lanes[i]);
		if (cursors.claim >= cursors.enqueue)
			continue;
		if (!have_ring) {
			int64 epoch;
			ring = CurrentRings(&epoch);
			have_ring = true;
		}
		if (AdvanceIdleLaneCursor(queues[i], lanes[i], ring))
			moved++;
	}
	SPI_finish();
	PG_RETURN_INT32(moved);
}
