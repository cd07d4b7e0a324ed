// lanes.hpp: the lane registry. A lane is (queue, priority); it is created on
// first enqueue with its two cursor sequences and never changes afterwards.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

struct Lane {
	int64 lane_id;
	int16 priority;
	Oid enqueue_seq;
	Oid claim_seq;
};

constexpr int kMaxLanesPerQueue = 4;

// The lane, created if this is its first use (in the caller's transaction,
// so it rolls back with it). Requires SPI. May ereport.
Lane EnsureLane(text *queue, int16 priority);

// True while the current transaction has created a lane (its sequences are
// new in this transaction).
bool LaneCreatedInThisTransaction();

// The queue's lanes by priority; returns how many (0 for an unknown queue).
// Served from a per-backend cache when it can be; requires SPI otherwise.
// May ereport.
int LanesOfQueue(text *queue, Lane lanes[kMaxLanesPerQueue]);
// Empties this backend's cache of queues' lanes. A waiting claim does so when
// it wakes: the transaction that woke it sends its catalog invalidations only
// after its commit callbacks ran (wakeups.hpp), so the cache may not know of a
// lane that transaction created yet.
void ForgetCachedLanes();

}  // namespace awa::pg
