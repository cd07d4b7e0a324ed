--
-- enqueue_at_commit: jobs held until commit (src/pg/pending_enqueues.cpp) meet
-- what else a transaction may do before or during its commit. Each case is
-- a transaction an application can write; the expected output is what the
-- change "lane positions are taken at commit" promised: everything commits
-- or rolls back with the transaction, as when enqueue wrote at once.
-- Queues used here: rv_audit, rv_fresh, rv_bulk, rv_ro, rv_rot, rv_kept, rv_kept2, rv_ghost.
--
\set VERBOSITY terse

-- ---------------------------------------------------------------------------
-- 1. An enqueue made while the commit writes the pending jobs. A new queue's
-- lane is created at commit (CREATE SEQUENCE, ALTER EXTENSION, GRANT); an
-- event trigger on ddl_command_end that enqueues (an audit queue, say) runs
-- inside the flush. Its jobs must be written too (they are counted).
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('audit', '{}', 'rv_audit') IS NOT NULL AS audit_lane_exists;
SELECT count(*) FROM awa.claim('rv_audit', 10);
CREATE FUNCTION rv_audit_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM awa.enqueue('audit', jsonb_build_object('tag', tg_tag), 'rv_audit');
END $$;
CREATE EVENT TRIGGER rv_audit_ddl ON ddl_command_end EXECUTE FUNCTION rv_audit_ddl();
BEGIN;
SELECT awa.enqueue('k', '{}', 'rv_fresh') IS NOT NULL AS enqueued;
COMMIT;
-- A new lane is a row, not DDL (its two sequences once fired the trigger 5
-- times, and the audit jobs' enqueue ran inside the lane's own flush): no audit job.
SELECT available FROM awa.queue_counts('rv_audit');
SELECT available FROM awa.queue_counts_exact('rv_audit');
SELECT args->>'tag' AS tag, count(*) FROM awa.claim('rv_audit', 100) GROUP BY 1 ORDER BY 1;
-- The same at the 10,000-job bound (a flush during the enqueue), on a new
-- queue: the trigger's enqueue must not start another flush of the lane whose
-- creation is under way.
BEGIN;
SELECT count(awa.enqueue('k', '{}', 'rv_bulk')) AS enqueued FROM generate_series(1, 10000);
COMMIT;
DROP EVENT TRIGGER rv_audit_ddl;
SELECT available FROM awa.queue_counts_exact('rv_bulk');
SELECT available FROM awa.queue_counts_exact('rv_audit');

-- ---------------------------------------------------------------------------
-- 2. SET TRANSACTION READ ONLY after an enqueue. PostgreSQL lets a
-- transaction that wrote become read-only; the enqueue was accepted while it
-- could write, and its job must commit (before the change it did).
-- ---------------------------------------------------------------------------
BEGIN;
SELECT awa.enqueue('k', '{"ro": 1}', 'rv_ro') IS NOT NULL AS enqueued;
SET TRANSACTION READ ONLY;
COMMIT;
SELECT args FROM awa.claim('rv_ro', 10);

-- ---------------------------------------------------------------------------
-- 3. A flush inside a savepoint that rotates a ring, then ROLLBACK TO: the
-- rotation is undone, the job enqueued before the savepoint must commit.
-- ---------------------------------------------------------------------------
BEGIN;
SELECT awa.enqueue('k', '{"rot": 1}', 'rv_rot') IS NOT NULL AS enqueued;
SAVEPOINT s;
SELECT count(*) > 0 AS ran FROM awa.run_maintenance('rotate');
ROLLBACK TO s;
COMMIT;
SELECT args FROM awa.claim('rv_rot', 10);

