// fn_ring.cpp: ring arithmetic for the SQL side: awa._slot_of,
// awa._oldest_live_generation and awa._prune_target, which the PL/pgSQL
// maintenance steps (sql/install/4x_*.sql) use so that they compute slots and prune
// targets as the C code does (src/core/ring.hpp is the one source). STRICT:
// NULL in, NULL out; a slot_count outside 1..64 or a negative generation is
// refused (22023).
#include "pg/core_calls.hpp"
#include "pg/guard.hpp"

namespace {

static_assert(awa::core::kMaxRingSlots == 64, "the messages below spell the limit");

int32
SlotCountArgument(FunctionCallInfo fcinfo, int index)
{
	int32 slot_count = PG_GETARG_INT32(index);
	if (slot_count < 1 || slot_count > awa::core::kMaxRingSlots)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("slot_count must be between 1 and 64"),
		                errhint("Pass the ring's slot_count from its *_ring_state table.")));
	return slot_count;
}

int64
GenerationArgument(FunctionCallInfo fcinfo, int index)
{
	int64 generation = PG_GETARG_INT64(index);
	if (generation < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("generation must not be negative"),
		                errhint("Generations start at 0.")));
	return generation;
}

}  // namespace

// awa._slot_of(generation, slot_count) -> the slot that holds the generation.
AWA_FUNCTION(awa_internal_slot_of)
{
	int64 generation = GenerationArgument(fcinfo, 0);
	PG_RETURN_INT32(awa::core::SlotOf(generation, SlotCountArgument(fcinfo, 1)));
}

// awa._oldest_live_generation(current, slot_count) -> the oldest generation the ring still holds.
AWA_FUNCTION(awa_internal_oldest_live_generation)
{
	int64 current = GenerationArgument(fcinfo, 0);
	PG_RETURN_INT64(awa::core::OldestLiveGeneration(current, SlotCountArgument(fcinfo, 1)));
}

// awa._prune_target(current, slot_count) -> the generation the next prune targets, -1 before the ring filled.
AWA_FUNCTION(awa_internal_prune_target)
{
	int64 current = GenerationArgument(fcinfo, 0);
	PG_RETURN_INT64(awa::core::PruneTargetGeneration(current, SlotCountArgument(fcinfo, 1)));
}
