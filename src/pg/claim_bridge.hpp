// claim_bridge.hpp: the claim walk of src/core, callable from PostgreSQL frames.
//
// Plain structs in, plain structs out: the bridge owns every C++ object it
// makes and destroys them before it returns, calls no PostgreSQL function and
// throws nothing (see guard.hpp). This header includes no PostgreSQL header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace awa::pg {

struct BridgeRange {
	int64_t first;
	int64_t next;
};

struct BridgeCommitted {
	int64_t first;
	int64_t next;
	int64_t generation;  // where the lanes are now
	int64_t origin;      // where they were enqueued (claim_plan.hpp)
};

enum BridgeStop { kStopFull = 0, kStopGap = 1, kStopGeneration = 2, kStopEnd = 3 };

struct BridgePlan {
	int64_t new_cursor;
	int64_t generation;
	int64_t claimed;
	int stop;
	BridgeRange gap;
	int64_t position;  // first lane the walk did not account for
	int range_count;   // entries written to the caller's claim buffer
	int64_t head_generation_floor;  // every lane > new_cursor is in this generation or later; -1: unknown
};

// Plans a claim (core::PlanClaim). `claim` must hold `max_jobs` ranges.
// Returns false, with a message in `error`, if the core failed.
bool PlanClaimBridge(int64_t cursor, const BridgeCommitted *committed, int committed_count, const BridgeRange *spent,
                     int spent_count, const BridgeRange *reserved, int reserved_count, int64_t max_jobs,
                     BridgePlan *plan, BridgeRange *claim, char *error, size_t error_size) noexcept;

}  // namespace awa::pg