-- ---------------------------------------------------------------------------
-- 3b. A claim that knows a queue's lanes, then an enqueue into a new lane of
-- that queue in the same transaction (in a savepoint), then a claim: the
-- claim writes the job and must see its new lane, though no command boundary
-- came between (found by test/t/005_counts_match_exact.pl when lanes became
-- rows). The savepoint's rollback leaves the new lane (priority 3), whose row
-- was committed as it was inserted, with one spent position.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('k', '{"n": 1}', 'rv_newlane') IS NOT NULL AS enqueued;
BEGIN;
SELECT args FROM awa.claim('rv_newlane', 5);
SAVEPOINT s1;
SELECT awa.enqueue('k', '{"n": 2}', 'rv_newlane', 3) IS NOT NULL AS enqueued;
SELECT args FROM awa.claim('rv_newlane', 5);
ROLLBACK TO SAVEPOINT s1;
SELECT count(*) AS after_rollback FROM awa.claim('rv_newlane', 5);
COMMIT;
SELECT priority, enqueue_cursor FROM awa.lanes WHERE queue = 'rv_newlane' ORDER BY priority;

-- ---------------------------------------------------------------------------
-- 3c. A write of the pending jobs that fails inside a savepoint, then
-- ROLLBACK TO: a claim writes the transaction's earlier jobs first, and a
-- statement_timeout or a cancel can stop it there, under a driver that wraps
-- each statement in a savepoint. The job enqueued before the savepoint must
-- still be written at COMMIT (it was not: the failed write left the flag
-- "a write is in progress" set, and every later write, COMMIT's included,
-- returned at once; found in review). The error is made here by a trigger on
-- the lane table that raises while a setting of the savepoint is on.
-- ---------------------------------------------------------------------------
CREATE FUNCTION public.rv_fail_lane() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_catalog.current_setting('rv.fail_lane', true) = 'on' THEN
        RAISE EXCEPTION 'rv: lane insert cancelled' USING ERRCODE = '57014';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER rv_fail_lane BEFORE INSERT ON awa.queue_lanes
    FOR EACH ROW EXECUTE FUNCTION public.rv_fail_lane();
BEGIN;
SELECT awa.enqueue('k', '{"kept": 1}', 'rv_kept') IS NOT NULL AS enqueued;
SAVEPOINT s;
SET LOCAL rv.fail_lane = 'on';
SELECT count(*) FROM awa.claim('rv_kept', 1);
ROLLBACK TO s;
COMMIT;
SELECT args FROM awa.claim('rv_kept', 10);
-- The same inside a PL/pgSQL exception block (a subtransaction of its own).
BEGIN;
SELECT awa.enqueue('k', '{"kept": 2}', 'rv_kept2') IS NOT NULL AS enqueued;
DO $$
BEGIN
    PERFORM pg_catalog.set_config('rv.fail_lane', 'on', true);
    BEGIN
        PERFORM awa._flush_enqueues();
    EXCEPTION WHEN query_canceled THEN
        RAISE NOTICE 'flush failed: %', SQLERRM;
    END;
    PERFORM pg_catalog.set_config('rv.fail_lane', 'off', true);
END $$;
COMMIT;
SELECT args FROM awa.claim('rv_kept2', 10);
DROP TRIGGER rv_fail_lane ON awa.queue_lanes;
DROP FUNCTION public.rv_fail_lane();

-- ---------------------------------------------------------------------------
-- 4. DROP EXTENSION in the transaction that enqueued: the job goes with the
-- extension. The COMMIT must not fail, and a job of the dropped extension
-- must not be written into a new one (its job_id would be drawn again).
-- In a database of its own.
-- ---------------------------------------------------------------------------
SELECT current_database() AS regdb \gset
CREATE DATABASE rv_drop;
\c rv_drop
\set VERBOSITY terse
CREATE EXTENSION awa;
BEGIN;
SELECT awa.enqueue('k', '{"old": true}', 'rv_ghost') AS id;
DROP EXTENSION awa;
CREATE EXTENSION awa;
COMMIT;
-- Nothing from the dropped extension; job_ids are unique.
SELECT awa.enqueue('k', jsonb_build_object('new', g), 'rv_ghost') AS id FROM generate_series(1, 3) g;
SELECT args FROM awa.claim('rv_ghost', 10) ORDER BY job_id;
-- 4b (kept apart: this COMMIT failed before the change too, from another
-- PRE_COMMIT callback): DROP EXTENSION alone after an enqueue.
BEGIN;
SELECT awa.enqueue('k') AS id;
DROP EXTENSION awa;
COMMIT;
SELECT count(*) AS awa_installed FROM pg_extension WHERE extname = 'awa';
\c :regdb
DROP DATABASE rv_drop;
