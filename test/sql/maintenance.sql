--
-- maintenance: awa.run_maintenance(task), awa.storage_status() and
-- awa.maintenance_status(), each step run by hand (test/regress.conf turns the
-- background worker off, so every outcome below is deterministic).
-- Proves: input errors (22004, 22023) change nothing; a fresh database's
-- outcomes; rotation appends one ledger row and nothing else, enqueues follow
-- it, a rolled-back rotation leaves the ledger as it was, a full ring does not rotate
-- (skipped_busy); prune advances idle lanes' cursors (never past a claim of
-- its own uncommitted transaction), carries the slot's available rows forward
-- into the newest generation instead of waiting for them (test/sql/carry.sql tests
-- the carry in depth), truncates with exact terminal counts (queue_counts
-- moves with it and equals queue_counts_exact), releases unique keys, and
-- reports already_pruned; the claim ring's prune carries its open claim
-- forward, and a late completion of a pruned claim is refused;
-- promotion; DLQ retention; rescue of expired deadlines and stale heartbeats
-- (retryable, failed, dlq; old worker refused; a fresh heartbeat is spared);
-- the status functions; who may call them.
-- Runs in its own database (regress_awa_maintenance), so the rings start
-- fresh whatever the earlier files did; it is dropped at the end. Roles
-- (cluster-wide) are named regress_awa_mt_*. Queues used here: m_prune,
-- m_unique, m_keep, m_late, m_claim, m_promote, m_dlq, m_rescue,
-- m_rescue_fail, m_rescue_dlq, m_stale.
-- Not covered here (they need a second session: isolation specs): blocked, a busy
-- ring lock, proof (d), rescue's busy.
--
\set VERBOSITY default
SELECT current_database() AS home_db \gset
SET client_min_messages = warning;
DROP DATABASE IF EXISTS regress_awa_maintenance;
DROP ROLE IF EXISTS regress_awa_mt_producer, regress_awa_mt_worker, regress_awa_mt_admin;
RESET client_min_messages;
CREATE DATABASE regress_awa_maintenance;
\c regress_awa_maintenance
SET client_min_messages = warning;
CREATE EXTENSION awa;
RESET client_min_messages;
-- This file tests the queue ring on its own: with no history kept, a prune
-- takes finished jobs out of the counts and releases their unique keys
-- (test/sql/history.sql tests the history ring that keeps them by default).
SET awa.history_retention = 0;

\i test/sql/include/try.sql

