--
-- queue_admin: queue settings and promotion. awa.configure_queue(queue,
-- dlq_enabled, aging_interval, default_deadline), awa.pause_queue(queue),
-- awa.resume_queue(queue), awa.promote_due(max_jobs), and what claim does with
-- them (default deadline, priority aging, paused queues).
-- Queues used here: qa_conf, qa_bad, qa_pause, qa_promote, qa_deadline,
-- qa_nodeadline, qa_aging, qa_strict, qa_aging2, qa_never, qa_resume_new and a
-- 200-character name.
--
\set VERBOSITY default

\i test/sql/include/try.sql

-- A queue's settings row (no timestamps).
CREATE FUNCTION pg_temp.meta(q text) RETURNS text LANGUAGE sql AS $f$
SELECT coalesce((SELECT format('paused=%s paused_at_set=%s dlq=%s aging=%s deadline=%s',
                               paused, paused_at IS NOT NULL, dlq_enabled, aging_interval,
                               coalesce(default_deadline::text, 'NULL'))
                   FROM awa.queue_meta WHERE queue = q), 'no row')
$f$;

-- Jobs left due by earlier files are promoted now, so the counts below are
-- this file's own.
SELECT awa.promote_due(100000) >= 0 AS drained;

-- ---------------------------------------------------------------------------
-- configure_queue: upsert; NULL keeps a setting.
-- ---------------------------------------------------------------------------
SELECT pg_temp.meta('qa_conf') AS before;
SELECT awa.configure_queue('qa_conf');
SELECT pg_temp.meta('qa_conf') AS defaults;
SELECT awa.configure_queue('qa_conf', true);
SELECT pg_temp.meta('qa_conf') AS dlq_on;
SELECT awa.configure_queue('qa_conf', aging_interval => '30 seconds');
SELECT pg_temp.meta('qa_conf') AS aging_30s;
SELECT awa.configure_queue('qa_conf', default_deadline => '10 minutes');
SELECT pg_temp.meta('qa_conf') AS deadline_10m;
SELECT awa.configure_queue('qa_conf', false, NULL, NULL);
SELECT pg_temp.meta('qa_conf') AS dlq_off;
SELECT awa.configure_queue('qa_conf', NULL, '0', '1 day');
SELECT pg_temp.meta('qa_conf') AS strict_1_day;
SELECT awa.configure_queue('qa_conf', NULL, NULL, NULL);
SELECT pg_temp.meta('qa_conf') AS all_null_keeps;
-- Settings and pause are independent.
SELECT awa.pause_queue('qa_conf');
SELECT pg_temp.meta('qa_conf') AS paused;
SELECT awa.configure_queue('qa_conf', true, '2 minutes', '3 minutes');
SELECT pg_temp.meta('qa_conf') AS configured_while_paused;
SELECT awa.resume_queue('qa_conf');
SELECT pg_temp.meta('qa_conf') AS resumed;
SELECT count(*) AS rows FROM awa.queue_meta WHERE queue = 'qa_conf';
-- pause / resume twice are harmless; resume of an unknown queue creates a row.
SELECT awa.pause_queue('qa_conf'), awa.pause_queue('qa_conf');
SELECT pg_temp.meta('qa_conf') AS paused_twice;
SELECT awa.resume_queue('qa_conf'), awa.resume_queue('qa_conf');
SELECT pg_temp.meta('qa_conf') AS resumed_twice;
SELECT awa.resume_queue('qa_resume_new');
SELECT pg_temp.meta('qa_resume_new') AS resumed_new;
-- The longest valid name.
SELECT awa.configure_queue(repeat('q', 200), aging_interval => '5 seconds');
SELECT pg_temp.meta(repeat('q', 200)) AS name_200;

