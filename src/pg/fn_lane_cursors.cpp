// fn_lane_cursors.cpp: awa.lane_cursors, the read behind the awa.lanes view
// and maintenance's reads of claim cursors (43_carry.sql, 80_metrics.sql),
// awa._reserve_lane_positions and awa._ensure_lane.
#include "pg/arguments.hpp"
#include "pg/guard.hpp"
#include "pg/lane_cursors.hpp"
#include "pg/lane_locks.hpp"
#include "pg/spi_plans.hpp"

using namespace awa::pg;

// awa.lane_cursors(p_queue text DEFAULT NULL) -> setof (queue, priority,
// lane_id, enqueue_cursor, claim_cursor): the queue's lanes, those of its keys
// too (every lane when NULL), each cursor read under its page's share lock (a plain SELECT of
// awa.queue_lanes may see one half-written).
AWA_FUNCTION(awa_lane_cursors)
{
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	text *queue = PG_ARGISNULL(0) ? NULL : PG_GETARG_TEXT_PP(0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	if (queue == NULL) {
		ExecuteLatest(Stmt::kAllLanes, 0, NULL, NULL);
	} else {
		Datum values[1] = {PointerGetDatum(queue)};
		ExecuteLatest(Stmt::kAllLanesOfQueue, 0, values, NULL);
	}
	uint64 count = SPI_processed;
	SPITupleTable *rows = SPI_tuptable;
	for (uint64 i = 0; i < count; i++) {
		CHECK_FOR_INTERRUPTS();  // every loop over lanes can be cancelled
		HeapTuple tuple = rows->vals[i];
		Lane lane = LaneOfRow(tuple, rows->tupdesc);
		LaneCursors cursors = ReadLaneCursors(lane);
		if (cursors.gone)
			continue;  // reclaimed since the rows were read (fn_reclaim_lanes.cpp)
		bool isnull;
		Datum values[5] = {queue != NULL ? PointerGetDatum(queue) : SPI_getbinval(tuple, rows->tupdesc, 4, &isnull),
		                   Int16GetDatum(lane.priority), Int64GetDatum(lane.lane_id), Int64GetDatum(cursors.enqueue),
		                   Int64GetDatum(cursors.claim)};
		bool nulls[5] = {false, false, false, false, false};
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_finish();
	return (Datum)0;
}

// awa._reserve_lane_positions(queue, priority, count) -> the first position.
AWA_FUNCTION(awa_internal_reserve_lane_positions)
{
	text *queue = PG_GETARG_TEXT_PP(0);
	int32 priority = PG_GETARG_INT32(1);
	int64 count = PG_GETARG_INT64(2);
	if (priority < 1 || priority > kMaxLanesPerQueue)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("awa: priority %d is out of range", priority),
		                errhint("A lane's priority is 1 to 4.")));
	if (count < 1)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		                errmsg("awa: cannot reserve " INT64_FORMAT " lane positions", count),
		                errhint("Reserve at least one.")));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	Lane lane = EnsureLane(queue, static_cast<int16>(priority));
	int64 first;
	// A lane reclaimed since this backend cached it is made again.
	while ((first = ReserveLanePositions(lane, count)) == 0)
		lane = RefindLane(queue, static_cast<int16>(priority));
	SPI_finish();
	PG_RETURN_INT64(first);
}

// awa._ensure_lane(queue, priority, concurrency_key) -> lane_id: the lane,
// created if it is new, and kept from the lane reclaim until this transaction
// ends (HoldLane). For what uses a deferred job's lane without reserving a
// position in it: awa.move_jobs (a job moved to another queue keeps that queue
// listed) and awa.cancel (its terminal row is keyed by the lane; a lane
// reclaimed meanwhile would leave that row in no lane of its queue, and
// awa.list_jobs reads a queue's rows by its lanes). concurrency_key NULL: the
// lane of jobs without a key.
AWA_FUNCTION(awa_internal_ensure_lane)
{
	text *queue = QueueArgument(fcinfo, 0);
	int16 priority = PriorityArgument(fcinfo, 1);
	text *key = PG_ARGISNULL(2) ? NULL : PG_GETARG_TEXT_PP(2);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "awa: SPI_connect failed");
	Lane lane = HoldLane(queue, priority, key);
	SPI_finish();
	PG_RETURN_INT64(lane.lane_id);
}