-- A ring's ledger: its newest entry and how many entries it has.
CREATE FUNCTION pg_temp.ring(r text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    result text;
BEGIN
    EXECUTE format('SELECT format(''generation=%%s slot=%%s ledger_rows=%%s'', max(generation),
                           (SELECT slot FROM awa.%1$I ORDER BY generation DESC LIMIT 1), count(*))
                      FROM awa.%1$I', r || '_ring_rotations') INTO result;
    RETURN result;
END
$f$;

-- Rows per family in one queue-ring slot (families without rows left out).
CREATE FUNCTION pg_temp.queue_slot(s int) RETURNS jsonb LANGUAGE plpgsql AS $f$
DECLARE
    f text;
    n bigint;
    result jsonb := '{}';
BEGIN
    FOREACH f IN ARRAY ARRAY['ready_entries', 'ready_tombstones', 'ready_claim_attempt_batches',
                             'done_entries', 'receipt_completion_batches'] LOOP
        EXECUTE format('SELECT count(*) FROM awa.%I', f || '_' || s) INTO n;
        IF n > 0 THEN
            result := result || jsonb_build_object(f, n);
        END IF;
    END LOOP;
    RETURN result;
END
$f$;

-- The counters of one queue, and whether the exact pass agrees.
CREATE FUNCTION pg_temp.counts(q text) RETURNS text LANGUAGE sql AS $f$
SELECT format('avail=%s sched=%s retry=%s run=%s done=%s failed=%s cancelled=%s dlq=%s | exact=%s',
              c.available, c.scheduled, c.retryable, c.running, c.completed, c.failed, c.cancelled, c.dlq,
              coalesce((SELECT row(e.*)::text = row(c.*)::text FROM awa.queue_counts_exact(q) e), false))
  FROM awa.queue_counts(q) c
$f$;

-- A job as get_job shows it: state, attempt and last error (or NULL).
CREATE FUNCTION pg_temp.job(id bigint) RETURNS text LANGUAGE sql AS $f$
SELECT coalesce((SELECT format('state=%s attempt=%s last_error=%s', j ->> 'state', j ->> 'attempt',
                               coalesce(j -> 'errors' -> -1 ->> 'error', '-'))
                   FROM awa.get_job(id) j WHERE j IS NOT NULL), 'NULL')
$f$;

-- Every maintenance status row that changes when a step runs.
CREATE FUNCTION pg_temp.status() RETURNS jsonb LANGUAGE sql AS $f$
SELECT jsonb_agg(jsonb_build_array(task, last_outcome, runs, errors, last_run_at) ORDER BY task)
  FROM awa.maintenance_status()
$f$;

-- Open attempts of the whole database (rescue with a 1 s staleness would take
-- every one of them: there must be none but the test's own).
CREATE FUNCTION pg_temp.open_attempts() RETURNS bigint LANGUAGE sql AS $f$
SELECT (SELECT coalesce(sum(claimed_count), 0) FROM awa.lease_claim_batches)
     - (SELECT coalesce(sum(closed_count), 0) FROM awa.lease_claim_closure_batches)
$f$;

-- Runs rotate_queue n times (one call each); outcome:generation/slot of each.
CREATE FUNCTION pg_temp.rotate_queue(n int) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    r record;
    result text[] := '{}';
BEGIN
    FOR i IN 1 .. n LOOP
        SELECT * INTO r FROM awa.run_maintenance('rotate_queue');
        result := result || (r.outcome || ':' || (r.detail ->> 'generation') || '/' || (r.detail ->> 'slot'));
    END LOOP;
    RETURN array_to_string(result, ' ');
END
$f$;

-- Runs rotate_claim n times; outcome:generation of each.
CREATE FUNCTION pg_temp.rotate_claim(n int) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    result text[] := '{}';
BEGIN
    FOR i IN 1 .. n LOOP
        result := result || (SELECT r.outcome || ':' || (r.detail ->> 'generation')
                               FROM awa.run_maintenance('rotate_claim') r);
    END LOOP;
    RETURN array_to_string(result, ' ');
END
$f$;

-- Attempts held by this file's "workers": name -> (job_id, run_lease, receipt_id).
CREATE TEMP TABLE held (name text PRIMARY KEY, job_id bigint, run_lease bigint, receipt_id bigint);

-- ---------------------------------------------------------------------------
-- A fresh extension: every ring at generation 0 in slot 0, no step ever run,
-- no worker (it is off).
-- ---------------------------------------------------------------------------
SELECT ring, slot_count, current_slot, generation, oldest_live_slot, oldest_live_generation,
       last_rotated_at IS NOT NULL AS has_rotated_at, last_rotate, last_rotate_at, last_prune, last_prune_at,
       prune_backoff_level
  FROM awa.storage_status();
SELECT task, last_outcome, last_run_at, runs, errors, prune_backoff_level, prune_ticks_skipped, worker_pid
  FROM awa.maintenance_status();

-- ---------------------------------------------------------------------------
-- Invalid input: SQLSTATE, message and hint; no step runs, nothing is written.
-- ---------------------------------------------------------------------------
SELECT pg_temp.status() AS status_before \gset
SELECT pg_temp.ring('queue') || ' / ' || pg_temp.ring('claim') || ' / ' || pg_temp.ring('lease') AS rings_before \gset
SELECT call, pg_temp.try(call) AS outcome FROM (VALUES
    ($$SELECT * FROM awa.run_maintenance(NULL)$$),
    ($$SELECT * FROM awa.run_maintenance('bogus')$$),
    ($$SELECT * FROM awa.run_maintenance('')$$),
    ($$SELECT * FROM awa.run_maintenance('ALL')$$),
    ($$SELECT * FROM awa.run_maintenance('rotate_queue ')$$),
    ($$SELECT * FROM awa.run_maintenance('rotate_all')$$),
    -- an outcome outside the one vocabulary is refused, not recorded
    ($$SELECT awa._note_outcome('prune_queue', 'skiped_active')$$),
    ($$SELECT awa._note_outcome('prune_queue', '')$$),
    ($$SELECT awa._note_outcome('prune_queue', NULL)$$)
) AS t(call);
-- The slots' partitions, as the steps read them (C: src/pg/fn_slot_children.cpp,
-- the families from src/core/ring.hpp); a fresh ring's slots have no block.
SELECT awa._slot_children('queue', 3) AS queue_3, awa._slot_children('claim', 15) AS claim_15,
       awa._slot_children('lease', 0) AS lease_0, awa._slot_children('history', 7) AS history_7;
SELECT awa._slot_children(NULL, 1) IS NULL AS children_null, awa._slot_has_no_blocks('queue', NULL) IS NULL AS blocks_null,
       awa._slot_has_no_blocks('queue', 5) AS queue_5_empty, awa._slot_has_no_blocks('history', 0) AS history_0_empty;
SELECT call, pg_temp.try(call) AS outcome FROM (VALUES
    ($$SELECT awa._slot_children('queues', 0)$$),
    ($$SELECT awa._slot_children('queue', -1)$$),
    ($$SELECT awa._slot_children('queue', 64)$$),
    ($$SELECT awa._slot_has_no_blocks('Queue', 0)$$),
    ($$SELECT awa._slot_has_no_blocks('claim', 64)$$),
    -- a slot number within 0..63 past the ring's partitions (8 + 8 spare for
    -- the claim ring): its partitions do not exist
    ($$SELECT awa._slot_has_no_blocks('claim', 40)$$)
) AS t(call);
-- Under a transaction snapshot (REPEATABLE READ, SERIALIZABLE) no step runs:
-- a prune would truncate what committed after the snapshot
-- (test/specs/maintenance_isolation.spec has the race).
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM awa.run_maintenance('rotate_queue');
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT * FROM awa.run_maintenance('all');
ROLLBACK;
SELECT pg_temp.status() = :'status_before'::jsonb AS status_unchanged,
       pg_temp.ring('queue') || ' / ' || pg_temp.ring('claim') || ' / ' || pg_temp.ring('lease')
           = :'rings_before' AS rings_unchanged;

