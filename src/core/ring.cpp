// ring.cpp: ring and slot arithmetic (see ring.hpp).
#include "core/ring.hpp"

#include "core/core_only.hpp"  // last: proves no PostgreSQL header came in

namespace awa::core {

int32_t
SlotOf(int64_t generation, int32_t slot_count) noexcept
{
	return static_cast<int32_t>(generation % slot_count);
}

int64_t
OldestLiveGeneration(int64_t current, int32_t slot_count) noexcept
{
	int64_t oldest = current - (slot_count - 1);
	return oldest < 0 ? 0 : oldest;
}

RingPosition
NextPosition(RingPosition current, int32_t slot_count) noexcept
{
	return RingPosition{current.generation + 1, SlotOf(current.generation + 1, slot_count)};
}

bool
IsLiveGeneration(int64_t generation, int64_t current, int32_t slot_count) noexcept
{
	return generation >= OldestLiveGeneration(current, slot_count) && generation <= current;
}

int64_t
PruneTargetGeneration(int64_t current, int32_t slot_count) noexcept
{
	if (slot_count < 2 || current < slot_count - 1)
		return -1;
	return OldestLiveGeneration(current, slot_count);
}

}  // namespace awa::core
