// claim_plan.hpp: which lanes of one lane's queue a claim may take, and how far
// its claim cursor may move first.
//
// Inputs are what the claimer can see under the lane lock:
//   cursor     the lane's claim cursor: every lane_seq <= cursor is spent;
//   committed  visible ready rows (as committed contiguous lane ranges) with
//              the generation of the ready slot that holds them;
//   spent      lanes proven spent by visible evidence: claim attempt batches,
//              tombstones, and gaps proven dead (their reservation ended
//              without a row);
//   reserved   lanes planned by other claims that have not ended yet (the
//              in-flight registry): never planned again, and the cursor does
//              not pass them, since such a claim may still roll back.
// The walk starts at cursor + 1. Spent lanes at the start form the spent
// prefix: the cursor may move past them. Then it takes committed, unspent lanes
// in lane order, from one generation only, up to max_jobs. It stops at the first
// lane that is neither spent nor committed ("gap") when a higher lane exists: that
// lane's enqueue may still commit, so nothing past it is taken until the gap is
// proven dead. No lane is ever skipped without evidence.
#pragma once

#include <cstdint>
#include <vector>

namespace awa::core {

struct LaneRange {
	int64_t first;  // inclusive
	int64_t next;   // exclusive
};

struct CommittedRange {
	int64_t first;
	int64_t next;
	int64_t generation;  // where the lanes are now
	int64_t origin = -1; // where they were enqueued (generation if -1); a prune carries lanes forward
};

struct ClaimPlanInput {
	int64_t cursor = 0;
	std::vector<CommittedRange> committed;
	std::vector<LaneRange> spent;
	std::vector<LaneRange> reserved;
	int64_t max_jobs = 1;
};

enum class PlanStop {
	kFull,        // max_jobs lanes planned
	kGap,         // an unproven hole below a visible lane; see ClaimPlan::gap
	kGeneration,  // the next lane lives in a later generation (claims stay in one slot)
	kEnd,         // nothing visible beyond the walk position
};

struct ClaimPlan {
	int64_t new_cursor = 0;         // cursor after the spent prefix (>= input cursor)
	int64_t generation = -1;        // generation of the planned lanes, -1 when none
	std::vector<LaneRange> claim;   // ascending, disjoint, non-adjacent
	int64_t claimed = 0;            // number of lanes in `claim`
	PlanStop stop = PlanStop::kEnd;
	LaneRange gap{0, 0};            // valid when stop == kGap
	int64_t position = 0;           // first lane the walk did not account for
	// A floor for the generation of every lane > new_cursor: the highest
	// origin generation of a visible committed lane <= new_cursor, -1 when no
	// such lane is visible. Lanes take origins in lane order when enqueued (an
	// enqueue in flight too), and a prune only ever moves a lane to a later
	// generation, so every lane above is in that origin or a later
	// generation; the lane's current generation would not do (a carried lane
	// sits in a newer generation than the lanes after it). A claimer may start
	// its next walk of the lane there; nothing else is a floor (a claim in
	// flight above the cursor may still roll back).
	int64_t head_generation_floor = -1;
};

ClaimPlan PlanClaim(const ClaimPlanInput &input);

// Sorts and merges overlapping or adjacent ranges.
std::vector<LaneRange> NormalizeRanges(std::vector<LaneRange> ranges);

}  // namespace awa::core
