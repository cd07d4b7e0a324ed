--
-- lane_reclaim: maintenance deletes the row of a lane that is drained (its
-- claim cursor at its enqueue cursor), has had no reservation for
-- awa.lane_reclaim_after and holds no row in any live slot of the queue ring
-- (awa._reclaim_idle_lanes, awa.run_maintenance('reclaim_lanes');
-- docs/architecture.md, "A drained, idle lane's row is reclaimed"). The next
-- enqueue makes the lane again, with a new lane_id.
-- Queues used here: lr_*.
--
\set VERBOSITY default
-- A database of its own: the outputs count this file's lanes only, and no
-- other file's backlog keeps a ring slot.
SET client_min_messages = warning;
CREATE DATABASE awa_lane_reclaim;
\c awa_lane_reclaim
SET client_min_messages = warning;
CREATE EXTENSION awa;
RESET client_min_messages;

\i test/sql/include/try.sql

-- Runs the queue ring round until every slot that held a row when it began
-- has been truncated.
CREATE FUNCTION pg_temp.age_out_queue_ring() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. 40 LOOP
        PERFORM awa.run_maintenance('rotate_queue');
        PERFORM awa.run_maintenance('prune_queue');
    END LOOP;
END $$;

CREATE FUNCTION pg_temp.lanes_of(prefix text) RETURNS TABLE (queue text, priority smallint, keyed boolean)
LANGUAGE sql AS $$
    SELECT l.queue, l.priority, l.concurrency_key IS NOT NULL FROM awa.queue_lanes l
     WHERE l.queue LIKE prefix || '%' ORDER BY 1, 2, 3
$$;

-- A lane whose only producer wrote its job early and rolled back: its row is
-- committed at insert and stays, empty (docs/architecture.md, "A lane's row
-- is committed when it is inserted").
CREATE FUNCTION pg_temp.orphan_lane(q text, key text DEFAULT NULL, priority int DEFAULT 2) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM awa.enqueue('orphan', queue => q, priority => priority,
                        opts => CASE WHEN key IS NULL THEN '{}' ELSE jsonb_build_object('concurrency_key', key) END);
    PERFORM awa._flush_enqueues();
    RAISE EXCEPTION 'undo';
EXCEPTION WHEN raise_exception THEN
END $$;

-- ---------------------------------------------------------------------------
-- Bad input: clear errors, nothing changed.
-- ---------------------------------------------------------------------------
SELECT pg_temp.try('SELECT awa._reclaim_idle_lanes(NULL)');
SELECT pg_temp.try('SELECT awa._reclaim_idle_lanes(0)');
SELECT pg_temp.try('SELECT awa._reclaim_idle_lanes(100001)');
SELECT pg_temp.try('SELECT awa._reclaim_idle_lanes(10, -2)');
SELECT pg_temp.try('SET awa.lane_reclaim_after = -2');
SELECT pg_temp.try('SELECT awa._ensure_lane(NULL, 2, NULL)', false);
SELECT pg_temp.try('SELECT awa._ensure_lane(''lr_x'', 5, NULL)', false);
SHOW awa.lane_reclaim_after;

-- ---------------------------------------------------------------------------
-- An orphan lane: reclaimed at once with no idle time, never with -1, and
-- only after awa.lane_reclaim_after of idleness otherwise.
-- ---------------------------------------------------------------------------
SELECT pg_temp.orphan_lane('lr_orphan');
SELECT * FROM pg_temp.lanes_of('lr_orphan');
SET awa.lane_reclaim_after = -1;
SELECT * FROM awa.run_maintenance('reclaim_lanes');
SELECT count(*) AS lanes FROM pg_temp.lanes_of('lr_orphan');
-- 1 s: the first pass starts the lane's clock, a pass a second later reclaims.
SET awa.lane_reclaim_after = 1;
SELECT outcome FROM awa.run_maintenance('reclaim_lanes');
SELECT count(*) AS lanes FROM pg_temp.lanes_of('lr_orphan');
SELECT pg_sleep(1.1);
SELECT outcome, detail FROM awa.run_maintenance('reclaim_lanes');
SELECT count(*) AS lanes FROM pg_temp.lanes_of('lr_orphan');
-- An enqueue into a cursor that moved restarts the clock.
SELECT pg_temp.orphan_lane('lr_clock');
SELECT outcome FROM awa.run_maintenance('reclaim_lanes');
SELECT pg_sleep(1.1);
SELECT pg_temp.orphan_lane('lr_clock');
SELECT outcome FROM awa.run_maintenance('reclaim_lanes');
SELECT count(*) AS lanes FROM pg_temp.lanes_of('lr_clock');
SELECT pg_sleep(1.1);
SELECT outcome FROM awa.run_maintenance('reclaim_lanes');
SELECT count(*) AS lanes FROM pg_temp.lanes_of('lr_clock');
SET awa.lane_reclaim_after = 0;

-- ---------------------------------------------------------------------------
-- A lane with work, or with rows still in the ring, stays.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('lr.a', queue => 'lr_work') > 0 AS enqueued;        -- available
SELECT awa.enqueue('lr.b', queue => 'lr_running') > 0 AS enqueued;     -- claimed, running
SELECT count(*) AS claimed FROM awa.claim('lr_running');
SELECT awa.enqueue('lr.c', queue => 'lr_done', priority => 1) > 0 AS enqueued;  -- completed
SELECT awa.complete(job_id, run_lease, receipt_id) AS completed FROM awa.claim('lr_done');
SELECT awa.enqueue('lr.d', queue => 'lr_keyed', opts => '{"concurrency_key": "k1"}') > 0 AS enqueued,
       awa.enqueue('lr.e', queue => 'lr_keyed', opts => '{"concurrency_key": "k2"}') > 0 AS enqueued2;
SELECT count(awa.complete(job_id, run_lease, receipt_id)) AS completed FROM awa.claim('lr_keyed', 10);
SELECT count(awa.complete(job_id, run_lease, receipt_id)) AS completed FROM awa.claim('lr_keyed', 10);
SELECT (awa._reclaim_idle_lanes(100000))[3] AS reclaimed;
SELECT * FROM pg_temp.lanes_of('lr_');
-- Once the ring has truncated the completed jobs' slots, their lanes go; the
-- available and the running job keep theirs (their rows are carried).
SELECT pg_temp.age_out_queue_ring();
SELECT count(*) AS relations_before FROM pg_class WHERE relnamespace = 'awa'::regnamespace \gset
SELECT (awa._reclaim_idle_lanes(100000))[3] AS reclaimed;
SELECT * FROM pg_temp.lanes_of('lr_');
SELECT count(*) = :relations_before AS relations_unchanged FROM pg_class WHERE relnamespace = 'awa'::regnamespace;
-- The jobs are still where they were.
SELECT kind, state FROM awa.list_jobs(queue => 'lr_work') ORDER BY kind;
SELECT kind, state FROM awa.list_jobs(queue => 'lr_running') ORDER BY kind;

-- ---------------------------------------------------------------------------
-- After a reclaim: the next enqueue makes the lane again (a new lane_id) and
-- its job is claimed once; this session had the old lane cached.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('lr.f', queue => 'lr_done', priority => 1) > 0 AS enqueued;
SELECT queue, priority, enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'lr_done';
SELECT kind FROM awa.claim('lr_done', 10);
SELECT count(*) AS claimed_again FROM awa.claim('lr_done', 10);
-- Keyed: each key's lane is made again by its key's next job.
SELECT awa.enqueue('lr.g', queue => 'lr_keyed', opts => '{"concurrency_key": "k2"}') > 0 AS enqueued;
SELECT * FROM pg_temp.lanes_of('lr_keyed');
SELECT kind FROM awa.claim('lr_keyed', 10);
SELECT count(*) AS claimed_again FROM awa.claim('lr_keyed', 10);

-- ---------------------------------------------------------------------------
-- A scheduled job's lane may be reclaimed while it waits (the job is not in
-- the lane until it falls due), but not the last lane of its queue: the
-- queues awa.queue_counts lists are those with a lane or settings. Its cancel
-- makes the lane again and keys its terminal row there; its promotion appends
-- it to a lane made again.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('lr.s1', queue => 'lr_sched', run_at => now() + interval '1 day') AS s1 \gset
SELECT awa.enqueue('lr.s2', queue => 'lr_sched', run_at => now() + interval '1 day') AS s2 \gset
SELECT * FROM pg_temp.lanes_of('lr_sched');
SELECT (awa._reclaim_idle_lanes(100000))[3] AS reclaimed;
SELECT * FROM pg_temp.lanes_of('lr_sched');
SELECT pg_temp.orphan_lane('lr_sched', priority => 1);
SELECT (awa._reclaim_idle_lanes(100000))[3] AS reclaimed;
SELECT * FROM pg_temp.lanes_of('lr_sched');
SELECT queue, scheduled FROM awa.queue_counts() WHERE queue = 'lr_sched';
SELECT awa.cancel(:s1);
SELECT * FROM pg_temp.lanes_of('lr_sched');
SELECT kind, state FROM awa.list_jobs(queue => 'lr_sched', state => 'cancelled');
UPDATE awa.deferred_jobs SET run_at = now() - interval '1 second' WHERE job_id = :s2;
SELECT outcome FROM awa.run_maintenance('promote');
SELECT kind FROM awa.claim('lr_sched', 10);
RESET awa.lane_reclaim_after;

