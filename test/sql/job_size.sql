--
-- job_size: the limits on what one enqueue may store (issue 20 §3).
-- awa.max_job_bytes bounds a job's args plus its stored options (metadata,
-- tags; not the unique keys, which are not stored), measured as PostgreSQL
-- holds them uncompressed; awa.max_call_bytes bounds the sum over one
-- awa.enqueue_many call. Both refuse with 54000 and a hint, before anything is
-- written; both can be set only by a superuser. awa._check_job (through
-- awa.schedule_periodic) applies the same rule.
-- The limits are lowered in this session (4kB, 10kB) so the values are small.
-- Queues used here: js_q, js_many, js_call, js_periodic.
--
\set VERBOSITY default

\i test/sql/include/try.sql

\i test/sql/include/footprint.sql

-- What an enqueue can write: the tables (footprint), the job id sequence and
-- the periodic schedules.
CREATE FUNCTION pg_temp.state() RETURNS jsonb LANGUAGE sql AS $f$
SELECT pg_temp.footprint()
       || jsonb_build_object('job_id_seq', coalesce(pg_sequence_last_value('awa.job_id_seq'), 0),
                             'periodic', (SELECT count(*) FROM awa.periodic_schedules))
$f$;

-- A jsonb object of exactly `bytes` bytes (uncompressed): {"k": "xxx..."},
-- or as opts {"metadata": {"k": "xxx..."}}. The string is the last datum of
-- both, unpadded, so the size grows by one byte per character.
CREATE FUNCTION pg_temp.args_of(bytes int) RETURNS jsonb LANGUAGE sql AS $f$
SELECT jsonb_build_object('k', repeat('x', bytes - pg_column_size('{"k": ""}'::jsonb)))
$f$;
CREATE FUNCTION pg_temp.metadata_of(bytes int) RETURNS jsonb LANGUAGE sql AS $f$
SELECT jsonb_build_object('metadata',
                          jsonb_build_object('k', repeat('x', bytes - pg_column_size('{"metadata": {"k": ""}}'::jsonb))))
$f$;
SELECT b, pg_column_size(pg_temp.args_of(b)) AS args_bytes, pg_column_size(pg_temp.metadata_of(b)) AS opts_bytes
  FROM unnest(ARRAY[100, 2047, 2048, 2049, 4088, 4089, 4095, 4096, 4097]) b;
SELECT pg_column_size('{}'::jsonb) AS empty_args_bytes;

-- ---------------------------------------------------------------------------
-- The settings: defaults, units, ranges, context.
-- ---------------------------------------------------------------------------
SELECT name, setting, unit, boot_val, min_val, max_val, context, vartype
  FROM pg_settings WHERE name IN ('awa.max_job_bytes', 'awa.max_call_bytes') ORDER BY name;
SHOW awa.max_job_bytes;
SHOW awa.max_call_bytes;
-- Units: '2kB' is 2048 bytes; a bare number is bytes; out of range is 22023.
SET awa.max_job_bytes = '2kB';
SELECT current_setting('awa.max_job_bytes') AS shown,
       (SELECT setting FROM pg_settings WHERE name = 'awa.max_job_bytes') AS bytes;
SET awa.max_job_bytes = 4096;
SHOW awa.max_job_bytes;
SET awa.max_job_bytes = 5000;
SHOW awa.max_job_bytes;
SET awa.max_job_bytes = '1GB';
SHOW awa.max_job_bytes;
SELECT s, pg_temp.try(format('SET awa.max_job_bytes = %L', s), false) AS outcome
  FROM unnest(ARRAY['1023', '2GB', '-1', 'lots']) s;
SET awa.max_call_bytes = '2147483647';
SHOW awa.max_call_bytes;
SELECT s, pg_temp.try(format('SET awa.max_call_bytes = %L', s), false) AS outcome
  FROM unnest(ARRAY['1023', '2GB']) s;
RESET awa.max_job_bytes;
RESET awa.max_call_bytes;
SHOW awa.max_job_bytes;
SHOW awa.max_call_bytes;

