--
-- periodic: awa.schedule_periodic, awa.unschedule_periodic, awa.periodic_jobs,
-- awa.periodic_next (the schedule rules: cron, macros, every <interval>, time
-- zones and DST), and the periodic maintenance step (run here by hand with
-- awa.run_maintenance; the worker is off in these tests).
-- Queues used here: pj_q, pj_backfill.
--
\set VERBOSITY default

\i test/sql/include/try.sql

-- ---------------------------------------------------------------------------
-- periodic_next: a table of cases. DST in America/New_York: 2026-03-08 02:00
-- EST jumps to 03:00 EDT (07:00 UTC); 2026-11-01 02:00 EDT falls back to
-- 01:00 EST (06:00 UTC). A skipped wall-clock time is read with the offset
-- before the jump (02:30 -> 03:30 EDT); a repeated one as its second
-- occurrence (standard time), as PostgreSQL's AT TIME ZONE reads them.
-- ---------------------------------------------------------------------------
SET TIME ZONE 'UTC';
SELECT c.note, c.schedule, c.tz, c.after, awa.periodic_next(c.schedule, c.tz, c.after) AS next_utc,
       awa.periodic_next(c.schedule, c.tz, c.after) AT TIME ZONE c.tz AS next_local
  FROM (VALUES
    ('daily 02:30 the day before spring forward', '30 2 * * *', 'America/New_York', timestamptz '2026-03-07 12:00+00'),
    ('02:30 does not exist: 03:30 EDT',           '30 2 * * *', 'America/New_York', timestamptz '2026-03-08 05:00+00'),
    ('the day after: 02:30 EDT',                  '30 2 * * *', 'America/New_York', timestamptz '2026-03-08 08:00+00'),
    ('hourly into the jump',                      '0 * * * *',  'America/New_York', timestamptz '2026-03-08 06:00+00'),
    ('hourly out of the jump',                    '0 * * * *',  'America/New_York', timestamptz '2026-03-08 07:00+00'),
    ('01:30 happens twice: standard time',        '30 1 * * *', 'America/New_York', timestamptz '2026-11-01 04:00+00'),
    ('hourly at fall back: 01:00 EST',            '0 * * * *',  'America/New_York', timestamptz '2026-11-01 04:00+00'),
    ('hourly after 01:00 EST',                    '0 * * * *',  'America/New_York', timestamptz '2026-11-01 06:00+00'),
    ('every 1 day keeps the wall clock',          'every 1 day', 'America/New_York', timestamptz '2026-03-07 14:00+00'),
    ('every 24 hours keeps the length',           'every 24 hours', 'America/New_York', timestamptz '2026-03-07 14:00+00'),
    ('every 1 day from 02:30 EST: 03:30 EDT',     'every 1 day', 'America/New_York', timestamptz '2026-03-07 07:30+00'),
    ('... and it stays at 03:30',                 'every 1 day', 'America/New_York', timestamptz '2026-03-08 07:30+00'),
    ('weekdays 09:00 Berlin, from a Friday',      '0 9 * * MON-FRI', 'Europe/Berlin', timestamptz '2026-12-04 08:00+00'),
    ('@daily in a half-hour zone',                '@daily', 'Asia/Kolkata', timestamptz '2026-12-02 00:00+00'),
    ('@hourly',                                   '@hourly', 'UTC', timestamptz '2026-12-02 10:00+00'),
    ('@weekly is Sunday midnight',                '@weekly', 'UTC', timestamptz '2026-12-02 10:00+00'),
    ('@monthly',                                  '@monthly', 'UTC', timestamptz '2026-12-02 10:00+00'),
    ('@yearly',                                   '@yearly', 'UTC', timestamptz '2026-12-02 10:00+00'),
    ('every 1 month from the 31st',               'every 1 month', 'UTC', timestamptz '2026-01-31 10:00+00'),
    ('... then the 28th',                         'every 1 month', 'UTC', timestamptz '2026-02-28 10:00+00'),
    ('leap day',                                  '0 0 29 2 *', 'UTC', timestamptz '2026-12-02 00:00+00'),
    ('strictly after: a tick just before',        '*/15 * * * *', 'UTC', timestamptz '2026-12-02 10:14:59.9+00'),
    ('strictly after: on a tick',                 '*/15 * * * *', 'UTC', timestamptz '2026-12-02 10:15:00+00'),
    ('day of month OR day of week',               '0 0 13 * 5', 'UTC', timestamptz '2026-12-02 00:00+00'),
    ('every 2 seconds',                           'every 2 seconds', 'UTC', timestamptz '2026-12-02 10:00:00+00'),
    ('every ISO interval',                        'every PT90M', 'UTC', timestamptz '2026-12-02 10:00:00+00'),
    ('case and spaces',                           '  EVERY   5 minutes ', 'UTC', timestamptz '2026-12-02 10:00:00+00')
  ) AS c(note, schedule, tz, after);

