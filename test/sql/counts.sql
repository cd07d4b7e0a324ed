--
-- counts: awa.queue_counts(queue) (shared-memory counters) against
-- awa.queue_counts_exact(queue) (counted from the tables) after every kind of
-- state change, inside transactions, and after ROLLBACK / ROLLBACK TO SAVEPOINT.
-- Queues used here: ct_main, ct_tx, ct_sp, ct_multi_a, ct_multi_b, ct_empty.
--
\set VERBOSITY default

\i test/sql/include/try.sql

-- The counters of one queue, and whether the exact pass agrees.
CREATE FUNCTION pg_temp.c(q text) RETURNS text LANGUAGE sql AS $f$
SELECT format('avail=%s sched=%s retry=%s run=%s done=%s failed=%s cancelled=%s dlq=%s | exact=%s',
              c.available, c.scheduled, c.retryable, c.running, c.completed, c.failed, c.cancelled, c.dlq,
              coalesce((SELECT row(e.*)::text = row(c.*)::text FROM awa.queue_counts_exact(q) e), false))
  FROM awa.queue_counts(q) c
$f$;

-- Jobs left due by earlier files are promoted now, so promote_due below only
-- moves this file's jobs.
SELECT awa.promote_due(100000) >= 0 AS drained;

-- ---------------------------------------------------------------------------
-- One queue through every transition.
-- ---------------------------------------------------------------------------
SELECT pg_temp.c('ct_main') AS before_any_job;
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['m1', 'm2', 'm3', 'm4', 'm5'], NULL, 'ct_main');
SELECT awa.enqueue('m.sched', '{}', 'ct_main', run_at => now() + interval '1 hour') AS sched \gset
SELECT pg_temp.c('ct_main') AS enqueued;

CREATE TEMP TABLE ct_claims AS SELECT job_id, run_lease, receipt_id, kind FROM awa.claim('ct_main', 3);
SELECT string_agg(kind, ',' ORDER BY kind) AS claimed FROM ct_claims;
SELECT pg_temp.c('ct_main') AS claimed_3;

SELECT awa.complete(job_id, run_lease, receipt_id) AS completed FROM ct_claims WHERE kind = 'm1';
SELECT pg_temp.c('ct_main') AS completed_1;
-- A stale completion changes nothing.
SELECT awa.complete(job_id, run_lease, receipt_id) AS completed_again FROM ct_claims WHERE kind = 'm1';
SELECT pg_temp.c('ct_main') AS stale_complete;

SELECT awa.retry(job_id, run_lease, receipt_id, 'later', '1 hour') AS retried FROM ct_claims WHERE kind = 'm2';
SELECT pg_temp.c('ct_main') AS retried_1;

SELECT awa.snooze(job_id, run_lease, receipt_id, '0') AS snoozed FROM ct_claims WHERE kind = 'm3';
SELECT pg_temp.c('ct_main') AS snoozed_1;

-- The snoozed job is due; the scheduled one and the retry are not.
SELECT awa.promote_due() AS promoted;
SELECT pg_temp.c('ct_main') AS promoted_1;

SELECT job_id AS f_j, run_lease AS f_l, receipt_id AS f_r, kind AS f_kind FROM awa.claim('ct_main') \gset
SELECT :'f_kind' AS kind, pg_temp.c('ct_main') AS claimed_1;
SELECT awa.fail(:f_j, :f_l, :f_r, 'broken') AS failed;
SELECT pg_temp.c('ct_main') AS failed_1;

-- Cancel: an available job, the scheduled job, the retryable job, a running job.
SELECT job_id AS avail_j FROM awa.ready_entries WHERE queue = 'ct_main' AND kind = 'm5' \gset
SELECT awa.cancel(:avail_j) AS cancel_available;
SELECT pg_temp.c('ct_main') AS cancelled_available;
SELECT awa.cancel(:sched) AS cancel_scheduled;
SELECT pg_temp.c('ct_main') AS cancelled_scheduled;
SELECT awa.cancel(job_id) AS cancel_retryable FROM ct_claims WHERE kind = 'm2';
SELECT pg_temp.c('ct_main') AS cancelled_retryable;
SELECT job_id AS run_j, kind AS run_kind FROM awa.claim('ct_main') \gset
SELECT :'run_kind' AS kind, pg_temp.c('ct_main') AS claimed_1;
SELECT awa.cancel(:run_j) AS cancel_running;
SELECT pg_temp.c('ct_main') AS cancelled_running;
-- Cancelling again, or a finished job, changes nothing.
SELECT awa.cancel(:run_j) AS again, awa.cancel(:avail_j) AS again_available, awa.cancel(:f_j) AS failed_job;
SELECT pg_temp.c('ct_main') AS nothing_changed;

