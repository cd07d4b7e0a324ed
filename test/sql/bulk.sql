--
-- bulk: bulk operations by filter. awa.bulk_count (a dry run),
-- awa.bulk_start, awa.bulk_step (one page per call, in the caller's
-- transaction; the cursor moves with the page, so a rolled-back step is done
-- again whole), awa.bulk_cancel, the progress in awa.bulk_operations; the
-- actions cancel, dlq_retry, dlq_purge, move and set_priority; bad input
-- (22023, 22004) changes nothing. Queues used here: bk_*.
--
\set VERBOSITY default

\i test/sql/include/try.sql

SELECT awa.configure_queue('bk_dlq', dlq_enabled => true);
-- Eight jobs of bk_a (two of kind bk.keep; the first, a bk.x, claimed and
-- left running), a bk.x scheduled a day ahead; four dead-lettered jobs of
-- bk_dlq.
SELECT count(*) AS enqueued FROM (
    SELECT awa.enqueue(CASE WHEN i IN (2, 5) THEN 'bk.keep' ELSE 'bk.x' END, jsonb_build_object('i', i), 'bk_a')
      FROM generate_series(1, 8) i) x;
SELECT awa.enqueue('bk.x', '{"later": true}', 'bk_a', run_at => now() + interval '1 day') IS NOT NULL AS scheduled;
SELECT count(*) AS running FROM awa.claim('bk_a', 1);
SELECT count(*) AS enqueued FROM (SELECT awa.enqueue('bk.d', jsonb_build_object('i', i), 'bk_dlq')
                                    FROM generate_series(1, 4) i) x;
SELECT count(*) AS dead FROM awa.claim('bk_dlq', 4) c, LATERAL awa.fail(c.job_id, c.run_lease, c.receipt_id, 'boom') f;

-- A dry run counts, and changes nothing.
SELECT awa.bulk_count('cancel', queue => 'bk_a', kind => 'bk.x') AS would_cancel;
SELECT awa.bulk_count('cancel', queue => 'bk_a', kind => 'bk.x', state => 'available') AS would_cancel_available;
SELECT awa.bulk_count('dlq_retry', queue => 'bk_dlq') AS would_retry;
SELECT count(*) AS operations FROM awa.bulk_operations;

-- Cancel every bk.x job of bk_a, two per step. A job enqueued after the
-- start is not touched; a step rolled back is done again whole.
SELECT awa.bulk_start('cancel', queue => 'bk_a', kind => 'bk.x') AS op \gset
SELECT awa.enqueue('bk.x', '{"after": true}', 'bk_a') AS after_start \gset
SELECT action, filter, state, acted, passed, steps, finished_at IS NULL AS open FROM awa.bulk_operations WHERE op_id = :op;
BEGIN;
SELECT state, acted, passed, steps FROM awa.bulk_step(:op, 2);
ROLLBACK;
SELECT state, acted, passed, steps FROM awa.bulk_operations WHERE op_id = :op;
SELECT state, acted, passed, steps FROM awa.bulk_step(:op, 2);
SELECT state, acted, passed, steps FROM awa.bulk_step(:op, 2);
SELECT state, acted, passed, steps FROM awa.bulk_step(:op, 2);
SELECT state, acted, passed, steps, finished_at IS NOT NULL AS finished FROM awa.bulk_step(:op, 2);
-- Ended: a step changes nothing more.
SELECT state, acted, passed, steps FROM awa.bulk_step(:op, 2);
SELECT kind, state, count(*) FROM awa.list_jobs(queue => 'bk_a') GROUP BY 1, 2 ORDER BY 1, 2;
SELECT awa.get_job(:after_start) ->> 'state' AS enqueued_after_start;

-- Retry the dead-lettered jobs: back to available.
SELECT awa.bulk_start('dlq_retry', queue => 'bk_dlq') AS retry_op \gset
SELECT state, acted, passed, steps FROM awa.bulk_step(:retry_op);
SELECT state, count(*) FROM awa.list_jobs(queue => 'bk_dlq') GROUP BY 1;
SELECT filter FROM awa.bulk_operations WHERE op_id = :retry_op;

