// lane_positions_test.cpp: lane positions and job ids stored as their first
// (src/core/lane_positions.hpp).
#include "core/lane_positions.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace awa::core {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

bool
StoredAsFirst(const std::vector<int64_t> &values)
{
	return FollowFirst(static_cast<int32_t>(values.size()),
	                   [&values](int32_t i) { return values[static_cast<size_t>(i)]; });
}

TEST(LanePositions, OnePositionIsStoredAsItsFirst)
{
	EXPECT_TRUE(StoredAsFirst({1}));
	EXPECT_TRUE(StoredAsFirst({kInt64Max}));
}

TEST(LanePositions, ConsecutiveAscendingPositionsAreStoredAsTheirFirst)
{
	EXPECT_TRUE(StoredAsFirst({7, 8}));
	EXPECT_TRUE(StoredAsFirst({100, 101, 102, 103, 104}));
	std::vector<int64_t> full;
	for (int32_t i = 0; i < kMaxRowLanePositions; i++)
		full.push_back(kInt64Max - kMaxRowLanePositions + i);
	EXPECT_TRUE(StoredAsFirst(full));
}

TEST(LanePositions, AnyOtherOrderIsStoredWhole)
{
	EXPECT_FALSE(StoredAsFirst({7, 9}));         // a hole: a held position between them
	EXPECT_FALSE(StoredAsFirst({8, 7}));         // descending
	EXPECT_FALSE(StoredAsFirst({7, 7}));         // repeated
	EXPECT_FALSE(StoredAsFirst({1, 2, 3, 5}));   // a hole at the end
	EXPECT_FALSE(StoredAsFirst({1, 3, 4, 5}));   // a hole at the start
	EXPECT_FALSE(StoredAsFirst({5, 6, 7, 6}));   // back
}

TEST(LanePositions, ExpandingGivesBackWhatWasStored)
{
	std::vector<int64_t> stored = {40, 41, 42, 43};
	ASSERT_TRUE(StoredAsFirst(stored));
	for (int32_t i = 0; i < 4; i++)
		EXPECT_EQ(ValueFromFirst(stored[0], i), stored[static_cast<size_t>(i)]);
}

TEST(LanePositions, ExpandableBounds)
{
	EXPECT_EQ(kMaxRowLanePositions, 16384);
	EXPECT_TRUE(ExpandableFromFirst(1, 1));
	EXPECT_TRUE(ExpandableFromFirst(1, kMaxRowLanePositions));
	EXPECT_TRUE(ExpandableFromFirst(kInt64Max - 1, 1));
	EXPECT_TRUE(ExpandableFromFirst(kInt64Max - kMaxRowLanePositions, kMaxRowLanePositions));
	EXPECT_FALSE(ExpandableFromFirst(kInt64Max, 1));  // first + count would overflow
	EXPECT_FALSE(ExpandableFromFirst(kInt64Max - kMaxRowLanePositions + 1, kMaxRowLanePositions));
	EXPECT_FALSE(ExpandableFromFirst(0, 1));           // lane positions start at 1
	EXPECT_FALSE(ExpandableFromFirst(-5, 1));
	EXPECT_FALSE(ExpandableFromFirst(1, 0));
	EXPECT_FALSE(ExpandableFromFirst(1, -1));
	EXPECT_FALSE(ExpandableFromFirst(1, kMaxRowLanePositions + 1));
}

}  // namespace
}  // namespace awa::core
