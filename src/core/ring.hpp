// ring.hpp: ring and slot arithmetic shared by every ring (queue, claim, lease).
//
// A ring is a fixed set of LIST partitions reused round-robin. Its position is
// a generation counter; the slot is generation mod slot_count. Both start at 0
// and advance by one per rotation.
#pragma once

#include <cstdint>

namespace awa::core {

struct RingPosition {
	int64_t generation;
	int32_t slot;
};

// Slot that holds a generation.
int32_t SlotOf(int64_t generation, int32_t slot_count);

// Oldest generation whose slot can still hold rows when the ring is at
// `current` (older generations have been, or must be, truncated away).
int64_t OldestLiveGeneration(int64_t current, int32_t slot_count);

// Position after one rotation.
RingPosition NextPosition(RingPosition current, int32_t slot_count);

// True if `generation` still owns its slot at ring position `current`.
bool IsLiveGeneration(int64_t generation, int64_t current, int32_t slot_count);

}  // namespace awa::core