-- Purge: dead-letter them again, then purge one of them by its args, and stop
-- an operation half way with awa.bulk_cancel.
SELECT count(*) AS dead_again FROM awa.claim('bk_dlq', 4) c, LATERAL awa.fail(c.job_id, c.run_lease, c.receipt_id, 'boom') f;
SELECT awa.bulk_start('dlq_purge', queue => 'bk_dlq', args_contains => '{"i": 1}') AS purge_op \gset
SELECT state, acted FROM awa.bulk_step(:purge_op);
SELECT count(*) AS dlq_left FROM awa.dlq WHERE queue = 'bk_dlq';
SELECT awa.bulk_start('dlq_purge', state => 'dlq', queue => 'bk_dlq') AS stop_op \gset
SELECT state, acted FROM awa.bulk_step(:stop_op, 1);
SELECT awa.bulk_cancel(:stop_op) AS cancelled, awa.bulk_cancel(:stop_op) AS again;
SELECT state, acted, finished_at IS NOT NULL AS finished FROM awa.bulk_step(:stop_op, 1);
SELECT count(*) AS dlq_left FROM awa.dlq WHERE queue = 'bk_dlq';

-- cancel without a state selects the unfinished jobs only (bk_a now holds 7
-- cancelled ones and 3 available).
SELECT awa.bulk_count('cancel', queue => 'bk_a') AS unfinished_only;

-- A containment with a JSON null is kept whole in the stored filter (it
-- was stripped to {}, which matches every job: found in review).
SELECT count(*) AS enqueued FROM (SELECT awa.enqueue('bk.n', CASE WHEN i = 1 THEN '{"deleted": null}'::jsonb
                                                                  ELSE jsonb_build_object('i', i) END, 'bk_n')
                                    FROM generate_series(1, 3) i) x;
SELECT awa.bulk_count('cancel', queue => 'bk_n', args_contains => '{"deleted": null}') AS null_containment;
SELECT awa.bulk_start('cancel', queue => 'bk_n', args_contains => '{"deleted": null}') AS null_op \gset
SELECT filter FROM awa.bulk_operations WHERE op_id = :null_op;
SELECT state, acted, passed FROM awa.bulk_step(:null_op);
SELECT count(*) FILTER (WHERE state = 'cancelled') AS cancelled, count(*) AS jobs FROM awa.list_jobs(queue => 'bk_n');

-- A DLQ retry whose page holds a job whose unique key another job took
-- meanwhile: the others are retried, that one stays (passed), and the
-- operation ends (it failed every step with 23505 before: found in review).
SELECT awa.configure_queue('bk_u', dlq_enabled => true);
SELECT awa.enqueue('bk.u', '{}', 'bk_u', opts => '{"unique_key": "bk-u-1"}') IS NOT NULL AS keyed,
       awa.enqueue('bk.u', '{"free": true}', 'bk_u') IS NOT NULL AS free;
SELECT count(*) AS dead FROM awa.claim('bk_u', 2) c, LATERAL awa.fail(c.job_id, c.run_lease, c.receipt_id, 'boom') f;
SELECT awa.enqueue('bk.u', '{}', 'bk_u_other', opts => '{"unique_key": "bk-u-1"}') IS NOT NULL AS key_taken;
SELECT state, acted, passed FROM awa.bulk_step(awa.bulk_start('dlq_retry', queue => 'bk_u'));
SELECT count(*) AS left_in_dlq FROM awa.dlq WHERE queue = 'bk_u';

-- Move and set_priority act on the waiting jobs of a filter (available,
-- scheduled, retryable): a running one is passed over. bk_m: five available
-- jobs, one scheduled, the first claimed (running).
SELECT count(*) AS enqueued FROM (SELECT awa.enqueue('bk.m', jsonb_build_object('i', i), 'bk_m')
                                    FROM generate_series(1, 5) i) x;