-- ---------------------------------------------------------------------------
-- One vocabulary of outcomes (src/core/maintenance_outcome.cpp): every word a
-- step's source assigns to its outcome is one awa._outcome_names() lists.
-- ---------------------------------------------------------------------------
SELECT awa._outcome_names();
SELECT w.word, w.word = ANY (awa._outcome_names()) AS known, string_agg(DISTINCT w.proname, ', ') AS steps
  FROM (SELECT p.proname::text, m[1] AS word
          FROM pg_proc p
         CROSS JOIN LATERAL regexp_split_to_table(p.prosrc, E'\n') AS line
         CROSS JOIN LATERAL regexp_matches(line, $$'([a-z_]+)'$$, 'g') AS m
         WHERE p.pronamespace = 'awa'::regnamespace
           AND p.proname IN ('_rotate', '_prune', '_prune_slot', '_history', '_rescue', '_promote', '_dlq_retention', '_periodic')
           AND line ~ 'outcome\s*:=') w
 GROUP BY w.word ORDER BY w.word;

-- ---------------------------------------------------------------------------
-- Every step on the fresh database (the default task is 'all'): nothing to
-- do; idle rings neither rotate nor prune.
-- ---------------------------------------------------------------------------
SELECT * FROM awa.run_maintenance();
SELECT * FROM awa.run_maintenance('rotate');
SELECT * FROM awa.run_maintenance('prune');
SELECT pg_temp.ring('queue') AS queue, pg_temp.ring('claim') AS claim, pg_temp.ring('lease') AS lease;
-- A ring whose partitions have blocks but only rolled-back rows is idle too:
-- the rotation's gate asks the partitions' sizes first and, finding a block,
-- looks for a visible row (none here).
BEGIN;
SELECT awa.enqueue('mt.rolled_back', '{}', 'm_rolled_back') IS NOT NULL AS enqueued, awa._flush_enqueues() AS written;
ROLLBACK;
SELECT NOT awa._slot_has_no_blocks('queue', 0) AS slot_0_has_blocks;
SELECT outcome, detail FROM awa.run_maintenance('rotate_queue');
-- Each run is recorded per task (rotate_* and prune_* ran twice).
SELECT task, last_outcome, last_run_at IS NOT NULL AS has_run_at, runs, errors, worker_pid
  FROM awa.maintenance_status();

-- ---------------------------------------------------------------------------
-- Jobs in queue slot 0 (generation 0), kept for the prune below:
--   m_prune:  a, b, c (to complete), d (to fail), e (cancelled while available)
--   m_unique: u, unique with "completed" in its states (the key outlives it)
--   m_keep:   k, left available (it keeps slot 0 live)
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('mt.a', '{}', 'm_prune') AS a \gset
SELECT awa.enqueue('mt.b', '{}', 'm_prune') AS b \gset
SELECT awa.enqueue('mt.c', '{}', 'm_prune') AS c \gset
SELECT awa.enqueue('mt.d', '{}', 'm_prune') AS d \gset
SELECT awa.enqueue('mt.e', '{}', 'm_prune') AS e \gset
SELECT awa.enqueue('mt.u', '{"n": 1}', 'm_unique',
                   opts => '{"unique": {"states": ["available", "scheduled", "retryable", "running", "completed"]}}') AS u \gset
SELECT awa.enqueue('mt.k', '{}', 'm_keep') AS k \gset
SELECT awa.cancel(:e) AS cancel_e;
SELECT ready_slot, ready_generation, count(*) AS jobs FROM awa.ready_entries GROUP BY 1, 2 ORDER BY 1, 2;
SELECT pg_temp.queue_slot(0) AS slot_0;

-- ---------------------------------------------------------------------------
-- Rotation: one ledger INSERT, no UPDATE or DELETE of any ring control table
-- (statistics flushed first), and new enqueues land in the new slot.
-- ---------------------------------------------------------------------------
SELECT pg_stat_force_next_flush();
SELECT n_tup_ins AS queue_ledger_ins FROM pg_stat_all_tables WHERE relid = 'awa.queue_ring_rotations'::regclass \gset
SELECT * FROM awa.run_maintenance('rotate_queue');
SELECT pg_stat_force_next_flush();
SELECT n_tup_ins - :queue_ledger_ins AS queue_ledger_inserts
  FROM pg_stat_all_tables WHERE relid = 'awa.queue_ring_rotations'::regclass;