-- ---------------------------------------------------------------------------
-- awa.enqueue under awa.max_job_bytes = 4kB: args alone, metadata alone,
-- both; just under, exactly at and just over the limit.
-- ---------------------------------------------------------------------------
SET awa.max_job_bytes = '4kB';
SELECT pg_temp.state() AS before \gset
SELECT c.what, pg_temp.try(c.call) AS outcome FROM (VALUES
    ('args 4095', $$SELECT awa.enqueue('js', pg_temp.args_of(4095), 'js_q')$$),
    ('args 4096', $$SELECT awa.enqueue('js', pg_temp.args_of(4096), 'js_q')$$),
    ('metadata 4087 + {} 8', $$SELECT awa.enqueue('js', '{}', 'js_q', opts => pg_temp.metadata_of(4087))$$),
    ('metadata 4088 + {} 8', $$SELECT awa.enqueue('js', '{}', 'js_q', opts => pg_temp.metadata_of(4088))$$),
    ('args 2048 + metadata 2047', $$SELECT awa.enqueue('js', pg_temp.args_of(2048), 'js_q',
                                                        opts => pg_temp.metadata_of(2047))$$),
    ('args 2048 + metadata 2048', $$SELECT awa.enqueue('js', pg_temp.args_of(2048), 'js_q',
                                                        opts => pg_temp.metadata_of(2048))$$)
) AS c(what, call);
SELECT pg_temp.written(:'before') AS written_by_six;
SELECT count(*) AS jobs, min(pg_column_size(args::text::jsonb) + coalesce(pg_column_size(payload::text::jsonb), 0)) AS smallest,
       max(pg_column_size(args::text::jsonb) + coalesce(pg_column_size(payload::text::jsonb), 0)) AS largest
  FROM awa.ready_entries WHERE queue = 'js_q';

SELECT pg_temp.state() AS before \gset
SELECT c.what, pg_temp.try(c.call) AS outcome FROM (VALUES
    ('args 4097', $$SELECT awa.enqueue('js', pg_temp.args_of(4097), 'js_q')$$),
    ('metadata 4089 + {} 8', $$SELECT awa.enqueue('js', '{}', 'js_q', opts => pg_temp.metadata_of(4089))$$),
    ('args 2048 + metadata 2049', $$SELECT awa.enqueue('js', pg_temp.args_of(2048), 'js_q',
                                                        opts => pg_temp.metadata_of(2049))$$),
    -- scheduled, unique, a new queue: the size is checked first all the same
    ('scheduled', $$SELECT awa.enqueue('js', pg_temp.args_of(4097), 'js_q', run_at => now() + interval '1 day')$$),
    ('unique by args', $$SELECT awa.enqueue('js', pg_temp.args_of(4097), 'js_q', opts => '{"unique": {}}')$$),
    ('new queue', $$SELECT awa.enqueue('js', pg_temp.args_of(4097), 'js_new_queue', priority => 4)$$),
    -- tags count as stored metadata
    ('tags', $$SELECT awa.enqueue('js', pg_temp.args_of(4096), 'js_q', opts => '{"tags": ["t"]}')$$),
    -- a bad option is reported before the size (options are checked first)
    ('bad option', $$SELECT awa.enqueue('js', pg_temp.args_of(4097), 'js_q', opts => '{"bad": 1}')$$),
    ('200 kB', $$SELECT awa.enqueue('js', pg_temp.args_of(204800), 'js_q')$$)
) AS c(what, call);
SELECT pg_temp.state() = :'before'::jsonb AS nothing_written;

-- The unique keys are not stored, so they do not count: a job at the limit
-- with unique options is accepted (and takes its key).
SELECT pg_temp.state() AS before \gset
SELECT awa.enqueue('js.unique', pg_temp.args_of(4096), 'js_q', opts => '{"unique": {"by_args": true}}') > 0 AS enqueued;
SELECT awa.enqueue('js.unique', pg_temp.args_of(4096), 'js_q',
                   opts => '{"unique_key": "js-key", "unique": {"period": "1 hour"}}') > 0 AS enqueued;
SELECT pg_temp.written(:'before') AS written;

-- Size is measured uncompressed: args read from a column where PostgreSQL
-- stores them compressed (in far fewer than 4 kB) are 5000 bytes all the same.
CREATE TEMP TABLE js_stored (args jsonb);
INSERT INTO js_stored VALUES (pg_temp.args_of(5000));
SELECT pg_column_size(args) < 1000 AS stored_compressed FROM js_stored;
SELECT pg_temp.try($$SELECT awa.enqueue('js', args, 'js_q') FROM js_stored$$) AS outcome;

-- The default limit, 1MB: 1048576 bytes are accepted, one more or 2 MB refused.
RESET awa.max_job_bytes;
SELECT pg_temp.state() AS before \gset
SELECT pg_temp.try($$SELECT awa.enqueue('js', pg_temp.args_of(2 * 1024 * 1024), 'js_q')$$) AS outcome;
SELECT pg_temp.try($$SELECT awa.enqueue('js', pg_temp.args_of(1048576), 'js_q')$$) AS outcome;
SELECT pg_temp.try($$SELECT awa.enqueue('js', pg_temp.args_of(1048577), 'js_q')$$) AS outcome;
SELECT pg_temp.written(:'before') AS written;

