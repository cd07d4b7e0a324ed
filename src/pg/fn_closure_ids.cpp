// fn_closure_ids.cpp: the closure batch ids of a claim batch for the SQL side:
// awa._first_closure_batch_id and awa._last_closure_batch_id, the batch_id
// range (of a slot's unique index) that holds every closure (and completion) batch of a claim batch,
// and awa._claim_batch_of_closure, the claim batch a closure or completion batch is keyed under.
// Cancel, get_job, rescue and the claim-slot carry read closures by claim
// batch through them, so that they use the encoding the completion path
// writes (src/core/receipt.hpp is the one source). IMMUTABLE STRICT: NULL in,
// NULL out; an id no claim batch can have is refused (22023).
#include "pg/core_calls.hpp"
#include "pg/guard.hpp"

namespace {

int64
ClaimBatchIdArgument(FunctionCallInfo fcinfo)
{
	int64 claim_batch_id = PG_GETARG_INT64(0);
	if (claim_batch_id < 1 || claim_batch_id > awa::core::kMaxClaimBatchId)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		                errmsg("claim_batch_id must be between 1 and " INT64_FORMAT, awa::core::kMaxClaimBatchId),
		                errhint("Pass a batch_id of awa.lease_claim_batches (a receipt id >> 18).")));
	return claim_batch_id;
}

}  // namespace

// awa._first_closure_batch_id(claim_batch_id) -> the id of the claim batch's first closure batch.
AWA_FUNCTION(awa_internal_first_closure_batch_id)
{
	PG_RETURN_INT64(awa::core::FirstClosureBatchId(ClaimBatchIdArgument(fcinfo)));
}

// awa._last_closure_batch_id(claim_batch_id) -> the largest id a closure batch of the claim batch can have.
AWA_FUNCTION(awa_internal_last_closure_batch_id)
{
	PG_RETURN_INT64(awa::core::LastClosureBatchId(ClaimBatchIdArgument(fcinfo)));
}

// awa._claim_batch_of_closure(closure_batch_id) -> the claim batch the closure (or completion) batch is keyed under.
AWA_FUNCTION(awa_internal_claim_batch_of_closure)
{
	int64 closure_batch_id = PG_GETARG_INT64(0);
	if (closure_batch_id < awa::core::FirstClosureBatchId(1) ||
	    closure_batch_id > awa::core::LastClosureBatchId(awa::core::kMaxClaimBatchId))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		                errmsg("closure_batch_id must be between " INT64_FORMAT " and " INT64_FORMAT,
		                       awa::core::FirstClosureBatchId(1),
		                       awa::core::LastClosureBatchId(awa::core::kMaxClaimBatchId)),
		                errhint("Pass a batch_id of awa.lease_claim_closure_batches or "
		                        "awa.receipt_completion_batches.")));
	PG_RETURN_INT64(awa::core::ClaimBatchOfClosure(closure_batch_id));
}
