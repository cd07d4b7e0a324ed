// ring.hpp: ring and slot arithmetic shared by every ring (queue, claim, lease,
// history), and the generation a prune targets. The one place for it: src/pg
// calls these functions directly (the ring positions of the C code) and
// through awa._slot_of, awa._oldest_live_generation and awa._prune_target
// (src/pg/fn_ring.cpp) for the PL/pgSQL maintenance steps.
//
// A ring is a fixed set of LIST partitions reused round-robin. Its position is
// a generation counter; the slot is generation mod slot_count. Both start at 0
// and advance by one per rotation.
//
// Plain functions that allocate nothing and never throw (noexcept), so src/pg
// calls them without a bridge (src/pg/core_calls.hpp checks it). slot_count
// must be at least 1 (the SQL entry points refuse anything else).
#pragma once

#include <cstdint>

namespace awa::core {

// The most slots a ring can have (the *_slot_count settings stay below it).
constexpr int32_t kMaxRingSlots = 64;

struct RingPosition {
	int64_t generation;
	int32_t slot;
};

// Slot that holds a generation.
int32_t SlotOf(int64_t generation, int32_t slot_count) noexcept;

// Oldest generation whose slot can still hold rows when the ring is at
// `current` (older generations have been, or must be, truncated away).
int64_t OldestLiveGeneration(int64_t current, int32_t slot_count) noexcept;

// Position after one rotation.
RingPosition NextPosition(RingPosition current, int32_t slot_count) noexcept;

// True if `generation` still owns its slot at ring position `current`.
bool IsLiveGeneration(int64_t generation, int64_t current, int32_t slot_count) noexcept;

// The generation a prune of a ring at `current` targets: the generation whose
// slot the next rotation enters (current - (slot_count - 1)), so every slot
// keeps its rows for slot_count - 1 rotations. -1 while the ring has not
// filled yet (awa._prune calls awa._prune_target, which is this function).
int64_t PruneTargetGeneration(int64_t current, int32_t slot_count) noexcept;

// The families of a ring (its partitioned tables, one partition per slot), in
// the order a prune locks and truncates them: "queue", "claim", "lease" or
// "history". The one list: awa._slot_children (src/pg/fn_slot_children.cpp)
// serves it to the PL/pgSQL steps. names is nullptr (count 0) for any other
// ring name.
struct RingFamilies {
	const char *const *names;
	int32_t count;
};
RingFamilies FamiliesOf(const char *ring) noexcept;

}  // namespace awa::core
