--
-- carry: live work never stops reclamation (issue 9, finding 2).
-- Proves: with a paused queue (three priorities), an idle job, a long attempt
-- that keeps heartbeating, a cancelled job in front of an available one, a
-- unique job and a busy queue, forty rounds of rotate + prune of the queue and
-- claim rings all rotate and all prune (never skipped_active, never
-- skipped_busy): the live rows are carried forward into the newest generation
-- and every sealed slot is truncated, so the rings hold live rows plus a
-- bounded window. The live work is unchanged: the same get_job documents
-- (job_id, args, state, attempt, run_lease, errors, metadata), FIFO order
-- within each lane and priority order across lanes once the queue resumes, the
-- long attempt's heartbeats and completion accepted with its original receipt
-- (its stale duplicate refused), the cancelled job still hidden, the unique
-- key still held, queue_counts = queue_counts_exact throughout.
-- Runs in its own database (regress_awa_carry) so the rings start fresh.
--
\set VERBOSITY default
SELECT current_database() AS home_db \gset
SET client_min_messages = warning;
DROP DATABASE IF EXISTS regress_awa_carry;
RESET client_min_messages;
CREATE DATABASE regress_awa_carry;
\c regress_awa_carry
SET client_min_messages = warning;
CREATE EXTENSION awa;
RESET client_min_messages;

\i test/sql/include/try.sql

-- Every queue's counters equal the exact pass.
CREATE FUNCTION pg_temp.counts_exact() RETURNS boolean LANGUAGE sql AS $f$
    SELECT NOT EXISTS (SELECT * FROM awa.queue_counts() EXCEPT SELECT * FROM awa.queue_counts_exact())
       AND NOT EXISTS (SELECT * FROM awa.queue_counts_exact() EXCEPT SELECT * FROM awa.queue_counts())
$f$;
-- A job's document without the fields a heartbeat changes.
CREATE FUNCTION pg_temp.doc(id bigint) RETURNS jsonb LANGUAGE sql AS $f$
    SELECT awa.get_job(id) - 'heartbeat_at' - 'progress'
$f$;

-- ---------------------------------------------------------------------------
-- The live work, all in queue generation 0 / claim generation 0.
-- ---------------------------------------------------------------------------
-- (paused once its jobs are in their lanes: jobs enqueued into a paused
-- queue are parked outside the ring, test/sql/paused_parking.sql)
CREATE TEMP TABLE live (name text PRIMARY KEY, job_id bigint NOT NULL);
INSERT INTO live
SELECT 'p' || p || '_' || lpad(i::text, 2, '0'),
       awa.enqueue('c.paused', jsonb_build_object('p', p, 'i', i), 'c_paused', priority => p)
  FROM generate_series(1, 8) i, generate_series(1, 3) p
 ORDER BY i, p;
SELECT awa.pause_queue('c_paused');
INSERT INTO live VALUES ('idle', awa.enqueue('c.idle', '{"n": 1}', 'c_idle'));
INSERT INTO live VALUES ('unique', awa.enqueue('c.unique', '{"n": 1}', 'c_unique',
                                               opts => '{"unique": {}, "metadata": {"m": 1}}'));
INSERT INTO live VALUES ('cancelled', awa.enqueue('c.tomb', '{"n": 1}', 'c_tomb'));
INSERT INTO live VALUES ('after_cancelled', awa.enqueue('c.tomb', '{"n": 2}', 'c_tomb'));
SELECT awa.cancel((SELECT job_id FROM live WHERE name = 'cancelled')) AS cancelled;
INSERT INTO live VALUES ('long', awa.enqueue('c.long', '{"n": 1}', 'c_long'));
-- A retried job, so the carried row has an error history and attempt 1.
INSERT INTO live VALUES ('retried', awa.enqueue('c.retried', '{"n": 1}', 'c_retried'));
SELECT awa.retry(job_id, run_lease, receipt_id, 'first try failed', interval '0') FROM awa.claim('c_retried');
SELECT * FROM awa.run_maintenance('promote');
CREATE TEMP TABLE long_attempt AS SELECT job_id, run_lease, receipt_id FROM awa.claim('c_long', 1);
SELECT awa.heartbeat(job_id, run_lease, receipt_id, '{"step": 1}') AS heartbeat FROM long_attempt;
SELECT receipt_id & 15 AS claim_slot, (SELECT ready_slot FROM awa.ready_entries e WHERE e.job_id = l.job_id) AS ready_slot
  FROM long_attempt l;