SELECT relname, n_tup_upd, n_tup_hot_upd, n_tup_del
  FROM pg_stat_all_tables
 WHERE schemaname = 'awa' AND relname ~ '^(queue|claim|lease)_ring_(rotations|slots|state)$'
 ORDER BY relname;
SELECT generation, slot, rotated_at > (SELECT rotated_at FROM awa.queue_ring_rotations WHERE generation = 0) AS later
  FROM awa.queue_ring_rotations ORDER BY generation;
SELECT pg_temp.ring('claim') AS claim, pg_temp.ring('lease') AS lease;
SELECT awa.enqueue('mt.late', '{}', 'm_late') AS late \gset
SELECT ready_slot, ready_generation FROM awa.ready_entries WHERE job_id = :late;

-- It runs in the caller's transaction: a rolled-back rotation leaves the
-- ledger as it was, and enqueues keep using slot 1. That transaction may not
-- enqueue (its new generation is not visible to other sessions yet).
BEGIN;
SELECT * FROM awa.run_maintenance('rotate_queue');
SELECT pg_temp.ring('queue') AS inside;
SELECT pg_temp.try($$SELECT awa.enqueue('mt.inside', '{}', 'm_late')$$) AS enqueue_inside;
ROLLBACK;
SELECT pg_temp.ring('queue') AS after_rollback;
SELECT awa.enqueue('mt.late2', '{}', 'm_late') AS late2 \gset
SELECT ready_slot, ready_generation FROM awa.ready_entries WHERE job_id = :late2;

-- ---------------------------------------------------------------------------
-- No prune before the ring has filled: the target is the generation whose
-- slot the next rotation enters (generation 0 once the ring is at 15).
-- ---------------------------------------------------------------------------
SELECT queue, priority, enqueue_cursor, claim_cursor FROM awa.lanes ORDER BY queue, priority;
SELECT * FROM awa.run_maintenance('prune_queue');
SELECT pg_temp.queue_slot(0) AS slot_0_untouched;

-- ---------------------------------------------------------------------------
-- A full ring: 14 more rotations reach generation 15 (slot 15); the next one
-- would enter slot 0, which still holds rows: skipped_busy, nothing appended.
-- Then the prune of generation 0 carries its available rows (3 lanes) into
-- generation 15 and truncates slot 0; the cancelled job's lane is not carried
-- (its job left the counts: no history is kept in this file).
-- ---------------------------------------------------------------------------
SELECT pg_temp.rotate_queue(14) AS rotations;
SELECT * FROM awa.run_maintenance('rotate_queue');
SELECT pg_temp.ring('queue') AS queue;
-- The prune target is still generation 0 (15 - 15).
SELECT * FROM awa.run_maintenance('prune_queue');

-- A prune in the transaction of an uncommitted claim does not move the
-- lane's cursor past that claim (it could still roll back): after the
-- rollback k is available again.
BEGIN;
SELECT kind FROM awa.claim('m_keep');
SELECT * FROM awa.run_maintenance('prune_queue');
SELECT claim_cursor FROM awa.lanes WHERE queue = 'm_keep';
ROLLBACK;
SELECT claim_cursor FROM awa.lanes WHERE queue = 'm_keep';
SELECT pg_temp.job(:k) AS k, pg_temp.counts('m_keep') AS m_keep;

-- ---------------------------------------------------------------------------
-- Every carried job claimed, none closed. The prune first moves the idle
-- lanes' cursors over the claimed rows (a claim never moves its own lane's
-- cursor past what it took); slot 0 is already pruned.
-- ---------------------------------------------------------------------------
INSERT INTO held SELECT kind, job_id, run_lease, receipt_id FROM awa.claim('m_prune', 10);
INSERT INTO held SELECT kind, job_id, run_lease, receipt_id FROM awa.claim('m_unique');
INSERT INTO held SELECT kind, job_id, run_lease, receipt_id FROM awa.claim('m_keep');
SELECT string_agg(name, ',' ORDER BY name) AS claimed FROM held;
SELECT queue, enqueue_cursor, claim_cursor FROM awa.lanes ORDER BY queue;
SELECT * FROM awa.run_maintenance('prune_queue');
SELECT queue, enqueue_cursor, claim_cursor FROM awa.lanes ORDER BY queue;

-- Complete a, b (one call), c and u; fail d. k stays open: one claim left.
SELECT job_id = :a AS is_a, accepted
  FROM awa.complete_many(ARRAY(SELECT job_id FROM held WHERE name IN ('mt.a', 'mt.b') ORDER BY name),
                         ARRAY(SELECT run_lease FROM held WHERE name IN ('mt.a', 'mt.b') ORDER BY name),
                         ARRAY(SELECT receipt_id FROM held WHERE name IN ('mt.a', 'mt.b') ORDER BY name));
