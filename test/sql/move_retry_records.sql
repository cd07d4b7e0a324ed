--
-- move_retry_records: the records a move or a retry leaves behind in the
-- queue ring (a move's tombstone without a done row; a retried job's
-- superseded done row) are never read as the job's state, also when their
-- slot outlives the job's later life (a slot kept in place for a paused
-- backlog, docs/maintenance.md §3.6); and a job cancelled while deferred,
-- retried and cancelled while deferred again in the same slot is cancelled
-- (its first, superseded, synthetic row makes room). Found by an adversarial
-- review of move_jobs / retry_jobs. Queues used here: mr_*.
--
\set VERBOSITY default
SET client_min_messages = warning;

\i test/sql/include/try.sql

CREATE FUNCTION pg_temp.job(id bigint) RETURNS text LANGUAGE sql AS $f$
SELECT CASE WHEN j IS NULL THEN 'unknown'
            ELSE format('%s %s lease %s', j ->> 'queue', j ->> 'state', j ->> 'run_lease') END
  FROM (SELECT awa.get_job(id) AS j) x
$f$;
CREATE FUNCTION pg_temp.counts_match() RETURNS boolean LANGUAGE sql AS $f$
SELECT NOT EXISTS (SELECT * FROM awa.queue_counts() EXCEPT SELECT * FROM awa.queue_counts_exact())
   AND NOT EXISTS (SELECT * FROM awa.queue_counts_exact() EXCEPT SELECT * FROM awa.queue_counts())
$f$;
-- Traffic on another queue, and n rotations and prunes of the queue ring.
CREATE PROCEDURE pg_temp.rounds(n int) LANGUAGE plpgsql AS $p$
BEGIN
    FOR round IN 1 .. n LOOP
        PERFORM awa.enqueue_many(ARRAY['busy', 'busy'], NULL, 'mr_busy');
        PERFORM awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('mr_busy', 3) c;
        COMMIT;
        PERFORM * FROM awa.run_maintenance('rotate');
        PERFORM * FROM awa.run_maintenance('prune');
        COMMIT;
    END LOOP;
END
$p$;

-- 1. Cancelled while deferred, retried, deferred again (a snooze) and
-- cancelled again before the ring rotates: cancelled, once.
SELECT awa.enqueue('c', '{}', 'mr_cancel', run_at => now() + interval '1 day') AS c \gset
SELECT awa.cancel(:c) AS first_cancel;
SELECT awa.retry_jobs(ARRAY[:c]) AS retried;
SELECT awa.snooze(x.job_id, x.run_lease, x.receipt_id, '1 day') AS snoozed FROM awa.claim('mr_cancel', 1) x;
SELECT pg_temp.try(format('SELECT awa.cancel(%s)', :c)) AS second_cancel;
SELECT pg_temp.job(:c) AS job, pg_temp.counts_match() AS counts_match;
SELECT cancelled FROM awa.queue_counts('mr_cancel');
-- The same through a bulk cancel, which used to fail on every step.
SELECT awa.enqueue('b', '{}', 'mr_bulk', run_at => now() + interval '1 day') AS b \gset
SELECT awa.cancel(:b) AS first_cancel;
SELECT awa.retry_jobs(ARRAY[:b]) AS retried;
SELECT awa.snooze(x.job_id, x.run_lease, x.receipt_id, '1 day') AS snoozed FROM awa.claim('mr_bulk', 1) x;
SELECT awa.bulk_start('cancel', queue => 'mr_bulk') AS op \gset
SELECT state, acted, passed FROM awa.bulk_step(:op, 100);
SELECT pg_temp.job(:b) AS job, pg_temp.counts_match() AS counts_match;

-- 2. A slot kept in place (a paused backlog above awa.carry_max_rows) holds
-- a moved job's old row and a retried job's superseded record; the jobs
-- finish in their new lives and are forgotten (history_retention 0).
SET awa.history_retention = 0;
SET awa.carry_max_rows = 0;
SELECT count(*) AS backlog FROM awa.enqueue_many(ARRAY['b', 'b', 'b'], NULL, 'mr_backlog');
SELECT awa.pause_queue('mr_backlog') AS paused;
SELECT awa.enqueue('m', '{}', 'mr_src') AS m \gset
SELECT awa.enqueue('r', '{}', 'mr_src_r', max_attempts => 1) AS r \gset
SELECT awa.fail(x.job_id, x.run_lease, x.receipt_id, 'boom') AS failed FROM awa.claim('mr_src_r', 1) x;
CALL pg_temp.rounds(2);
SELECT awa.move_jobs(ARRAY[:m], 'mr_dst') AS moved, awa.retry_jobs(ARRAY[:r]) AS retried;
SELECT awa.complete(x.job_id, x.run_lease, x.receipt_id) AS completed FROM awa.claim('mr_dst', 1) x;
SELECT awa.complete(x.job_id, x.run_lease, x.receipt_id) AS completed FROM awa.claim('mr_src_r', 1) x;
SELECT pg_temp.job(:m) AS moved_job, pg_temp.job(:r) AS retried_job;
CALL pg_temp.rounds(40);
-- Forgotten: unknown to get_job and list_jobs, not counted, nothing to
-- retry, and a cancel says it has finished (it used to spin and raise 55P03).
SELECT pg_temp.job(:m) AS moved_job, pg_temp.job(:r) AS retried_job;
SELECT count(*) AS listed FROM awa.list_jobs(queue => 'mr_src') UNION ALL
SELECT count(*) FROM awa.list_jobs(queue => 'mr_src_r');
SELECT queue, failed, cancelled FROM awa.queue_counts() WHERE queue IN ('mr_src', 'mr_src_r') ORDER BY queue;
SELECT awa.retry_jobs(ARRAY[:m, :r]) AS retried;
SELECT awa.cancel(:m) AS cancel_moved, awa.cancel(:r) AS cancel_retried;
SELECT pg_temp.counts_match() AS counts_match;
RESET awa.history_retention;
RESET awa.carry_max_rows;
SELECT awa.resume_queue('mr_backlog') AS resumed;
