// fn_lane_positions.cpp: awa._lane_positions(first_lane_seq, count, lane_seqs),
// the lane positions of a claim batch or completion receipt for the SQL side.
// Both rows store their jobs' positions as lane_seqs only when they are not
// first_lane_seq, first_lane_seq + 1, ... (then lane_seqs is NULL: a batch-1
// row stores one bigint instead of a 32-byte array; 04_queue_ring.sql,
// 05_claim_ring.sql). The rule and its expansion are core/lane_positions.hpp's,
// which the C++ readers call too (attempts.cpp).
// IMMUTABLE, not STRICT: lane_seqs, when not NULL, is returned as it is;
// otherwise NULL first or count gives NULL, and a count outside 1 .. 16,384
// (a claim batch's size) is refused (22023).
#include "pg/core_calls.hpp"
#include "pg/guard.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/array.h"
}

// awa._lane_positions(first_lane_seq bigint, count integer, lane_seqs bigint[]) -> bigint[]
AWA_FUNCTION(awa_internal_lane_positions)
{
	if (!PG_ARGISNULL(2))
		PG_RETURN_DATUM(PG_GETARG_DATUM(2));
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_NULL();
	int64 first = PG_GETARG_INT64(0);
	int32 count = PG_GETARG_INT32(1);
	constexpr int32 kMaxCount = awa::core::kMaxRowLanePositions;
	if (!awa::core::LanePositionsExpandable(first, count)) {
		if (count < 1 || count > kMaxCount)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			                errmsg("count must be between 1 and %d", kMaxCount),
			                errhint("Pass a claim batch's claimed_count or a completion receipt's completed_count.")));
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		                errmsg("first_lane_seq must be between 1 and " INT64_FORMAT " - count", PG_INT64_MAX),
		                errhint("Pass the row's first_lane_seq.")));
	}
	Datum *positions = static_cast<Datum *>(palloc(sizeof(Datum) * count));
	for (int32 i = 0; i < count; i++)
		positions[i] = Int64GetDatum(awa::core::LanePositionFromFirst(first, i));
	PG_RETURN_ARRAYTYPE_P(construct_array(positions, count, INT8OID, 8, true, TYPALIGN_DOUBLE));
}
