// receipt.cpp: receipt id encoding (see receipt.hpp).
#include "core/receipt.hpp"

#include "core/core_only.hpp"  // last: proves no PostgreSQL header came in

namespace awa::core {

int64_t
EncodeReceipt(const Receipt &receipt) noexcept
{
	return (receipt.claim_batch_id << (kReceiptIndexBits + kReceiptSlotBits)) |
	       (static_cast<int64_t>(receipt.index) << kReceiptSlotBits) | receipt.claim_slot;
}

std::optional<Receipt>
DecodeReceipt(int64_t receipt_id, int32_t claim_slot_count) noexcept
{
	if (receipt_id < 0)
		return std::nullopt;
	Receipt receipt;
	receipt.claim_slot = static_cast<int32_t>(receipt_id & (kMaxClaimSlots - 1));
	receipt.index = static_cast<int32_t>((receipt_id >> kReceiptSlotBits) & kMaxBatchIndex);
	receipt.claim_batch_id = receipt_id >> (kReceiptIndexBits + kReceiptSlotBits);
	if (receipt.claim_slot >= claim_slot_count || receipt.claim_batch_id < 1)
		return std::nullopt;
	return receipt;
}

int64_t
ClosureBatchId(int64_t claim_batch_id, int32_t first_index) noexcept
{
	return (claim_batch_id << kClosureIndexBits) | first_index;
}

int32_t
ClosureFirstIndex(int64_t closure_batch_id) noexcept
{
	return static_cast<int32_t>(closure_batch_id & kMaxClosureIndex);
}

int64_t
ClaimBatchOfClosure(int64_t closure_batch_id) noexcept
{
	return closure_batch_id >> kClosureIndexBits;
}

int64_t
FirstClosureBatchId(int64_t claim_batch_id) noexcept
{
	return ClosureBatchId(claim_batch_id, 0);
}

int64_t
LastClosureBatchId(int64_t claim_batch_id) noexcept
{
	return ClosureBatchId(claim_batch_id, kMaxClosureIndex);
}

}  // namespace awa::core
