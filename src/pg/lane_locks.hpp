// lane_locks.hpp: the locks awa takes itself.
//
//  lane claim   advisory-type tag (field4 0x4101, pg_locks objsubid 16641),
//               exclusive, transaction-scoped: one claimer plans a lane at a
//               time. A claim that found every lane with work busy waits for
//               one at most awa.lane_wait_timeout (a claimer holds it only
//               while it plans, unless the in-flight registry is off or full).
//  claim batch  advisory-type tag (field4 0x4104, objsubid 16644), exclusive,
//               transaction-scoped: serializes closing the attempts of one
//               claim batch (completion races).
//  lane create  advisory-type tag (field4 0x4105, objsubid 16645): first use
//               of a lane.
//  gap proof    no lock of its own: every transaction that reserved a
//               lane_seq holds RowExclusiveLock on the lane's enqueue
//               sequence until it ends (nextval takes it for the top
//               transaction), so waiting for the current holders of that
//               lock proves every earlier reservation's transaction has
//               ended (ProveLaneReservationsEnded).
// The advisory-type tags use key spaces of their own, so they never collide
// with an application's pg_advisory_lock keys.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

// The startup hooks (callbacks.cpp, while preloading): the condition
// variables lane waits sleep on.
void RequestLaneWaitsShmem();
void StartupLaneWaitsShmem();

bool TryLockLaneClaim(int64 lane_id);
// Waits at most `timeout_ms` for it (0: only tries); false if not granted in
// time. Interruptible. Preloaded, it never waits in the lock manager (so it
// takes part in no deadlock): it retries when a releaser wakes it, at least
// every millisecond. Otherwise it is a lock wait with lock_timeout.
bool LockLaneClaimWithin(int64 lane_id, int timeout_ms);
// Waits for the lane claim lock (cancel: claimers hold it only while they plan).
void LockLaneClaim(int64 lane_id);
void UnlockLaneClaim(int64 lane_id);
// The proof that every transaction that reserved a lane position up to
// *horizon (the enqueue sequence's value, read first) has ended: waits, at
// most `timeout_ms` in all, for the transactions that hold RowExclusiveLock
// on the sequence (each reservation holds it until its transaction ends) and
// returns false if one is still running then. Unlike a ShareLock request,
// which made every new producer of the lane queue behind it, this holds up
// nobody (as CREATE INDEX CONCURRENTLY waits for lockers). Errors other than
// the timeout (cancel) propagate.
bool ProveLaneReservationsEnded(Oid enqueue_seq, int timeout_ms, int64 *horizon);
void LockClaimBatch(int64 claim_batch_id);
// The same lock without waiting (maintenance); false when another holds it.
bool TryLockClaimBatch(int64 claim_batch_id);
void LockLaneCreate(uint32 lane_hash);

}  // namespace awa::pg
