// receipt.hpp: receipt ids.
//
// A receipt id names one claimed attempt and says where its claim evidence is:
//   receipt_id = (claim_batch_id << 18) | (index << 4) | claim_slot
// index is the 0-based position of the job inside its claim batch (< 16384,
// enough for max_jobs 10000) and claim_slot the claim-ring slot (< 16). A
// completion therefore finds the compact claim row with one probe of its slot's unique batch_id index.
// The claim batch id comes from a global sequence, so after the claim ring
// wraps and the slot is truncated an old receipt finds no row and is refused.
// A crash that loses an asynchronous claim can also lose its batch-id advance;
// the claim fence (src/pg/claim_fence.hpp) moves the sequence past every id
// such a claim can have had, so a receipt id is never handed out twice.
//
// Encoding and decoding allocate nothing and never throw (noexcept), so src/pg
// calls them directly, without a bridge (src/pg/core_calls.hpp checks it).
#pragma once

#include <cstdint>
#include <optional>

namespace awa::core {

constexpr int kReceiptSlotBits = 4;
constexpr int kReceiptIndexBits = 14;
constexpr int32_t kMaxClaimSlots = 1 << kReceiptSlotBits;
constexpr int32_t kMaxBatchIndex = (1 << kReceiptIndexBits) - 1;
constexpr int64_t kMaxClaimBatchId = (int64_t{1} << (63 - kReceiptSlotBits - kReceiptIndexBits)) - 1;

struct Receipt {
	int64_t claim_batch_id;
	int32_t index;
	int32_t claim_slot;
};

// Encodes a receipt; the caller guarantees the fields are in range.
int64_t EncodeReceipt(const Receipt &receipt) noexcept;

// Decodes a receipt id; nothing for ids no claim can have produced
// (negative, or a slot outside a ring of `claim_slot_count` slots).
std::optional<Receipt> DecodeReceipt(int64_t receipt_id, int32_t claim_slot_count) noexcept;

// Closure batch ids. A closure row (one per run of consecutive positions a
// closing call ends in a claim batch; a completion's completion batch shares
// its closure's id) is keyed under the claim batch by the first position it
// closes:
//   closure_batch_id = (claim_batch_id << 14) | first_index
// and closes positions first_index .. first_index + closed_count - 1. A
// position is closed at most once, so the runs of a claim batch are disjoint
// and their first positions distinct (first_index <= kMaxBatchIndex). All
// closures of a claim batch are the batch_id range [FirstClosureBatchId,
// LastClosureBatchId] (one index probe finds them, with no index on
// claim_batch_id and no sequence), and the closure that could cover position
// i is the last one keyed at or below ClosureBatchId(claim_batch_id, i): one
// probe answers "is position i closed" whatever the number of closures
// (docs/architecture.md, "Closures keyed under their claim batch"). SQL reads
// the range through awa._first_closure_batch_id and
// awa._last_closure_batch_id (fn_closure_ids.cpp), which call these.
constexpr int kClosureIndexBits = kReceiptIndexBits;
constexpr int32_t kMaxClosureIndex = (1 << kClosureIndexBits) - 1;

// The caller guarantees 1 <= claim_batch_id <= kMaxClaimBatchId and
// 0 <= first_index <= kMaxClosureIndex.
int64_t ClosureBatchId(int64_t claim_batch_id, int32_t first_index) noexcept;
int64_t FirstClosureBatchId(int64_t claim_batch_id) noexcept;
int64_t LastClosureBatchId(int64_t claim_batch_id) noexcept;
// The first position a closure of the claim batch closes (the low bits of its id).
int32_t ClosureFirstIndex(int64_t closure_batch_id) noexcept;
// The claim batch a closure (or completion) batch is keyed under (the high
// bits of its id): no closure or completion row stores it again (SQL:
// awa._claim_batch_of_closure).
int64_t ClaimBatchOfClosure(int64_t closure_batch_id) noexcept;

}  // namespace awa::core