-- ---------------------------------------------------------------------------
-- A transaction that reclaims a lane and then makes it again by an enqueue
-- that writes early inserts the new row in itself (not committed at insert):
-- rolled back, the old row is back and the new one gone; one row per lane.
-- ---------------------------------------------------------------------------
SELECT pg_temp.orphan_lane('lr_again');
SELECT lane_id AS lr_again_lane FROM awa.queue_lanes WHERE queue = 'lr_again' \gset
BEGIN;
SELECT (awa._reclaim_idle_lanes(100000, 0))[3] AS reclaimed;
SELECT awa.enqueue('lr.again', queue => 'lr_again') > 0 AS enqueued, awa._flush_enqueues() AS written;
SELECT count(*) AS lanes, bool_and(lane_id <> :lr_again_lane) AS made_again FROM awa.queue_lanes WHERE queue = 'lr_again';
ROLLBACK;
SELECT count(*) AS lanes, bool_and(lane_id = :lr_again_lane) AS the_old_one FROM awa.queue_lanes WHERE queue = 'lr_again';
-- Committed, the new row stays alone.
BEGIN;
SELECT (awa._reclaim_idle_lanes(100000, 0))[3] AS reclaimed;
SELECT awa.enqueue('lr.again', queue => 'lr_again') > 0 AS enqueued, awa._flush_enqueues() AS written;
COMMIT;
SELECT count(*) AS lanes, bool_and(lane_id <> :lr_again_lane) AS made_again FROM awa.queue_lanes WHERE queue = 'lr_again';
SELECT kind FROM awa.claim('lr_again', 10);

\c contrib_regression
DROP DATABASE awa_lane_reclaim;
