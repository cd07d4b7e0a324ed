--
-- move: awa.move_jobs(job_ids, queue) and awa.set_priority(job_ids,
-- priority) on waiting jobs (available, scheduled, retryable). A moved job
-- keeps its job_id; an available one is hidden in its old lane by a ready
-- tombstone and appended to its new lane with run_lease + 1, in one
-- transaction; a deferred one has its row updated. Counts stay equal to
-- queue_counts_exact, lane heads (queue_metrics) to the walk; running,
-- finished and unknown jobs are left alone; a rollback takes the move back;
-- bad input (22004, 22023) changes nothing. Queues used here: mv_*.
--
\set VERBOSITY default
SET client_min_messages = warning;

\i test/sql/include/try.sql

\i test/sql/include/footprint.sql

\i test/sql/include/counts.sql
-- Where a job is: queue, priority, state, run_lease, attempt.
CREATE FUNCTION pg_temp.job(id bigint) RETURNS text LANGUAGE sql AS $f$
SELECT format('%s p%s %s lease %s attempt %s', j ->> 'queue', j ->> 'priority', j ->> 'state', j ->> 'run_lease',
              j ->> 'attempt')
  FROM awa.get_job(id) j
$f$;
-- Whether queue_metrics' oldest available job equals the SQL walk.
CREATE FUNCTION pg_temp.oldest_exact(q text) RETURNS boolean LANGUAGE sql AS $f$
SELECT m.oldest_available_at IS NOT DISTINCT FROM awa._oldest_available_at(q)
  FROM awa.queue_metrics() m WHERE m.queue = q
$f$;

-- ---------------------------------------------------------------------------
-- Available: three jobs of mv_a, due 3, 2 and 1 hours ago. Move the head to
-- mv_b: a tombstone in mv_a, a ready row in mv_b through a
-- deferred row written and deleted in the same transaction; no done row.
-- ---------------------------------------------------------------------------
SELECT min(id) AS a0 FROM (
    SELECT awa.enqueue('mv.a' || i, '{}', 'mv_a', 2, now() - (4 - i) * interval '1 hour') AS id
      FROM generate_series(1, 3) i) x \gset
SELECT count(*) > 0 AS walked FROM awa.queue_metrics();  -- heads known from here on
SELECT pg_temp.footprint() AS before_move \gset
SELECT awa.move_jobs(ARRAY[:a0], 'mv_b') AS moved;
SELECT pg_temp.written(:'before_move') AS written;
SELECT pg_temp.job(:a0) AS moved_job;
SELECT (SELECT run_at FROM awa.ready_entries WHERE job_id = :a0 AND queue = 'mv_b')
     = (SELECT run_at FROM awa.ready_entries WHERE job_id = :a0 AND queue = 'mv_a') AS run_at_kept;
SELECT * FROM pg_temp.counts('mv_a');
SELECT * FROM pg_temp.counts('mv_b');
SELECT pg_temp.oldest_exact('mv_a') AS oldest_a, pg_temp.oldest_exact('mv_b') AS oldest_b;
-- Not an enqueue, nor an end: the event totals do not move.
SELECT queue, enqueued FROM awa.job_event_totals() WHERE queue IN ('mv_a', 'mv_b') ORDER BY queue;
-- Claimed exactly once, in its new queue; mv_a hands out the other two.
SELECT job_id - :a0 AS job, kind, run_lease FROM awa.claim('mv_a', 10) ORDER BY job_id;
SELECT job_id - :a0 AS job, kind, run_lease, attempt FROM awa.claim('mv_b', 10);
SELECT count(*) AS again FROM awa.claim('mv_b', 10);
SELECT * FROM pg_temp.counts('mv_a');
SELECT * FROM pg_temp.counts('mv_b');
-- Running now: left alone (0), as are unknown and NULL ids; so is a
-- finished job.
SELECT awa.move_jobs(ARRAY[:a0, :a0 + 1, -1, NULL], 'mv_c') AS running_not_moved;
SELECT pg_temp.job(:a0) AS still_running;

-- ---------------------------------------------------------------------------
-- set_priority on available jobs: the lane order follows the new priority.
-- A job already at the priority (or in the queue) is not counted.
-- ---------------------------------------------------------------------------
SELECT min(id) AS p0 FROM awa.enqueue_many(ARRAY['mv.p1', 'mv.p2', 'mv.p3'], NULL, 'mv_p') AS id \gset
SELECT awa.set_priority(ARRAY[:p0 + 2, :p0 + 2, :p0 + 1], 1) AS raised;
SELECT awa.set_priority(ARRAY[:p0 + 2], 1) AS already, awa.move_jobs(ARRAY[:p0], 'mv_p') AS already_there;
SELECT pg_temp.job(:p0 + 2) AS raised_job;
SELECT * FROM pg_temp.counts('mv_p');
SELECT pg_temp.oldest_exact('mv_p') AS oldest_p;
SELECT kind, priority, run_lease FROM awa.claim('mv_p', 1);
SELECT kind, priority, run_lease FROM awa.claim('mv_p', 1);
SELECT kind, priority, run_lease FROM awa.claim('mv_p', 1);

