-- Internal building blocks (granted to no role; awa's SECURITY DEFINER
-- functions call them as the extension owner).
-- ---------------------------------------------------------------------------
-- Locks the attempt's claim batch for the transaction and reports it; with an
-- outcome, closes it when it is open (status 'closed_now').
CREATE FUNCTION awa._attempt(job_id bigint, run_lease bigint, receipt_id bigint, outcome text)
RETURNS TABLE (status text, closed_outcome text, queue text, priority int, ready_slot int,
               ready_generation bigint, lane_seq bigint, attempt int, max_attempts int,
               claimed_at timestamptz)
AS 'MODULE_PATHNAME', 'awa_internal_attempt'
LANGUAGE C VOLATILE;

-- Hides an unclaimed ready row (cancel); 'tombstoned', 'claimed' or 'already_tombstoned'.
-- lane_id: the row's lane (NULL: the queue's lane of jobs without a key at
-- that priority).
CREATE FUNCTION awa._tombstone(queue text, priority int, lane_seq bigint, ready_slot int,
                               ready_generation bigint, job_id bigint, lane_id bigint DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'awa_internal_tombstone'
LANGUAGE C VOLATILE;

-- Reserves `count` consecutive positions of the lane (created if new) and
-- returns the first, as an enqueue does before it writes its rows: for tests
-- that write ready rows by hand.
CREATE FUNCTION awa._reserve_lane_positions(queue text, priority int, count bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'awa_internal_reserve_lane_positions'
LANGUAGE C VOLATILE STRICT;

-- Appends the given jobs to their lanes, whatever their run_at (due now),
-- through the enqueue path: their ready rows and lane positions at the
-- transaction's commit, or where it reads its jobs back (unique keys taken
-- again at the call: 23505 if another job holds one).
-- Each row's state is the counter state the job leaves in its queue. The rows
-- are built by their caller (a DLQ retry, a retry of a finished job, a move)
-- and never written to deferred_jobs: a row inserted and deleted in the same
-- call left a dead tuple per job there, and the steps of a bulk retry got
-- slower and slower until autovacuum came (docs/operations-ui.md, stop 36).
-- The rows are checked as the table's constraints would check them.
CREATE FUNCTION awa._requeue_jobs(jobs awa.deferred_jobs[])
RETURNS int
AS 'MODULE_PATHNAME', 'awa_internal_requeue_jobs'
LANGUAGE C VOLATILE;

-- Appends a queue's parked jobs (deferred_jobs rows in state available: the
-- jobs enqueued while it was paused) to their lanes, in (run_at, priority,
-- job_id) order, and returns how many; awa.resume_queue calls it. A parked
-- job locked by another transaction (a cancel) is left to promotion.
CREATE FUNCTION awa._unpark_queue(queue text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'awa_internal_unpark_queue'
LANGUAGE C VOLATILE;

-- Records a move of n jobs between states in this transaction (counters).
CREATE FUNCTION awa._count_move(queue text, from_state text, to_state text, n bigint DEFAULT 1)
RETURNS void
AS 'MODULE_PATHNAME', 'awa_internal_count_move'
LANGUAGE C VOLATILE;

-- Retry delay after failed attempt n: 2^n s + up to 25 % jitter, at most 24 h.
CREATE FUNCTION awa._backoff(attempt int)
RETURNS interval
AS 'MODULE_PATHNAME', 'awa_internal_backoff'
LANGUAGE C VOLATILE;

-- Sends the relcache invalidation that empties every backend's settings cache,
-- and wakes the queue's waiting claims and the maintenance worker at commit
-- (a resumed queue can be claimed and promoted again).
CREATE FUNCTION awa._queue_meta_changed(queue text, key_limits_new boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'awa_internal_queue_meta_changed'
LANGUAGE C VOLATILE;

-- Appends the ready jobs this transaction enqueued and still holds in memory
-- (src/pg/pending_enqueues.hpp): the functions that read jobs back call it
-- first, so a transaction sees its own enqueues. Returns how many it wrote.
CREATE FUNCTION awa._flush_enqueues()
RETURNS int
AS 'MODULE_PATHNAME', 'awa_internal_flush_enqueues'
LANGUAGE C VOLATILE;

-- The exact pass: every job of the queue (NULL: of every queue with a lane or
-- settings) counted from the tables. STABLE, so it runs under one snapshot
-- (the counter rebuild publishes that snapshot; src/pg/counters.hpp).
--   available = ready rows - lanes handed out by claims - tombstoned lanes
--               + parked jobs (deferred rows in state available)
--   running   = claimed attempts - closed attempts
--   failed, cancelled = their records not superseded by a retry
CREATE FUNCTION awa._queue_counts_scan(p_queue text)
RETURNS TABLE (queue text, available bigint, scheduled bigint, retryable bigint, running bigint,
               completed bigint, failed bigint, cancelled bigint, dlq bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
WITH queues AS (
    SELECT l.queue FROM awa.queue_lanes l WHERE p_queue IS NULL OR l.queue = p_queue
    UNION
    SELECT m.queue FROM awa.queue_meta m WHERE p_queue IS NULL OR m.queue = p_queue
), ready AS (
    SELECT e.queue, count(*) AS n FROM awa.ready_entries e
     WHERE p_queue IS NULL OR e.queue = p_queue GROUP BY e.queue
), handed_out AS (
    SELECT b.queue, sum(b.claimed_count) AS n FROM awa.ready_claim_attempt_batches b
     WHERE p_queue IS NULL OR b.queue = p_queue GROUP BY b.queue
), tombstoned AS (
    SELECT t.queue, count(*) AS n FROM awa.ready_tombstones t
     WHERE p_queue IS NULL OR t.queue = p_queue GROUP BY t.queue
), claimed AS (
    SELECT c.queue, sum(c.claimed_count) AS n FROM awa.lease_claim_batches c
     WHERE p_queue IS NULL OR c.queue = p_queue GROUP BY c.queue
), closed AS (
    SELECT c.queue, sum(x.closed_count) AS n
      FROM awa.lease_claim_closure_batches x
      JOIN awa.lease_claim_batches c ON c.batch_id = awa._claim_batch_of_closure(x.batch_id) AND c.claim_slot = x.claim_slot
     WHERE p_queue IS NULL OR c.queue = p_queue GROUP BY c.queue
), completed AS (
    SELECT r.queue, sum(r.completed_count) AS n FROM awa.receipt_completion_batches r
     WHERE p_queue IS NULL OR r.queue = p_queue GROUP BY r.queue
), done AS (
    -- (a failed or cancelled record of a job retried since is not counted:
    -- the job is counted where it is now)
    SELECT d.queue, count(*) FILTER (WHERE d.state = 'failed') AS failed,
           count(*) FILTER (WHERE d.state = 'cancelled') AS cancelled
      FROM awa.done_entries d WHERE (p_queue IS NULL OR d.queue = p_queue)
       AND NOT EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = d.job_id AND sup.run_lease = d.run_lease)
     GROUP BY d.queue
), deferred AS (
    SELECT d.queue, count(*) FILTER (WHERE d.state = 'scheduled') AS scheduled,
           count(*) FILTER (WHERE d.state = 'retryable') AS retryable,
           count(*) FILTER (WHERE d.state = 'available') AS parked
      FROM awa.deferred_jobs d WHERE p_queue IS NULL OR d.queue = p_queue GROUP BY d.queue
), dead AS (
    SELECT d.queue, count(*) AS n FROM awa.dlq_entries d WHERE p_queue IS NULL OR d.queue = p_queue GROUP BY d.queue
), history AS (
    SELECT h.queue, count(*) FILTER (WHERE h.state = 'completed') AS completed,
           count(*) FILTER (WHERE h.state = 'failed') AS failed,
           count(*) FILTER (WHERE h.state = 'cancelled') AS cancelled
      FROM awa.job_history h WHERE (p_queue IS NULL OR h.queue = p_queue)
       AND NOT EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = h.job_id AND sup.run_lease = h.run_lease)
     GROUP BY h.queue
)
SELECT q.queue,
       (coalesce(ready.n, 0) - coalesce(handed_out.n, 0) - coalesce(tombstoned.n, 0) + coalesce(deferred.parked, 0))::bigint,
       coalesce(deferred.scheduled, 0)::bigint,
       coalesce(deferred.retryable, 0)::bigint,
       (coalesce(claimed.n, 0) - coalesce(closed.n, 0))::bigint,
       (coalesce(completed.n, 0) + coalesce(history.completed, 0))::bigint,
       (coalesce(done.failed, 0) + coalesce(history.failed, 0))::bigint,
       (coalesce(done.cancelled, 0) + coalesce(history.cancelled, 0))::bigint,
       coalesce(dead.n, 0)::bigint
  FROM queues q
  LEFT JOIN ready USING (queue)
  LEFT JOIN handed_out USING (queue)
  LEFT JOIN tombstoned USING (queue)
  LEFT JOIN claimed USING (queue)
  LEFT JOIN closed USING (queue)
  LEFT JOIN completed USING (queue)
  LEFT JOIN done USING (queue)
  LEFT JOIN deferred USING (queue)
  LEFT JOIN dead USING (queue)
  LEFT JOIN history USING (queue)
 ORDER BY q.queue
$$;


-- The counters' name of a key of a queue (src/pg/key_limits.hpp: the one
-- definition, which the scan below and the claims share).
CREATE FUNCTION awa._key_counter_name(queue text, concurrency_key text)
RETURNS text
AS 'MODULE_PATHNAME', 'awa_internal_key_counter_name'
LANGUAGE C IMMUTABLE STRICT;

