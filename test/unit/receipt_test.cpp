// receipt_test.cpp: receipt id encoding (src/core/receipt.hpp).
//   receipt_id = (claim_batch_id << 18) | (index << 4) | claim_slot
#include "core/receipt.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <set>

namespace awa::core {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

void
ExpectDecodes(int64_t id, int32_t slot_count, int64_t batch, int32_t index, int32_t slot)
{
	std::optional<Receipt> r = DecodeReceipt(id, slot_count);
	ASSERT_TRUE(r.has_value()) << "id=" << id << " slot_count=" << slot_count;
	EXPECT_EQ(r->claim_batch_id, batch) << "id=" << id;
	EXPECT_EQ(r->index, index) << "id=" << id;
	EXPECT_EQ(r->claim_slot, slot) << "id=" << id;
}

TEST(Receipt, Constants)
{
	EXPECT_EQ(kReceiptSlotBits, 4);
	EXPECT_EQ(kReceiptIndexBits, 14);
	EXPECT_EQ(kMaxClaimSlots, 16);
	EXPECT_EQ(kMaxBatchIndex, 16383);
	EXPECT_EQ(kMaxClaimBatchId, (int64_t{1} << 45) - 1);
	EXPECT_EQ(kMaxClaimBatchId, 35184372088831LL);
	// max_jobs (10000) fits the index field
	EXPECT_GE(kMaxBatchIndex + 1, 10000);
}

TEST(Receipt, EncodeLayout)
{
	EXPECT_EQ(EncodeReceipt(Receipt{1, 0, 0}), int64_t{1} << 18);
	EXPECT_EQ(EncodeReceipt(Receipt{1, 0, 0}), 262144);
	EXPECT_EQ(EncodeReceipt(Receipt{1, 0, 15}), 262144 + 15);
	EXPECT_EQ(EncodeReceipt(Receipt{1, 1, 0}), 262144 + 16);
	EXPECT_EQ(EncodeReceipt(Receipt{1, 1, 1}), 262161);
	EXPECT_EQ(EncodeReceipt(Receipt{1, kMaxBatchIndex, 0}), 262144 + (16383 << 4));
	EXPECT_EQ(EncodeReceipt(Receipt{2, 0, 0}), 524288);
	EXPECT_EQ(EncodeReceipt(Receipt{3, 9999, 7}), (int64_t{3} << 18) | (int64_t{9999} << 4) | 7);
	// every field at its maximum sets all 63 value bits
	EXPECT_EQ(EncodeReceipt(Receipt{kMaxClaimBatchId, kMaxBatchIndex, 15}), kInt64Max);
	EXPECT_EQ(EncodeReceipt(Receipt{kMaxClaimBatchId, 0, 0}), kInt64Max - ((int64_t{1} << 18) - 1));
}

TEST(Receipt, RoundTripAtLimits)
{
	for (int64_t batch : {int64_t{1}, int64_t{2}, int64_t{12345}, int64_t{1} << 31, int64_t{1} << 32,
	                      kMaxClaimBatchId - 1, kMaxClaimBatchId}) {
		for (int32_t index : {0, 1, 9999, 10000, kMaxBatchIndex - 1, kMaxBatchIndex}) {
			for (int32_t slot : {0, 1, 7, 8, 14, 15}) {
				int64_t id = EncodeReceipt(Receipt{batch, index, slot});
				ASSERT_GT(id, 0) << batch << "/" << index << "/" << slot;
				ExpectDecodes(id, 16, batch, index, slot);
				if (slot < 8)
					ExpectDecodes(id, 8, batch, index, slot);
				else
					EXPECT_FALSE(DecodeReceipt(id, 8).has_value()) << "slot " << slot << " in an 8-slot ring";
			}
		}
	}
}

TEST(Receipt, DecodeMaximum)
{
	ExpectDecodes(kInt64Max, 16, kMaxClaimBatchId, kMaxBatchIndex, 15);
	EXPECT_FALSE(DecodeReceipt(kInt64Max, 15).has_value());
}

TEST(Receipt, RejectsNegativeIds)
{
	EXPECT_FALSE(DecodeReceipt(-1, 16).has_value());
	EXPECT_FALSE(DecodeReceipt(-262144, 16).has_value());
	EXPECT_FALSE(DecodeReceipt(-262161, 16).has_value());
	EXPECT_FALSE(DecodeReceipt(std::numeric_limits<int64_t>::min(), 16).has_value());
	EXPECT_FALSE(DecodeReceipt(std::numeric_limits<int64_t>::min() + 262144, 16).has_value());
	// -(valid id) must not decode to anything either
	EXPECT_FALSE(DecodeReceipt(-EncodeReceipt(Receipt{5, 3, 2}), 16).has_value());
}

TEST(Receipt, RejectsBatchZero)
{
	EXPECT_FALSE(DecodeReceipt(0, 16).has_value());
	EXPECT_FALSE(DecodeReceipt(1, 16).has_value());
	EXPECT_FALSE(DecodeReceipt(15, 16).has_value());
	EXPECT_FALSE(DecodeReceipt(16, 16).has_value());
	EXPECT_FALSE(DecodeReceipt((int64_t{1} << 18) - 1, 16).has_value());  // index and slot at max, batch 0
	ExpectDecodes(int64_t{1} << 18, 16, 1, 0, 0);                       // first id with batch 1
}

TEST(Receipt, RejectsSlotOutsideRing)
{
	// claim ring of 8 slots
	for (int32_t slot = 0; slot < 16; ++slot) {
		int64_t id = EncodeReceipt(Receipt{42, 5, slot});
		if (slot < 8)
			ExpectDecodes(id, 8, 42, 5, slot);
		else
			EXPECT_FALSE(DecodeReceipt(id, 8).has_value()) << "slot " << slot;
	}
	// edges: slot == slot_count is outside, slot_count - 1 inside
	EXPECT_FALSE(DecodeReceipt(EncodeReceipt(Receipt{1, 0, 2}), 2).has_value());
	ExpectDecodes(EncodeReceipt(Receipt{1, 0, 1}), 2, 1, 0, 1);
	EXPECT_FALSE(DecodeReceipt(EncodeReceipt(Receipt{1, 0, 1}), 1).has_value());
	ExpectDecodes(EncodeReceipt(Receipt{1, 0, 0}), 1, 1, 0, 0);
	ExpectDecodes(EncodeReceipt(Receipt{1, 0, 15}), 16, 1, 0, 15);
	EXPECT_FALSE(DecodeReceipt(EncodeReceipt(Receipt{1, 0, 15}), 15).has_value());
}

TEST(Receipt, EncodingIsInjective)
{
	std::set<int64_t> seen;
	int count = 0;
	for (int64_t batch : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{1000}, kMaxClaimBatchId})
		for (int32_t index : {0, 1, 2, 15, 16, 17, 1023, kMaxBatchIndex})
			for (int32_t slot = 0; slot < 16; ++slot) {
				seen.insert(EncodeReceipt(Receipt{batch, index, slot}));
				++count;
			}
	EXPECT_EQ(seen.size(), static_cast<size_t>(count));
}

