// lanes.hpp: the lane registry. A lane is (queue, priority), or (queue,
// priority, concurrency_key) for keyed jobs (key_lanes.hpp); its row in
// awa.queue_lanes is inserted on first enqueue and carries the lane's two
// cursors, which lane_cursors.hpp reads and moves in place.
#pragma once

#include "pg/postgres_headers.hpp"

namespace awa::pg {

struct Lane {
	int64 lane_id;
	int16 priority;
	bool keyed;  // a lane of one concurrency key (key_lanes.hpp)
	// Where the row was found: a hint, checked (and the row looked up again
	// by lane_id) at every use, since VACUUM FULL or CLUSTER moves rows.
	ItemPointerData row;
	uint64 rows_epoch;  // LaneRowsEpoch() when `row` was read
};

// Moves on at every relcache invalidation of awa.queue_lanes (VACUUM FULL,
// CLUSTER and TRUNCATE rewrite it and send one; so does a new lane's commit).
// A Lane read under an older epoch looks its row up again.
uint64 LaneRowsEpoch();

// The lane of an SPI row that begins (ctid, lane_id, priority), as the lane
// statements of spi_plans.cpp return them.
Lane LaneOfRow(HeapTuple tuple, TupleDesc desc);

constexpr int kMaxLanesPerQueue = 4;

// The lane, created if this is its first use; `key` NULL: the lane of jobs
// without a key. A new lane's row is committed as it is inserted (it stays
// if the caller rolls back), or, past 16 new lanes in the transaction, while
// a VACUUM, ANALYZE or concurrent index build of awa.queue_lanes runs (or
// another creator holds its lock past 5 ms), or where an INSERT trigger or
// rule is on it, inserted in the caller's transaction (lanes.cpp,
// CommittedInsertAllowed).
// Requires SPI. May ereport.
Lane EnsureLane(text *queue, int16 priority, text *key = NULL);

// The lane again, for a caller that found the row of the lane EnsureLane gave
// it gone (ReserveLanePositions returned 0; ReadLaneCursors(...).gone):
// maintenance reclaimed it after it had been drained and idle
// (fn_reclaim_lanes.cpp). Looked for past this backend's cache and with the
// latest snapshot, and created anew (a new lane_id) if it is not there.
// Requires SPI. May ereport.
Lane RefindLane(text *queue, int16 priority, text *key = NULL);

// The current transaction deletes lanes' rows (the lane reclaim): a lane it
// creates from now on is inserted in it, never committed at insert.
void NoteLanesReclaimed();

// True while the current transaction has inserted a lane's row in itself
// (not committed at insert: it may still roll back).
bool LaneCreatedInThisTransaction();

// The queue's lanes of jobs without a key, by priority; returns how many (0
// for an unknown queue).
// Served from a per-backend cache when it can be; requires SPI otherwise.
// May ereport.
int LanesOfQueue(text *queue, Lane lanes[kMaxLanesPerQueue]);
// Empties this backend's cache of queues' lanes. A waiting claim does so when
// it wakes: the transaction that woke it sends its catalog invalidations only
// after its commit callbacks ran (wakeups.hpp), so the cache may not know of a
// lane that transaction created yet.
void ForgetCachedLanes();

// The priorities of the queue that have keyed lanes: bit p-1 for priority p
// (cached with LanesOfQueue). Requires SPI. May ereport.
uint8 KeyedPriorities(text *queue);

// The lane of a lane_id (a lookup by the unique index; no cache). Requires
// SPI. May ereport.
bool LaneById(int64 lane_id, Lane *lane);

}  // namespace awa::pg