SELECT name, awa.complete(job_id, run_lease, receipt_id) AS completed FROM held WHERE name IN ('mt.c', 'mt.u')
 ORDER BY name;
SELECT awa.fail(job_id, run_lease, receipt_id, 'broken') AS fail_d FROM held WHERE name = 'mt.d';
SELECT * FROM awa.run_maintenance('prune_queue');
SELECT pg_temp.queue_slot(0) AS slot_0_untouched;

-- The completed unique job still holds its key.
SELECT pg_temp.try($$SELECT awa.enqueue('mt.u', '{"n": 1}', 'm_unique',
                   opts => '{"unique": {"states": ["available", "scheduled", "retryable", "running", "completed"]}}')$$,
                   false) AS duplicate_before_prune;

-- Close k. The jobs now live in generation 15 (slot 15): their terminal
-- history stays until that slot is pruned.
SELECT awa.complete(job_id, run_lease, receipt_id) AS complete_k FROM held WHERE name = 'mt.k';
SELECT q, pg_temp.counts(q) AS before_prune FROM unnest(ARRAY['m_keep', 'm_late', 'm_prune', 'm_unique']) q;
SELECT * FROM awa.run_maintenance('prune_queue');
SELECT q, pg_temp.counts(q) AS after_prune FROM unnest(ARRAY['m_keep', 'm_late', 'm_prune', 'm_unique']) q;
SELECT pg_temp.queue_slot(0) AS slot_0, pg_temp.queue_slot(1) AS slot_1_untouched;
-- Every child of slot 0 with a block was truncated: no block left.
SELECT count(*) FILTER (WHERE pg_relation_size(c.oid) > 0) AS children_with_blocks, count(*) AS children
  FROM pg_class c
 WHERE c.relnamespace = 'awa'::regnamespace
   AND c.relname ~ '^(ready_entries|ready_tombstones|ready_claim_attempt_batches|done_entries|receipt_completion_batches)_0$';
-- The carried jobs keep their final states; the cancelled one, not carried,
-- is gone with slot 0; the jobs of slot 1 are untouched.
SELECT n, pg_temp.job(id) FROM (VALUES ('a', :a), ('d', :d), ('e', :e), ('u', :u), ('k', :k), ('late', :late)) AS t(n, id);
-- The completed unique job (carried, in slot 15) still holds its key.
SELECT count(*) AS unique_claims FROM awa.job_unique_claims;
SELECT awa.enqueue('mt.u', '{"n": 1}', 'm_unique',
                   opts => '{"unique": {"states": ["available", "scheduled", "retryable", "running", "completed"]}}')
           IS NOT NULL AS duplicate_after_prune;

-- Nothing left to prune in slot 0.
SELECT * FROM awa.run_maintenance('prune_queue');
-- The full ring rotates again, into the pruned slot; the oldest sealed slot is
-- now slot 1, whose available rows (late, late2) are carried forward.
SELECT * FROM awa.run_maintenance('rotate_queue');
SELECT * FROM awa.run_maintenance('prune_queue');

-- ---------------------------------------------------------------------------
-- The claim ring: every claim so far is in claim slot 0. An open claim there
-- (l) is carried forward when the slot is pruned (its receipt still works);
-- once it is closed and its new slot pruned, a late completion with its
-- receipt is refused.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('mt.l', '{}', 'm_claim') AS l \gset
INSERT INTO held SELECT kind, job_id, run_lease, receipt_id FROM awa.claim('m_claim');
SELECT receipt_id & 15 AS claim_slot_of_l FROM held WHERE name = 'mt.l';
SELECT * FROM awa.run_maintenance('prune_claim');
-- Seven rotations fill the claim ring (8 slots): generation 0 is the target.
SELECT pg_temp.rotate_claim(7) AS rotations;
SELECT * FROM awa.run_maintenance('prune_claim');
SELECT awa.fail(job_id, run_lease, receipt_id, 'gave up') AS fail_l FROM held WHERE name = 'mt.l';
SELECT * FROM awa.run_maintenance('prune_claim');
SELECT (SELECT count(*) FROM awa.lease_claim_batches_0) AS claim_batches_0,
       (SELECT count(*) FROM awa.lease_claim_closure_batches_0) AS closure_batches_0;
SELECT pg_temp.job(:l) AS l;
SELECT awa.complete(job_id, run_lease, receipt_id) AS late_complete, awa.heartbeat(job_id, run_lease, receipt_id) AS late_heartbeat
  FROM held WHERE name = 'mt.l';
SELECT pg_temp.job(:l) AS l_unchanged, pg_temp.counts('m_claim') AS m_claim;
SELECT * FROM awa.run_maintenance('prune_claim');
-- New claims go to claim slot 7.
INSERT INTO held SELECT 'late', job_id, run_lease, receipt_id FROM awa.claim('m_late');
SELECT job_id = :late AS is_late, receipt_id & 15 AS claim_slot FROM held WHERE name = 'late';
SELECT awa.complete(job_id, run_lease, receipt_id) AS complete_late FROM held WHERE name = 'late';

