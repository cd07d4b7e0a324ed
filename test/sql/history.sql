--
-- history: finished jobs outlive their queue-ring slot (issue 9, finding 3).
-- Proves: awa.history_retention (default 1 h, 0 .. 30 days, bad values refused
-- with 22023); a queue prune moves every finished job of its slot (completed,
-- failed with its errors, cancelled while available, cancelled while
-- scheduled) into the history ring in the same transaction as its TRUNCATE,
-- so awa.get_job returns the same document before and after it; the jobs stay
-- counted (queue_counts = queue_counts_exact), keep their unique keys and
-- answer already_finished to cancel; the history step rotates the history
-- ring once its slot has been open retention / (slots - 2) and reclaims a
-- sealed slot by TRUNCATE only once the retention has passed since it was
-- sealed, taking its jobs out of the counts and releasing their keys. Waits
-- are lower bounds only (pg_sleep), so a slow machine cannot fail it.
-- Runs in its own database (regress_awa_history) so the rings start fresh.
--
\set VERBOSITY default
SELECT current_database() AS home_db \gset
SET client_min_messages = warning;
DROP DATABASE IF EXISTS regress_awa_history;
RESET client_min_messages;
CREATE DATABASE regress_awa_history;
\c regress_awa_history
SET client_min_messages = warning;
CREATE EXTENSION awa;
RESET client_min_messages;

\i test/sql/include/try.sql

CREATE FUNCTION pg_temp.counts(q text) RETURNS text LANGUAGE sql AS $f$
    SELECT format('avail=%s sched=%s run=%s done=%s failed=%s cancelled=%s | exact=%s',
                  c.available, c.scheduled, c.running, c.completed, c.failed, c.cancelled,
                  (SELECT row(c.*) = row(e.*) FROM awa.queue_counts_exact(q) e))
      FROM awa.queue_counts(q) c
$f$;
CREATE FUNCTION pg_temp.job(id bigint) RETURNS text LANGUAGE sql AS $f$
    SELECT (format('state=%s attempt=%s run_lease=%s errors=%s attempted=%s finalized=%s',
                           j ->> 'state', j ->> 'attempt', j ->> 'run_lease',
                           jsonb_path_query_array(j -> 'errors', '$[*].error'),
                           j ? 'attempted_at' AND j ->> 'attempted_at' IS NOT NULL,
                           j ->> 'finalized_at' IS NOT NULL))
      FROM awa.get_job(id) j WHERE j IS NOT NULL
    UNION ALL
    SELECT 'NULL' WHERE awa.get_job(id) IS NULL
$f$;
-- Rotates the queue ring n times (the prune target is then generation 0).
CREATE FUNCTION pg_temp.rotate_queue(n int) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    r record;
    outcomes text[] := '{}';
BEGIN
    FOR i IN 1 .. n LOOP
        SELECT * INTO r FROM awa.run_maintenance('rotate_queue');
        outcomes := outcomes || r.outcome;
    END LOOP;
    RETURN array_to_string(ARRAY(SELECT DISTINCT unnest(outcomes)), ',');
END
$f$;

-- ---------------------------------------------------------------------------
-- The setting.
-- ---------------------------------------------------------------------------
SHOW awa.history_retention;
SELECT * FROM pg_temp.try($$SET awa.history_retention = -1$$);
SELECT * FROM pg_temp.try($$SET awa.history_retention = '31d'$$);
SHOW awa.history_retention;

-- ---------------------------------------------------------------------------
-- Finished jobs in queue slot 0 (generation 0).
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('h.done', '{"n": 1}', 'h_q') AS done1 \gset
SELECT awa.enqueue('h.done', '{"n": 2}', 'h_q') AS done2 \gset
SELECT awa.enqueue('h.fail', '{"n": 3}', 'h_q', max_attempts => 1) AS failed \gset
SELECT awa.enqueue('h.cancel', '{"n": 4}', 'h_q') AS cancelled \gset
SELECT awa.enqueue('h.later', '{"n": 5}', 'h_q', run_at => now() + interval '1 day') AS scheduled \gset
SELECT awa.enqueue('h.unique', '{"n": 6}', 'h_u',
                   opts => '{"unique": {"states": ["available", "scheduled", "retryable", "running", "completed"]}}')
       AS uniq \gset