-- Hourly on the fall-back day (25 hours from 00:00 EDT to the next 00:00
-- EST): once per wall-clock hour, 24 ticks, 01:00 at its second occurrence.
WITH RECURSIVE t(tick) AS (
    SELECT awa.periodic_next('0 * * * *', 'America/New_York', timestamptz '2026-11-01 03:59+00')
    UNION ALL
    SELECT awa.periodic_next('0 * * * *', 'America/New_York', tick) FROM t
     WHERE tick < timestamptz '2026-11-02 04:00+00')
SELECT count(*) AS ticks, min(tick) AS first, max(tick) AS last,
       string_agg(to_char(tick AT TIME ZONE 'America/New_York', 'HH24'), ' ' ORDER BY tick) AS local_hours
  FROM t WHERE tick < timestamptz '2026-11-02 05:00+00';

-- Bad schedules and time zones: 22023 with a hint; NULL: 22004.
SELECT s AS schedule, pg_temp.try(format('SELECT awa.periodic_next(%L)', s), false) AS result
  FROM unnest(ARRAY['', '   ', '* * * *', '* * * * * *', '61 * * * *', '* 24 * * *', '* * 0 * *', '* * * 13 *',
                    '* * * * 8', '5-1 * * * *', '*/0 * * * *', '1,,2 * * * *', '@often', '@reboot', '0 0 30 2 *',
                    '0 0 31 4,6,9,11 *', 'every', 'every banana', 'every 0 seconds', 'every -1 hour',
                    'every 500 milliseconds', 'each 5 minutes', 'MON * * * *']) AS s;
SELECT pg_temp.try($$SELECT awa.periodic_next('@daily', 'Mars/Olympus')$$);
SELECT pg_temp.try($$SELECT awa.periodic_next('@daily', '')$$, false);
SELECT pg_temp.try($$SELECT awa.periodic_next(NULL)$$);
SELECT pg_temp.try($$SELECT awa.periodic_next('@daily', NULL)$$);
SELECT pg_temp.try($$SELECT awa.periodic_next('@daily', 'UTC', NULL)$$);
SELECT pg_temp.try($$SELECT awa.periodic_next('@daily', 'UTC', 'infinity')$$);
-- Ticks past the end of timestamptz's range: 22023 with a hint, never an overflow.
SELECT pg_temp.try($$SELECT awa.periodic_next('@daily', 'UTC', '294276-12-31 12:00+00')$$);
SELECT pg_temp.try($$SELECT awa.periodic_next('every 2000000000 days')$$, false);
SELECT pg_temp.try($$SELECT awa.periodic_next('every 2562047000 hours')$$, false);
SELECT pg_temp.try($$SELECT awa.periodic_next('every 1 hour', 'UTC', '294276-12-31 23:30+00')$$, false);

-- ---------------------------------------------------------------------------
-- schedule_periodic: creates, replaces, returns the next run.
-- ---------------------------------------------------------------------------
SELECT awa.schedule_periodic('pj-hourly', '0 * * * *', 'pj.report', '{"r": 1}', 'pj_q') = date_trunc('hour', now()) + interval '1 hour'
       AS next_is_next_hour;
SELECT name, schedule, timezone, kind, args, queue, priority, opts, last_run_at, last_job_id
  FROM awa.periodic_jobs ORDER BY name;