-- ---------------------------------------------------------------------------
-- Promotion: a job due 50 ms after its enqueue is promoted once due.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('mt.p', '{}', 'm_promote', run_at => now() + interval '50 milliseconds') AS p \gset
SELECT pg_temp.job(:p) AS p_enqueued;
SELECT pg_sleep(0.1);
SELECT * FROM awa.run_maintenance('promote');
SELECT pg_temp.job(:p) AS p_promoted, pg_temp.counts('m_promote') AS m_promote;
SELECT * FROM awa.run_maintenance('promote');

-- ---------------------------------------------------------------------------
-- DLQ retention: a dead letter older than awa.dlq_retention is purged.
-- ---------------------------------------------------------------------------
SELECT awa.configure_queue('m_dlq', dlq_enabled => true);
SELECT awa.enqueue('mt.x', '{}', 'm_dlq') AS x \gset
INSERT INTO held SELECT kind, job_id, run_lease, receipt_id FROM awa.claim('m_dlq');
SELECT awa.fail(job_id, run_lease, receipt_id, 'poison') AS fail_x FROM held WHERE name = 'mt.x';
SELECT job_id = :x AS is_x, dlq_reason FROM awa.dlq;
SET awa.dlq_retention = '1h';
SELECT * FROM awa.run_maintenance('dlq_retention');
SET awa.dlq_retention = '1s';
SELECT pg_sleep(1.1);
SELECT * FROM awa.run_maintenance('dlq_retention');
RESET awa.dlq_retention;
SELECT count(*) AS dlq_rows FROM awa.dlq;
SELECT pg_temp.job(:x) AS x, pg_temp.counts('m_dlq') AS m_dlq;
SELECT * FROM awa.run_maintenance('dlq_retention');

-- ---------------------------------------------------------------------------
-- Rescue of expired deadlines (claims with a 1 ms deadline): r1 has attempts
-- left (retryable), r2 had one attempt (failed), r3 too on a DLQ queue (dlq).
-- The old worker's calls are refused afterwards.
-- ---------------------------------------------------------------------------
SELECT pg_temp.open_attempts() AS open_attempts;
SELECT * FROM awa.run_maintenance('rescue');
SELECT awa.configure_queue('m_rescue_dlq', dlq_enabled => true);
SELECT awa.enqueue('mt.r1', '{}', 'm_rescue') AS r1 \gset
SELECT awa.enqueue('mt.r2', '{}', 'm_rescue_fail', max_attempts => 1) AS r2 \gset
SELECT awa.enqueue('mt.r3', '{}', 'm_rescue_dlq', max_attempts => 1) AS r3 \gset
INSERT INTO held SELECT kind, job_id, run_lease, receipt_id FROM awa.claim('m_rescue', 1, '1 millisecond');
INSERT INTO held SELECT kind, job_id, run_lease, receipt_id FROM awa.claim('m_rescue_fail', 1, '1 millisecond');
INSERT INTO held SELECT kind, job_id, run_lease, receipt_id FROM awa.claim('m_rescue_dlq', 1, '1 millisecond');
SELECT pg_sleep(0.05);
SELECT * FROM awa.run_maintenance('rescue');
SELECT n, pg_temp.job(id) FROM (VALUES ('r1', :r1), ('r2', :r2), ('r3', :r3)) AS t(n, id);
-- The attempts were closed first, each with its outcome; r1 waits out its
-- backoff.
SELECT h.name, x.outcome, x.closed_count FROM held h
  JOIN awa.lease_claim_closure_batches x ON awa._claim_batch_of_closure(x.batch_id) = h.receipt_id >> 18 AND x.claim_slot = h.receipt_id & 15
                                        AND ((h.receipt_id >> 4) & 16383)::int = ANY (x.claim_indexes)
 WHERE h.name IN ('mt.r1', 'mt.r2', 'mt.r3') ORDER BY h.name;
SELECT (awa.get_job(:r1) ->> 'run_at')::timestamptz > now() AS r1_backoff_pending;
SELECT job_id = :r3 AS is_r3, dlq_reason FROM awa.dlq;
SELECT q, pg_temp.counts(q) FROM unnest(ARRAY['m_rescue', 'm_rescue_fail', 'm_rescue_dlq']) q;
SELECT name, awa.complete(job_id, run_lease, receipt_id) AS late_complete,
       awa.heartbeat(job_id, run_lease, receipt_id) AS late_heartbeat,
       awa.retry(job_id, run_lease, receipt_id, 'late') AS late_retry
  FROM held WHERE name IN ('mt.r1', 'mt.r2', 'mt.r3') ORDER BY name;
