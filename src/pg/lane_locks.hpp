// lane_locks.hpp: awa's heavyweight locks. All are advisory-type lock tags in
// key spaces of their own (LOCKTAG field4 = 0x4101..), so they never collide
// with an application's pg_advisory_lock keys; pg_locks shows them as
// advisory locks with objsubid 16641..16645.
//
//  lane claim     (exclusive, xact, try only)  one claimer per lane at a time
//  lane enqueue   (share, xact, held to end)   every enqueue tx that reserved
//                 lane_seqs holds it; a claim that takes it exclusively knows
//                 every earlier reservation's transaction has ended
//  lane reserve   (exclusive, released at once) makes "reserve lane_seqs and
//                 read the ring position" atomic per lane
//  claim batch    (exclusive, xact)             serializes closing attempts of
//                 one claim batch (completion races)
//  lane create    (exclusive, xact)             first use of a lane
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

bool TryLockLaneClaim(int64 lane_id);
void UnlockLaneClaim(int64 lane_id);
void LockLaneEnqueueShared(int64 lane_id);
// Waits at most `timeout_ms` for the exclusive lane-enqueue lock; false if it
// could not be had in time. Errors other than the lock timeout propagate.
bool LockLaneEnqueueExclusive(int64 lane_id, int timeout_ms);
void LockLaneReserve(int64 lane_id);
void UnlockLaneReserve(int64 lane_id);
void LockClaimBatch(int64 claim_batch_id);
void LockLaneCreate(uint32 lane_hash);

}  // namespace awa::pg
