// spi_plans.cpp: statement texts and the per-backend plan cache (see spi_plans.hpp).
#include "pg/spi_plans.hpp"

#include "pg/core_calls.hpp"

extern "C" {
#include "jit/jit.h"
#include "optimizer/cost.h"
#include "optimizer/planner.h"
}

namespace awa::pg {

namespace {

constexpr int kMaxSlots = core::kMaxRingSlots;
constexpr int kMaxArgs = 20;

struct StmtDef {
	Stmt id;          // checked against its position (no silent shift)
	const char *sql;  // "%1$d" is the ring slot
	int nargs;
	Oid argtypes[kMaxArgs];
};

// clang-format off
constexpr StmtDef kStmts[static_cast<int>(Stmt::kCount)] = {
	// kRingPositions
	// (the queue generations owning a slot: one probe of the ledger's
	// (slot, generation) index per slot)
	{Stmt::kRingPositions, "SELECT q.generation, q.slot, qs.slot_count, c.generation, c.slot, cs.slot_count,"
	 "       ARRAY(SELECT x.g FROM awa.queue_ring_slots s,"
	 "                    LATERAL (SELECT max(r.generation) AS g FROM awa.queue_ring_rotations r WHERE r.slot = s.slot) x"
	 "              WHERE x.g IS NOT NULL ORDER BY x.g)"
	 "  FROM (SELECT generation, slot FROM awa.queue_ring_rotations ORDER BY generation DESC LIMIT 1) q,"
	 "       (SELECT generation, slot FROM awa.claim_ring_rotations ORDER BY generation DESC LIMIT 1) c,"
	 "       awa.queue_ring_state qs, awa.claim_ring_state cs",
	 0, {}},
	// kLaneOf
	{Stmt::kLaneOf, "SELECT ctid, lane_id, priority FROM awa.queue_lanes"
	 " WHERE queue = $1 AND priority = $2 AND concurrency_key IS NULL",
	 2, {TEXTOID, INT2OID}},
	// kKeyedLaneOf: $1 queue, $2 priority, $3 concurrency_key
	{Stmt::kKeyedLaneOf, "SELECT ctid, lane_id, priority FROM awa.queue_lanes"
	 " WHERE queue = $1 AND priority = $2 AND concurrency_key = $3",
	 3, {TEXTOID, INT2OID, TEXTOID}},
	// kLanesOfQueue: the lanes of jobs without a key
	{Stmt::kLanesOfQueue, "SELECT ctid, lane_id, priority FROM awa.queue_lanes"
	 " WHERE queue = $1 AND concurrency_key IS NULL ORDER BY priority",
	 1, {TEXTOID}},
	// kKeyedPriorities: the priorities of the queue that have keyed lanes (an
	// index probe each, whatever the number of keys)
	{Stmt::kKeyedPriorities, "SELECT p::smallint FROM generate_series(1, 4) p"
	 " WHERE EXISTS (SELECT FROM awa.queue_lanes l WHERE l.queue = $1 AND l.priority = p"
	 "               AND l.concurrency_key IS NOT NULL)",
	 1, {TEXTOID}},
	// kLanesOfPriority: every lane of (queue, priority), keyed or not, with its
	// key's weight (key_lanes.cpp, building the queue's scheduler)
	{Stmt::kLanesOfPriority, "SELECT l.ctid, l.lane_id, l.priority, coalesce(w.weight, 1), l.concurrency_key IS NOT NULL AS keyed"
	 "  FROM awa.queue_lanes l"
	 "  LEFT JOIN awa.key_weights w ON w.queue = l.queue AND w.concurrency_key = l.concurrency_key"
	 " WHERE l.queue = $1 AND l.priority = $2",
	 2, {TEXTOID, INT2OID}},
	// kLaneById: $1 lane_id
	{Stmt::kLaneById, "SELECT ctid, lane_id, priority, concurrency_key IS NOT NULL AS keyed"
	 "  FROM awa.queue_lanes WHERE lane_id = $1",
	 1, {INT8OID}},
	// kKeyOfLane: $1 lane_id (key_limits.cpp)
	{Stmt::kKeyOfLane, "SELECT concurrency_key FROM awa.queue_lanes WHERE lane_id = $1", 1, {INT8OID}},
	// kKeyRunningOne: $1 queue, $2 concurrency_key; the columns of kCountsScan
	// (running_limits.cpp counts a key's running attempts exactly with it)
	{Stmt::kKeyRunningOne, "SELECT name, 0::bigint, 0::bigint, 0::bigint, running, 0::bigint, 0::bigint, 0::bigint,"
	 " 0::bigint FROM awa._key_running_scan($1, $2)",
	 2, {TEXTOID, TEXTOID}},
	// kKeyCountsScan: the keys of the queues with limits per key that have
	// running attempts, the columns of kCountsScan (the counter rebuild; a
	// key with none needs no entry, and every key of a queue would take the
	// database's share of entries)
	{Stmt::kKeyCountsScan, "SELECT name, 0::bigint, 0::bigint, 0::bigint, running, 0::bigint, 0::bigint, 0::bigint,"
	 " 0::bigint FROM awa._key_running_scan(NULL, NULL) WHERE running <> 0",
	 0, {}},
	// kKeyWeight: $1 queue, $2 concurrency_key
	{Stmt::kKeyWeight, "SELECT weight FROM awa.key_weights WHERE queue = $1 AND concurrency_key = $2",
	 2, {TEXTOID, TEXTOID}},
	// kRegisterLane: $1 queue, $2 priority, $3 lane_id, $4 concurrency_key; cursors start at 0
	{Stmt::kRegisterLane, "INSERT INTO awa.queue_lanes (queue, priority, lane_id, concurrency_key)"
	 " VALUES ($1, $2, $3, $4) RETURNING ctid, lane_id, priority",
	 4, {TEXTOID, INT2OID, INT8OID, TEXTOID}},
	// kInsertDeferredMany: $1 job_ids, $2 queues, $3 priorities, $4 kinds, $5 args, $6 run_ats,
	// $7 run_leases, $8 attempts, $9 max_attempts, $10 created_ats, $11 unique keys, $12 unique states,
	// $13 payloads, $14 state (scheduled, or available: parked)
	{Stmt::kInsertDeferredMany, "INSERT INTO awa.deferred_jobs (job_id, queue, priority, kind, args, state, run_at, run_lease,"
	 "                               attempt, max_attempts, created_at, unique_key, unique_states, payload)"
	 " SELECT u.job_id, u.queue, u.priority, u.kind, u.args, $14, u.run_at, u.run_lease, u.attempt,"
	 "        u.max_attempts, u.created_at, u.unique_key,"
	 "        CASE WHEN u.unique_key IS NOT NULL THEN u.unique_states END, u.payload"
	 "   FROM unnest($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
	 "        AS u(job_id, queue, priority, kind, args, run_at, run_lease, attempt, max_attempts, created_at,"
	 "             unique_key, unique_states, payload)",
	 14, {INT8ARRAYOID, TEXTARRAYOID, INT2ARRAYOID, TEXTARRAYOID, JSONBARRAYOID, TIMESTAMPTZARRAYOID, INT8ARRAYOID,
	      INT2ARRAYOID, INT2ARRAYOID, TIMESTAMPTZARRAYOID, BYTEAARRAYOID, INT2ARRAYOID, JSONBARRAYOID, TEXTOID}},
	// kReadyRows: $1 lane_id, $2 first lane, $3 next lane (exclusive), $4 generation
	// (column kReadyRowsRunAtColumn is run_at)
	{Stmt::kReadyRows, "SELECT lane_seq, job_id, run_lease, attempt, max_attempts, kind, args, created_at,"
	 "       coalesce(payload -> 'metadata', '{}'::jsonb), run_at"
	 "  FROM awa.ready_entries_%1$d"
	 " WHERE lane_id = $1 AND lane_seq >= $2 AND lane_seq < $3 AND ready_generation = $4"
	 " ORDER BY lane_seq",
	 4, {INT8OID, INT8OID, INT8OID, INT8OID}},
	// kQueueSettings: $1 queue
	{Stmt::kQueueSettings, "SELECT paused, dlq_enabled, aging_interval, default_deadline, max_running, rate_count, rate_period,"
	 "       rate_burst, rate_set_at, fairness = 'key', key_max_running, key_rate_count, key_rate_period,"
	 "       key_rate_burst, key_rate_set_at FROM awa.queue_meta WHERE queue = $1",
	 1, {TEXTOID}},
	// kDeleteAttemptState: $1 job_ids, $2 run_leases
	{Stmt::kDeleteAttemptState, "DELETE FROM awa.attempt_state s USING unnest($1, $2) AS u(job_id, run_lease)"
	 " WHERE s.job_id = u.job_id AND s.run_lease = u.run_lease",
	 2, {INT8ARRAYOID, INT8ARRAYOID}},
	// kUpsertAttemptState: $1 job_ids, $2 run_leases, $3 progress (NULL keeps the stored one)
	{Stmt::kUpsertAttemptState, "INSERT INTO awa.attempt_state AS s (job_id, run_lease, heartbeat_at, progress, updated_at)"
	 " SELECT u.job_id, u.run_lease, clock_timestamp(), u.progress, clock_timestamp()"
	 "   FROM unnest($1, $2, $3) AS u(job_id, run_lease, progress)"
	 " ON CONFLICT (job_id, run_lease) DO UPDATE"
	 "   SET heartbeat_at = excluded.heartbeat_at, updated_at = excluded.updated_at,"
	 "       progress = coalesce(excluded.progress, s.progress)",
	 3, {INT8ARRAYOID, INT8ARRAYOID, JSONBARRAYOID}},
	// kReleaseUnique: keys of jobs that entered a state outside their mask. $1 job_ids, $2 state bit
	{Stmt::kReleaseUnique, "DELETE FROM awa.job_unique_claims WHERE job_id = ANY($1) AND (unique_states & $2) = 0",
	 2, {INT8ARRAYOID, INT2OID}},
	// kClaimUnique: $1 key, $2 job_id, $3 states, $4 now
	{Stmt::kClaimUnique, "INSERT INTO awa.job_unique_claims (unique_key, job_id, unique_states, claimed_at)"
	 " VALUES ($1, $2, $3, $4) ON CONFLICT (unique_key) DO NOTHING RETURNING job_id",
	 4, {BYTEAOID, INT8OID, INT2OID, TIMESTAMPTZOID}},
	// kUniqueHolder: $1 key
	{Stmt::kUniqueHolder, "SELECT job_id FROM awa.job_unique_claims WHERE unique_key = $1", 1, {BYTEAOID}},
	// kPromoteDue: $1 limit, $2 now
	// (= ANY of an array, not IN: the outer delete then probes the primary key
	// for each picked job whatever the statistics, never a hash join over the
	// whole table.) Due jobs of a paused queue are taken too: InsertJobs
	// parks them, so the walk never passes over them again.
	{Stmt::kPromoteDue, "DELETE FROM awa.deferred_jobs d WHERE d.job_id = ANY (ARRAY("
	 "   SELECT due.job_id FROM awa.deferred_jobs due"
	 "    WHERE due.run_at <= $2 AND due.state <> 'available'"
	 "    ORDER BY due.run_at, due.priority, due.job_id LIMIT $1 FOR UPDATE SKIP LOCKED))"
	 " RETURNING job_id, queue, priority, kind, args, state, run_at, run_lease, attempt, max_attempts, created_at,"
	 "           unique_key, unique_states, payload",
	 2, {INT4OID, TIMESTAMPTZOID}},
	// kPromoteParked: $1 limit: parked jobs of the queues that are not
	// paused (a producer that saw the queue paused and committed after its
	// resume, a parked job moved to another queue). The queues with parked
	// jobs are found by a skip scan of deferred_jobs_parked_idx (a probe per
	// such queue, not per job), and a paused queue's jobs are never read.
	// (Each probe orders by the index's whole key, which only that index
	// gives: with stale statistics a plan along deferred_jobs_queue_idx with
	// a state filter read other queues' scheduled rows. Found in review.)
	{Stmt::kPromoteParked, "DELETE FROM awa.deferred_jobs d WHERE d.job_id = ANY (ARRAY("
	 "   WITH RECURSIVE parked(queue) AS ("
	 "       (SELECT p.queue FROM awa.deferred_jobs p WHERE p.state = 'available'"
	 "         ORDER BY p.queue, p.run_at, p.priority, p.job_id LIMIT 1)"
	 "     UNION ALL"
	 "       SELECT (SELECT p.queue FROM awa.deferred_jobs p WHERE p.state = 'available' AND p.queue > parked.queue"
	 "                ORDER BY p.queue, p.run_at, p.priority, p.job_id LIMIT 1)"
	 "         FROM parked WHERE parked.queue IS NOT NULL)"
	 "   SELECT j.job_id FROM parked q CROSS JOIN LATERAL ("
	 "       SELECT p.job_id FROM awa.deferred_jobs p WHERE p.state = 'available' AND p.queue = q.queue"
	 "        ORDER BY p.run_at, p.priority, p.job_id LIMIT $1 FOR UPDATE SKIP LOCKED) j"
	 "    WHERE q.queue IS NOT NULL"
	 "      AND NOT EXISTS (SELECT FROM awa.queue_meta m WHERE m.queue = q.queue AND m.paused)"
	 "    LIMIT $1))"
	 " RETURNING job_id, queue, priority, kind, args, state, run_at, run_lease, attempt, max_attempts, created_at,"
	 "           unique_key, unique_states, payload",
	 1, {INT4OID}},
	// kUnparkQueue: $1 limit, $2 queue, $3 run_at, $4 priority, $5 job_id:
	// the queue's parked jobs after ($3, $4, $5), in order (awa.resume_queue
	// pages through them: each page starts where the last ended, not at the
	// rows the transaction deleted already).
	{Stmt::kUnparkQueue, "DELETE FROM awa.deferred_jobs d WHERE d.job_id = ANY (ARRAY("
	 "   SELECT p.job_id FROM awa.deferred_jobs p"
	 "    WHERE p.state = 'available' AND p.queue = $2 AND (p.run_at, p.priority, p.job_id) > ($3, $4, $5)"
	 "    ORDER BY p.run_at, p.priority, p.job_id LIMIT $1 FOR UPDATE SKIP LOCKED))"
	 " RETURNING job_id, queue, priority, kind, args, state, run_at, run_lease, attempt, max_attempts, created_at,"
	 "           unique_key, unique_states, payload",
	 5, {INT4OID, TEXTOID, TIMESTAMPTZOID, INT2OID, INT8OID}},
	// kOldestParked: $1 queue: the run_at of its oldest parked job (queue_metrics)
	{Stmt::kOldestParked, "SELECT min(run_at) FROM awa.deferred_jobs WHERE state = 'available' AND queue = $1",
	 1, {TEXTOID}},
	// kAnyQueuePaused: whether a queue of the database is paused
	// (queue_settings.hpp), and whether deferred_jobs can hold parked jobs
	// (a database made by an earlier build of 0.6 cannot)
	{Stmt::kAnyQueuePaused, "SELECT EXISTS (SELECT FROM awa.queue_meta WHERE paused),"
	 "       pg_catalog.to_regclass('awa.deferred_jobs_parked_idx') IS NOT NULL", 0, {}},
	// kCountsScan: the exact pass over every queue (run under a published snapshot)
	{Stmt::kCountsScan, "SELECT * FROM awa._queue_counts_scan(NULL)", 0, {}},
	// kCountsScanOne: $1 queue (NULL: all)
	{Stmt::kCountsScanOne, "SELECT * FROM awa._queue_counts_scan($1)", 1, {TEXTOID}},
	// kHoldRings: the ring tables held before an exact pass takes its
	// snapshot (a prune in progress waited for; under REPEATABLE READ, 40001
	// after a prune the snapshot did not see)
	{Stmt::kHoldRings, "SELECT awa._hold_rings()", 0, {}},
	// kQueueList: every queue that has a lane or settings
	{Stmt::kQueueList, "SELECT queue FROM awa.queue_lanes UNION SELECT queue FROM awa.queue_meta ORDER BY 1", 0, {}},
	// kPausedQueues: the queues that are paused or have a concurrency or rate limit (queue_metrics)
	{Stmt::kPausedQueues, "SELECT queue, paused, max_running, rate_count || ' per ' || rate_period, rate_burst"
	                      " FROM awa.queue_meta WHERE paused OR max_running IS NOT NULL OR rate_count IS NOT NULL",
	 0, {}},
	// kOldestAvailableSql: $1 queue: the SQL walk (awa.queue_metrics' fallback)
	{Stmt::kOldestAvailableSql, "SELECT awa._oldest_available_at($1)", 1, {TEXTOID}},
	// kLaneSeqClaimed: $1 lane_id, $2 generation, $3 lane_seq
	{Stmt::kLaneSeqClaimed, "SELECT 1 FROM awa.ready_claim_attempt_batches_%1$d"
	 " WHERE lane_id = $1 AND next_lane_seq > $3 AND ready_generation = $2"
	 "   AND first_lane_seq <= $3 AND (lane_ranges IS NULL OR lane_ranges @> $3)",
	 3, {INT8OID, INT8OID, INT8OID}},
	// kLaneSeqTombstoned: $1 lane_id, $2 generation, $3 lane_seq
	{Stmt::kLaneSeqTombstoned, "SELECT 1 FROM awa.ready_tombstones_%1$d"
	 " WHERE lane_id = $1 AND lane_seq = $3 AND ready_generation = $2",
	 3, {INT8OID, INT8OID, INT8OID}},
	// kInsertTombstone: $1 slot, $2 generation, $3 lane_id, $4 queue, $5 priority, $6 lane_seq, $7 job_id, $8 now
	{Stmt::kInsertTombstone, "INSERT INTO awa.ready_tombstones_%1$d (ready_slot, ready_generation, lane_id, queue,"
	 " priority, lane_seq, job_id, tombstoned_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
	 8, {INT2OID, INT8OID, INT8OID, TEXTOID, INT2OID, INT8OID, INT8OID, TIMESTAMPTZOID}},
	// kReadyBody: the body of one ready row (a probe of the partition's unique
	// (lane_id, lane_seq) index). $1 lane_id, $2 lane_seq
	{Stmt::kReadyBody, "SELECT kind, args, run_at, created_at, unique_key, unique_states, payload"
	 "  FROM awa.ready_entries_%1$d WHERE lane_id = $1 AND lane_seq = $2 AND ready_slot = %1$d",
	 2, {INT8OID, INT8OID}},
	// kAttemptProgress: $1 job_id, $2 run_lease
	{Stmt::kAttemptProgress, "SELECT progress FROM awa.attempt_state WHERE job_id = $1 AND run_lease = $2", 2,
	 {INT8OID, INT8OID}},
	// kEndPayload: a job's payload after an attempt ended. $1 payload, $2 error (NULL: none, a snooze),
	// $3 attempt, $4 progress (NULL: none). NULL when empty.
	{Stmt::kEndPayload, "SELECT nullif(coalesce($1, '{}'::jsonb)"
	 "  || CASE WHEN $2 IS NULL THEN '{}'::jsonb"
	 "          ELSE jsonb_build_object('errors', coalesce($1 -> 'errors', '[]'::jsonb)"
	 "               || jsonb_build_array(jsonb_build_object('attempt', $3, 'error', $2, 'at', clock_timestamp())))"
	 "     END"
	 "  || CASE WHEN $4 IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('progress', $4) END, '{}'::jsonb)",
	 4, {JSONBOID, TEXTOID, INT4OID, JSONBOID}},
	// kInsertRetryable: a retried or snoozed job. $1 job_id, $2 queue, $3 priority, $4 kind, $5 args,
	// $6 state, $7 run_at, $8 run_lease, $9 attempt, $10 max_attempts, $11 created_at, $12 unique_key,
	// $13 unique_states, $14 payload
	{Stmt::kInsertRetryable, "INSERT INTO awa.deferred_jobs (job_id, queue, priority, kind, args, state, run_at, run_lease,"
	 "                               attempt, max_attempts, created_at, unique_key, unique_states, payload)"
	 " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
	 14, {INT8OID, TEXTOID, INT2OID, TEXTOID, JSONBOID, TEXTOID, TIMESTAMPTZOID, INT8OID, INT2OID, INT2OID,
	      TIMESTAMPTZOID, BYTEAOID, INT2OID, JSONBOID}},
	// kInsertDlq: $1 job_id, $2 queue, $3 priority, $4 kind, $5 args, $6 run_lease, $7 attempt,
	// $8 max_attempts, $9 run_at, $10 created_at, $11 unique_key, $12 unique_states, $13 payload, $14 reason
	{Stmt::kInsertDlq, "INSERT INTO awa.dlq_entries (job_id, queue, priority, kind, args, run_lease, original_run_lease,"
	 "                             attempt, max_attempts, run_at, created_at, unique_key, unique_states, payload,"
	 "                             dlq_reason, dlq_at)"
	 " VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8, $9, $10, $11, $12, $13, $14, clock_timestamp())",
	 14, {INT8OID, TEXTOID, INT2OID, TEXTOID, JSONBOID, INT8OID, INT2OID, INT2OID, TIMESTAMPTZOID,
	      TIMESTAMPTZOID, BYTEAOID, INT2OID, JSONBOID, TEXTOID}},
	// kInsertFailed: a failed terminal row in the ready row's slot. $1 generation, $2 queue,
	// $3 priority, $4 lane_seq, $5 job_id, $6 run_lease, $7 attempt, $8 kind, $9 args, $10 max_attempts,
	// $11 run_at, $12 created_at, $13 unique_key, $14 payload, $15 lane_id
	{Stmt::kInsertFailed, "INSERT INTO awa.done_entries_%1$d (ready_slot, ready_generation, lane_id, queue, priority,"
	 "                                   lane_seq, job_id, run_lease, attempt, kind, state, finalized_at, args,"
	 "                                   max_attempts, run_at, created_at, unique_key, payload)"
	 " VALUES (%1$d, $1, $15, $2, $3, $4, $5, $6, $7, $8, 'failed', clock_timestamp(), $9, $10, $11, $12, $13,"
	 "         $14)",
	 15, {INT8OID, TEXTOID, INT2OID, INT8OID, INT8OID, INT8OID, INT2OID, TEXTOID, JSONBOID, INT2OID,
	      TIMESTAMPTZOID, TIMESTAMPTZOID, BYTEAOID, JSONBOID, INT8OID}},
	// kAllLanes: every lane of the database (maintenance).
	{Stmt::kAllLanes, "SELECT ctid, lane_id, priority, queue FROM awa.queue_lanes"
	 " ORDER BY lane_id", 0, {}},
	// kAllLanesOfQueue: every lane of a queue, keyed or not (awa.lane_cursors). $1 queue
	{Stmt::kAllLanesOfQueue, "SELECT ctid, lane_id, priority, queue FROM awa.queue_lanes WHERE queue = $1"
	 " ORDER BY lane_id", 1, {TEXTOID}},
	// kAttemptHeartbeat: the attempt's last heartbeat. $1 job_id, $2 run_lease
	{Stmt::kAttemptHeartbeat, "SELECT heartbeat_at FROM awa.attempt_state WHERE job_id = $1 AND run_lease = $2",
	 2, {INT8OID, INT8OID}},
	// kReadyRowAt: the ready row is still in this slot and generation (a probe
	// of the partition's unique (lane_id, lane_seq) index).
	// $1 lane_id, $2 lane_seq, $3 generation
	{Stmt::kReadyRowAt, "SELECT 1 FROM awa.ready_entries_%1$d"
	 " WHERE lane_id = $1 AND lane_seq = $2 AND ready_slot = %1$d AND ready_generation = $3",
	 3, {INT8OID, INT8OID, INT8OID}},
	// kReadyRowOfJob: where a prune carried a running attempt's ready row (job_id index).
	// $1 job_id, $2 run_lease of the row, $3 lane_id, $4 lane_seq
	{Stmt::kReadyRowOfJob, "SELECT ready_generation FROM awa.ready_entries_%1$d"
	 " WHERE job_id = $1 AND run_lease = $2 AND lane_id = $3 AND lane_seq = $4",
	 4, {INT8OID, INT8OID, INT8OID, INT8OID}},
	// kLanesAfter: the next lanes in lane_id order after $1, for the lane
	// reclaim's pass (fn_reclaim_lanes.cpp); the limit is the caller's.
	{Stmt::kLanesAfter, "SELECT ctid, lane_id, priority, queue, concurrency_key IS NOT NULL AS keyed FROM awa.queue_lanes"
	 " WHERE lane_id > $1 ORDER BY lane_id", 1, {INT8OID}},
	// kLaneHasRingRows: whether any live slot of the queue ring holds a row
	// of the lane (each family's lane index: one probe per partition). The
	// claim ring's batches are not read: an open attempt keeps its ready row
	// (carried), and the completions' batches share the ready rows' slots.
	// $1 lane_id
	{Stmt::kLaneHasRingRows, "SELECT EXISTS (SELECT FROM awa.ready_entries WHERE lane_id = $1)"
	 "    OR EXISTS (SELECT FROM awa.ready_tombstones WHERE lane_id = $1)"
	 "    OR EXISTS (SELECT FROM awa.done_entries WHERE lane_id = $1)"
	 "    OR EXISTS (SELECT FROM awa.ready_claim_attempt_batches WHERE lane_id = $1)",
	 1, {INT8OID}},
	// kDeleteLane: the lane's row, unless a transaction holds it locked (a
	// SELECT ... FOR UPDATE by hand): the reclaim never waits. $1 lane_id
	{Stmt::kDeleteLane, "DELETE FROM awa.queue_lanes WHERE ctid = (SELECT l.ctid FROM awa.queue_lanes l"
	 " WHERE l.lane_id = $1 FOR UPDATE SKIP LOCKED)", 1, {INT8OID}},
	// kLaneMayLeaveQueue: whether the queue stays listed without this lane
	// (awa.queue_counts and awa.queue_metrics list the queues that have a
	// lane or settings), or has no job outside the ring that a listing would
	// show: no scheduled, retryable or parked job, no dead letter. $1 queue,
	// $2 lane_id
	{Stmt::kLaneMayLeaveQueue, "SELECT EXISTS (SELECT FROM awa.queue_lanes WHERE queue = $1 AND lane_id <> $2)"
	 "    OR EXISTS (SELECT FROM awa.queue_meta WHERE queue = $1)"
	 "    OR NOT (EXISTS (SELECT FROM awa.deferred_jobs WHERE queue = $1)"
	 "            OR EXISTS (SELECT FROM awa.dlq_entries WHERE queue = $1))",
	 2, {TEXTOID, INT8OID}},
};
// clang-format on

constexpr bool
StatementsInOrder()
{
	for (int i = 0; i < static_cast<int>(Stmt::kCount); i++)
		if (static_cast<int>(kStmts[i].id) != i)
			return false;
	return true;
}
static_assert(StatementsInOrder(), "kStmts must list every Stmt in enum order");

SPIPlanPtr plans[static_cast<int>(Stmt::kCount)][kMaxSlots];

// The caller's search_path must never decide what a statement means: awa's
// functions are SECURITY DEFINER. Every statement is prepared, executed and
// (by the plan cache, which re-parses when the search_path in force differs
// from the one a plan was made under) re-parsed under this pinned path:
// pg_catalog only, no pg_temp.
// On an error between push and pop, the transaction's abort discards the
// override stack (AtEOXact_Namespace / AtEOSubXact_Namespace).
void
PushPinnedSearchPath()
{
	OverrideSearchPath path;
	memset(&path, 0, sizeof(path));
	path.schemas = NIL;
	path.addCatalog = true;
	path.addTemp = false;
	PushOverrideSearchPath(&path);
}

// ---------------------------------------------------------------------------
// Index plans, always. A generic plan is made when a statement first runs
// after its relations were invalidated, with the sizes of that instant: a ring
// child that was just truncated, or analyzed while (nearly) empty, makes the
// planner choose a sequential scan (and a sort), which is then kept while the
// child grows to thousands of rows: every claim then sorts all the slot's
// claim evidence (measured: drain at 4 workers 2x slower, complete 2.7 ms
// instead of 1.2). So awa's statements are planned with sequential scans
// disabled (enable_seqscan's cost penalty: a statement without an index path
// still gets one). The whole-table count scans are exempt.
//
// Never JIT: every plan made while one of awa's statements runs (its own, and
// those of any SQL function it calls) leaves the planner with jitFlags
// cleared, whatever jit and jit_*_above_cost say. The disable_cost above puts
// these statements at ~10^10, far over jit_above_cost, and compiling one took
// 100-200 ms for a statement that runs in microseconds (docs/architecture.md
// §9). Clearing the flags in the finished plan costs nothing per execution
// (the kept generic plan carries them), unlike a SET jit = off around calls.
// ---------------------------------------------------------------------------
bool running_awa_statement = false;
bool planning_awa_statement = false;

// DeferSearchPath (spi_plans.hpp): armed in subtransaction
// search_path_deferred_in; search_path_level is the GUC nest level the first
// statement after it opened (0: none yet).
bool search_path_deferred = false;
SubTransactionId search_path_deferred_in = InvalidSubTransactionId;
int search_path_level = 0;

// Before every statement: a deferred search_path is set now.
void
ApplyDeferredSearchPath()
{
	if (!search_path_deferred)
		return;
	search_path_deferred = false;
	search_path_level = NewGUCNestLevel();
	(void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE, true,
	                        0, false);
}
planner_hook_type previous_planner = NULL;

PlannedStmt *
AwaPlanner(Query *parse, const char *query_string, int cursor_options, ParamListInfo bound_params)
{
	if (!running_awa_statement)
		return previous_planner != NULL ? previous_planner(parse, query_string, cursor_options, bound_params)
		                                : standard_planner(parse, query_string, cursor_options, bound_params);
	bool saved = enable_seqscan;
	PlannedStmt *result = NULL;
	if (planning_awa_statement)
		enable_seqscan = false;
	PG_TRY();
	{
		result = previous_planner != NULL ? previous_planner(parse, query_string, cursor_options, bound_params)
		                                  : standard_planner(parse, query_string, cursor_options, bound_params);
	}
	PG_FINALLY();
	{
		enable_seqscan = saved;
	}
	PG_END_TRY();
	result->jitFlags = PGJIT_NONE;
	return result;
}

bool
WantsIndexPlan(Stmt stmt)
{
	return stmt != Stmt::kCountsScan && stmt != Stmt::kCountsScanOne && stmt != Stmt::kHoldRings &&
	       stmt != Stmt::kKeyCountsScan &&
	       stmt != Stmt::kKeyRunningOne && stmt != Stmt::kQueueList &&
	       stmt != Stmt::kAllLanes && stmt != Stmt::kPausedQueues;
}

}  // namespace

// The flags are set around every execution of a prepared statement (where
// the plan cache may re-plan it); an error leaves them set, so they are
// cleared again at the end of every transaction.
void
OnPlannerTransactionEvent(XactEvent event)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
	    event == XACT_EVENT_PREPARE) {
		running_awa_statement = false;
		planning_awa_statement = false;
	}
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
	    event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PREPARE) {
		search_path_deferred = false;
		search_path_deferred_in = InvalidSubTransactionId;
		search_path_level = 0;
	}
}