SELECT pg_temp.job(:r1) AS r1_unchanged;
SELECT * FROM awa.run_maintenance('rescue');
-- r1 would become due after its backoff; cancel it so later steps stay exact.
SELECT awa.cancel(:r1) AS cancel_r1;

-- ---------------------------------------------------------------------------
-- Rescue of stale heartbeats (awa.heartbeat_staleness = 1 s): s1 and s2 are
-- claimed with a 1-hour deadline; after 1.2 s only s2 heartbeats, so only s1
-- is rescued.
-- ---------------------------------------------------------------------------
SELECT pg_temp.open_attempts() AS open_attempts;
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['mt.s1', 'mt.s2'], NULL, 'm_stale');
INSERT INTO held SELECT kind, job_id, run_lease, receipt_id FROM awa.claim('m_stale', 2, '1 hour');
SELECT job_id AS s1 FROM held WHERE name = 'mt.s1' \gset
SELECT job_id AS s2 FROM held WHERE name = 'mt.s2' \gset
-- With the default staleness (90 s) both are alive.
SELECT * FROM awa.run_maintenance('rescue');
SET awa.heartbeat_staleness = '1s';
SELECT pg_sleep(1.2);
SELECT awa.heartbeat(job_id, run_lease, receipt_id) AS s2_heartbeat FROM held WHERE name = 'mt.s2';
SELECT * FROM awa.run_maintenance('rescue');
RESET awa.heartbeat_staleness;
SELECT n, pg_temp.job(id) FROM (VALUES ('s1', :s1), ('s2', :s2)) AS t(n, id);
SELECT h.name, x.outcome FROM held h
  JOIN awa.lease_claim_closure_batches x ON awa._claim_batch_of_closure(x.batch_id) = h.receipt_id >> 18 AND x.claim_slot = h.receipt_id & 15
                                        AND ((h.receipt_id >> 4) & 16383)::int = ANY (x.claim_indexes)
 WHERE h.name IN ('mt.s1', 'mt.s2') ORDER BY h.name;
SELECT name, awa.complete(job_id, run_lease, receipt_id) AS completed FROM held
 WHERE name IN ('mt.s1', 'mt.s2') ORDER BY name;
SELECT pg_temp.job(:s2) AS s2, pg_temp.counts('m_stale') AS m_stale;
SELECT awa.cancel(:s1) AS cancel_s1;