SELECT awa.cancel(:cancelled) AS cancel_available, awa.cancel(:scheduled) AS cancel_scheduled;
SELECT string_agg(c.kind || ':' || awa.complete(c.job_id, c.run_lease, c.receipt_id), ' ' ORDER BY c.job_id) AS completed
  FROM awa.claim('h_q', 2) c;
SELECT awa.fail(c.job_id, c.run_lease, c.receipt_id, 'no such user') AS failed FROM awa.claim('h_q', 1) c;
SELECT awa.complete(c.job_id, c.run_lease, c.receipt_id) AS unique_completed FROM awa.claim('h_u', 1) c;

SELECT n, pg_temp.job(id) AS before_prune
  FROM (VALUES ('done1', :done1), ('done2', :done2), ('failed', :failed), ('cancelled', :cancelled),
               ('scheduled', :scheduled), ('uniq', :uniq)) AS t(n, id);
CREATE TEMP TABLE docs_before AS
    SELECT id, awa.get_job(id) AS doc FROM unnest(ARRAY[:done1, :done2, :failed, :cancelled, :scheduled, :uniq]::bigint[]) id;
SELECT q, pg_temp.counts(q) AS before_prune FROM unnest(ARRAY['h_q', 'h_u']) q;

-- The prune of slot 0 moves them into the current history slot (0).
SELECT pg_temp.rotate_queue(15) AS rotations;
SELECT task, outcome, detail FROM awa.run_maintenance('prune_queue');
SELECT history_slot, state, count(*) FROM awa.job_history GROUP BY 1, 2 ORDER BY 1, 2;
SELECT (SELECT count(*) FROM awa.ready_entries_0) + (SELECT count(*) FROM awa.done_entries_0)
     + (SELECT count(*) FROM awa.receipt_completion_batches_0) AS rows_left_in_queue_slot_0;

-- Same documents, same counts, keys still held, cancel says already_finished.
SELECT count(*) AS documents, count(*) FILTER (WHERE b.doc = awa.get_job(b.id)) AS unchanged FROM docs_before b;
SELECT q, pg_temp.counts(q) AS after_prune FROM unnest(ARRAY['h_q', 'h_u']) q;
SELECT awa.cancel(:done1) AS cancel_completed, awa.cancel(:failed) AS cancel_failed;
SELECT * FROM pg_temp.try($$SELECT awa.enqueue('h.unique', '{"n": 6}', 'h_u',
    opts => '{"unique": {"states": ["available", "scheduled", "retryable", "running", "completed"]}}')$$);

-- ---------------------------------------------------------------------------
-- The history step.
-- ---------------------------------------------------------------------------
-- Within the retention: nothing to do (the slot is young, nothing is sealed).
SELECT task, outcome, detail FROM awa.run_maintenance('history');

-- A short retention: the slot's width is 1 s / 6, so after a wait the ring
-- rotates (slot 0 is sealed, its rows are not yet 1 s past their sealing).
SET awa.history_retention = '1s';
SELECT pg_sleep(0.3);
SELECT task, outcome, detail FROM awa.run_maintenance('history');
SELECT generation, slot FROM awa.history_ring_rotations ORDER BY generation;
SELECT count(*) AS still_kept FROM awa.job_history;
SELECT pg_temp.job(:done1) AS still_visible;

-- Once the retention has passed since slot 0 was sealed: TRUNCATE, counts
-- and keys follow.
SELECT pg_sleep(1.1);
SELECT task, outcome, detail FROM awa.run_maintenance('history');
SELECT count(*) AS kept FROM awa.job_history;
SELECT n, pg_temp.job(id) AS after_retention
  FROM (VALUES ('done1', :done1), ('failed', :failed), ('cancelled', :cancelled), ('uniq', :uniq)) AS t(n, id);
SELECT q, pg_temp.counts(q) AS after_retention FROM unnest(ARRAY['h_q', 'h_u']) q;
SELECT awa.enqueue('h.unique', '{"n": 6}', 'h_u',
                   opts => '{"unique": {"states": ["available", "scheduled", "retryable", "running", "completed"]}}')
       IS NOT NULL AS key_released;
