// ring_test.cpp: slot arithmetic, live-generation windows and prune targets
// (src/core/ring.hpp).
#include "core/ring.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>

namespace awa::core {
namespace {

TEST(SlotOf, GenerationZeroIsSlotZero)
{
	EXPECT_EQ(SlotOf(0, 16), 0);
	EXPECT_EQ(SlotOf(0, 8), 0);
	EXPECT_EQ(SlotOf(0, 2), 0);
	EXPECT_EQ(SlotOf(0, 1), 0);
}

TEST(SlotOf, WrapsAtSlotCount)
{
	EXPECT_EQ(SlotOf(1, 16), 1);
	EXPECT_EQ(SlotOf(14, 16), 14);
	EXPECT_EQ(SlotOf(15, 16), 15);
	EXPECT_EQ(SlotOf(16, 16), 0);
	EXPECT_EQ(SlotOf(17, 16), 1);
	EXPECT_EQ(SlotOf(31, 16), 15);
	EXPECT_EQ(SlotOf(32, 16), 0);
	EXPECT_EQ(SlotOf(7, 8), 7);
	EXPECT_EQ(SlotOf(8, 8), 0);
	EXPECT_EQ(SlotOf(9, 8), 1);
	EXPECT_EQ(SlotOf(5, 1), 0);
}

TEST(SlotOf, LargeGenerations)
{
	// 2^63 - 1 = ...1111 in binary: its last 4 bits are 1111 (15), last 3 are 111 (7).
	EXPECT_EQ(SlotOf(std::numeric_limits<int64_t>::max(), 16), 15);
	EXPECT_EQ(SlotOf(std::numeric_limits<int64_t>::max(), 8), 7);
	// 10^12 = 2^12 * 244140625, so it is 0 mod 16; 10^12 mod 64 = 0 too.
	EXPECT_EQ(SlotOf(1000000000000LL, 16), 0);
	EXPECT_EQ(SlotOf(1000000000001LL, 16), 1);
	// 2^32 + 3 does not fit 32 bits: the result must not depend on truncation.
	EXPECT_EQ(SlotOf((int64_t{1} << 32) + 3, 16), 3);
	EXPECT_EQ(SlotOf((int64_t{1} << 32) + 3, 7), static_cast<int32_t>(((int64_t{1} << 32) + 3) % 7));
}

TEST(SlotOf, NonPowerOfTwoSlotCounts)
{
	EXPECT_EQ(SlotOf(5, 5), 0);
	EXPECT_EQ(SlotOf(6, 5), 1);
	EXPECT_EQ(SlotOf(12, 5), 2);
	EXPECT_EQ(SlotOf(64, 64), 0);
	EXPECT_EQ(SlotOf(63, 64), 63);
}

TEST(OldestLiveGeneration, ClampsAtZero)
{
	EXPECT_EQ(OldestLiveGeneration(0, 16), 0);
	EXPECT_EQ(OldestLiveGeneration(1, 16), 0);
	EXPECT_EQ(OldestLiveGeneration(14, 16), 0);
	EXPECT_EQ(OldestLiveGeneration(15, 16), 0);
	EXPECT_EQ(OldestLiveGeneration(0, 8), 0);
	EXPECT_EQ(OldestLiveGeneration(7, 8), 0);
	EXPECT_EQ(OldestLiveGeneration(0, 2), 0);
	EXPECT_EQ(OldestLiveGeneration(1, 2), 0);
}

TEST(OldestLiveGeneration, WindowIsSlotCountWide)
{
	EXPECT_EQ(OldestLiveGeneration(16, 16), 1);
	EXPECT_EQ(OldestLiveGeneration(17, 16), 2);
	EXPECT_EQ(OldestLiveGeneration(30, 16), 15);
	EXPECT_EQ(OldestLiveGeneration(31, 16), 16);
	EXPECT_EQ(OldestLiveGeneration(8, 8), 1);
	EXPECT_EQ(OldestLiveGeneration(100, 8), 93);
	EXPECT_EQ(OldestLiveGeneration(2, 2), 1);
	EXPECT_EQ(OldestLiveGeneration(5, 1), 5);
	EXPECT_EQ(OldestLiveGeneration(0, 1), 0);
	EXPECT_EQ(OldestLiveGeneration(std::numeric_limits<int64_t>::max(), 16),
	          std::numeric_limits<int64_t>::max() - 15);
}

TEST(NextPosition, AdvancesOneGenerationAndSlot)
{
	RingPosition p = NextPosition(RingPosition{0, 0}, 16);
	EXPECT_EQ(p.generation, 1);
	EXPECT_EQ(p.slot, 1);
	p = NextPosition(RingPosition{14, 14}, 16);
	EXPECT_EQ(p.generation, 15);
	EXPECT_EQ(p.slot, 15);
}

TEST(NextPosition, WrapsToSlotZero)
{
	RingPosition p = NextPosition(RingPosition{15, 15}, 16);
	EXPECT_EQ(p.generation, 16);
	EXPECT_EQ(p.slot, 0);
	p = NextPosition(RingPosition{7, 7}, 8);
	EXPECT_EQ(p.generation, 8);
	EXPECT_EQ(p.slot, 0);
	p = NextPosition(RingPosition{31, 15}, 16);
	EXPECT_EQ(p.generation, 32);
	EXPECT_EQ(p.slot, 0);
}

TEST(NextPosition, SlotFollowsGenerationNotInputSlot)
{
	// The new slot is derived from the new generation.
	for (int32_t slots : {2, 4, 8, 16, 64}) {
		RingPosition p{0, 0};
		for (int64_t g = 1; g <= 5 * slots + 3; ++g) {
			p = NextPosition(p, slots);
			ASSERT_EQ(p.generation, g) << "slots=" << slots;
			ASSERT_EQ(p.slot, static_cast<int32_t>(g % slots)) << "slots=" << slots;
			ASSERT_EQ(p.slot, SlotOf(g, slots));
		}
	}
}

TEST(IsLiveGeneration, GenerationZeroAtStart)
{
	EXPECT_TRUE(IsLiveGeneration(0, 0, 16));
	EXPECT_FALSE(IsLiveGeneration(1, 0, 16));  // future
	EXPECT_FALSE(IsLiveGeneration(-1, 0, 16));
}

TEST(IsLiveGeneration, WindowEdges)
{
	// current 15: generations 0..15 fill the 16 slots.
	EXPECT_TRUE(IsLiveGeneration(0, 15, 16));
	EXPECT_TRUE(IsLiveGeneration(15, 15, 16));
	EXPECT_FALSE(IsLiveGeneration(16, 15, 16));
	// current 16 reuses slot 0: generation 0 is gone.
	EXPECT_FALSE(IsLiveGeneration(0, 16, 16));
	EXPECT_TRUE(IsLiveGeneration(1, 16, 16));
	EXPECT_TRUE(IsLiveGeneration(16, 16, 16));
	EXPECT_FALSE(IsLiveGeneration(17, 16, 16));
	// claim ring of 8
	EXPECT_FALSE(IsLiveGeneration(92, 100, 8));
	EXPECT_TRUE(IsLiveGeneration(93, 100, 8));
	EXPECT_TRUE(IsLiveGeneration(100, 100, 8));
	EXPECT_FALSE(IsLiveGeneration(101, 100, 8));
	// a one-slot ring holds only the current generation
	EXPECT_TRUE(IsLiveGeneration(5, 5, 1));
	EXPECT_FALSE(IsLiveGeneration(4, 5, 1));
}

// Live generations always own pairwise distinct slots, there are
// min(current + 1, slot_count) of them, and the slot the next rotation takes is
// the slot of the first generation that stops being live.
TEST(IsLiveGeneration, WindowProperties)
{
	for (int32_t slots : {1, 2, 3, 4, 8, 16, 64}) {
		for (int64_t current = 0; current < 4 * slots + 5; ++current) {
			std::set<int32_t> used;
			int64_t live = 0;
			for (int64_t g = -2; g <= current + 2; ++g) {
				if (!IsLiveGeneration(g, current, slots))
					continue;
				++live;
				ASSERT_TRUE(used.insert(SlotOf(g, slots)).second)
				    << "two live generations share a slot: g=" << g << " current=" << current;
				ASSERT_GE(g, OldestLiveGeneration(current, slots));
				ASSERT_LE(g, current);
			}
			ASSERT_EQ(live, std::min<int64_t>(current + 1, slots)) << "current=" << current << " slots=" << slots;
			ASSERT_TRUE(IsLiveGeneration(current, current, slots));
			ASSERT_TRUE(IsLiveGeneration(OldestLiveGeneration(current, slots), current, slots));
			RingPosition next = NextPosition(RingPosition{current, SlotOf(current, slots)}, slots);
			int64_t dropped = OldestLiveGeneration(current, slots);
			if (current + 1 >= slots) {
				// the rotation evicts exactly the oldest live generation, whose slot it reuses
				ASSERT_FALSE(IsLiveGeneration(dropped, next.generation, slots));
				ASSERT_EQ(SlotOf(dropped, slots), next.slot);
			} else {
				ASSERT_EQ(used.count(next.slot), 0u) << "rotation into a slot still in use";
			}
		}
	}
}

TEST(PruneTarget, NothingWhileTheRingFills)
{
	EXPECT_EQ(PruneTargetGeneration(0, 16), -1);
	EXPECT_EQ(PruneTargetGeneration(-1, 16), -1);
	EXPECT_EQ(PruneTargetGeneration(1, 16), -1);
	EXPECT_EQ(PruneTargetGeneration(14, 16), -1);
	EXPECT_EQ(PruneTargetGeneration(6, 8), -1);
	EXPECT_EQ(PruneTargetGeneration(5, 1), -1);
}

TEST(PruneTarget, GenerationZeroOnceFull)
{
	EXPECT_EQ(PruneTargetGeneration(15, 16), 0);
	EXPECT_EQ(PruneTargetGeneration(7, 8), 0);
	EXPECT_EQ(PruneTargetGeneration(1, 2), 0);
	EXPECT_EQ(PruneTargetGeneration(2, 2), 1);
}

TEST(PruneTarget, IsTheIncomingSlotOnceTheRingIsFull)
{
	// The target's slot is the one the next rotation moves into.
	for (int64_t current = 15; current < 100; current++) {
		int64_t target = PruneTargetGeneration(current, 16);
		EXPECT_EQ(target, current - 15);
		EXPECT_EQ(SlotOf(target, 16), SlotOf(current + 1, 16));
	}
	for (int64_t current = 7; current < 40; current++)
		EXPECT_EQ(SlotOf(PruneTargetGeneration(current, 8), 8), SlotOf(current + 1, 8));
}

TEST(FamiliesOf, EachRingItsFamiliesInLockOrder)
{
	RingFamilies queue = FamiliesOf("queue");
	ASSERT_EQ(queue.count, 5);
	EXPECT_STREQ(queue.names[0], "ready_entries");
	EXPECT_STREQ(queue.names[4], "receipt_completion_batches");
	RingFamilies claim = FamiliesOf("claim");
	ASSERT_EQ(claim.count, 4);
	EXPECT_STREQ(claim.names[0], "lease_claims");
	EXPECT_STREQ(claim.names[3], "lease_claim_closure_batches");
	EXPECT_EQ(FamiliesOf("lease").count, 1);
	EXPECT_STREQ(FamiliesOf("history").names[0], "job_history");
}

TEST(FamiliesOf, UnknownRingHasNone)
{
	for (const char *ring : {"", "queues", "Queue", "que", "leasehold"}) {
		EXPECT_EQ(FamiliesOf(ring).names, nullptr) << ring;
		EXPECT_EQ(FamiliesOf(ring).count, 0) << ring;
	}
}

}  // namespace
}  // namespace awa::core
