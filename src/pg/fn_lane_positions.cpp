// fn_lane_positions.cpp: awa._lane_positions(first_lane_seq, count, lane_seqs),
// the lane positions of a claim batch or completion receipt for the SQL side,
// and awa._claim_job_ids(first_job_id, count, job_ids), a claim batch's job ids.
// Both rows store their jobs' positions as lane_seqs only when they are not
// first_lane_seq, first_lane_seq + 1, ... (then lane_seqs is NULL: a batch-1
// row stores one bigint instead of a 32-byte array; 04_queue_ring.sql,
// 05_claim_ring.sql). The rule and its expansion are core/lane_positions.hpp's,
// which the C++ readers call too (attempts.cpp).
// A claim batch stores its job ids the same way (first_job_id, and job_ids
// only when they are not first_job_id, first_job_id + 1, ...).
// IMMUTABLE, not STRICT: the array, when not NULL, is returned as it is;
// otherwise NULL first or count gives NULL, and a count outside 1 .. 16,384
// (a claim batch's size) is refused (22023).
#include "pg/core_calls.hpp"
#include "pg/guard.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/array.h"
}

namespace {

// The values a row stores as `first` with `count` of them, or `stored` when
// the row stores them whole; `first_name` names the row's column and
// `count_hint` where a count comes from, in errors.
Datum
ExpandFromFirst(FunctionCallInfo fcinfo, const char *first_name, const char *count_hint)
{
	if (!PG_ARGISNULL(2))
		PG_RETURN_DATUM(PG_GETARG_DATUM(2));
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_NULL();
	int64 first = PG_GETARG_INT64(0);
	int32 count = PG_GETARG_INT32(1);
	constexpr int32 kMaxCount = awa::core::kMaxRowLanePositions;
	if (!awa::core::ExpandableFromFirst(first, count)) {
		if (count < 1 || count > kMaxCount)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			                errmsg("count must be between 1 and %d", kMaxCount),
			                errhint("%s", count_hint)));
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		                errmsg("%s must be between 1 and " INT64_FORMAT " - count", first_name, PG_INT64_MAX),
		                errhint("Pass the row's %s.", first_name)));
	}
	Datum *values = static_cast<Datum *>(palloc(sizeof(Datum) * count));
	for (int32 i = 0; i < count; i++) {
		CHECK_FOR_INTERRUPTS();
		values[i] = Int64GetDatum(awa::core::ValueFromFirst(first, i));
	}
	PG_RETURN_ARRAYTYPE_P(construct_array(values, count, INT8OID, 8, true, TYPALIGN_DOUBLE));
}

}  // namespace

// awa._lane_positions(first_lane_seq bigint, count integer, lane_seqs bigint[]) -> bigint[]
AWA_FUNCTION(awa_internal_lane_positions)
{
	return ExpandFromFirst(fcinfo, "first_lane_seq",
	                       "Pass a claim batch's claimed_count or a completion receipt's completed_count.");
}

// awa._claim_job_ids(first_job_id bigint, count integer, job_ids bigint[]) -> bigint[]
AWA_FUNCTION(awa_internal_claim_job_ids)
{
	return ExpandFromFirst(fcinfo, "first_job_id", "Pass the claim batch's claimed_count.");
}