-- An empty current slot does not rotate.
SELECT pg_sleep(0.3);
SELECT task, outcome FROM awa.run_maintenance('history');

-- ---------------------------------------------------------------------------
-- Retention 0 and a claim batch still open when its slot is pruned. The prune
-- carries the batch with every ready row it covers, its closed ones too
-- (maintenance.md 3.5), but what the closed attempts' endings wrote into the
-- slot (a completion batch, done rows, the ready row of a job snoozed and
-- promoted there, and that row's own completion) stays in the pruned slot, and
-- retention 0 drops it: those jobs leave the counts, and get_job returns NULL
-- for them, as for every finished job of the slot. Before, get_job still
-- answered completed, failed, cancelled and scheduled from the carried ready
-- rows and the claim ring's closures (found by test/t/012_model_stress.pl with
-- STRESS_HISTORY_RETENTION=0: "job 98 is completed; the model says gone", then
-- "job 103 is scheduled; the model says gone"; with another seed, cancel of
-- such a job failed with 55P03). A job retried for later keeps its deferred
-- row; the attempt still open completes after the carry, and shows completed.
-- ---------------------------------------------------------------------------
SET awa.history_retention = 0;
CREATE TEMP TABLE b_jobs AS
    SELECT i, awa.enqueue('h.batch', jsonb_build_object('i', i), 'h_b') AS job_id FROM generate_series(1, 6) i;
CREATE TEMP TABLE b_claim AS SELECT j.i, c.* FROM awa.claim('h_b', 6) c JOIN b_jobs j USING (job_id);
SELECT count(*) AS claimed, count(DISTINCT receipt_id >> 18) AS claim_batches FROM b_claim;
SELECT awa.complete(job_id, run_lease, receipt_id) AS complete_1 FROM b_claim WHERE i = 1;
SELECT awa.fail(job_id, run_lease, receipt_id, 'bad') AS fail_2 FROM b_claim WHERE i = 2;
SELECT awa.cancel(job_id) AS cancel_3 FROM b_jobs WHERE i = 3;
SELECT awa.snooze(job_id, run_lease, receipt_id, interval '0') AS snooze_5 FROM b_claim WHERE i = 5;
SELECT awa.retry(job_id, run_lease, receipt_id, 'later', interval '1 day') AS retry_6 FROM b_claim WHERE i = 6;
SELECT task, outcome FROM awa.run_maintenance('promote');
SELECT awa.complete(c.job_id, c.run_lease, c.receipt_id) AS complete_5_again, j.i
  FROM awa.claim('h_b', 1) c JOIN b_jobs j USING (job_id);
SELECT i, pg_temp.job(job_id) AS before_prune FROM b_jobs ORDER BY i;
SELECT pg_temp.counts('h_b') AS before_prune;
SELECT pg_temp.rotate_queue(15) AS rotations;
SELECT outcome, detail -> 'carried' -> 'running' AS carried_running, detail -> 'terminal_jobs' AS terminal_jobs
  FROM awa.run_maintenance('prune_queue');
SELECT count(*) AS job_history_rows FROM awa.job_history;
SELECT i, pg_temp.job(job_id) AS after_prune FROM b_jobs ORDER BY i;
SELECT pg_temp.counts('h_b') AS after_prune;
SELECT awa.complete(job_id, run_lease, receipt_id) AS complete_4 FROM b_claim WHERE i = 4;
SELECT i, pg_temp.job(job_id) AS after_last_completion FROM b_jobs ORDER BY i;
SELECT pg_temp.counts('h_b') AS after_last_completion;
-- cancel: the finished ones (also the one whose later ready row and its
-- completion went with the slot: before, it looked for where the snooze had
-- sent the job for 100 rounds and raised 55P03) answer already_finished; the
-- retried one is cancelled.
CREATE FUNCTION pg_temp.cancel(id bigint) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN
    RETURN awa.cancel(id);
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END
$f$;
SELECT i, pg_temp.cancel(job_id) AS cancel FROM b_jobs ORDER BY i;
SELECT pg_temp.counts('h_b') AS after_cancel;
RESET awa.history_retention;

