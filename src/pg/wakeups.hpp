// wakeups.hpp: who is woken when work arrives (shared memory).
//
//  * Claims that wait for work (awa.claim(..., wait)) sleep on one of
//    kWakeBuckets condition variables, chosen by (database, queue). Each
//    bucket counts the events that may have made work claimable in its
//    queues: the end of a transaction that appended ready rows to a lane
//    (an enqueue, a promotion, a rescue; its abort too, since it may leave a
//    lane gap that only a claim can prove dead), the abort of a claim (its
//    jobs are claimable again; the in-flight registry wakes once it has
//    forgotten the claim's lanes), the end of a claim that kept its lane's
//    lock, and the commit of a queue's settings (awa.resume_queue). The counter moves and the bucket is broadcast from the
//    transaction's end callback, after its outcome is visible to new
//    snapshots. A waiter reads the counter before it looks for work and
//    sleeps only while it is unchanged, so no event is missed; two queues
//    sharing a bucket only cost a spurious wake.
//  * The maintenance worker of a database publishes when it next promotes.
//    A transaction that committed a deferred job (scheduled, retryable) due
//    before then sets the worker's latch, so a job is promoted at its run_at
//    and not up to awa.promote_interval later.
// Nothing polls, and nothing uses LISTEN, so it works through transaction-mode
// poolers. Without shared_preload_libraries there is no shared memory: a
// waiting claim then sleeps until its wait has passed and looks once more.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

constexpr int kWakeBuckets = 1024;

// The startup hooks and the transaction callback, called by callbacks.cpp
// while preloaded. The end of a transaction broadcasts the buckets it marked
// (at commit also those marked for commit only) and sets the latch of a
// worker that would promote its deferred jobs late.
void RequestWakeupsShmem();
void StartupWakeupsShmem();
void OnWakeupsTransactionEvent(XactEvent event);

// The bucket of a queue of this database.
uint32 QueueWakeBucket(text *queue);

// The bucket's event count (0 without shared memory).
uint64 QueueWakeEvents(uint32 bucket);

// Ready rows were appended to a lane of `queue`: its waiters are woken when
// this transaction ends, whichever way.
void WakeQueueAtEnd(text *queue);
// The same, at commit only (awa.resume_queue).
void WakeQueueAtCommit(text *queue);
// The same by bucket: a claim that keeps its lane's claim lock until this
// transaction ends (the lane is free then, and after an abort its jobs too).
void WakeQueueBucketAtEnd(uint32 bucket);
// Wakes the bucket now (the in-flight registry, after it forgot the ranges of
// an aborted claim).
void WakeQueueBucket(uint32 bucket);

// Sleeps until the bucket's event count differs from `seen` (true) or
// `timeout_ms` has passed (false). Interruptible (cancel, statement_timeout,
// termination). Holds no lock; the caller decides about its snapshot.
bool SleepForQueueWork(uint32 bucket, uint64 seen, long timeout_ms);

// A deferred job due at `run_at` was written: if this transaction commits and
// the worker of the database plans to promote later than that, its latch is set.
void WakeWorkerForDeferred(TimestampTz run_at);
// The maintenance worker: it is about to look for the earliest deferred job
// (every commit of a deferred job wakes it until PublishNextPromote).
void BeginNextPromoteLookup();
// The maintenance worker: it promotes next at `at`.
void PublishNextPromote(TimestampTz at);

}  // namespace awa::pg