-- ---------------------------------------------------------------------------
-- Invalid input: SQLSTATE, message and hint; nothing written.
-- ---------------------------------------------------------------------------
SELECT awa.configure_queue('qa_bad', true, '1 minute', '1 minute');
SELECT md5(string_agg(m::text, ',' ORDER BY queue)) AS meta_before FROM awa.queue_meta m \gset
SELECT call, pg_temp.try(call) AS outcome FROM (VALUES
    ($$SELECT awa.configure_queue(NULL)$$),
    ($$SELECT awa.configure_queue(NULL, true)$$),
    ($$SELECT awa.configure_queue('')$$),
    ($$SELECT awa.configure_queue(repeat('q', 201))$$),
    ($$SELECT awa.configure_queue('qa_bad', aging_interval => '-1 second')$$),
    ($$SELECT awa.configure_queue('qa_bad', aging_interval => '-1 microsecond')$$),
    ($$SELECT awa.configure_queue('qa_bad', default_deadline => '0')$$),
    ($$SELECT awa.configure_queue('qa_bad', default_deadline => '-5 minutes')$$),
    ($$SELECT awa.configure_queue('qa_bad', false, '1 minute', '0')$$),
    ($$SELECT awa.pause_queue(NULL)$$),
    ($$SELECT awa.pause_queue('')$$),
    ($$SELECT awa.pause_queue(repeat('q', 201))$$),
    ($$SELECT awa.resume_queue(NULL)$$),
    ($$SELECT awa.resume_queue('')$$),
    ($$SELECT awa.resume_queue(repeat('q', 201))$$)
) AS t(call);
SELECT md5(string_agg(m::text, ',' ORDER BY queue)) = :'meta_before' AS nothing_written FROM awa.queue_meta m;
SELECT pg_temp.meta('qa_bad') AS qa_bad_unchanged;
SELECT count(*) AS long_names FROM awa.queue_meta WHERE length(queue) > 200;

-- promote_due: max_jobs must be 1 to 100000.
SELECT call, pg_temp.try(call) AS outcome FROM (VALUES
    ($$SELECT awa.promote_due(0)$$),
    ($$SELECT awa.promote_due(-1)$$),
    ($$SELECT awa.promote_due(100001)$$),
    ($$SELECT awa.promote_due(NULL)$$)
) AS t(call);
SELECT awa.promote_due(1) AS one, awa.promote_due(100000) AS max, awa.promote_due() AS default_max;

-- ---------------------------------------------------------------------------
-- pause_queue / resume_queue: a paused queue is not claimed; enqueue goes on,
-- and what becomes available is parked (a deferred row in state available)
-- until the resume appends it. promote_due(max_jobs) takes due jobs in
-- run_at order; a paused queue's due job is parked, not appended.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('qa.p1', '{}', 'qa_pause') AS p1 \gset
SELECT awa.enqueue('qa.p2', '{}', 'qa_pause') AS p2 \gset
-- Due soon: qa_pause's job first, then qa_promote's five, in shuffled run_at order.
SELECT awa.enqueue('qa.p3.later', '{}', 'qa_pause', run_at => clock_timestamp() + interval '300 milliseconds') AS p3 \gset
SELECT count(*) AS scheduled
  FROM awa.enqueue_many(ARRAY['qa.r3', 'qa.r1', 'qa.r5', 'qa.r2', 'qa.r4'], NULL, 'qa_promote', NULL,
                        ARRAY[clock_timestamp() + interval '800 milliseconds',
                              clock_timestamp() + interval '600 milliseconds',
                              clock_timestamp() + interval '1000 milliseconds',
                              clock_timestamp() + interval '700 milliseconds',
                              clock_timestamp() + interval '900 milliseconds']);
