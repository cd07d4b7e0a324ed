// inflight.hpp: the in-flight claim registry (shared memory).
//
// A claim plans its lanes under the lane's claim lock. With the registry, it
// records the planned lane ranges here and releases the lane lock at once,
// before it reads its rows, writes its evidence and commits, so the lane is
// free for the next claimer while this one finishes. That claimer reads the registry before it takes its evidence
// snapshot and treats registered ranges as reserved (core/claim_plan.hpp). A
// transaction's ranges are removed by its commit or abort callback, which runs
// after the outcome is visible, so at every instant a claimed lane is covered
// by the registry or by visible evidence (or was rolled back). The registry
// lives and dies with the server's shared memory, as do the transactions it
// describes, so it needs no recovery.
//
// Available only when awa is in shared_preload_libraries; without it claims
// hold the lane lock until they end. Claims that find the registry full also
// hold the lock until the end. A claim inside a subtransaction registers at
// that level: the subtransaction's abort forgets its ranges, its commit hands
// them to the parent.
//
// A cancel uses the registry too: it registers the lane it tombstones, so no
// claim plans that lane or moves the cursor past it until the cancel has
// committed (the tombstone is then visible) or rolled back.
#pragma once

#include "pg/claim_bridge.hpp"
#include "pg/postgres_headers.hpp"

namespace awa::pg {

// Enough for every backend of a large server to hold a claim of one lane at
// once (each claim registers at most a few ranges); a full entry only means
// the next claim keeps the lane lock until it ends.
constexpr int kMaxInflightPerLane = 256;

// The startup hooks and the (sub)transaction callbacks, called by
// callbacks.cpp while preloaded. The end of a (sub)transaction forgets the
// ranges it registered (after an abort, waking its queue's waiting claims
// once they are gone); a commit of a subtransaction hands them to its parent;
// PRE_PREPARE refuses a transaction that registered any.
void RequestInflightShmem();
void StartupInflightShmem();
void OnInflightTransactionEvent(XactEvent event);
void OnInflightSubTransactionEvent(SubXactEvent event);

// A lane's frontier: every lane_seq from its claim cursor up to `position` is
// spent (visible claim evidence or tombstone) or held by a range registered
// here. A claim held open in a transaction keeps the durable claim cursor
// below its lanes (the cursor moves only over visible evidence); the claims
// after it start their walk at the frontier instead of reading all the
// evidence above the cursor (docs/architecture.md, "Claims past an open
// claim"). Kept in the lane's registry entry, so it exists only while some
// range of the lane is registered and is gone after a restart. An abort that
// forgets a range lowers the frontier below it, and moves the abort epoch
// first: a frontier computed from a registry read older than that epoch is
// not recorded.
struct InflightFrontier {
	int64 position;      // 0: none known
	uint64 abort_epoch;  // when the registry was read
};

// Copies the ranges other transactions have registered for the lane; returns
// how many (at most kMaxInflightPerLane). With `frontier`, also the lane's
// frontier as of that read.
int InflightRanges(int64 lane_id, BridgeRange *out, InflightFrontier *frontier = NULL);

// Records `position` as the lane's frontier when it is higher and no range was
// forgotten by an abort since `read` (the walk computed it from that read's
// ranges and from evidence visible to a snapshot taken after it).
void RaiseInflightFrontier(int64 lane_id, const InflightFrontier &read, int64 position);

// The transaction of another backend that has registered `lane_seq` of the
// lane (InvalidTransactionId if none).
TransactionId InflightHolder(int64 lane_id, int64 lane_seq);

// Registers this transaction's planned ranges for the lane; false when the
// registry is unavailable or full (then the caller keeps the lane lock until
// the transaction ends). If the registering (sub)transaction aborts, the
// waiting claims of `wake_bucket` (wakeups.hpp) are woken once the ranges are
// gone.
bool RegisterInflight(int64 lane_id, const BridgeRange *ranges, int count, uint32 wake_bucket);

}  // namespace awa::pg
