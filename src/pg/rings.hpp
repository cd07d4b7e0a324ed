// rings.hpp: where the rings are (highest generation of each rotation ledger)
// and how many slots each has.
//
// Reads go through a per-backend cache keyed by the ring epoch (a seqlock in
// shared memory, ring_epoch.hpp): a rotation makes the epoch odd before it
// appends to a ledger, and even again once that transaction has ended. A
// position read while the epoch stayed at the same even value is the
// committed position for that whole epoch, so it can be reused until the
// epoch moves.
#pragma once

#include "core/ring.hpp"
#include "pg/postgres_headers.hpp"
#include <type_traits>

namespace awa::pg {

constexpr int kMaxRingSlots = core::kMaxRingSlots;

struct RingPositions {
	int64 queue_generation;
	int queue_slot;
	int queue_slot_count;
	// The queue generations that own a slot, oldest first (the newest is
	// queue_generation). Usually the last slot_count generations; a slot kept
	// out of the rotation (docs/maintenance.md §3.6) keeps an older one, and
	// generation numbers skipped past a kept slot own nothing.
	int queue_live_count;
	int64 queue_live[kMaxRingSlots];
	int64 claim_generation;
	int claim_slot;
	int claim_slot_count;
};
static_assert(std::is_trivially_destructible_v<RingPositions>, "lives across PostgreSQL errors");

// The ring epoch now. May ereport.
int64 RingEpoch();

// Current positions; `epoch` receives the epoch read before the positions
// (so a caller can bracket an action between it and a later RingEpoch()).
// Requires SPI. May ereport.
RingPositions CurrentRings(int64 *epoch);

// The oldest live queue generation.
int64 OldestQueueGeneration(const RingPositions &ring);

// The first live queue generation after `generation` (-1: none).
int64 NextQueueGeneration(const RingPositions &ring, int64 generation);

// Reads both ledgers now, bypassing the cache. Requires SPI. May ereport.
RingPositions ReadRingPositions();

// The extension's incarnation: the OID of awa.ring_epoch_seq, which changes
// when the extension is dropped and created again. Per-backend caches key on it.
Oid ExtensionIncarnation();
// The same, read now and without raising: InvalidOid when the extension is
// gone (dropped in this transaction).
Oid ExtensionIncarnationIfPresent();

// Objects of the extension that awa's C code addresses by OID.
enum class AwaObject {
	kJobIdSeq,
	kQueueLaneIdSeq,
	kClaimBatchIdSeq,
	kAttemptState,
	kJobUniqueClaims,
	kQueueMeta,
	kClaimFenceSeq,
	kQueueLanes,
	kQueueLanesLaneIdKey,
	kQueueLanesIdentity,
	kCount
};

// The object's OID (InvalidOid if it does not exist), cached like the
// incarnation: until the next pg_class invalidation, so the hot paths do not
// look names up in the catalog on every call. May ereport.
Oid AwaObjectOid(AwaObject object);

}  // namespace awa::pg