CREATE TEMP TABLE docs_before AS SELECT name, job_id, pg_temp.doc(job_id) AS doc FROM live;
SELECT name, doc ->> 'state' AS state, doc ->> 'attempt' AS attempt, doc -> 'errors' -> 0 ->> 'error' AS error
  FROM docs_before WHERE name NOT LIKE 'p%' ORDER BY name;
SELECT pg_temp.counts_exact() AS counts_exact;

-- ---------------------------------------------------------------------------
-- Forty rounds: a little work on a busy queue, the long attempt heartbeats,
-- then every ring is rotated and pruned.
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE outcomes (round int, task text, outcome text, carried jsonb);
-- Each round commits: an enqueue may not follow a rotation in one transaction.
CREATE PROCEDURE pg_temp.rounds(n int, heartbeat boolean DEFAULT true) LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR round IN 1 .. n LOOP
        PERFORM awa.enqueue_many(ARRAY['c.busy', 'c.busy', 'c.busy'], NULL, 'c_busy');
        PERFORM awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('c_busy', 3) c;
        IF heartbeat AND (SELECT awa.heartbeat(job_id, run_lease, receipt_id) FROM long_attempt) <> 'alive' THEN
            RAISE EXCEPTION 'round %: the long attempt''s heartbeat was refused', round;
        END IF;
        COMMIT;
        FOR r IN SELECT * FROM awa.run_maintenance('rotate') UNION ALL SELECT * FROM awa.run_maintenance('prune') LOOP
            INSERT INTO outcomes VALUES (round, r.task, r.outcome, r.detail -> 'carried');
        END LOOP;
        COMMIT;
        IF NOT pg_temp.counts_exact() THEN
            RAISE EXCEPTION 'round %: queue_counts differs from queue_counts_exact', round;
        END IF;
    END LOOP;
END
$$;
CALL pg_temp.rounds(40);
-- The queue ring prunes once it has filled (from round 15), the claim ring
-- from round 7; every rotation rotates.
SELECT task, outcome, count(*) AS rounds, min(round) AS first, max(round) AS last
  FROM outcomes WHERE task IN ('rotate_queue', 'prune_queue', 'rotate_claim', 'prune_claim')
 GROUP BY task, outcome ORDER BY task, outcome;
-- What the prunes carried: the live rows (24 paused, idle, unique, the
-- available c_tomb job, the retried job, and the long attempt's row with its
-- claim), every time their slot came up.
SELECT task, carried FROM outcomes
 WHERE task = 'prune_queue' AND outcome = 'pruned' AND (carried ->> 'rows')::int > 0
 ORDER BY round LIMIT 3;
SELECT task, carried FROM outcomes
 WHERE task = 'prune_claim' AND outcome = 'pruned' AND (carried ->> 'claims')::int > 0
 ORDER BY round LIMIT 2;
SELECT ring, generation FROM awa.storage_status() WHERE ring IN ('queue', 'claim') ORDER BY ring;
-- Bounded storage: the queue ring holds the live rows plus the busy queue's
-- last 15 generations (3 jobs each), no more.
SELECT (SELECT count(*) FROM awa.ready_entries WHERE queue <> 'c_busy') AS live_rows,
       (SELECT count(*) FROM awa.ready_entries WHERE queue = 'c_busy') <= 15 * 3 AS busy_rows_bounded,
       (SELECT count(*) FROM awa.lease_claim_batches WHERE queue <> 'c_busy') AS live_claims;

-- ---------------------------------------------------------------------------
-- The live work, unchanged.
-- ---------------------------------------------------------------------------
SELECT count(*) AS jobs, count(*) FILTER (WHERE b.doc = pg_temp.doc(b.job_id)) AS same_document
  FROM docs_before b;