SELECT awa.pause_queue('qa_pause');
SELECT pg_temp.meta('qa_pause') AS paused;
SELECT count(*) AS claimed_while_paused FROM awa.claim('qa_pause', 10);
SELECT awa.enqueue('qa.p4', '{}', 'qa_pause') IS NOT NULL AS enqueued_while_paused;
SELECT count(*) AS claimed_while_paused FROM awa.claim('qa_pause', 10);
SELECT available, scheduled, running FROM awa.queue_counts('qa_pause');
-- Wait until all six are due.
SELECT pg_sleep(1.2);
SELECT count(*) AS due FROM awa.deferred_jobs WHERE queue IN ('qa_pause', 'qa_promote') AND run_at <= clock_timestamp();
-- The paused queue's due job comes first by run_at: it is parked (state
-- available, still a deferred row) and counts toward max_jobs.
SELECT awa.promote_due(2) AS promoted;
SELECT kind, state FROM awa.deferred_jobs WHERE queue IN ('qa_pause', 'qa_promote') ORDER BY run_at;
SELECT awa.promote_due(2) AS promoted;
SELECT kind, state FROM awa.deferred_jobs WHERE queue IN ('qa_pause', 'qa_promote') ORDER BY run_at;
SELECT awa.promote_due(2) AS promoted;
SELECT awa.promote_due(2) AS promoted_nothing_left;
SELECT kind, state FROM awa.deferred_jobs WHERE queue IN ('qa_pause', 'qa_promote') ORDER BY run_at;
-- Promoted in run_at order: claims see them in that order.
SELECT kind FROM awa.claim('qa_promote', 10);
SELECT awa.get_job(:p3) ->> 'state' AS p3_state;
SELECT available, scheduled, running FROM awa.queue_counts('qa_pause');
-- Resume: the parked jobs go to their lanes; claims work again.
SELECT awa.resume_queue('qa_pause');
SELECT pg_temp.meta('qa_pause') AS resumed;
SELECT kind FROM awa.claim('qa_pause', 10);
SELECT awa.promote_due() AS promoted;
SELECT kind FROM awa.claim('qa_pause', 10);
SELECT * FROM awa.queue_counts('qa_pause');
SELECT * FROM awa.queue_counts_exact('qa_pause');

-- Pause inside a transaction: seen by claims in that transaction, gone
-- after rollback.
SELECT awa.enqueue('qa.p5', '{}', 'qa_pause') AS p5 \gset
BEGIN;
SELECT awa.pause_queue('qa_pause');
SELECT count(*) AS claimed_inside FROM awa.claim('qa_pause');
ROLLBACK;
SELECT pg_temp.meta('qa_pause') AS after_rollback;
SELECT job_id = :p5 AS claimed_p5 FROM awa.claim('qa_pause');

-- ---------------------------------------------------------------------------
-- default_deadline: used by claim when deadline is NULL; an explicit
-- deadline wins; no setting means 5 minutes.
-- ---------------------------------------------------------------------------
SELECT awa.configure_queue('qa_deadline', default_deadline => '2 hours');
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['d1', 'd2', 'd3', 'd4'], NULL, 'qa_deadline');
SELECT kind, deadline_at - now() BETWEEN interval '2 hours' - interval '1 minute' AND interval '2 hours' + interval '1 minute'
       AS deadline_in_2_hours
  FROM awa.claim('qa_deadline');
SELECT kind, deadline_at - now() BETWEEN interval '9 minutes' AND interval '11 minutes' AS deadline_in_10_minutes
  FROM awa.claim('qa_deadline', 1, '10 minutes');
-- A change is seen by the next claim.
SELECT awa.configure_queue('qa_deadline', default_deadline => '3 hours');
SELECT kind, deadline_at - now() BETWEEN interval '3 hours' - interval '1 minute' AND interval '3 hours' + interval '1 minute'
       AS deadline_in_3_hours
  FROM awa.claim('qa_deadline');
-- Other settings changes keep it.
SELECT awa.configure_queue('qa_deadline', dlq_enabled => true);
SELECT kind, deadline_at - now() BETWEEN interval '3 hours' - interval '1 minute' AND interval '3 hours' + interval '1 minute'
       AS deadline_in_3_hours
  FROM awa.claim('qa_deadline');
-- The deadline is recorded in the claim batch and shown by get_job.
SELECT b.deadline_at - b.claimed_at = interval '3 hours' AS batch_deadline_3_hours,
       (awa.get_job(b.first_job_id) ->> 'deadline_at')::timestamptz = b.deadline_at AS get_job_shows_it
  FROM awa.lease_claim_batches b WHERE b.queue = 'qa_deadline' ORDER BY b.batch_id DESC LIMIT 1;
