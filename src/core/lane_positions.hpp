// lane_positions.hpp: how a claim batch and a completion receipt store the
// lane positions of their jobs.
//
// Both rows store the first position (first_lane_seq) and the whole list
// (lane_seqs) only when the positions are not first, first + 1, ... in the
// row's order; otherwise lane_seqs is NULL. A batch-1 row, and every row of a
// claim that passed no open enqueue, then stores one bigint instead of an
// array (05_claim_ring.sql, 04_queue_ring.sql; docs/architecture.md §4,
// "Evidence rows store no copy of a key"). The writers (src/pg/claim_write.cpp,
// src/pg/attempts.cpp) ask LanePositionsFollowFirst; the readers expand with
// LanePositionFromFirst: ReadClaimArrays in C++, awa._lane_positions
// (src/pg/fn_lane_positions.cpp) in SQL.
//
// Nothing here allocates or throws (noexcept), so src/pg calls these directly
// (src/pg/core_calls.hpp checks it).
#pragma once

#include "core/receipt.hpp"

#include <cstdint>

namespace awa::core {

// The most positions one row holds: a claim batch's size limit.
constexpr int32_t kMaxRowLanePositions = kMaxBatchIndex + 1;

// The position at `index` (0-based) of a row stored as its first.
constexpr int64_t
LanePositionFromFirst(int64_t first, int32_t index) noexcept
{
	return first + index;
}

// Whether a row stored as `first` with `count` positions can be expanded:
// 1 <= count <= kMaxRowLanePositions and 1 <= first <= INT64_MAX - count
// (lane positions start at 1; every expanded position fits).
bool LanePositionsExpandable(int64_t first, int32_t count) noexcept;

// Whether `count` positions, position_at(0) .. position_at(count - 1), are
// first, first + 1, ...: then the row stores only the first. One position
// always is.
template <typename PositionAt>
bool
LanePositionsFollowFirst(int32_t count, PositionAt position_at) noexcept
{
	int64_t first = position_at(0);
	for (int32_t i = 1; i < count; i++)
		if (position_at(i) != LanePositionFromFirst(first, i))
			return false;
	return true;
}

}  // namespace awa::core