-- ---------------------------------------------------------------------------
-- A rolled-back move changes nothing: the job is available in its old lane,
-- claimable there once, and its new lane never hands it out.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('mv.rb', '{}', 'mv_rb') AS rb \gset
BEGIN;
SELECT awa.move_jobs(ARRAY[:rb], 'mv_rb2') AS moved_in_tx;
SELECT pg_temp.job(:rb) AS inside;
ROLLBACK;
SELECT pg_temp.job(:rb) AS after_rollback;
SELECT * FROM pg_temp.counts('mv_rb');
SELECT * FROM pg_temp.counts('mv_rb2');
SELECT count(*) AS from_new_lane FROM awa.claim('mv_rb2', 10);
SELECT kind, run_lease FROM awa.claim('mv_rb', 10);
-- A savepoint rolled back inside a committed transaction: the same.
SELECT awa.enqueue('mv.sp', '{}', 'mv_rb') AS sp \gset
BEGIN;
SAVEPOINT s;
SELECT awa.move_jobs(ARRAY[:sp], 'mv_rb2') AS moved_in_savepoint;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT pg_temp.job(:sp) AS after_savepoint;
SELECT * FROM pg_temp.counts('mv_rb');
SELECT * FROM pg_temp.counts('mv_rb2');

-- ---------------------------------------------------------------------------
-- Moved back and forth, then cancelled: each move is a new incarnation
-- (run_lease 1, 2); the cancel finds the latest and the job ends cancelled
-- in the queue it was in. A cancelled job is not moved.
-- ---------------------------------------------------------------------------
SELECT awa.move_jobs(ARRAY[:sp], 'mv_rb2') AS there, awa.move_jobs(ARRAY[:sp], 'mv_rb') AS back;
SELECT pg_temp.job(:sp) AS moved_twice;
SELECT awa.cancel(:sp) AS cancel;
SELECT pg_temp.job(:sp) AS cancelled;
SELECT awa.move_jobs(ARRAY[:sp], 'mv_rb2') AS cancelled_not_moved;
SELECT * FROM pg_temp.counts('mv_rb');
SELECT * FROM pg_temp.counts('mv_rb2');