-- Copying a slot's completions to the history ring is linear in them: each
-- completion finds the claim that took it (its attempted_at) by lane, through
-- the claim evidence's (lane_id, next_lane_seq) index. Found by review: a
-- probe by batch id, which the evidence has no index for, read the slot's
-- whole evidence once per completion (6,000 batch-1 completions read about
-- 18,000,000 evidence rows; 50,000 made a prune run for 55 s). The copy runs
-- here by hand and is rolled back.
SELECT count(*) AS lin_jobs FROM awa.enqueue_many(array_fill('lin'::text, ARRAY[6000]), NULL, 'h_lin');
SELECT ready_slot AS lin_slot FROM awa.ready_entries WHERE queue = 'h_lin' LIMIT 1 \gset
-- (No autovacuum of the slot's receipts, whose VACUUM would summarize the
-- BRIN ranges that the look-ups below count: ring partitions are made with
-- autovacuum_enabled = false, 12_ring_partitions.sql.)
-- Completions into a slot whose receipts' first BRIN range the install or
-- the last prune left unsummarized write no BRIN record (each would widen
-- the range's summary: 72 bytes).
CREATE EXTENSION pg_walinspect;
-- n batch-1 claims of queue q, each completed (and committed, with commit_each).
CREATE PROCEDURE pg_temp.complete_one_by_one(q text, n int, commit_each bool) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. n LOOP
        PERFORM awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim(q, 1) c;
        IF commit_each THEN
            COMMIT;
        END IF;
    END LOOP;
END $$;
-- The WAL records of resource manager rmgr that touched relation rel since
-- the LSN (records of that relation only: autovacuum may summarize other
-- databases' ranges meanwhile).
CREATE FUNCTION pg_temp.wal_records(rmgr text, rel text, since pg_lsn) RETURNS bigint LANGUAGE sql AS $$
SELECT count(*)
  FROM pg_get_wal_records_info(since, pg_current_wal_flush_lsn()) w,
       (SELECT format('%s/%s/%s ', t.oid, d.oid, pg_relation_filenode(rel::regclass)) AS file
          FROM pg_database d, pg_tablespace t
         WHERE d.datname = current_database() AND t.spcname = 'pg_default') f
 WHERE w.resource_manager = rmgr AND w.block_ref LIKE '%' || f.file || '%'
$$;
SELECT pg_current_wal_insert_lsn() AS lin_start \gset
CALL pg_temp.complete_one_by_one('h_lin', 6000, true);
SELECT pg_temp.wal_records('BRIN', format('awa.receipt_completion_batches_%s_batch_id_idx', :lin_slot), :'lin_start')
           AS brin_records,
       pg_temp.wal_records('Heap', format('awa.receipt_completion_batches_%s', :lin_slot), :'lin_start') > 0
           AS receipts_written;
SELECT count(*) AS lin_claims, count(DISTINCT ready_slot) AS lin_slots FROM awa.ready_claim_attempt_batches WHERE queue = 'h_lin';
BEGIN;
SELECT awa._keep_history(:lin_slot) >= 6000 AS copied;
SELECT count(*) AS lin_history, count(attempted_at) AS with_attempted_at
  FROM awa.job_history WHERE queue = 'h_lin' AND state = 'completed';
SELECT coalesce(sum(seq_tup_read), 0) < 60000 AS evidence_read_linearly
  FROM pg_stat_xact_user_tables
 WHERE schemaname = 'awa' AND relname = 'ready_claim_attempt_batches_' || :lin_slot;
ROLLBACK;

-- The completion receipts' BRIN ranges (12_ring_partitions.sql): the queue
-- prune summarizes each full one (awa._summarize_receipts: a range's length
-- before the last page, at this pass and the one before), so a look-up by
-- batch id (awa.get_job's) reads its range and the ones being filled, not
-- the slot. Unsummarized, the look-up read every page of the slot.
CREATE FUNCTION pg_temp.heap_pages_read(q text) RETURNS int LANGUAGE plpgsql AS $f$
DECLARE
    line text;
    n int := 0;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
        IF line ~ 'Heap Blocks:' THEN
            n := n + coalesce(substring(line from 'lossy=([0-9]+)')::int, 0)
                   + coalesce(substring(line from 'exact=([0-9]+)')::int, 0);
        END IF;
    END LOOP;
    RETURN n;
END
$f$;
SELECT format('SELECT 1 FROM awa.receipt_completion_batches_%s WHERE batch_id = %s', :lin_slot,
              (SELECT min(batch_id) FROM awa.receipt_completion_batches WHERE queue = 'h_lin')) AS lin_probe \gset
SELECT pg_relation_size(format('awa.receipt_completion_batches_%s', :lin_slot)) / 8192 > 48 AS slot_over_48_pages;
SET enable_seqscan = off;
SELECT pg_temp.heap_pages_read(:'lin_probe') > 48 AS unsummarized_reads_slot;
-- Two prune passes (a range is summarized once it was far enough behind at
-- the pass before too).
SELECT outcome IS NOT NULL AS pruned_1 FROM awa.run_maintenance('prune_queue');
SELECT outcome IS NOT NULL AS pruned_2 FROM awa.run_maintenance('prune_queue');
SELECT pg_temp.heap_pages_read(:'lin_probe') <= 24 AS reads_its_range_and_the_last;
RESET enable_seqscan;
SELECT count(*) FILTER (WHERE awa.get_job(j.job_id) ->> 'state' = 'completed') AS found_completed
  FROM (SELECT job_id FROM awa.ready_entries WHERE queue = 'h_lin' ORDER BY job_id LIMIT 20) j;

-- A range is summarized only once its pages are full. Concurrent completers
-- that wait for the partition's extension lock make PostgreSQL extend it by
-- up to 512 pages at once and record them as free in its free-space map;
-- summarized as empty, every completion later written into them widened a
-- summary (72 bytes of WAL: 22.5 bytes per job with 16 workers, measured in
-- a batch-1 drain). Here the free pages are made by hand: 3,000 receipts
-- written and rolled back, then a VACUUM without index cleanup (which would
-- summarize) and without truncation records their pages as free, at the end
-- of the partition, as an extension would.
SELECT count(*) AS ext_jobs FROM awa.enqueue_many(array_fill('ext'::text, ARRAY[6000]), NULL, 'h_ext');
SELECT ready_slot AS ext_slot FROM awa.ready_entries WHERE queue = 'h_ext' LIMIT 1 \gset
SELECT format('ALTER TABLE awa.receipt_completion_batches_%s SET (vacuum_truncate = off)', :ext_slot)
           AS ext_no_truncate \gset
:ext_no_truncate;
BEGIN;
CALL pg_temp.complete_one_by_one('h_ext', 3000, false);
ROLLBACK;
SELECT format('VACUUM (INDEX_CLEANUP off, TRUNCATE off) awa.receipt_completion_batches_%s', :ext_slot) AS ext_vacuum \gset
:ext_vacuum;
-- Two prune passes: the free pages are more than a range's length before
-- the last page at both.
SELECT outcome IS NOT NULL AS pruned_3 FROM awa.run_maintenance('prune_queue');
SELECT outcome IS NOT NULL AS pruned_4 FROM awa.run_maintenance('prune_queue');
SELECT pg_current_wal_insert_lsn() AS ext_start \gset
CALL pg_temp.complete_one_by_one('h_ext', 3000, true);
SELECT pg_temp.wal_records('BRIN', format('awa.receipt_completion_batches_%s_batch_id_idx', :ext_slot), :'ext_start')
           AS ext_brin_records;
DROP EXTENSION pg_walinspect;

-- Only awa_admin (through run_maintenance) runs it; the internals are not
-- executable by PUBLIC.
SELECT has_function_privilege('public', 'awa._history()', 'EXECUTE') AS public_history,
       has_function_privilege('public', 'awa._keep_history(int)', 'EXECUTE') AS public_keep;

\c :home_db
SET client_min_messages = warning;
DROP DATABASE regress_awa_history;
RESET client_min_messages;
