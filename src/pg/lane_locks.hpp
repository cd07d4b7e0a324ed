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
//  lane create  advisory-type tag (field4 0x4105, objsubid 16645), exclusive,
//               keyed by a hash of (queue, priority): held only while a new
//               lane's row is looked for and inserted (lanes.cpp), not to the
//               transaction's end.
//  queue limit  advisory-type tag (field4 0x4107, objsubid 16647), exclusive,
//               keyed by a hash of the queue name: a claim of a queue with a
//               concurrency limit and no counters entry holds it to its
//               transaction's end (running_limits.hpp).
//  lane reserve advisory-type tag (field4 0x4106, objsubid 16646), taken in
//               RowExclusiveLock mode for the top transaction before each
//               reservation of lane positions and held until it ends
//               (lane_cursors.hpp). Reservers never conflict; waiting for the
//               current holders proves every earlier reservation's
//               transaction has ended (ProveLaneReservationsEnded). Since
//               positions are taken at commit (pending_enqueues.hpp), it is
//               held from a transaction's pre-commit to its end.
//  wide reserve advisory-type tag (field4 0x4108, objsubid 16648), key 0, one
//               per database, RowExclusiveLock mode, top transaction, to its
//               end: a transaction that already holds kMaxLaneReserveLocks
//               lane reserve locks takes it instead of the lock of any further
//               lane, so no transaction holds more than kMaxLaneReserveLocks
//               + 1 reserve locks (the shared lock table is the cluster's: a
//               lock per lane ran it out at ~10,000 lanes, for every
//               database). ProveLaneReservationsEnded waits for its holders
//               too. A lane reclaim takes both in ShareLock mode, only if
//               free (TryLockOutLaneReservations), while it looks at a lane
//               a last time and deletes its row.
//  lane reclaim advisory-type tag (field4 0x4109, objsubid 16649), key 0, one
//               per database, exclusive, only tried, to the transaction's
//               end: one lane reclaim pass of a database at a time (two at
//               once could each leave the other's last lane of a queue).
//  lane hold    advisory-type tag (field4 0x410A, objsubid 16650),
//               RowExclusiveLock mode, top transaction, to its end: taken by
//               what uses a lane without reserving a position in it (a
//               scheduled, retryable or parked job's commit, a cancel of
//               one, a move of one), so the lane reclaim leaves the lane; key
//               0 stands for every lane past a transaction's 16th. Unlike the
//               reserve lock, a gap proof does not wait for it: an open
//               transaction that cancelled a scheduled job holds back no
//               claim.
// The advisory-type tags use key spaces of their own, so they never collide
// with an application's pg_advisory_lock keys.
#pragma once

#include "pg/lanes.hpp"

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
// Lane reserve locks a transaction takes before it takes the wide reserve
// lock instead (docs/architecture.md, "A bounded number of locks per
// transaction").
constexpr int kMaxLaneReserveLocks = 16;

// Taken before each reservation of the lane's positions, for the top
// transaction (a subtransaction's abort does not release it): the lane's
// reserve lock, or, past kMaxLaneReserveLocks lanes, the wide reserve lock.
void LockLaneReserve(int64 lane_id);
// The lane hold lock (above) for the top transaction, or past 16 lanes the
// one that stands for every lane.
void LockLaneHold(int64 lane_id);
// The lane reclaim lock (above), if free.
bool TryLockLaneReclaim();
// Takes the lane's reserve and hold locks and the database's wide reserve and
// hold locks in ShareLock mode, which conflicts with the RowExclusiveLock of a
// reservation or a hold, for the current transaction, only if all are free:
// false (and none kept) when a transaction holds one. While they are held no
// position of the lane can be reserved nor the lane held: the lane reclaim
// (fn_reclaim_lanes.cpp) holds them from its last look at a lane until its
// row is deleted. A gap proof does not wait for these holders (ShareLock does
// not conflict with itself).
bool TryLockOutLaneReservations(int64 lane_id);
// Gives them back (before the transaction ends: a writer that takes its lock
// after this finds the row deleted by a transaction still open and waits for
// it, lane_cursors.hpp).
void UnlockOutLaneReservations(int64 lane_id);
// The proof that every transaction that reserved a lane position up to
// *horizon (the enqueue cursor, read first) has ended: waits, at most
// `timeout_ms` in all, for the transactions that hold the lane reserve lock
// or the wide reserve lock (each reservation holds one of them until its
// transaction ends) and returns false if
// one is still running then. Unlike a ShareLock request, which would make
// every new producer of the lane queue behind it, this holds up nobody (as
// CREATE INDEX CONCURRENTLY waits for lockers). Errors other than the timeout
// (cancel) propagate.
bool ProveLaneReservationsEnded(const Lane &lane, int timeout_ms, int64 *horizon);
void LockClaimBatch(int64 claim_batch_id);
// Gives back one LockClaimBatch of this transaction (one that found no claim
// batch: it guards nothing).
void UnlockClaimBatch(int64 claim_batch_id);
// The same lock without waiting (maintenance); false when another holds it.
bool TryLockClaimBatch(int64 claim_batch_id);
// The lane create lock, for the current resource owner; given back by
// UnlockLaneCreate once the lane's row is in (or found).
void LockLaneCreate(uint32 lane_hash);
void UnlockLaneCreate(uint32 lane_hash);
// The queue limit lock (owned by the current resource owner: a
// subtransaction's abort releases it).
void LockQueueLimit(text *queue);
// Gives back the hold LockQueueLimit just took (a claim that reserved
// nothing); a hold taken before by this transaction stays.
void UnlockQueueLimit(text *queue);
// Whether another transaction holds the queue limit lock (a claim reserving
// under it: running_limits.cpp); takes and gives back a hold when free.
bool QueueLimitHeldByOther(text *queue);

}  // namespace awa::pg