-- ---------------------------------------------------------------------------
-- awa.enqueue_many: each job under awa.max_job_bytes (naming jobs[I]), the
-- call under awa.max_call_bytes (the sum, added element by element).
-- ---------------------------------------------------------------------------
SET awa.max_job_bytes = '4kB';
SET awa.max_call_bytes = '10kB';
SELECT pg_temp.state() AS before \gset
SELECT c.what, pg_temp.try(c.call) AS outcome FROM (VALUES
    ('job 2 over', $$SELECT awa.enqueue_many(ARRAY['a', 'b', 'c'],
                                             ARRAY['{}', pg_temp.args_of(4097), '{}'], 'js_many')$$),
    ('job 3 over by its metadata', $$SELECT awa.enqueue_many(ARRAY['a', 'b', 'c'],
                                             ARRAY['{}', '{}', pg_temp.args_of(4000)], 'js_many', NULL, NULL, 25,
                                             ARRAY[NULL, NULL, pg_temp.metadata_of(97)])$$),
    ('job 1 over, args NULL', $$SELECT awa.enqueue_many(ARRAY['a'], NULL, 'js_many', NULL, NULL, 25,
                                             ARRAY[pg_temp.metadata_of(4089)])$$),
    ('call 4096 + 4096 + 2049', $$SELECT awa.enqueue_many(ARRAY['a', 'b', 'c'],
                                             ARRAY[pg_temp.args_of(4096), pg_temp.args_of(4096), pg_temp.args_of(2049)],
                                             'js_many')$$),
    ('call 3 x 4096, then a bad kind', $$SELECT awa.enqueue_many(ARRAY['a', 'b', 'c', NULL],
                                             ARRAY[pg_temp.args_of(4096), pg_temp.args_of(4096), pg_temp.args_of(4096),
                                                   '{}'], 'js_many')$$),
    ('a bad kind and a job over, in job 1', $$SELECT awa.enqueue_many(ARRAY[NULL, 'b'],
                                             ARRAY[pg_temp.args_of(4097), '{}'], 'js_many')$$),
    ('unique, over', $$SELECT awa.enqueue_many(ARRAY['a', 'b'], ARRAY['{}', pg_temp.args_of(4097)], 'js_many',
                                             NULL, NULL, 25, ARRAY['{"unique_key": "m1"}', '{"unique": {}}']::jsonb[])$$)
) AS c(what, call);
SELECT pg_temp.state() = :'before'::jsonb AS nothing_written;

-- Exactly at both limits: two jobs of 4096 bytes and one of 2048 (10240).
SELECT pg_temp.state() AS before \gset
SELECT count(*) AS ids
  FROM awa.enqueue_many(ARRAY['a', 'b', 'c'],
                        ARRAY[pg_temp.args_of(4096), pg_temp.args_of(2048), '{}'], 'js_many', NULL, NULL, 25,
                        ARRAY[NULL, NULL, pg_temp.metadata_of(4088)]);
SELECT pg_temp.written(:'before') AS written;

-- NULL args count as '{}' (8 bytes) each: 1024 / 8 = 128 jobs fit in 1kB.
SET awa.max_call_bytes = '1kB';
SELECT pg_temp.state() AS before \gset
SELECT count(*) AS ids FROM awa.enqueue_many(array(SELECT 'n' FROM generate_series(1, 128)), NULL, 'js_call');
SELECT pg_temp.written(:'before') AS written;
SELECT pg_temp.state() AS before \gset
SELECT pg_temp.try($$SELECT awa.enqueue_many(array(SELECT 'n' FROM generate_series(1, 129)), NULL, 'js_call')$$)
       AS outcome;
-- A call limit below the job limit: one job between the two is refused by
-- enqueue_many (naming jobs[1]) and accepted by enqueue.
SELECT pg_temp.try($$SELECT awa.enqueue_many(ARRAY['a'], ARRAY[pg_temp.args_of(2000)], 'js_call')$$) AS outcome;
SELECT pg_temp.state() = :'before'::jsonb AS nothing_written;
RESET awa.max_call_bytes;

-- ---------------------------------------------------------------------------
-- awa.schedule_periodic checks its job with awa._check_job: the same rule,
-- counting the metadata.periodic each tick adds (the same size for names of
-- the same length: js-at, js-ov).
-- ---------------------------------------------------------------------------
-- (::text::jsonb: a fresh value, as the check sees it; a short SQL function
-- result such as this may come packed with a 1-byte header, 3 bytes less.)
SELECT pg_column_size(awa._periodic_job_opts('js-at', '{}', now())::text::jsonb) AS periodic_opts_bytes \gset
SELECT pg_temp.state() AS before \gset
SELECT pg_temp.try(format($$SELECT awa.schedule_periodic('js-ov', '@hourly', 'js.periodic',
                                                         pg_temp.args_of(%s), 'js_periodic')$$,
                          4096 - :periodic_opts_bytes + 1)) AS over;
