--
-- metrics: the monitoring surface (docs/monitoring.md): awa.queue_metrics,
-- awa.job_event_totals, awa.waiting_claims, read by awa_monitor.
-- Queues used here: mt_a, mt_b, mt_old, mt_empty, mt_sp, mt_r, mt_o.
--
\set VERBOSITY default

\i test/sql/include/try.sql

-- Totals are since the server started: this file compares them with its own
-- queues only.
SELECT awa.enqueue('mt', '{}', 'mt_a') FROM generate_series(1, 6) \g /dev/null
SELECT awa.enqueue('mt', '{}', 'mt_old', 1, now() - interval '2 hours') \g /dev/null
SELECT awa.enqueue('mt', '{}', 'mt_b', 2, now() + interval '1 hour') \g /dev/null
SELECT awa.configure_queue('mt_empty');
CREATE TEMP TABLE mt_claimed AS SELECT * FROM awa.claim('mt_a', 4);
SELECT count(*) AS claimed FROM mt_claimed;
SELECT awa.complete(job_id, run_lease, receipt_id) FROM mt_claimed ORDER BY job_id LIMIT 1;
SELECT awa.retry(job_id, run_lease, receipt_id, 'e', '1 hour') FROM mt_claimed ORDER BY job_id OFFSET 1 LIMIT 1;
SELECT awa.snooze(job_id, run_lease, receipt_id, '1 hour') FROM mt_claimed ORDER BY job_id OFFSET 2 LIMIT 1;
SELECT awa.fail(job_id, run_lease, receipt_id, 'e') FROM mt_claimed ORDER BY job_id OFFSET 3 LIMIT 1;