SELECT awa.enqueue('bk.m', '{"later": true}', 'bk_m', run_at => now() + interval '1 day') IS NOT NULL AS scheduled;
SELECT count(*) AS running FROM awa.claim('bk_m', 1);
SELECT awa.bulk_count('move', queue => 'bk_m', to_queue => 'bk_m2') AS would_move;
SELECT awa.bulk_start('move', queue => 'bk_m', to_queue => 'bk_m2') AS move_op \gset
SELECT action, filter, to_queue, to_priority FROM awa.bulk_operations WHERE op_id = :move_op;
-- A step rolled back is done again whole.
BEGIN;
SELECT state, acted, passed, steps FROM awa.bulk_step(:move_op, 2);
ROLLBACK;
SELECT state, acted, passed, steps FROM awa.bulk_step(:move_op, 2);
SELECT state, acted, passed, steps FROM awa.bulk_step(:move_op, 2);
SELECT state, acted, passed, steps FROM awa.bulk_step(:move_op, 2);
SELECT state, acted, passed, steps FROM awa.bulk_step(:move_op, 2);
SELECT queue, state, count(*) FROM awa.list_jobs(kind => 'bk.m') GROUP BY 1, 2 ORDER BY 1, 2;
SELECT q.queue, c.available, c.scheduled, c.running, c IS NOT DISTINCT FROM e AS matches_exact
  FROM unnest(ARRAY['bk_m', 'bk_m2']) q(queue), awa.queue_counts(q.queue) c, awa.queue_counts_exact(q.queue) e;
SELECT count(*) AS claimed_in_bk_m2 FROM awa.claim('bk_m2', 10);
SELECT count(*) AS left_in_bk_m FROM awa.claim('bk_m', 10);
-- Reprioritise bk_m2's scheduled job; done again, it changes nothing (passed).
SELECT awa.bulk_count('set_priority', queue => 'bk_m2', state => 'scheduled', to_priority => 1) AS would_raise;
SELECT state, acted, passed FROM awa.bulk_step(awa.bulk_start('set_priority', queue => 'bk_m2', state => 'scheduled',
                                                              to_priority => 1));
SELECT awa.bulk_count('set_priority', queue => 'bk_m2', state => 'scheduled', to_priority => 1) AS would_raise_again;
SELECT state, acted, passed FROM awa.bulk_step(awa.bulk_start('set_priority', queue => 'bk_m2', state => 'scheduled',
                                                              to_priority => 1));
SELECT queue, state, priority, count(*) FROM awa.list_jobs(kind => 'bk.m', state => 'scheduled') GROUP BY 1, 2, 3;

-- Retry acts on failed and cancelled jobs (awa.retry_jobs): bk_r has two
-- failed jobs, one cancelled, one completed and one available. A job whose
-- unique key another job took meanwhile stays failed (passed).
SELECT count(*) AS enqueued FROM (SELECT awa.enqueue('bk.r', jsonb_build_object('i', i), 'bk_r', max_attempts => 1,
                                                     opts => CASE WHEN i = 2 THEN '{"unique_key": "bk-r-2"}'::jsonb
                                                                  ELSE '{}' END)
                                    FROM generate_series(1, 5) i) x;
SELECT string_agg(CASE WHEN c.args ->> 'i' IN ('1', '2') THEN awa.fail(c.job_id, c.run_lease, c.receipt_id, 'boom')
                       WHEN c.args ->> 'i' = '3' THEN awa.cancel(c.job_id)
                       ELSE awa.complete(c.job_id, c.run_lease, c.receipt_id)::text END, ',' ORDER BY c.job_id) AS ended
  FROM awa.claim('bk_r', 4) c;
SELECT awa.enqueue('bk.r', '{}', 'bk_r_other', opts => '{"unique_key": "bk-r-2"}') IS NOT NULL AS key_taken;
SELECT awa.bulk_count('retry', queue => 'bk_r') AS would_retry,
       awa.bulk_count('retry', queue => 'bk_r', state => 'cancelled') AS would_retry_cancelled;
SELECT state, acted, passed FROM awa.bulk_step(awa.bulk_start('retry', queue => 'bk_r'), 10);
SELECT args ->> 'i' AS i, state FROM awa.list_jobs(queue => 'bk_r') ORDER BY job_id;
SELECT c.available, c.running, c.completed, c.failed, c.cancelled, c IS NOT DISTINCT FROM e AS matches_exact
  FROM awa.queue_counts('bk_r') c, awa.queue_counts_exact('bk_r') e;