SELECT awa.enqueue('nd1', '{}', 'qa_nodeadline') IS NOT NULL AS ok;
SELECT awa.configure_queue('qa_nodeadline', aging_interval => '10 seconds');
SELECT pg_temp.meta('qa_nodeadline') AS no_deadline_setting;
SELECT kind, deadline_at - now() BETWEEN interval '4 minutes' AND interval '6 minutes' AS deadline_in_5_minutes
  FROM awa.claim('qa_nodeadline');

-- ---------------------------------------------------------------------------
-- Priority aging: a waiting job gains one level per aging_interval (default
-- 60 s); ties go to the longer wait. aging_interval 0 is strict.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('qa.old.p4', '{}', 'qa_aging', 4, now() - interval '10 minutes') IS NOT NULL AS ok;
SELECT awa.enqueue('qa.new.p1', '{}', 'qa_aging', 1) IS NOT NULL AS ok;
SELECT pg_temp.meta('qa_aging') AS default_aging;
SELECT kind, priority FROM awa.claim('qa_aging');
SELECT kind, priority FROM awa.claim('qa_aging');

SELECT awa.configure_queue('qa_strict', aging_interval => '0');
SELECT awa.enqueue('qa.old.p4', '{}', 'qa_strict', 4, now() - interval '10 minutes') IS NOT NULL AS ok;
SELECT awa.enqueue('qa.new.p1', '{}', 'qa_strict', 1) IS NOT NULL AS ok;
SELECT kind, priority FROM awa.claim('qa_strict');
SELECT kind, priority FROM awa.claim('qa_strict');

-- One level after 90 s: priority 3 acts as 2, and waited longer than a fresh
-- priority 2 job; a fresh priority 1 job still goes first.
SELECT awa.enqueue('qa.old.p3', '{}', 'qa_aging2', 3, now() - interval '90 seconds') IS NOT NULL AS ok;
SELECT awa.enqueue('qa.new.p2', '{}', 'qa_aging2', 2) IS NOT NULL AS ok;
SELECT awa.enqueue('qa.new.p1', '{}', 'qa_aging2', 1) IS NOT NULL AS ok;
SELECT kind, priority FROM awa.claim('qa_aging2');
SELECT kind, priority FROM awa.claim('qa_aging2');
SELECT kind, priority FROM awa.claim('qa_aging2');
-- The same with a long aging_interval: strict order.
SELECT awa.configure_queue('qa_aging2', aging_interval => '1 hour');
SELECT awa.enqueue('qa.old.p3', '{}', 'qa_aging2', 3, now() - interval '90 seconds') IS NOT NULL AS ok;
SELECT awa.enqueue('qa.new.p2', '{}', 'qa_aging2', 2) IS NOT NULL AS ok;
SELECT awa.enqueue('qa.new.p1', '{}', 'qa_aging2', 1) IS NOT NULL AS ok;
SELECT kind, priority FROM awa.claim('qa_aging2');
SELECT kind, priority FROM awa.claim('qa_aging2');
SELECT kind, priority FROM awa.claim('qa_aging2');

-- ---------------------------------------------------------------------------
-- A queue that has never had a job.
-- ---------------------------------------------------------------------------
SELECT count(*) AS claimed FROM awa.claim('qa_never', 10);
SELECT * FROM awa.queue_counts('qa_never');
SELECT * FROM awa.queue_counts_exact('qa_never');
SELECT count(*) AS listed FROM awa.queue_counts() WHERE queue = 'qa_never';
SELECT pg_temp.meta('qa_never') AS before;
SELECT awa.configure_queue('qa_never', dlq_enabled => true);
SELECT pg_temp.meta('qa_never') AS after;
SELECT count(*) AS lanes FROM awa.queue_lanes WHERE queue = 'qa_never';
SELECT * FROM awa.queue_counts() WHERE queue = 'qa_never';
SELECT * FROM awa.queue_counts_exact() WHERE queue = 'qa_never';
SELECT count(*) AS claimed FROM awa.claim('qa_never', 10);