-- Counts per state, the oldest available job (mt_old's became available two
-- hours ago; mt_a's were enqueued by this transaction), no waiting claim.
SELECT queue, available, scheduled, retryable, running, completed, failed, cancelled, dlq,
       oldest_available_at IS NOT NULL AS has_oldest,
       CASE WHEN queue = 'mt_old'
            THEN oldest_available_age_seconds BETWEEN 7200 AND 7200 + extract(epoch FROM clock_timestamp() - now()) + 1
            ELSE oldest_available_age_seconds BETWEEN 0 AND extract(epoch FROM clock_timestamp() - now()) + 1 END AS age_ok,
       waiting_claims, paused
  FROM awa.queue_metrics() WHERE queue LIKE 'mt\_%' ORDER BY queue;
-- The counts are awa.queue_counts'.
SELECT count(*) AS differing FROM awa.queue_metrics() m JOIN awa.queue_counts() c USING (queue)
 WHERE (m.available, m.scheduled, m.retryable, m.running, m.completed, m.failed, m.cancelled, m.dlq)
       IS DISTINCT FROM (c.available, c.scheduled, c.retryable, c.running, c.completed, c.failed, c.cancelled, c.dlq);
-- A rolled-back transaction counts no event.
BEGIN;
SELECT awa.enqueue('mt', '{}', 'mt_b') \g /dev/null
ROLLBACK;
SELECT queue, enqueued, claimed, completed, retried, snoozed, failed, rescued
  FROM awa.job_event_totals() WHERE queue LIKE 'mt\_%' ORDER BY queue;

-- A transaction that enqueues under 70 savepoints (a driver that wraps each
-- statement in one) counts every event: released savepoints fold into their
-- parent, one pending entry per queue.
CREATE FUNCTION pg_temp.savepoint_enqueues() RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
    FOR i IN 1 .. 70 LOOP
        BEGIN
            PERFORM awa.enqueue('mt', '{}', 'mt_sp');
        EXCEPTION WHEN OTHERS THEN RAISE;
        END;
    END LOOP;
END
$f$;
SELECT pg_temp.savepoint_enqueues();
SELECT enqueued FROM awa.job_event_totals() WHERE queue = 'mt_sp';
SELECT available FROM awa.queue_counts('mt_sp');

-- A rescued attempt: rescued; when it was the job's last attempt, failed too.
SELECT awa.enqueue('mt', '{}', 'mt_r', max_attempts => 1) \g /dev/null
SELECT awa.enqueue('mt', '{}', 'mt_r', max_attempts => 2) \g /dev/null
SELECT count(*) AS claimed FROM awa.claim('mt_r', 2, deadline => '1 millisecond');
SELECT pg_sleep(0.01);
SELECT outcome, detail FROM awa.run_maintenance('rescue');
SELECT rescued, failed, retried FROM awa.job_event_totals() WHERE queue = 'mt_r';

-- The oldest available job, exactly: lanes claimed above the cursor are
-- skipped, and so is a cancelled (tombstoned) job. Three jobs available since
-- 3 h, 2 h and 1 h ago (one lane, in that order) and one since 4 h ago in
-- another lane (priority 4); the claim takes the 3 h one (priority 2 first).
SELECT date_trunc('second', now()) AS o0 \gset
SELECT awa.enqueue('mt', '{}', 'mt_o', 2, :'o0'::timestamptz - interval '3 hours') AS o3 \gset
SELECT awa.enqueue('mt', '{}', 'mt_o', 2, :'o0'::timestamptz - interval '2 hours') AS o2 \gset
SELECT awa.enqueue('mt', '{}', 'mt_o', 2, :'o0'::timestamptz - interval '1 hour') AS o1 \gset
SELECT :'o0'::timestamptz - oldest_available_at AS oldest FROM awa.queue_metrics() WHERE queue = 'mt_o';
SELECT count(*) AS claimed FROM awa.claim('mt_o', 1);
SELECT :'o0'::timestamptz - oldest_available_at AS oldest FROM awa.queue_metrics() WHERE queue = 'mt_o';
SELECT awa.cancel(:o2) AS cancelled;
SELECT :'o0'::timestamptz - oldest_available_at AS oldest FROM awa.queue_metrics() WHERE queue = 'mt_o';
SELECT awa.enqueue('mt', '{}', 'mt_o', 4, :'o0'::timestamptz - interval '4 hours') \g /dev/null
SELECT :'o0'::timestamptz - oldest_available_at AS oldest FROM awa.queue_metrics() WHERE queue = 'mt_o';
-- (Aged four hours, the priority-4 job is claimed first.)
SELECT count(*) AS claimed FROM awa.claim('mt_o', 5);
SELECT :'o0'::timestamptz - oldest_available_at AS oldest FROM awa.queue_metrics() WHERE queue = 'mt_o';
SELECT count(*) AS claimed FROM awa.claim('mt_o', 5);
SELECT available, oldest_available_at, oldest_available_age_seconds FROM awa.queue_metrics() WHERE queue = 'mt_o';

-- A paused queue.
SELECT awa.pause_queue('mt_b');
SELECT queue, paused FROM awa.queue_metrics() WHERE queue = 'mt_b';
SELECT awa.resume_queue('mt_b');

-- A claim that waits lists itself while it sleeps; this session's own claim
-- returns before the listing can be read, so none is listed afterwards.
SELECT count(*) AS got FROM awa.claim('mt_empty', 1, wait => '10 milliseconds');
SELECT count(*) AS waiting FROM awa.waiting_claims();

-- awa_monitor reads the surface, and nothing else.
CREATE ROLE mt_monitor IN ROLE awa_monitor;
SET ROLE mt_monitor;
SELECT count(*) > 0 AS reads_metrics FROM awa.queue_metrics();
SELECT count(*) > 0 AS reads_totals FROM awa.job_event_totals();
SELECT count(*) AS reads_waiting FROM awa.waiting_claims();
SELECT count(*) AS rings FROM awa.storage_status();
SELECT count(*) AS tasks FROM awa.maintenance_status();
SELECT pg_temp.try($$SELECT * FROM awa.queue_counts()$$);
SELECT pg_temp.try($$SELECT awa.enqueue('x')$$);
SELECT pg_temp.try($$SELECT * FROM awa.claim('mt_a')$$);
SELECT pg_temp.try($$SELECT * FROM awa.ready_entries$$);
RESET ROLE;
DROP ROLE mt_monitor;