// Every id of the low range decodes to fields that encode back to the same id.
TEST(Receipt, DecodeEncodeRoundTripOverARange)
{
	for (int64_t id = (int64_t{1} << 18) - 64; id < (int64_t{3} << 18) + 64; ++id) {
		std::optional<Receipt> r = DecodeReceipt(id, 16);
		if (id < (int64_t{1} << 18)) {
			ASSERT_FALSE(r.has_value()) << id;
			continue;
		}
		ASSERT_TRUE(r.has_value()) << id;
		ASSERT_GE(r->index, 0);
		ASSERT_LE(r->index, kMaxBatchIndex);
		ASSERT_GE(r->claim_slot, 0);
		ASSERT_LT(r->claim_slot, 16);
		ASSERT_EQ(EncodeReceipt(*r), id);
	}
}

// The closures of one claim batch are exactly the ids of its range, keyed by
// the first position each closes (so ordered by position); the ranges of two
// claim batches never meet, up to the largest claim batch id, and every
// closure id is positive.
TEST(ClosureBatchId, RangesPerClaimBatchAreDisjointAndOrdered)
{
	static_assert(kMaxClosureIndex >= kMaxBatchIndex, "a claim batch of the most jobs fits");
	for (int64_t batch : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{1000}, kMaxClaimBatchId - 1, kMaxClaimBatchId}) {
		EXPECT_GT(FirstClosureBatchId(batch), 0);
		EXPECT_EQ(ClosureBatchId(batch, 0), FirstClosureBatchId(batch));
		EXPECT_EQ(ClosureBatchId(batch, kMaxClosureIndex), LastClosureBatchId(batch));
		int64_t previous = FirstClosureBatchId(batch) - 1;
		for (int32_t first_index : {0, 1, 2, 100, kMaxClosureIndex - 1, kMaxClosureIndex}) {
			int64_t id = ClosureBatchId(batch, first_index);
			EXPECT_GT(id, previous);  // in the order of the positions
			EXPECT_LE(id, LastClosureBatchId(batch));
			EXPECT_EQ(id >> kClosureIndexBits, batch);       // the claim batch, read back
			EXPECT_EQ(ClosureFirstIndex(id), first_index);  // and the first position
			EXPECT_EQ(ClaimBatchOfClosure(id), batch);       // and the claim batch
			previous = id;
		}
		if (batch > 1)
			EXPECT_EQ(LastClosureBatchId(batch - 1) + 1, FirstClosureBatchId(batch));
	}
	// The largest id still fits a bigint with room to spare.
	EXPECT_LT(LastClosureBatchId(kMaxClaimBatchId), std::numeric_limits<int64_t>::max());
	EXPECT_GT(LastClosureBatchId(kMaxClaimBatchId), LastClosureBatchId(kMaxClaimBatchId - 1));
}

}  // namespace
}  // namespace awa::core
