// claim_bridge.cpp: the claim walk behind a noexcept, PostgreSQL-free call
// (see claim_bridge.hpp).
#include "pg/claim_bridge.hpp"

#include "core/claim_plan.hpp"

#include <cstdio>
#include <exception>

namespace awa::pg {

bool
PlanClaimBridge(int64_t cursor, const BridgeCommitted *committed, int committed_count, const BridgeRange *spent,
                int spent_count, const BridgeRange *reserved, int reserved_count, int64_t max_jobs,
                BridgePlan *plan, BridgeRange *claim, char *error, size_t error_size) noexcept
{
	try {
		core::ClaimPlanInput input;
		input.cursor = cursor;
		input.max_jobs = max_jobs;
		input.committed.reserve(committed_count);
		for (int i = 0; i < committed_count; i++)
			input.committed.push_back(
			    {committed[i].first, committed[i].next, committed[i].generation, committed[i].origin});
		input.spent.reserve(spent_count);
		for (int i = 0; i < spent_count; i++)
			input.spent.push_back({spent[i].first, spent[i].next});
		input.reserved.reserve(reserved_count);
		for (int i = 0; i < reserved_count; i++)
			input.reserved.push_back({reserved[i].first, reserved[i].next});

		core::ClaimPlan result = core::PlanClaim(input);
		if (static_cast<int64_t>(result.claim.size()) > max_jobs) {
			std::snprintf(error, error_size, "claim plan has %zu ranges for %lld jobs", result.claim.size(),
			              static_cast<long long>(max_jobs));
			return false;
		}
		plan->new_cursor = result.new_cursor;
		plan->generation = result.generation;
		plan->claimed = result.claimed;
		plan->stop = static_cast<int>(result.stop);
		plan->gap = {result.gap.first, result.gap.next};
		plan->position = result.position;
		plan->range_count = static_cast<int>(result.claim.size());
		plan->head_generation_floor = result.head_generation_floor;
		for (size_t i = 0; i < result.claim.size(); i++)
			claim[i] = {result.claim[i].first, result.claim[i].next};
		return true;
	} catch (const std::exception &e) {
		std::snprintf(error, error_size, "%s", e.what());
	} catch (...) {
		std::snprintf(error, error_size, "unknown C++ exception");
	}
	return false;
}

static_assert(static_cast<int>(core::PlanStop::kFull) == kStopFull, "stop codes");
static_assert(static_cast<int>(core::PlanStop::kGap) == kStopGap, "stop codes");
static_assert(static_cast<int>(core::PlanStop::kGeneration) == kStopGeneration, "stop codes");
static_assert(static_cast<int>(core::PlanStop::kEnd) == kStopEnd, "stop codes");

}  // namespace awa::pg