-- DLQ: in, back out, in again, purged.
SELECT awa.configure_queue('ct_main', dlq_enabled => true);
SELECT awa.enqueue('m.dlq', '{}', 'ct_main') AS dj \gset
SELECT pg_temp.c('ct_main') AS enqueued;
SELECT run_lease AS d_l, receipt_id AS d_r FROM awa.claim('ct_main') \gset
SELECT awa.fail(:dj, :d_l, :d_r, 'dead') AS outcome;
SELECT pg_temp.c('ct_main') AS dead_lettered;
SELECT awa.dlq_retry(ARRAY[:dj]::bigint[]) AS retried;
SELECT pg_temp.c('ct_main') AS dlq_retried;
SELECT run_lease AS d_l, receipt_id AS d_r FROM awa.claim('ct_main') \gset
SELECT awa.fail(:dj, :d_l, :d_r, 'dead again') AS outcome;
SELECT pg_temp.c('ct_main') AS dead_lettered;
SELECT awa.dlq_purge(ARRAY[:dj]::bigint[]) AS purged;
SELECT pg_temp.c('ct_main') AS purged;

-- ---------------------------------------------------------------------------
-- Inside a transaction the caller sees its own changes; ROLLBACK undoes them.
-- ---------------------------------------------------------------------------
SELECT pg_temp.c('ct_tx') AS before;
BEGIN;
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['t1', 't2', 't3'], NULL, 'ct_tx');
SELECT awa.enqueue('t.sched', '{}', 'ct_tx', run_at => now() + interval '1 day') IS NOT NULL AS ok;
SELECT pg_temp.c('ct_tx') AS inside_enqueued;
CREATE TEMP TABLE ct_tx_claims AS SELECT job_id, run_lease, receipt_id, kind FROM awa.claim('ct_tx', 2);
SELECT pg_temp.c('ct_tx') AS inside_claimed;
SELECT awa.complete(job_id, run_lease, receipt_id) AS completed FROM ct_tx_claims WHERE kind = 't1';
SELECT awa.retry(job_id, run_lease, receipt_id, 'e', '1 hour') AS retried FROM ct_tx_claims WHERE kind = 't2';
SELECT pg_temp.c('ct_tx') AS inside_finished;
ROLLBACK;
SELECT pg_temp.c('ct_tx') AS after_rollback;

-- Committed work, then a rolled-back transaction that changes its states.
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['c1', 'c2', 'c3'], NULL, 'ct_tx');
SELECT pg_temp.c('ct_tx') AS committed;
BEGIN;
SELECT awa.complete(job_id, run_lease, receipt_id) AS completed FROM awa.claim('ct_tx');
SELECT awa.cancel(job_id) AS cancelled FROM awa.ready_entries WHERE queue = 'ct_tx' AND kind = 'c3';
SELECT awa.configure_queue('ct_tx', dlq_enabled => true);
SELECT awa.fail(job_id, run_lease, receipt_id, 'x') AS failed FROM awa.claim('ct_tx');
SELECT pg_temp.c('ct_tx') AS inside;
ROLLBACK;
SELECT pg_temp.c('ct_tx') AS after_rollback;