-- The same definition again keeps the next run (a deploy that schedules at
-- every start); another definition recomputes it.
UPDATE awa.periodic_schedules SET next_run_at = next_run_at + interval '5 minutes' WHERE name = 'pj-hourly';
SELECT awa.schedule_periodic('pj-hourly', '0 * * * *', 'pj.report', '{"r": 2}', 'pj_q', 3)
       = date_trunc('hour', now()) + interval '65 minutes' AS kept_next_run;
SELECT args, priority FROM awa.periodic_jobs WHERE name = 'pj-hourly';
SELECT awa.schedule_periodic('pj-hourly', '30 * * * *', 'pj.report', '{"r": 2}', 'pj_q', 3)
       = awa.periodic_next('30 * * * *', 'UTC', date_trunc('second', now())) AS recomputed;
-- A changed schedule never runs again at or before the last tick enqueued
-- (as if the worker had just enqueued one ten minutes ahead of the clock).
UPDATE awa.periodic_schedules SET last_run_at = date_trunc('second', now()) + interval '10 minutes'
 WHERE name = 'pj-hourly' RETURNING last_run_at AS last_tick \gset
SELECT awa.schedule_periodic('pj-hourly', 'every 30 minutes', 'pj.report', '{"r": 2}', 'pj_q', 3)
       = :'last_tick'::timestamptz + interval '30 minutes' AS after_the_last_tick;
UPDATE awa.periodic_schedules SET last_run_at = NULL WHERE name = 'pj-hourly';

-- Bad input: a clear error, and nothing written.
SELECT count(*) AS schedules_before FROM awa.periodic_schedules;
SELECT pg_temp.try(sql) AS result FROM unnest(ARRAY[
  $$SELECT awa.schedule_periodic(NULL, '@daily', 'k')$$,
  $$SELECT awa.schedule_periodic('b', NULL, 'k')$$,
  $$SELECT awa.schedule_periodic('b', '@daily', NULL)$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', NULL)$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', timezone => NULL)$$,
  $$SELECT awa.schedule_periodic('', '@daily', 'k')$$,
  $$SELECT awa.schedule_periodic(repeat('n', 201), '@daily', 'k')$$,
  $$SELECT awa.schedule_periodic('b', '61 * * * *', 'k')$$,
  $$SELECT awa.schedule_periodic('b', 'every 0 seconds', 'k')$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', timezone => 'Nowhere/Town')$$,
  $$SELECT awa.schedule_periodic('b', '@daily', '')$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', '[1]')$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', queue => '')$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', priority => 5)$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', opts => '[]')$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', opts => '{"backfil": true}')$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', opts => '{"backfill": "yes"}')$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', opts => '{"max_attempts": "3"}')$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', opts => '{"max_attempts": 0}')$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', opts => '{"max_attempts": 1.5}')$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', opts => '{"metadata": [1]}')$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', opts => '{"metadata": {"periodic": 1}}')$$,
  $$SELECT awa.schedule_periodic('b', '@daily', 'k', opts => '{"tags": "x"}')$$,
  $$SELECT awa.unschedule_periodic(NULL)$$]) AS sql;
SELECT count(*) AS schedules_after FROM awa.periodic_schedules;

-- ---------------------------------------------------------------------------
-- The periodic step. A schedule that missed ticks enqueues the latest due
-- one only; with opts.backfill, every missed tick, in order. Each job's
-- metadata.periodic names the schedule and the tick.
-- ---------------------------------------------------------------------------
SELECT awa.schedule_periodic('pj-skip', 'every 1 hour', 'pj.skip', queue => 'pj_q',
                             opts => '{"max_attempts": 3, "metadata": {"team": "ops"}, "tags": ["cron"]}') IS NOT NULL AS scheduled;
SELECT awa.schedule_periodic('pj-fill', 'every 1 hour', 'pj.fill', queue => 'pj_backfill',
                             opts => '{"backfill": true}') IS NOT NULL AS scheduled;
-- Both missed three ticks and a half: due since 3 h 30 min ago.
UPDATE awa.periodic_schedules SET next_run_at = date_trunc('second', now()) - interval '3 hours 30 minutes'
 WHERE name IN ('pj-skip', 'pj-fill');