-- ---------------------------------------------------------------------------
-- Rescue takes the queues in turn: with a budget of 2 attempts per pass, a
-- queue with 6 expired attempts (one claim batch, the older) and a queue with
-- 1 get one each in the first pass; the rest follow in later passes. (Oldest
-- first across the database, the small queue's attempt waited 3 passes; with
-- the default budget of 500, one dead worker's 5,000-job claim held up every
-- other queue's rescue for 10 ticks.)
-- ---------------------------------------------------------------------------
SELECT pg_temp.open_attempts() AS open_attempts;
SELECT count(*) AS jobs FROM awa.enqueue_many(array_fill('mt.big'::text, ARRAY[6]), NULL, 'm_turn_big');
SELECT awa.enqueue('mt.small', '{}', 'm_turn_small') AS small \gset
CREATE TEMP TABLE turn_claims AS SELECT job_id FROM awa.claim('m_turn_big', 6, '1 millisecond');
INSERT INTO turn_claims SELECT job_id FROM awa.claim('m_turn_small', 1, '1 millisecond');
SELECT count(*) AS claimed FROM turn_claims;
SELECT pg_sleep(0.05);
SET awa.rescue_batch_size = 2;
SELECT * FROM awa.run_maintenance('rescue');
SELECT pg_temp.job(:small) AS small_after_first_pass;
SELECT pg_temp.counts('m_turn_big') AS big_after_first_pass;
SELECT * FROM awa.run_maintenance('rescue');
SELECT * FROM awa.run_maintenance('rescue');
SELECT * FROM awa.run_maintenance('rescue');
RESET awa.rescue_batch_size;
SELECT pg_temp.counts('m_turn_big') AS big_after_four_passes, pg_temp.open_attempts() AS open_attempts;
-- Out of the way of the steps below (their backoff would make them due).
SELECT count(*) FILTER (WHERE awa.cancel(job_id) = 'cancelled') AS cancelled FROM turn_claims;
SELECT pg_temp.open_attempts() AS open_attempts;

-- ---------------------------------------------------------------------------
-- Status after one more 'all': each step's outcome, and per ring where it is.
-- ---------------------------------------------------------------------------
SELECT * FROM awa.run_maintenance('all');
SELECT task, last_outcome, runs, errors, worker_pid IS NULL AS no_worker FROM awa.maintenance_status();
SELECT pg_stat_force_next_flush();
SELECT ring, slot_count, current_slot, generation, oldest_live_slot, oldest_live_generation,
       last_rotated_at = CASE ring WHEN 'queue' THEN (SELECT max(rotated_at) FROM awa.queue_ring_rotations)
                                   WHEN 'claim' THEN (SELECT max(rotated_at) FROM awa.claim_ring_rotations)
                                   WHEN 'lease' THEN (SELECT max(rotated_at) FROM awa.lease_ring_rotations)
                         END AS rotated_at_is_ledgers,
       last_rotate, last_rotate_at IS NOT NULL AS has_rotate_at, last_prune, last_prune_at IS NOT NULL AS has_prune_at,
       prune_backoff_level
  FROM awa.storage_status();
-- dead_tuples: one key per family and control table; the control tables have
-- none, except the one rolled-back rotation above left in the queue ledger.
SELECT ring, array(SELECT jsonb_object_keys(dead_tuples) ORDER BY 1) AS families
  FROM awa.storage_status();
SELECT ring, key, value FROM awa.storage_status(), jsonb_each(dead_tuples)
 WHERE key ~ '_ring_(rotations|slots|state)$' ORDER BY ring, key;

-- ---------------------------------------------------------------------------
-- Who may call them: awa_admin only (42501 for producers and workers).
-- ---------------------------------------------------------------------------
CREATE ROLE regress_awa_mt_producer IN ROLE awa_producer;
CREATE ROLE regress_awa_mt_worker IN ROLE awa_worker;
CREATE ROLE regress_awa_mt_admin IN ROLE awa_admin;
CREATE TEMP TABLE mt_calls (ord int, call text);
INSERT INTO mt_calls VALUES
    (1, $$SELECT * FROM awa.run_maintenance('promote')$$),
    (2, $$SELECT * FROM awa.storage_status()$$),
    (3, $$SELECT * FROM awa.maintenance_status()$$),
    (4, $$SELECT * FROM awa._run_maintenance('promote')$$),
    (5, $$SELECT * FROM awa._prune('queue')$$),
    (6, $$SELECT * FROM awa._rescue()$$);
GRANT SELECT ON mt_calls TO PUBLIC;
SET ROLE regress_awa_mt_producer;
SELECT call, pg_temp.try(call, false) AS producer FROM mt_calls ORDER BY ord;
RESET ROLE;
SET ROLE regress_awa_mt_worker;
SELECT call, pg_temp.try(call, false) AS worker FROM mt_calls ORDER BY ord;
RESET ROLE;
SET ROLE regress_awa_mt_admin;
SELECT call, pg_temp.try(call, false) AS admin FROM mt_calls ORDER BY ord;
SELECT * FROM awa.run_maintenance('rotate');
SELECT ring, generation FROM awa.storage_status();
SELECT task, last_outcome FROM awa.maintenance_status() WHERE task LIKE 'rotate%';
RESET ROLE;

-- ---------------------------------------------------------------------------
-- A completed job outlives its claim-ring slot: the claim ring prunes after
-- about 8 rotations, the queue ring (which keeps the completion) after 16.
-- get_job then reads the completion from the queue ring.
-- ---------------------------------------------------------------------------
SELECT pg_temp.job(:late) AS late_before;
-- Generation 9 -> 14: the target of the claim ring's prune is generation 7
-- (slot 7), where the claim of 'late' is.
SELECT pg_temp.rotate_claim(5) AS rotations;
SELECT ring, generation, oldest_live_generation FROM awa.storage_status() WHERE ring = 'claim';
-- The prune truncates only the slot's tables that have a block: each of
-- those gets a new file, the empty ones keep theirs (no new pg_class row
-- version, no catalog WAL; 47_prune.sql).
CREATE TEMP TABLE slot7_before AS
SELECT c AS child, pg_relation_filenode(c::regclass) AS filenode, pg_relation_size(c::regclass) > 0 AS had_blocks
  FROM unnest(awa._slot_children('claim', 7)) c;
SELECT task, outcome, detail FROM awa.run_maintenance('prune_claim');
SELECT b.child, b.had_blocks, pg_relation_filenode(b.child::regclass) <> b.filenode AS new_file,
       pg_relation_size(b.child::regclass) AS bytes_after
  FROM slot7_before b ORDER BY b.child;
SELECT count(*) AS late_claim_rows FROM awa.lease_claim_batches b WHERE :late = ANY (awa._claim_job_ids(b.first_job_id, b.claimed_count, b.job_ids));
SELECT pg_temp.job(:late) AS late_after, awa.get_job(:late) ->> 'run_lease' AS run_lease;

-- ---------------------------------------------------------------------------
-- Clean up: the database and the cluster-wide roles.
-- ---------------------------------------------------------------------------
\c :home_db
DROP DATABASE regress_awa_maintenance WITH (FORCE);
DROP ROLE regress_awa_mt_producer, regress_awa_mt_worker, regress_awa_mt_admin;
SELECT count(*) AS leftover_roles FROM pg_roles WHERE rolname LIKE 'regress\_awa\_mt\_%';
SELECT count(*) AS leftover_databases FROM pg_database WHERE datname = 'regress_awa_maintenance';