SELECT pg_temp.try($$SELECT awa._check_job('js', pg_temp.args_of(4097), 'js_periodic', 2, NULL, 25, NULL)$$)
       AS check_job_over;
SELECT pg_temp.state() = :'before'::jsonb AS nothing_written;
SELECT awa.schedule_periodic('js-at', '@hourly', 'js.periodic', pg_temp.args_of(4096 - :periodic_opts_bytes),
                             'js_periodic') > now() AS scheduled;
SELECT pg_temp.try($$SELECT awa._check_job('js', pg_temp.args_of(4096), 'js_periodic', 2, NULL, 25, NULL)$$)
       AS check_job_at;
-- Its tick is the same size, so it is enqueued under the same limit; under a
-- lower limit the tick fails (last_error) and nothing is enqueued.
UPDATE awa.periodic_schedules SET next_run_at = now() - interval '1 second' WHERE name = 'js-at';
SET awa.max_job_bytes = '2kB';
SELECT task, outcome, detail FROM awa.run_maintenance('periodic');
SELECT name, last_error, last_job_id IS NULL AS no_job FROM awa.periodic_jobs WHERE name = 'js-at';
SET awa.max_job_bytes = '4kB';
SELECT task, outcome, detail FROM awa.run_maintenance('periodic');
SELECT pg_column_size(args::text::jsonb) + pg_column_size(payload::text::jsonb) AS tick_job_bytes
  FROM awa.ready_entries WHERE queue = 'js_periodic';
SELECT awa.unschedule_periodic('js-at');

-- ---------------------------------------------------------------------------
-- Only a superuser sets the limits: a producer can neither raise nor lower
-- them (42501), by SET, set_config, RESET or ALTER ROLE, and is held to the
-- session's limit.
-- ---------------------------------------------------------------------------
CREATE ROLE regress_awa_js_producer LOGIN IN ROLE awa_producer;
SET awa.max_job_bytes = '4kB';
SET ROLE regress_awa_js_producer;
SELECT c.call, pg_temp.try(c.call) AS outcome FROM (VALUES
    ($$SET awa.max_job_bytes = '1GB'$$),
    ($$SET awa.max_job_bytes = '2kB'$$),
    ($$SET LOCAL awa.max_job_bytes = '1GB'$$),
    ($$SELECT set_config('awa.max_job_bytes', '1GB', false)$$),
    ($$RESET awa.max_job_bytes$$),
    ($$SET awa.max_call_bytes = '1GB'$$),
    ($$ALTER ROLE regress_awa_js_producer SET awa.max_job_bytes = '1GB'$$)
) AS c(call);
SHOW awa.max_job_bytes;
SELECT pg_temp.try($$SELECT awa.enqueue('js', pg_temp.args_of(4097), 'js_q')$$) AS producer_over;
SELECT awa.enqueue('js', pg_temp.args_of(4096), 'js_q') > 0 AS producer_at;
RESET ROLE;
-- A superuser may lower and raise it for a session.
SET awa.max_job_bytes = '8kB';
SELECT awa.enqueue('js', pg_temp.args_of(8192), 'js_q') > 0 AS superuser_raised;
SET awa.max_job_bytes = '1kB';
SELECT pg_temp.try($$SELECT awa.enqueue('js', pg_temp.args_of(1025), 'js_q')$$) AS superuser_lowered;
RESET awa.max_job_bytes;
SHOW awa.max_job_bytes;
-- A superuser may delegate it on purpose (GRANT SET ON PARAMETER) ...
GRANT SET ON PARAMETER awa.max_job_bytes TO regress_awa_js_producer;
SET ROLE regress_awa_js_producer;
SET awa.max_job_bytes = '2MB';
SHOW awa.max_job_bytes;
SELECT pg_temp.try($$SET awa.max_call_bytes = '1GB'$$) AS call_bytes_still_refused;
RESET ROLE;
RESET awa.max_job_bytes;
REVOKE SET ON PARAMETER awa.max_job_bytes FROM regress_awa_js_producer;
-- ... and set it per role, which the role's next session gets.
ALTER ROLE regress_awa_js_producer SET awa.max_job_bytes = '3kB';
\set su :USER
\c - regress_awa_js_producer
SHOW awa.max_job_bytes;
SET awa.max_job_bytes = '1GB';
\c - :su
SHOW awa.max_job_bytes;
ALTER ROLE regress_awa_js_producer RESET awa.max_job_bytes;
DROP ROLE regress_awa_js_producer;