-- The running attempts of each key of the queues with limits per key
-- (p_queue, p_key NULL: all; p_unlimited: of the queues without them too),
-- counted from the claim ring as _queue_counts_scan counts a queue's:
-- claimed attempts - closed ones. The counter rebuild runs it under its
-- published snapshot (src/pg/counters.cpp); awa.key_metrics with p_unlimited.
CREATE FUNCTION awa._key_running_scan(p_queue text, p_key text, p_unlimited boolean DEFAULT false)
RETURNS TABLE (name text, running bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
WITH keyed AS (
    SELECT l.lane_id, awa._key_counter_name(l.queue, l.concurrency_key) AS name
      FROM awa.queue_lanes l
      LEFT JOIN awa.queue_meta m ON m.queue = l.queue
     WHERE l.concurrency_key IS NOT NULL
       AND (p_unlimited OR m.key_max_running IS NOT NULL OR m.key_rate_count IS NOT NULL)
       AND (p_queue IS NULL OR l.queue = p_queue)
       AND (p_key IS NULL OR l.concurrency_key = p_key)
), claimed AS (
    SELECT c.lane_id, sum(c.claimed_count) AS n FROM awa.lease_claim_batches c
     WHERE c.lane_id IN (SELECT lane_id FROM keyed) GROUP BY c.lane_id
), closed AS (
    SELECT c.lane_id, sum(x.closed_count) AS n
      FROM awa.lease_claim_closure_batches x
      JOIN awa.lease_claim_batches c ON c.batch_id = awa._claim_batch_of_closure(x.batch_id) AND c.claim_slot = x.claim_slot
     WHERE c.lane_id IN (SELECT lane_id FROM keyed) GROUP BY c.lane_id
)
SELECT k.name, sum(coalesce(claimed.n, 0) - coalesce(closed.n, 0))::bigint
  FROM keyed k
  LEFT JOIN claimed USING (lane_id)
  LEFT JOIN closed USING (lane_id)
 GROUP BY k.name
$$;

-- Checks a key's new weight (and its queue and key: src/core/validate.hpp),
-- and gives the key's lanes the weight in the claims' shared memory when this
-- transaction commits (src/pg/key_lanes.hpp).
CREATE FUNCTION awa._key_weight_changed(queue text, concurrency_key text, weight int)
RETURNS void
AS 'MODULE_PATHNAME', 'awa_internal_key_weight_changed'
LANGUAGE C VOLATILE;  -- raises: not STRICT, NULL raises