-- ROLLBACK TO SAVEPOINT undoes only what followed the savepoint.
BEGIN;
SELECT awa.enqueue('s1', '{}', 'ct_sp') IS NOT NULL AS ok;
SAVEPOINT sp1;
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['s2', 's3'], NULL, 'ct_sp');
SELECT awa.complete(job_id, run_lease, receipt_id) AS completed FROM awa.claim('ct_sp');
SELECT pg_temp.c('ct_sp') AS after_savepoint;
ROLLBACK TO SAVEPOINT sp1;
SELECT pg_temp.c('ct_sp') AS rolled_back_to_sp1;
SAVEPOINT sp2;
SELECT awa.retry(job_id, run_lease, receipt_id, 'e', '1 hour') AS retried FROM awa.claim('ct_sp');
SELECT pg_temp.c('ct_sp') AS after_sp2;
RELEASE SAVEPOINT sp2;
SAVEPOINT sp3;
SELECT awa.enqueue('s4', '{}', 'ct_sp') IS NOT NULL AS ok;
-- An error rolls back to the savepoint too.
SELECT awa.enqueue('s5', '{}', 'ct_sp', priority => 0);
ROLLBACK TO SAVEPOINT sp3;
SELECT pg_temp.c('ct_sp') AS rolled_back_to_sp3;
COMMIT;
SELECT pg_temp.c('ct_sp') AS committed;
-- The same through a PL/pgSQL exception block (an implicit savepoint).
DO $$
BEGIN
    PERFORM awa.enqueue('s6', '{}', 'ct_sp');
    PERFORM awa.enqueue('s7', '{}', 'ct_sp', priority => 9);
EXCEPTION WHEN invalid_parameter_value THEN
    NULL;
END
$$;
SELECT pg_temp.c('ct_sp') AS after_exception_block;

-- ---------------------------------------------------------------------------
-- queue_counts(NULL): every queue that has a lane or settings.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('a', '{}', 'ct_multi_a') IS NOT NULL AS ok, awa.enqueue('b', '{}', 'ct_multi_b', 4) IS NOT NULL AS ok;
SELECT awa.pause_queue('ct_empty');
SELECT (SELECT array_agg(queue ORDER BY queue) FROM awa.queue_counts())
     = (SELECT array_agg(q ORDER BY q) FROM (SELECT queue FROM awa.queue_lanes UNION SELECT queue FROM awa.queue_meta) x(q))
       AS lists_every_queue,
       (SELECT array_agg(queue ORDER BY queue) FROM awa.queue_counts())
     = (SELECT array_agg(queue ORDER BY queue) FROM awa.queue_counts_exact()) AS same_queues_as_exact,
       (SELECT count(*) FROM awa.queue_counts()) = (SELECT count(DISTINCT queue) FROM awa.queue_counts()) AS one_row_each;
SELECT * FROM awa.queue_counts() WHERE queue LIKE 'ct\_%' ORDER BY queue;
SELECT c.queue, row(c.*)::text = row(e.*)::text AS exact
  FROM awa.queue_counts() c JOIN awa.queue_counts_exact() e USING (queue)
 WHERE c.queue LIKE 'ct\_%' ORDER BY c.queue;
-- A queue with neither: one row of zeros when asked by name, absent from the list.
SELECT * FROM awa.queue_counts('ct_unknown');
SELECT * FROM awa.queue_counts_exact('ct_unknown');
SELECT count(*) AS listed FROM awa.queue_counts() WHERE queue = 'ct_unknown';

-- ---------------------------------------------------------------------------
-- Invalid queue names.
-- ---------------------------------------------------------------------------
SELECT call, pg_temp.try(call) AS outcome FROM (VALUES
    ($$SELECT * FROM awa.queue_counts('')$$),
    ($$SELECT * FROM awa.queue_counts(repeat('q', 201))$$),
    ($$SELECT * FROM awa.queue_counts_exact('')$$),
    ($$SELECT * FROM awa.queue_counts_exact(repeat('q', 201))$$)
) AS t(call);
SELECT count(*) AS rows FROM awa.queue_counts(repeat('q', 200));

-- ---------------------------------------------------------------------------
-- awa.rebuild_counters: recounts with one exact pass; refused in a
-- transaction that has written (its own rows would be counted twice).
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('k', queue => 'ct_rebuild') IS NOT NULL AS enqueued;
SELECT awa.rebuild_counters() AS trusted;
SELECT c.available, row(c.*)::text = row(e.*)::text AS exact
  FROM awa.queue_counts('ct_rebuild') c, awa.queue_counts_exact('ct_rebuild') e;
BEGIN;
SELECT awa.enqueue('k', queue => 'ct_rebuild') IS NOT NULL AS enqueued;
SELECT pg_temp.try($$SELECT awa.rebuild_counters()$$) AS in_a_writing_transaction;
ROLLBACK;
BEGIN;
SELECT awa.rebuild_counters() AS trusted_in_a_fresh_transaction;
SELECT available FROM awa.queue_counts('ct_rebuild');
COMMIT;