SELECT name, b.doc AS before, pg_temp.doc(b.job_id) AS after
  FROM docs_before b WHERE b.doc IS DISTINCT FROM pg_temp.doc(b.job_id);
SELECT pg_temp.counts_exact() AS counts_exact;

-- The long attempt: heartbeats and completion accepted with the receipt it was
-- given forty claim rotations ago; the same receipt is refused afterwards.
SELECT awa.heartbeat(job_id, run_lease, receipt_id, '{"step": 2}') AS heartbeat FROM long_attempt;
SELECT awa.get_job(job_id) -> 'progress' AS progress FROM long_attempt;
SELECT awa.complete(job_id, run_lease, receipt_id) AS completed FROM long_attempt;
SELECT awa.complete(job_id, run_lease, receipt_id) AS completed_again,
       awa.heartbeat(job_id, run_lease, receipt_id) AS heartbeat_after FROM long_attempt;
SELECT awa.get_job(job_id) ->> 'state' AS long_state FROM long_attempt;

-- The unique key is still held.
SELECT * FROM pg_temp.try($$SELECT awa.enqueue('c.unique', '{"n": 1}', 'c_unique', opts => '{"unique": {}}')$$);

-- The cancelled job stays hidden; the job after it is claimed, and the lane's
-- cursor passes the hole the cancelled lane left.
SELECT string_agg(kind || ':' || (args ->> 'n'), ' ') AS c_tomb_claimed FROM awa.claim('c_tomb', 10);
SELECT awa.get_job((SELECT job_id FROM live WHERE name = 'cancelled')) ->> 'state' AS cancelled_state;
SELECT count(*) AS c_tomb_more FROM awa.claim('c_tomb', 10);
SELECT enqueue_cursor = claim_cursor AS c_tomb_cursor_caught_up FROM awa.lanes WHERE queue = 'c_tomb';

-- The idle job and the retried job: claimed with their attempt counts.
SELECT kind, attempt, run_lease FROM awa.claim('c_idle', 10);
SELECT kind, attempt, run_lease FROM awa.claim('c_retried', 10);

-- The paused queue resumes: priority 1 first, each lane in FIFO order.
SELECT awa.resume_queue('c_paused');
SELECT priority, string_agg((args ->> 'i'), ',' ORDER BY ord) AS order_in_lane
  FROM (SELECT c.*, row_number() OVER () AS ord FROM awa.claim('c_paused', 100) c) x GROUP BY priority;
SELECT priority, string_agg((args ->> 'i'), ',' ORDER BY ord) AS order_in_lane
  FROM (SELECT c.*, row_number() OVER () AS ord FROM awa.claim('c_paused', 100) c) x GROUP BY priority;
SELECT priority, string_agg((args ->> 'i'), ',' ORDER BY ord) AS order_in_lane
  FROM (SELECT c.*, row_number() OVER () AS ord FROM awa.claim('c_paused', 100) c) x GROUP BY priority;
SELECT count(*) AS nothing_left FROM awa.claim('c_paused', 100);
SELECT pg_temp.counts_exact() AS counts_exact;

-- ---------------------------------------------------------------------------
-- A big backlog stays where it is (docs/maintenance.md §3.6): a slot whose
-- available rows exceed awa.carry_max_rows (set to 20 here) stays out of the
-- rotation, the ring rotates past it (skipping its generation numbers) and
-- keeps pruning the other slots; at most half the slots stay out. Once the
-- backlog is claimed the slot is pruned at its turn and rotates again.
-- ---------------------------------------------------------------------------
SET awa.carry_max_rows = 20;
SELECT count(*) AS big_backlog FROM awa.enqueue_many(ARRAY(SELECT 'k.big' FROM generate_series(1, 50)),
       ARRAY(SELECT jsonb_build_object('i', i) FROM generate_series(1, 50) i), 'k_big');
SELECT awa.pause_queue('k_big');
SELECT ready_generation AS big_generation, ready_slot AS big_slot FROM awa.ready_entries WHERE queue = 'k_big' LIMIT 1 \gset
TRUNCATE outcomes;
CALL pg_temp.rounds(20, false);
SELECT task, outcome, count(*) AS rounds FROM outcomes
 WHERE task IN ('rotate_queue', 'prune_queue') GROUP BY task, outcome ORDER BY task, outcome;