void
OnPlannerSubTransactionEvent(SubXactEvent event, SubTransactionId subtransaction)
{
	if (event == SUBXACT_EVENT_ABORT_SUB) {
		running_awa_statement = false;
		planning_awa_statement = false;
		// The deferral's subtransaction (or an ancestor) aborts; one that
		// began inside it (a trigger's exception block) leaves it alone.
		if (subtransaction <= search_path_deferred_in) {
			search_path_deferred = false;
			search_path_deferred_in = InvalidSubTransactionId;
			search_path_level = 0;
		}
	}
}

void
DeferSearchPath()
{
	search_path_deferred = true;
	search_path_deferred_in = GetCurrentSubTransactionId();
	search_path_level = 0;
}

void
EndDeferredSearchPath()
{
	int level = search_path_level;
	search_path_deferred = false;
	search_path_deferred_in = InvalidSubTransactionId;
	search_path_level = 0;
	if (level != 0)
		AtEOXact_GUC(true, level);
}

namespace {

void
InstallPlannerOnce()
{
	static bool installed = false;
	if (installed)
		return;
	previous_planner = planner_hook;
	planner_hook = AwaPlanner;
	installed = true;
}

int
CheckResult(int rc, Stmt stmt)
{
	if (rc < 0)
		elog(ERROR, "awa: statement %d failed: %s", static_cast<int>(stmt), SPI_result_code_string(rc));
	return rc;
}

}  // namespace