-- A DLQ retry, a retry and a move append their jobs to their lanes
-- directly: no deferred row is written and deleted per job. (Each was a dead
-- tuple of awa.deferred_jobs, and with autovacuum behind, a bulk DLQ retry of
-- 81,500 jobs went from 40 ms to 1.5 s a step: found at stop 36.) bk_nd: two
-- dead-lettered jobs, two failed ones, three available ones to move; every
-- step's transaction writes no deferred row, and the jobs end where they
-- should, with counts that match the exact ones.
SELECT awa.configure_queue('bk_nd_dlq', dlq_enabled => true);
SELECT count(*) AS enqueued FROM (
    SELECT awa.enqueue('bk.nd', jsonb_build_object('i', i), CASE WHEN i <= 2 THEN 'bk_nd_dlq' ELSE 'bk_nd' END,
                       max_attempts => 1)
      FROM generate_series(1, 7) i) x;
SELECT count(*) AS dead FROM awa.claim('bk_nd_dlq', 2) c, LATERAL awa.fail(c.job_id, c.run_lease, c.receipt_id, 'boom') f;
SELECT count(*) AS failed FROM awa.claim('bk_nd', 2) c, LATERAL awa.fail(c.job_id, c.run_lease, c.receipt_id, 'boom') f;
-- (The backend's pending statistics: inserts of earlier transactions not yet
-- reported count too, so each step's is the difference.)
CREATE FUNCTION pg_temp.deferred_rows_written() RETURNS bigint LANGUAGE sql AS
$$SELECT n_tup_ins FROM pg_stat_xact_user_tables WHERE relid = 'awa.deferred_jobs'::regclass$$;
BEGIN;
SELECT pg_temp.deferred_rows_written() AS before \gset
SELECT state, acted, passed FROM awa.bulk_step(awa.bulk_start('dlq_retry', queue => 'bk_nd_dlq'));
SELECT pg_temp.deferred_rows_written() - :before AS dlq_retry_deferred_rows;
COMMIT;
BEGIN;
SELECT pg_temp.deferred_rows_written() AS before \gset
SELECT state, acted, passed FROM awa.bulk_step(awa.bulk_start('retry', queue => 'bk_nd'));
SELECT pg_temp.deferred_rows_written() - :before AS retry_deferred_rows;
COMMIT;
BEGIN;
SELECT pg_temp.deferred_rows_written() AS before \gset
SELECT state, acted, passed FROM awa.bulk_step(awa.bulk_start('move', queue => 'bk_nd', to_queue => 'bk_nd_moved'));
SELECT pg_temp.deferred_rows_written() - :before AS move_deferred_rows;
COMMIT;
SELECT queue, state, count(*) FROM awa.list_jobs(kind => 'bk.nd') GROUP BY 1, 2 ORDER BY 1, 2;
SELECT q.queue, c.available, c.failed, c.dlq, c IS NOT DISTINCT FROM e AS matches_exact
  FROM unnest(ARRAY['bk_nd_dlq', 'bk_nd', 'bk_nd_moved']) q(queue), awa.queue_counts(q.queue) c,
       awa.queue_counts_exact(q.queue) e;
SELECT count(*) AS claimed FROM awa.claim('bk_nd_moved', 10);
SELECT count(*) AS claimed FROM awa.claim('bk_nd_dlq', 10);

-- awa._requeue_jobs (internal; superusers only) refuses rows that
-- deferred_jobs's constraints would have refused, and a job given twice,
-- and appends nothing (a NULL element crashed the backend: found in review).
SELECT pg_temp.try($$SELECT awa._requeue_jobs(ARRAY[NULL::awa.deferred_jobs])$$);
SELECT pg_temp.try($$SELECT awa._requeue_jobs(ARRAY[ROW(990001, 'bk_nd_x', 2, 'k', NULL, 'scheduled', now(), 0, 0, 1, now(),
                                                        NULL, NULL, NULL, NULL)::awa.deferred_jobs])$$);
SELECT pg_temp.try($$SELECT awa._requeue_jobs(ARRAY[ROW(990001, 'bk_nd_x', 2, 'k', '{}', 'bogus', now(), 0, 0, 1, now(),
                                                        NULL, NULL, NULL, NULL)::awa.deferred_jobs])$$);
SELECT pg_temp.try($$SELECT awa._requeue_jobs(ARRAY[ROW(990001, 'bk_nd_x', 9, 'k', '{}', 'scheduled', now(), 0, 0, 1, now(),
                                                        NULL, NULL, NULL, NULL)::awa.deferred_jobs])$$);
SELECT pg_temp.try($$SELECT awa._requeue_jobs(array_fill(ROW(990001, 'bk_nd_x', 2, 'k', '{}', 'scheduled', now(), 0, 0, 1,
                                                             now(), NULL, NULL, NULL, NULL)::awa.deferred_jobs, ARRAY[2]))$$);
SELECT awa._requeue_jobs('{}') AS requeued_none;
SELECT count(*) AS rows_of_990001 FROM awa.ready_entries WHERE job_id = 990001;

-- Bad input: 22023 (22004 for NULL) with a hint; nothing starts, nothing
-- steps.
SELECT pg_temp.try($$SELECT awa.bulk_start('delete_everything')$$);
SELECT pg_temp.try($$SELECT awa.bulk_start(NULL)$$);
SELECT pg_temp.try($$SELECT awa.bulk_start('dlq_retry', state => 'failed')$$);
SELECT pg_temp.try($$SELECT awa.bulk_start('cancel', state => 'completed')$$);
SELECT pg_temp.try($$SELECT awa.bulk_start('cancel', state => 'asleep')$$);
SELECT pg_temp.try($$SELECT awa.bulk_count('cancel', args_contains => '[1]')$$);
SELECT pg_temp.try($$SELECT awa.bulk_start('move')$$);
SELECT pg_temp.try($$SELECT awa.bulk_count('move', to_queue => 'bk_x', to_priority => 1)$$);
SELECT pg_temp.try($$SELECT awa.bulk_start('move', to_queue => '')$$);
SELECT pg_temp.try($$SELECT awa.bulk_start('move', state => 'running', to_queue => 'bk_x')$$);
SELECT pg_temp.try($$SELECT awa.bulk_start('set_priority')$$);
SELECT pg_temp.try($$SELECT awa.bulk_start('set_priority', to_priority => 5)$$);
SELECT pg_temp.try($$SELECT awa.bulk_start('set_priority', to_queue => 'bk_x', to_priority => 1)$$);
SELECT pg_temp.try($$SELECT awa.bulk_start('set_priority', state => 'dlq', to_priority => 1)$$);
SELECT pg_temp.try($$SELECT awa.bulk_start('cancel', to_queue => 'bk_x')$$);
SELECT pg_temp.try($$SELECT awa.bulk_count('dlq_retry', to_priority => 1)$$);
SELECT pg_temp.try($$SELECT awa.bulk_start('retry', state => 'dlq')$$);
SELECT pg_temp.try($$SELECT awa.bulk_start('retry', to_queue => 'bk_x')$$);
SELECT pg_temp.try($$SELECT awa.bulk_step(NULL)$$);
SELECT pg_temp.try($$SELECT awa.bulk_step(-1)$$);
SELECT pg_temp.try($$SELECT awa.bulk_step(1, 0)$$);
SELECT pg_temp.try($$SELECT awa.bulk_step(1, 1001)$$);
SELECT pg_temp.try($$SELECT awa.bulk_cancel(NULL)$$);
SELECT pg_temp.try($$SELECT awa.bulk_cancel(-1)$$);
SELECT count(*) AS operations FROM awa.bulk_operations;

-- Only awa_admin: a monitor may not start, step or read them.
CREATE ROLE bk_monitor IN ROLE awa_monitor;
SET ROLE bk_monitor;
SELECT pg_temp.try($$SELECT awa.bulk_count('cancel')$$);
SELECT pg_temp.try($$SELECT awa.bulk_start('cancel')$$);
SELECT pg_temp.try($$SELECT count(*) FROM awa.bulk_operations$$);
RESET ROLE;
DROP ROLE bk_monitor;
