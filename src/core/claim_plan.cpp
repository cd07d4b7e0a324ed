// claim_plan.cpp: the claim walk (see claim_plan.hpp).
#include "core/claim_plan.hpp"

#include <algorithm>
#include <limits>

#include "core/core_only.hpp"  // last: proves no PostgreSQL header came in

namespace awa::core {

std::vector<LaneRange>
NormalizeRanges(std::vector<LaneRange> ranges)
{
	ranges.erase(std::remove_if(ranges.begin(), ranges.end(), [](const LaneRange &r) { return r.next <= r.first; }),
	             ranges.end());
	std::sort(ranges.begin(), ranges.end(), [](const LaneRange &a, const LaneRange &b) { return a.first < b.first; });
	std::vector<LaneRange> merged;
	for (const LaneRange &r : ranges) {
		if (!merged.empty() && r.first <= merged.back().next)
			merged.back().next = std::max(merged.back().next, r.next);
		else
			merged.push_back(r);
	}
	return merged;
}

namespace {

// The range of `ranges` (sorted, disjoint) containing `lane`, or nullptr.
template <typename Range>
const Range *
Containing(const std::vector<Range> &ranges, int64_t lane)
{
	auto it = std::upper_bound(ranges.begin(), ranges.end(), lane,
	                           [](int64_t value, const Range &r) { return value < r.first; });
	if (it == ranges.begin())
		return nullptr;
	--it;
	return lane < it->next ? &*it : nullptr;
}

// Smallest `first` greater than `lane` in `ranges` (sorted), or max.
template <typename Range>
int64_t
NextStartAfter(const std::vector<Range> &ranges, int64_t lane)
{
	auto it = std::upper_bound(ranges.begin(), ranges.end(), lane,
	                           [](int64_t value, const Range &r) { return value < r.first; });
	return it == ranges.end() ? std::numeric_limits<int64_t>::max() : it->first;
}

// The walk itself (see claim_plan.hpp).
ClaimPlan
PlanWalk(const ClaimPlanInput &input)
{
	std::vector<CommittedRange> committed = input.committed;
	std::sort(committed.begin(), committed.end(),
	          [](const CommittedRange &a, const CommittedRange &b) { return a.first < b.first; });
	const std::vector<LaneRange> spent = NormalizeRanges(input.spent);
	const std::vector<LaneRange> reserved = NormalizeRanges(input.reserved);

	ClaimPlan plan;
	plan.new_cursor = input.cursor;
	int64_t pos = input.cursor + 1;
	bool in_prefix = true;

	while (plan.claimed < input.max_jobs) {
		if (const LaneRange *s = Containing(spent, pos)) {
			pos = s->next;
			if (in_prefix)
				plan.new_cursor = pos - 1;
			continue;
		}
		if (const LaneRange *r = Containing(reserved, pos)) {
			pos = r->next;
			in_prefix = false;
			continue;
		}
		if (const CommittedRange *c = Containing(committed, pos)) {
			if (plan.generation != -1 && c->generation != plan.generation) {
				plan.stop = PlanStop::kGeneration;
				plan.position = pos;
				return plan;
			}
			plan.generation = c->generation;
			int64_t end = std::min({c->next, NextStartAfter(spent, pos), NextStartAfter(reserved, pos),
			                        pos + (input.max_jobs - plan.claimed)});
			if (!plan.claim.empty() && plan.claim.back().next == pos)
				plan.claim.back().next = end;
			else
				plan.claim.push_back(LaneRange{pos, end});
			plan.claimed += end - pos;
			pos = end;
			in_prefix = false;
			continue;
		}
		// Neither spent nor committed: a hole if anything visible lies above it.
		int64_t above = std::min({NextStartAfter(committed, pos), NextStartAfter(spent, pos),
		                          NextStartAfter(reserved, pos)});
		plan.position = pos;
		if (above != std::numeric_limits<int64_t>::max()) {
			plan.stop = PlanStop::kGap;
			plan.gap = LaneRange{pos, above};
		} else {
			plan.stop = PlanStop::kEnd;
		}
		return plan;
	}
	plan.stop = PlanStop::kFull;
	plan.position = pos;
	return plan;
}

// Highest origin generation of a committed lane <= lane, or -1.
int64_t
GenerationFloor(const std::vector<CommittedRange> &committed, int64_t lane)
{
	int64_t floor = -1;
	for (const CommittedRange &c : committed)
		if (c.first <= lane)
			floor = std::max(floor, c.origin >= 0 ? c.origin : c.generation);
	return floor;
}

}  // namespace

ClaimPlan
PlanClaim(const ClaimPlanInput &input)
{
	ClaimPlan plan = PlanWalk(input);
	plan.head_generation_floor = GenerationFloor(input.committed, plan.new_cursor);
	return plan;
}

}  // namespace awa::core