SELECT date_trunc('second', now()) AS t0 \gset
SELECT task, outcome, detail FROM awa.run_maintenance('periodic');
SELECT kind, max_attempts, metadata -> 'team' AS team, awa.get_job(job_id) -> 'tags' AS tags,
       (metadata #>> '{periodic,tick}')::timestamptz = :'t0'::timestamptz - interval '30 minutes' AS tick_is_latest_due,
       metadata #>> '{periodic,name}' AS name
  FROM awa.claim('pj_q', 10);
SELECT count(*) AS backfilled,
       array_agg((metadata #>> '{periodic,tick}')::timestamptz - :'t0'::timestamptz ORDER BY job_id) AS ticks
  FROM awa.claim('pj_backfill', 10);
SELECT name, next_run_at - :'t0'::timestamptz AS next_in, last_run_at - :'t0'::timestamptz AS last,
       last_job_id IS NOT NULL AS has_job
  FROM awa.periodic_jobs WHERE name IN ('pj-skip', 'pj-fill') ORDER BY name;
-- Nothing is due any more: a second step enqueues nothing.
SELECT task, outcome, detail FROM awa.run_maintenance('periodic');

-- A schedule that cannot enqueue (its time zone is gone, as if removed from
-- the system) is rolled back alone: it keeps its next run, records its
-- error, and a WARNING says so; another due schedule is enqueued. Its next
-- successful tick clears the error.
SELECT awa.schedule_periodic('pj-broken', 'every 1 hour', 'pj.broken', queue => 'pj_q') IS NOT NULL AS scheduled;
UPDATE awa.periodic_schedules SET timezone = 'Nowhere/Land' WHERE name = 'pj-broken';
UPDATE awa.periodic_schedules SET next_run_at = now() - interval '1 minute' WHERE name IN ('pj-broken', 'pj-skip');
SELECT task, outcome, detail FROM awa.run_maintenance('periodic');
SELECT name, last_error, next_run_at < now() AS still_due FROM awa.periodic_jobs
 WHERE name IN ('pj-broken', 'pj-skip') ORDER BY name;
SELECT kind FROM awa.claim('pj_q', 10);
UPDATE awa.periodic_schedules SET timezone = 'UTC' WHERE name = 'pj-broken';
SELECT task, outcome, detail FROM awa.run_maintenance('periodic');
SELECT name, last_error, next_run_at > now() AS done FROM awa.periodic_jobs WHERE name = 'pj-broken';
SELECT kind FROM awa.claim('pj_q', 10);
SELECT awa.unschedule_periodic('pj-broken');

-- A rotation in the same transaction: run_maintenance('all') runs the
-- periodic step before any rotation, so it can enqueue.
UPDATE awa.periodic_schedules SET next_run_at = now() - interval '1 second' WHERE name = 'pj-skip';
SELECT outcome FROM awa.run_maintenance('all') WHERE task = 'periodic';
SELECT count(*) AS enqueued FROM awa.claim('pj_q', 10);

-- unschedule_periodic: true once, then false; the jobs stay.
SELECT awa.unschedule_periodic('pj-skip') AS removed, awa.unschedule_periodic('pj-skip') AS again;
SELECT awa.unschedule_periodic('pj-fill'), awa.unschedule_periodic('pj-hourly');
SELECT count(*) AS schedules_left FROM awa.periodic_jobs;

-- ---------------------------------------------------------------------------
-- Only awa_admin schedules.
-- ---------------------------------------------------------------------------
CREATE ROLE pj_admin IN ROLE awa_admin;
CREATE ROLE pj_producer IN ROLE awa_producer;
CREATE ROLE pj_monitor IN ROLE awa_monitor;
SET ROLE pj_producer;
SELECT pg_temp.try($$SELECT awa.schedule_periodic('p', '@daily', 'k')$$);
SELECT pg_temp.try($$SELECT * FROM awa.periodic_jobs$$);
SET ROLE pj_monitor;
SELECT pg_temp.try($$SELECT awa.unschedule_periodic('p')$$);
SET ROLE pj_admin;
SELECT awa.schedule_periodic('pj-admin', '@daily', 'k') IS NOT NULL AS admin_schedules;
SELECT name FROM awa.periodic_jobs;
SELECT awa.unschedule_periodic('pj-admin');
RESET ROLE;
DROP ROLE pj_admin, pj_producer, pj_monitor;
RESET TIME ZONE;
