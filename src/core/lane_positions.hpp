// lane_positions.hpp: how a claim batch and a completion receipt store the
// lane positions of their jobs, and a claim batch its job ids.
//
// Both rows store the first position (first_lane_seq) and the whole list
// (lane_seqs) only when the positions are not first, first + 1, ... in the
// row's order; otherwise lane_seqs is NULL. A batch-1 row, and every row of a
// claim that passed no open enqueue, then stores one bigint instead of an
// array (05_claim_ring.sql, 04_queue_ring.sql; docs/architecture.md §4,
// "Evidence rows store no copy of a key"). A claim batch stores its job ids
// the same way (first_job_id, job_ids): one job, or jobs enqueued together
// into the lane, store one bigint (docs/architecture.md §4, "A claim batch
// stores its first job id"). The writers (src/pg/claim_write.cpp,
// src/pg/attempts.cpp) ask FollowFirst; the readers expand with
// ValueFromFirst: ReadClaimArrays in C++, awa._lane_positions and
// awa._claim_job_ids (src/pg/fn_lane_positions.cpp) in SQL.
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
ValueFromFirst(int64_t first, int32_t index) noexcept
{
	return first + index;
}

// Whether a row stored as `first` with `count` positions can be expanded:
// 1 <= count <= kMaxRowLanePositions and 1 <= first <= INT64_MAX - count
// (lane positions start at 1; every expanded position fits).
bool ExpandableFromFirst(int64_t first, int32_t count) noexcept;

// Whether `count` positions, position_at(0) .. position_at(count - 1), are
// first, first + 1, ...: then the row stores only the first. One position
// always is.
template <typename PositionAt>
bool
FollowFirst(int32_t count, PositionAt position_at) noexcept
{
	int64_t first = position_at(0);
	for (int32_t i = 1; i < count; i++)
		if (position_at(i) != ValueFromFirst(first, i))
			return false;
	return true;
}

}  // namespace awa::core
