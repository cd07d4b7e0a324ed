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

namespace {

constexpr const char *kQueueFamilies[] = {"ready_entries", "ready_tombstones", "ready_claim_attempt_batches",
                                          "done_entries", "receipt_completion_batches"};
constexpr const char *kClaimFamilies[] = {"lease_claims", "lease_claim_batches", "lease_claim_closures",
                                          "lease_claim_closure_batches"};
constexpr const char *kLeaseFamilies[] = {"leases"};
constexpr const char *kHistoryFamilies[] = {"job_history"};

bool
Same(const char *a, const char *b) noexcept
{
	while (*a != '\0' && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

template <int32_t N>
RingFamilies
Families(const char *const (&names)[N]) noexcept
{
	return RingFamilies{names, N};
}

}  // namespace

RingFamilies
FamiliesOf(const char *ring) noexcept
{
	if (Same(ring, "queue"))
		return Families(kQueueFamilies);
	if (Same(ring, "claim"))
		return Families(kClaimFamilies);
	if (Same(ring, "lease"))
		return Families(kLeaseFamilies);
	if (Same(ring, "history"))
		return Families(kHistoryFamilies);
	return RingFamilies{nullptr, 0};
}

}  // namespace awa::core