-- ---------------------------------------------------------------------------
-- Scheduled and retryable: the deferred row is updated, and the new lane
-- made (promotion and cancel find a deferred job's lane); promotion then
-- makes the job available in its new queue and priority.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('mv.s', '{}', 'mv_s', run_at => now() + interval '1 day') AS s \gset
SELECT pg_temp.footprint() AS before_deferred \gset
SELECT awa.move_jobs(ARRAY[:s], 'mv_s2') AS moved, awa.set_priority(ARRAY[:s], 4) AS reprioritised;
SELECT pg_temp.written(:'before_deferred') AS written;
SELECT queue, priority FROM awa.queue_lanes WHERE queue LIKE 'mv\_s%' ORDER BY queue, priority;
SELECT pg_temp.job(:s) AS scheduled_job;
SELECT * FROM pg_temp.counts('mv_s');
SELECT * FROM pg_temp.counts('mv_s2');
SELECT awa.cancel(:s) AS cancel;
SELECT * FROM pg_temp.counts('mv_s2');

SELECT awa.enqueue('mv.r', '{}', 'mv_r') AS r \gset
SELECT awa.retry(c.job_id, c.run_lease, c.receipt_id, 'oops', 0) AS retried FROM awa.claim('mv_r', 1) c;
SELECT awa.move_jobs(ARRAY[:r], 'mv_r2') AS moved;
SELECT pg_temp.job(:r) AS retryable_job;
SELECT * FROM pg_temp.counts('mv_r');
SELECT * FROM pg_temp.counts('mv_r2');
SELECT awa.promote_due() > 0 AS promoted;  -- (with what earlier files left due)
SELECT kind, run_lease, attempt FROM awa.claim('mv_r', 10);
SELECT kind, run_lease, attempt FROM awa.claim('mv_r2', 10);
SELECT * FROM pg_temp.counts('mv_r2');

-- ---------------------------------------------------------------------------
-- A job with a concurrency key and a unique key: the key's lane in the new
-- queue; the unique key stays the job's (a duplicate is still refused).
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('mv.k', '{}', 'mv_k', opts => '{"concurrency_key": "t1", "unique_key": "mv-k-1"}') AS k \gset
SELECT awa.enqueue('mv.k', '{}', 'mv_k', run_at => now() + interval '1 day',
                   opts => '{"concurrency_key": "t2"}') AS k2 \gset
SELECT awa.move_jobs(ARRAY[:k, :k2], 'mv_k2') AS moved;
SELECT queue, priority, concurrency_key FROM awa.queue_lanes WHERE queue LIKE 'mv\_k%' ORDER BY 1, 3;
SELECT pg_temp.job(:k) AS keyed_job, awa.get_job(:k) ->> 'concurrency_key' AS key;
SELECT count(*) AS key_held_by_job FROM awa.job_unique_claims WHERE job_id = :k;
SELECT pg_temp.try($$SELECT awa.enqueue('mv.k', '{}', 'mv_k', opts => '{"unique_key": "mv-k-1"}')$$, false) AS duplicate;
SELECT count(*) AS from_old_queue FROM awa.claim('mv_k', 10);
SELECT kind, run_lease FROM awa.claim('mv_k2', 10);
SELECT * FROM pg_temp.counts('mv_k');
SELECT * FROM pg_temp.counts('mv_k2');

-- ---------------------------------------------------------------------------
-- Across the ring: moved jobs whose old rows' slot is pruned are carried
-- (their new rows) and claimed once; the old rows leave with their slot.
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE mv_ring AS SELECT id AS job_id FROM awa.enqueue_many(ARRAY['r1', 'r2', 'r3', 'r4'], NULL, 'mv_w') id;
SELECT awa.move_jobs((SELECT array_agg(job_id) FROM (SELECT job_id FROM mv_ring ORDER BY job_id LIMIT 2) x), 'mv_w2') AS moved;
SELECT awa.set_priority((SELECT array_agg(job_id) FROM (SELECT job_id FROM mv_ring ORDER BY job_id OFFSET 2) x), 3) AS reprioritised;
CREATE PROCEDURE pg_temp.rounds(n int) LANGUAGE plpgsql AS $$
BEGIN
    FOR round IN 1 .. n LOOP
        PERFORM awa.enqueue_many(ARRAY['mv.busy', 'mv.busy'], NULL, 'mv_busy');
        PERFORM awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('mv_busy', 3) c;
        COMMIT;
        PERFORM * FROM awa.run_maintenance('rotate');
        PERFORM * FROM awa.run_maintenance('prune');
        COMMIT;
    END LOOP;
END
$$;
CALL pg_temp.rounds(20);
SELECT count(*) AS old_rows_left FROM awa.ready_entries e JOIN mv_ring USING (job_id) WHERE e.run_lease = 0;
SELECT pg_temp.job(job_id) AS ring_job FROM mv_ring ORDER BY job_id;
SELECT * FROM pg_temp.counts('mv_w');
SELECT * FROM pg_temp.counts('mv_w2');
SELECT pg_temp.oldest_exact('mv_w') AS oldest_w, pg_temp.oldest_exact('mv_w2') AS oldest_w2;
SELECT kind, priority, run_lease FROM awa.claim('mv_w', 10) ORDER BY kind;
SELECT kind, priority, run_lease FROM awa.claim('mv_w2', 10) ORDER BY kind;

-- ---------------------------------------------------------------------------
-- Bad input: 22004 for NULL, 22023 out of range, each with a hint; nothing
-- changes.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('mv.bad', '{}', 'mv_bad') AS bad \gset
SELECT pg_temp.footprint() AS before_bad \gset
SELECT pg_temp.try($$SELECT awa.move_jobs(NULL, 'mv_x')$$);
SELECT pg_temp.try(format('SELECT awa.move_jobs(ARRAY[%s], NULL)', :bad));
SELECT pg_temp.try(format('SELECT awa.move_jobs(ARRAY[%s], %L)', :bad, ''));
SELECT pg_temp.try(format('SELECT awa.move_jobs(ARRAY[%s], %L)', :bad, repeat('q', 201)));
SELECT pg_temp.try($$SELECT awa.set_priority(NULL, 1)$$);
SELECT pg_temp.try(format('SELECT awa.set_priority(ARRAY[%s], NULL)', :bad));
SELECT pg_temp.try(format('SELECT awa.set_priority(ARRAY[%s], 0)', :bad));
SELECT pg_temp.try(format('SELECT awa.set_priority(ARRAY[%s], 5)', :bad));
SELECT pg_temp.written(:'before_bad') AS written;
SELECT awa.move_jobs('{}', 'mv_x') AS empty, awa.set_priority('{}', 1) AS empty;
SELECT pg_temp.job(:bad) AS untouched;

-- Only awa_admin may move.
CREATE ROLE mv_monitor IN ROLE awa_monitor;
SET ROLE mv_monitor;
SELECT pg_temp.try(format('SELECT awa.move_jobs(ARRAY[%s], %L)', :bad, 'mv_x'));
SELECT pg_temp.try(format('SELECT awa.set_priority(ARRAY[%s], 1)', :bad));
RESET ROLE;
DROP ROLE mv_monitor;
