// fn_tombstone.cpp: awa._tombstone, the race-safe half of cancelling an
// available job (awa.cancel in sql/install/31_cancel.sql does the rest).
//
// An available job is hidden by a ready tombstone, never by changing its
// ready row. The tombstone must not race a claim of the same lane: under the
// lane's claim lock (waited for; claimers hold it only while they plan), a
// lane another claim has planned but not yet committed is in the in-flight
// registry, so the cancel waits for that claim's transaction and looks again;
// a committed claim's evidence is then visible. If the lane is unclaimed, the
// tombstone is written and the lane is registered in the in-flight registry
// for this transaction, so no claim plans it, or moves the cursor past it,
// before the tombstone is committed (or rolled back). Exactly one of the claim
// and the cancel wins.
#include "pg/core_calls.hpp"
#include "pg/arguments.hpp"
#include "pg/counters.hpp"
#include "pg/guard.hpp"
#include "pg/gucs.hpp"
#include "pg/inflight.hpp"
#include "pg/key_lanes.hpp"
#include "pg/wakeups.hpp"
#include "pg/lane_locks.hpp"
#include "pg/lanes.hpp"
#include "pg/lane_cursors.hpp"
#include "pg/spi_plans.hpp"

using namespace awa::pg;

// awa._tombstone(queue, priority, lane_seq, ready_slot, ready_generation, job_id, lane_id)
//   -> tombstoned | claimed | already_tombstoned
AWA_FUNCTION(awa_internal_tombstone)
{
	text *queue = QueueArgument(fcinfo, 0);
	int16 priority = PriorityArgument(fcinfo, 1);
	for (int i = 2; i < 6; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("awa._tombstone: argument %d is NULL", i + 1)));
	int64 lane_seq = PG_GETARG_INT64(2);
	int32 ready_slot = PG_GETARG_INT32(3);
	int64 ready_generation = PG_GETARG_INT64(4);
	int64 job_id = PG_GETARG_INT64(5);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	Lane lane;
	if (PG_NARGS() > 6 && !PG_ARGISNULL(6)) {
		if (!LaneById(PG_GETARG_INT64(6), &lane))
			ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
			                errmsg("awa: lane " INT64_FORMAT " of job " INT64_FORMAT " is missing", PG_GETARG_INT64(6),
			                       job_id)));
	} else {
		lane = EnsureLane(queue, priority);
	}
	for (;;) {
		CHECK_FOR_INTERRUPTS();  // no lane lock is held here; both waits below check too
		LockLaneClaim(lane.lane_id);
		TransactionId holder = InflightHolder(lane.lane_id, lane_seq);
		if (!TransactionIdIsValid(holder))
			break;
		UnlockLaneClaim(lane.lane_id);
		XactLockTableWait(holder, NULL, NULL, XLTW_None);
	}
	const char *result = NULL;
	Datum key[3] = {Int64GetDatum(lane.lane_id), Int64GetDatum(ready_generation), Int64GetDatum(lane_seq)};
	ExecuteLatest(Stmt::kLaneSeqClaimed, ready_slot, key, NULL, 1);
	if (SPI_processed > 0)
		result = "claimed";
	if (result == NULL) {
		ExecuteLatest(Stmt::kLaneSeqTombstoned, ready_slot, key, NULL, 1);
		if (SPI_processed > 0)
			result = "already_tombstoned";
	}
	if (result == NULL && lane_seq <= ReadLaneCursors(lane).claim)
		result = "claimed";
	if (result != NULL) {
		UnlockLaneClaim(lane.lane_id);
		SPI_finish();
		PG_RETURN_TEXT_P(cstring_to_text(result));
	}
	Datum row[8] = {Int16GetDatum(ready_slot),   Int64GetDatum(ready_generation), Int64GetDatum(lane.lane_id),
	                PointerGetDatum(queue),      Int16GetDatum(priority),         Int64GetDatum(lane_seq),
	                Int64GetDatum(job_id),       TimestampTzGetDatum(GetCurrentTimestamp())};
	// Its abort gives the job back: the lane is a keyed scheduler's member again.
	NoteLaneHeld(queue, lane);
	Execute(Stmt::kInsertTombstone, ready_slot, row, NULL);
	CountMove(queue, static_cast<int>(awa::core::JobState::kAvailable), static_cast<int>(awa::core::JobState::kCancelled),
	          1);
	if (lane.keyed)
		NoteKeyedAvailable(queue, 1);
	else
		NoteHeadRemove(queue, priority, lane_seq, 1);
	BridgeRange range{lane_seq, lane_seq + 1};
	if (awa_early_lane_release && RegisterInflight(lane.lane_id, &range, 1, QueueWakeBucket(queue)))
		UnlockLaneClaim(lane.lane_id);
	SPI_finish();
	PG_RETURN_TEXT_P(cstring_to_text("tombstoned"));
}