-- The big slot was kept each time its turn came, never carried.
SELECT count(*) AS big_rows, count(*) FILTER (WHERE e.ready_generation = :big_generation) AS in_place
  FROM awa.ready_entries e WHERE e.queue = 'k_big';
SELECT (SELECT max(generation) FROM awa.queue_ring_rotations WHERE slot = :big_slot) = :big_generation AS big_slot_still_owned,
       (SELECT count(*) FROM awa.queue_ring_rotations WHERE generation > :big_generation AND slot = :big_slot) AS big_slot_reused;
-- Generation numbers of the big slot were skipped; the live generations are
-- the kept one plus the rotating ones.
SELECT (awa._queue_live_generations())[1] = :big_generation AS oldest_live_is_big,
       cardinality(awa._queue_live_generations()) AS live_generations;
SELECT oldest_live_generation = :big_generation AS status_oldest_live FROM awa.storage_status() WHERE ring = 'queue';
SELECT pg_temp.counts_exact() AS counts_exact;
-- The backlog comes out whole, in order, from the kept generation.
SELECT awa.resume_queue('k_big');
SELECT string_agg(args ->> 'i', ',' ORDER BY ord) = (SELECT string_agg(i::text, ',') FROM generate_series(1, 50) i)
       AS fifo
  FROM (SELECT c.*, row_number() OVER () AS ord FROM awa.claim('k_big', 100) c) x;
SELECT count(*) AS nothing_left FROM awa.claim('k_big', 100);
-- Its rows claimed, the kept slot is pruned at its turn and reused.
CALL pg_temp.rounds(20, false);
SELECT (SELECT count(*) FROM awa.queue_ring_rotations WHERE generation > :big_generation AND slot = :big_slot) > 0
       AS big_slot_reused,
       (awa._queue_live_generations())[1] > :big_generation AS kept_generation_gone;
SELECT pg_temp.counts_exact() AS counts_exact;

-- At most half the slots stay out: with every sealed slot over the limit
-- (awa.carry_max_rows = 0), 7 of 16 are kept and the rest are carried. (A
-- queue that nobody claims: a paused one would park the jobs outside the
-- ring.)
SET awa.carry_max_rows = 0;
CREATE PROCEDURE pg_temp.fill(n int) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. n LOOP
        PERFORM awa.enqueue('k.all', jsonb_build_object('i', i), 'k_all');
        COMMIT;
        PERFORM * FROM awa.run_maintenance('rotate_queue');
        PERFORM * FROM awa.run_maintenance('prune_queue');
        COMMIT;
    END LOOP;
END
$$;
CALL pg_temp.fill(40);
SELECT cardinality(t.kept) AS kept_slots FROM awa._queue_prune_target() t;
SELECT count(*) AS k_all_rows, count(DISTINCT job_id) AS distinct_jobs FROM awa.ready_entries WHERE queue = 'k_all';
-- A claim takes jobs from one generation: claim until nothing comes back.
CREATE FUNCTION pg_temp.drain(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[] := '{}';
    got bigint[];
BEGIN
    FOR i IN 1 .. 100 LOOP
        SELECT coalesce(array_agg(c.job_id), '{}') INTO got FROM awa.claim(q, 100) c;
        EXIT WHEN cardinality(got) = 0;
        ids := ids || got;
    END LOOP;
    RETURN format('claimed=%s distinct=%s in_order=%s', cardinality(ids),
                  (SELECT count(DISTINCT x) FROM unnest(ids) x),
                  ids = (SELECT array_agg(x ORDER BY x) FROM unnest(ids) x));
END
$$;
SELECT pg_temp.drain('k_all') AS k_all;
SELECT pg_temp.counts_exact() AS counts_exact;
RESET awa.carry_max_rows;

\c :home_db
SET client_min_messages = warning;
DROP DATABASE regress_awa_carry;
RESET client_min_messages;