SPIPlanPtr
Plan(Stmt stmt, int slot)
{
	int index = static_cast<int>(stmt);
	if (slot < 0 || slot >= kMaxSlots)
		elog(ERROR, "awa: ring slot %d out of range", slot);
	SPIPlanPtr plan = plans[index][slot];
	if (plan != NULL)
		return plan;

	InstallPlannerOnce();
	const StmtDef &def = kStmts[index];
	char sql[4096];
	int length = snprintf(sql, sizeof(sql), def.sql, slot);
	if (length < 0 || length >= static_cast<int>(sizeof(sql)))
		elog(ERROR, "awa: statement %d text too long", index);

	// Generic plans always: these statements run on every call, and a custom
	// plan would mean planning each time. Every statement was checked to have
	// an index-scan generic plan (docs/architecture.md, "Plans").
	PushPinnedSearchPath();
	plan = SPI_prepare_cursor(sql, def.nargs, const_cast<Oid *>(def.argtypes), CURSOR_OPT_GENERIC_PLAN);
	PopOverrideSearchPath();
	if (plan == NULL)
		elog(ERROR, "awa: could not prepare statement %d: %s", index, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "awa: could not keep plan of statement %d", index);
	plans[index][slot] = plan;
	return plan;
}

namespace {

// Every prepared execution: pinned search path, index plans if (re)planned.
// InvalidSnapshot: SPI's usual snapshot rules and AFTER triggers fired at the
// end of the statement, as SPI_execute_plan does; a given snapshot: as
// SPI_execute_snapshot was called before (triggers left to the caller's
// query).
int
Run(Stmt stmt, int slot, Datum *values, const char *nulls, Snapshot snapshot, bool read_only, long limit)
{
	ApplyDeferredSearchPath();
	SPIPlanPtr plan = Plan(stmt, slot);
	PushPinnedSearchPath();
	// Restored, not cleared, after: a statement can run inside another's
	// execution (a function it calls), which may still plan afterwards.
	bool outer_running = running_awa_statement;
	bool outer_planning = planning_awa_statement;
	running_awa_statement = true;
	planning_awa_statement = WantsIndexPlan(stmt);
	int rc = SPI_execute_snapshot(plan, values, nulls, snapshot, InvalidSnapshot, read_only,
	                              snapshot == InvalidSnapshot, limit);
	running_awa_statement = outer_running;
	planning_awa_statement = outer_planning;
	PopOverrideSearchPath();
	return CheckResult(rc, stmt);
}

}  // namespace

int
Execute(Stmt stmt, int slot, Datum *values, const char *nulls, long limit)
{
	return Run(stmt, slot, values, nulls, InvalidSnapshot, false, limit);
}

int
ExecuteLatest(Stmt stmt, int slot, Datum *values, const char *nulls, long limit)
{
	return Run(stmt, slot, values, nulls, GetLatestSnapshot(), false, limit);
}

int
ExecuteWithSnapshot(Stmt stmt, int slot, Datum *values, const char *nulls, Snapshot snapshot)
{
	return Run(stmt, slot, values, nulls, snapshot, true, 0);
}

void
ExecuteUtility(const char *sql)
{
	ApplyDeferredSearchPath();
	PushPinnedSearchPath();
	int rc = SPI_execute(sql, false, 0);
	PopOverrideSearchPath();
	if (rc < 0)
		elog(ERROR, "awa: could not run \"%s\": %s", sql, SPI_result_code_string(rc));
}

}  // namespace awa::pg
