--
-- durations: awa.duration, the type of every API parameter that is a length
-- of time (claim's deadline and wait, retry's and snooze's delay,
-- configure_queue's aging_interval and default_deadline): an interval, a
-- string, or a number of seconds (smallint, integer, bigint, real, double
-- precision, numeric). Every accepted form for every parameter, what each
-- refusal says (SQLSTATE, message, hint) and that it writes nothing, and
-- prepared statements with untyped parameters (what a driver sends).
-- Queues used here: du_deadline, du_wait, du_wait_empty, du_retry, du_snooze,
-- du_conf, du_bad, du_prep, du_role. Roles: regress_awa_du_*.
--
\set VERBOSITY default

\i test/sql/include/try.sql

\i test/sql/include/footprint.sql

-- ---------------------------------------------------------------------------
-- The type: interval's storage, input and output; casts.
-- ---------------------------------------------------------------------------
SELECT t.typname, t.typlen, t.typbyval, t.typalign, t.typstorage, t.typcategory, t.typispreferred,
       (t.typlen, t.typbyval, t.typalign, t.typstorage) = (i.typlen, i.typbyval, i.typalign, i.typstorage)
           AS stored_as_interval,
       obj_description(t.oid, 'pg_type') AS description
  FROM pg_type t, pg_type i
 WHERE t.oid = 'awa.duration'::regtype AND i.oid = 'interval'::regtype;
SELECT castsource::regtype AS source, casttarget::regtype AS target,
       CASE castmethod WHEN 'b' THEN 'binary' WHEN 'f' THEN castfunc::regprocedure::text END AS method,
       CASE castcontext WHEN 'i' THEN 'implicit' WHEN 'a' THEN 'assignment' ELSE 'explicit' END AS context
  FROM pg_cast
 WHERE castsource = 'awa.duration'::regtype OR casttarget = 'awa.duration'::regtype
 ORDER BY castsource::regtype::text, casttarget::regtype::text;

-- Every form, as a duration and compared with the interval it stands for. A
-- number is that many seconds, all in the time field (as interval reads a
-- bare number: 172800 is 48:00:00, not 2 days), rounded to the microsecond.
CREATE TEMP TABLE du_forms (ord int, form text, expected interval);
INSERT INTO du_forms VALUES
    (1, '5', '5 seconds'),
    (2, '5::smallint', '5 seconds'),
    (3, '5::bigint', '5 seconds'),
    (4, '2.5', '2.5 seconds'),
    (5, '2.5::real', '2.5 seconds'),
    (6, '2.5::double precision', '2.5 seconds'),
    (7, '0.000001', '1 microsecond'),
    (8, '0.0000004', '0'),
    (9, '172800', '48 hours'),
    (10, '-3', '-3 seconds'),
    (11, '''5''', '5 seconds'),
    (12, '''2.5''', '2.5 seconds'),
    (13, '''3 seconds''', '3 seconds'),
    (14, '''PT1M30S''', '90 seconds'),
    (15, '''1 day 2 hours''', '1 day 2 hours'),
    (16, 'interval ''3 s''', '3 seconds'),
    (17, 'make_interval(secs => 2.5)', '2.5 seconds'),
    (18, '9223372036854', '9223372036854 seconds');
CREATE FUNCTION pg_temp.as_duration(form text) RETURNS awa.duration LANGUAGE plpgsql AS $f$
DECLARE
    d awa.duration;
BEGIN
    EXECUTE format('SELECT (%s)::awa.duration', form) INTO d;
    RETURN d;
END
$f$;
SELECT form, pg_temp.as_duration(form) AS duration, pg_temp.as_duration(form) = expected AS as_expected,
       pg_temp.as_duration(form)::interval::text = expected::text AS same_text
  FROM du_forms ORDER BY ord;
-- A duration is used wherever an interval is (implicit cast back).
SELECT 5::awa.duration + interval '1 second' AS plus, 5::awa.duration < interval '6 seconds' AS less,
       pg_typeof(coalesce(NULL::awa.duration, interval '1 second')) AS coalesced,
       pg_typeof(CASE WHEN true THEN interval '1 second' ELSE 5::awa.duration END) AS case_type,
       pg_typeof('5'::awa.duration::interval) AS back;
-- Binary send and receive are interval's.
SELECT awa._duration_send('90 seconds') = interval_send('90 seconds') AS same_bytes;

-- What is refused, before any function sees it.
SELECT pg_temp.try(format('SELECT (%s)::awa.duration', bad)) AS refused
  FROM unnest(ARRAY['''NaN''::numeric', '''NaN''::double precision', '''Infinity''::numeric',
                    '''-Infinity''::double precision', '''Infinity''::real', '1e400', '1e300::double precision',
                    '9223372036855', '-9223372036855::bigint', '''abc''', '''99999999999999999 seconds''',
                    'true', '''5''::text']) WITH ORDINALITY b(bad, n)
 ORDER BY n;
-- As psql shows them: the string's position is kept, and a wrong type names
-- the argument and the type passed.
SELECT count(*) FROM awa.claim('du_wait', wait => '5 sec0nds');
SELECT count(*) FROM awa.claim('du_wait', wait => 'NaN'::numeric);
SELECT count(*) FROM awa.claim('du_wait', wait => true);

-- ---------------------------------------------------------------------------
-- claim's deadline: every form. deadline_at - claimed_at is the deadline.
-- ---------------------------------------------------------------------------
CREATE FUNCTION pg_temp.claim_deadline(form text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    n int;
    d interval;
BEGIN
    PERFORM awa.enqueue('du.deadline', queue => 'du_deadline');
    EXECUTE format('SELECT count(*) FROM awa.claim(''du_deadline'', 1, deadline => %s)', form) INTO n;
    SELECT deadline_at - claimed_at INTO d FROM awa.lease_claim_batches WHERE queue = 'du_deadline'
     ORDER BY batch_id DESC LIMIT 1;
    RETURN format('claimed %s, deadline %s', n, d);
END
$f$;
SELECT form, pg_temp.claim_deadline(form) AS outcome
  FROM (VALUES (1, '30'), (2, '30::smallint'), (3, '30::bigint'), (4, '2.5'), (5, '2.5::real'),
               (6, '2.5::double precision'), (7, '''45'''), (8, '''3 minutes'''), (9, 'interval ''2 minutes'''),
               (10, 'make_interval(secs => 90)'), (11, 'NULL')) f(ord, form)
 ORDER BY ord;
-- Positional, as the examples call it.
SELECT awa.enqueue('du.deadline', queue => 'du_deadline') IS NOT NULL AS ok;
SELECT count(*) AS claimed FROM awa.claim('du_deadline', 1, 600);
SELECT deadline_at - claimed_at AS deadline FROM awa.lease_claim_batches WHERE queue = 'du_deadline'
 ORDER BY batch_id DESC LIMIT 1;

-- ---------------------------------------------------------------------------
-- claim's wait: every form (a job is waiting, so the claim returns at once).
-- The limit, 1 day, is 86400 seconds: the number is read as seconds.
-- ---------------------------------------------------------------------------
CREATE FUNCTION pg_temp.claim_wait(form text) RETURNS int LANGUAGE plpgsql AS $f$
DECLARE
    n int;
BEGIN
    PERFORM awa.enqueue('du.wait', queue => 'du_wait');
    EXECUTE format('SELECT count(*) FROM awa.claim(''du_wait'', 1, wait => %s)', form) INTO n;
    RETURN n;
END
$f$;
SELECT form, pg_temp.claim_wait(form) AS claimed
  FROM (VALUES (1, '5'), (2, '5::smallint'), (3, '5::bigint'), (4, '2.5'), (5, '2.5::real'),
               (6, '2.5::double precision'), (7, '''5'''), (8, '''3 seconds'''), (9, 'interval ''3 s'''),
               (10, 'make_interval(secs => 2.5)'), (11, 'NULL'), (12, '0'), (13, '86400'), (14, '''1 day''')) f(ord, form)
 ORDER BY ord;
-- Nothing to claim: a short wait passes and the claim returns no row.
SELECT count(*) AS none FROM awa.claim('du_wait_empty', 1, wait => 0.001);
SELECT count(*) AS none FROM awa.claim('du_wait_empty', 1, NULL, 0);

-- ---------------------------------------------------------------------------
-- retry's and snooze's delay: every form. run_at is the call's time plus
-- the delay (between the clock read before and after the call).
-- ---------------------------------------------------------------------------
CREATE FUNCTION pg_temp.end_with(fn text, form text, expected interval) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    q text := 'du_' || fn;
    j bigint;
    l bigint;
    r bigint;
    outcome text;
    t0 timestamptz;
    t1 timestamptz;
    run_at_v timestamptz;
BEGIN
    PERFORM awa.enqueue('du.' || fn, queue => q, max_attempts => 5);
    SELECT c.job_id, c.run_lease, c.receipt_id INTO j, l, r FROM awa.claim(q) c;
    t0 := clock_timestamp();
    EXECUTE format(CASE fn WHEN 'retry' THEN 'SELECT awa.retry(%s, %s, %s, ''e'', delay => %s)'
                           ELSE 'SELECT awa.snooze(%s, %s, %s, delay => %s)' END, j, l, r, form) INTO outcome;
    t1 := clock_timestamp();
    SELECT run_at INTO run_at_v FROM awa.deferred_jobs WHERE job_id = j;
    RETURN outcome || ', ' || CASE WHEN expected IS NULL THEN 'run_at after the call: ' || (run_at_v > t0)::text
                                   ELSE 'run_at = now + delay: ' || (run_at_v BETWEEN t0 + expected AND t1 + expected)::text
                              END;
END
$f$;
CREATE TEMP TABLE du_delays (ord int, form text, expected interval);
INSERT INTO du_delays VALUES
    (1, '600', '10 minutes'), (2, '600::smallint', '10 minutes'), (3, '600::bigint', '10 minutes'),
    (4, '2.5', '2.5 seconds'), (5, '2.5::real', '2.5 seconds'), (6, '2.5::double precision', '2.5 seconds'),
    (7, '0', '0'), (8, '''600''', '10 minutes'), (9, '''10 minutes''', '10 minutes'),
    (10, 'interval ''1 hour''', '1 hour'), (11, 'make_interval(secs => 2.5)', '2.5 seconds');
SELECT form, pg_temp.end_with('retry', form, expected) AS retry FROM du_delays ORDER BY ord;
-- retry without a delay (NULL): the backoff.
SELECT 'NULL' AS form, pg_temp.end_with('retry', 'NULL', NULL) AS retry;
SELECT form, pg_temp.end_with('snooze', form, expected) AS snooze FROM du_delays ORDER BY ord;

-- ---------------------------------------------------------------------------
-- configure_queue's aging_interval and default_deadline: every form, as
-- stored in queue_meta (intervals).
-- ---------------------------------------------------------------------------
CREATE FUNCTION pg_temp.configure(form text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    a interval;
    d interval;
BEGIN
    EXECUTE format('SELECT awa.configure_queue(''du_conf'', aging_interval => %s, default_deadline => %s)', form, form);
    SELECT aging_interval, default_deadline INTO a, d FROM awa.queue_meta WHERE queue = 'du_conf';
    RETURN format('aging %s, deadline %s', a, d);
END
$f$;
SELECT form, pg_temp.configure(form) AS stored
  FROM (VALUES (1, '30'), (2, '30::smallint'), (3, '30::bigint'), (4, '2.5'), (5, '2.5::real'),
               (6, '2.5::double precision'), (7, '''45'''), (8, '''3 minutes'''), (9, 'interval ''2 minutes'''),
               (10, 'make_interval(secs => 90)'), (11, 'NULL')) f(ord, form)
 ORDER BY ord;
SELECT awa.configure_queue('du_conf', NULL, 0, 600);
SELECT aging_interval, default_deadline FROM awa.queue_meta WHERE queue = 'du_conf';
-- The queue's default deadline, given in seconds, is what a claim applies.
SELECT awa.enqueue('du.conf', queue => 'du_conf') IS NOT NULL AS ok;
SELECT count(*) AS claimed FROM awa.claim('du_conf');
SELECT deadline_at - claimed_at AS deadline FROM awa.lease_claim_batches WHERE queue = 'du_conf';

-- ---------------------------------------------------------------------------
-- Refused: SQLSTATE, message and hint, and nothing written. A cast refuses a
-- number that is no duration (22023 NaN or infinite, 22008 out of range)
-- before the function runs; a duration the parameter does not allow is
-- refused by the function's own rule, as it always was; a string that is no
-- interval is 22007; another type names the function and the types passed.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('du.bad', queue => 'du_bad') AS bad_job \gset
SELECT job_id AS bad_j, run_lease AS bad_l, receipt_id AS bad_r FROM awa.claim('du_bad') \gset
SELECT awa.configure_queue('du_bad', NULL, 30, 600);
-- <attempt> stands for the running attempt's job_id, run_lease, receipt_id.
CREATE TEMP TABLE du_refusals (ord serial, call text);
INSERT INTO du_refusals (call) VALUES
    ($$SELECT count(*) FROM awa.claim('du_bad', deadline => 'NaN'::numeric)$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', deadline => 'Infinity'::double precision)$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', deadline => 1e400)$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', deadline => 0)$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', deadline => -1.5)$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', deadline => '0 seconds')$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', deadline => 'abc')$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', deadline => true)$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', wait => 'NaN'::double precision)$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', wait => '-Infinity'::numeric)$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', wait => 9223372036855)$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', wait => -1)$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', wait => 86401)$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', wait => 86400.5)$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', wait => '25 hours')$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', wait => '5 sec0nds')$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', wait => true)$$),
    ($$SELECT count(*) FROM awa.claim('du_bad', wait => '5'::text)$$),
    ($$SELECT awa.retry(<attempt>, 'e', 'NaN'::numeric)$$),
    ($$SELECT awa.retry(<attempt>, 'e', 1e300::double precision)$$),
    ($$SELECT awa.retry(<attempt>, 'e', -1)$$),
    ($$SELECT awa.retry(<attempt>, 'e', '-1 second')$$),
    ($$SELECT awa.retry(<attempt>, 'e', 'soon')$$),
    ($$SELECT awa.retry(<attempt>, 'e', delay => true)$$),
    ($$SELECT awa.snooze(<attempt>, 'Infinity'::real)$$),
    ($$SELECT awa.snooze(<attempt>, -9223372036855::bigint)$$),
    ($$SELECT awa.snooze(<attempt>, -0.5)$$),
    ($$SELECT awa.snooze(<attempt>, NULL)$$),
    ($$SELECT awa.snooze(<attempt>, 'later')$$),
    ($$SELECT awa.snooze(<attempt>, false)$$),
    ($$SELECT awa.configure_queue('du_bad', aging_interval => 'NaN'::numeric)$$),
    ($$SELECT awa.configure_queue('du_bad', aging_interval => -1)$$),
    ($$SELECT awa.configure_queue('du_bad', aging_interval => 'x')$$),
    ($$SELECT awa.configure_queue('du_bad', default_deadline => 'Infinity'::numeric)$$),
    ($$SELECT awa.configure_queue('du_bad', default_deadline => 0)$$),
    ($$SELECT awa.configure_queue('du_bad', default_deadline => 1e400)$$),
    ($$SELECT awa.configure_queue('du_bad', default_deadline => true)$$);
SELECT pg_temp.footprint() AS before_refusals \gset
SELECT ord, call,
       pg_temp.try(replace(call, '<attempt>', format('%s::bigint, %s::bigint, %s::bigint', :bad_j, :bad_l, :bad_r)))
           AS outcome
  FROM du_refusals ORDER BY ord;
SELECT pg_temp.written(:'before_refusals') AS written;
-- The attempt still runs, and du_bad's settings are as they were.
SELECT awa.get_job(:bad_job) ->> 'state' AS state;
SELECT aging_interval, default_deadline FROM awa.queue_meta WHERE queue = 'du_bad';
SELECT awa.complete(:bad_j, :bad_l, :bad_r) AS completed;

-- ---------------------------------------------------------------------------
-- Prepared statements with untyped parameters, as drivers send them (the
-- extended protocol with parameters of unspecified type): the server infers
-- awa.duration, and a text value ('5', '3 seconds'), a number, an interval
-- or NULL is accepted.
-- ---------------------------------------------------------------------------
PREPARE du_claim AS SELECT count(*) FROM awa.claim($1, $2, $3, $4);
PREPARE du_retry AS SELECT awa.retry($1, $2, $3, $4, $5);
PREPARE du_snooze AS SELECT awa.snooze($1, $2, $3, $4);
PREPARE du_configure AS SELECT awa.configure_queue($1, $2, $3, $4);
-- A driver that binds by the inferred type and has no codec for awa.duration
-- writes $1::interval: the parameter is then an interval.
PREPARE du_claim_cast AS SELECT count(*) FROM awa.claim($1, 1, $2::interval, $3::interval);
SELECT name, parameter_types FROM pg_prepared_statements WHERE name LIKE 'du\_%' ORDER BY name;

SELECT awa.enqueue('du.prep', queue => 'du_prep') IS NOT NULL AS ok FROM generate_series(1, 11);
EXECUTE du_claim('du_prep', 1, '5', '3 seconds');
EXECUTE du_claim('du_prep', 1, '2.5', '5');
EXECUTE du_claim('du_prep', 1, 30, 2.5);
EXECUTE du_claim('du_prep', 1, interval '1 minute', NULL);
EXECUTE du_claim('du_prep', 1, NULL, NULL);
EXECUTE du_claim_cast('du_prep', '1 minute', '5');
EXECUTE du_claim_cast('du_prep', interval '45 seconds', NULL);
SELECT deadline_at - claimed_at AS deadline FROM awa.lease_claim_batches WHERE queue = 'du_prep' ORDER BY batch_id;
-- Refusals through the prepared statement keep their SQLSTATE and hint.
SELECT pg_temp.try($$EXECUTE du_claim('du_prep', 1, NULL, '2 days')$$) AS too_long,
       pg_temp.try($$EXECUTE du_claim('du_prep', 1, NULL, 'NaN'::numeric)$$) AS nan,
       pg_temp.try($$EXECUTE du_claim('du_prep', 1, 'abc', NULL)$$) AS not_an_interval;

SELECT c.job_id AS pj, c.run_lease AS pl, c.receipt_id AS pr FROM awa.claim('du_prep') c \gset
SELECT clock_timestamp() AS t0 \gset
EXECUTE du_retry(:pj, :pl, :pr, 'e', '600');
SELECT clock_timestamp() AS t1 \gset
SELECT run_at BETWEEN :'t0'::timestamptz + interval '10 minutes' AND :'t1'::timestamptz + interval '10 minutes'
           AS run_at_is_now_plus_600s
  FROM awa.deferred_jobs WHERE job_id = :pj;
SELECT c.job_id AS pj, c.run_lease AS pl, c.receipt_id AS pr FROM awa.claim('du_prep') c \gset
SELECT clock_timestamp() AS t0 \gset
EXECUTE du_snooze(:pj, :pl, :pr, '2 minutes');
SELECT clock_timestamp() AS t1 \gset
SELECT run_at BETWEEN :'t0'::timestamptz + interval '2 minutes' AND :'t1'::timestamptz + interval '2 minutes'
           AS run_at_is_now_plus_2_minutes
  FROM awa.deferred_jobs WHERE job_id = :pj;
EXECUTE du_configure('du_prep', NULL, '15', '1 hour');
SELECT aging_interval, default_deadline FROM awa.queue_meta WHERE queue = 'du_prep';
-- A parameter declared text is not an interval (as before awa.duration):
-- the caller casts it.
SELECT pg_temp.try($$PREPARE du_text(text) AS SELECT count(*) FROM awa.claim('du_prep', wait => $1)$$) AS text_param;
PREPARE du_text(text) AS SELECT count(*) FROM awa.claim('du_prep', wait => $1::awa.duration);
EXECUTE du_text('5');
-- Parameters declared as numbers or as interval (a driver that sends typed
-- values): numbers are seconds, intervals pass as they are.
PREPARE du_typed(integer, numeric, interval) AS SELECT count(*) FROM awa.claim('du_prep', 1, $3, $1 * $2);
EXECUTE du_typed(2, 1.5, '20 seconds');
SELECT deadline_at - claimed_at AS deadline FROM awa.lease_claim_batches WHERE queue = 'du_prep'
 ORDER BY batch_id DESC LIMIT 1;
DEALLOCATE ALL;

-- ---------------------------------------------------------------------------
-- Privileges: the casts from numbers run as the caller; awa_worker and
-- awa_admin may execute them, so a worker passes seconds.
-- ---------------------------------------------------------------------------
CREATE ROLE regress_awa_du_worker IN ROLE awa_worker;
CREATE ROLE regress_awa_du_nobody;
GRANT USAGE ON SCHEMA awa TO regress_awa_du_nobody;
SELECT awa.enqueue('du.role', queue => 'du_role') IS NOT NULL AS ok;
SET ROLE regress_awa_du_worker;
SELECT count(*) AS claimed FROM awa.claim('du_role', 1, 60, 2.5);
RESET ROLE;
SELECT deadline_at - claimed_at AS deadline FROM awa.lease_claim_batches WHERE queue = 'du_role';
SET ROLE regress_awa_du_nobody;
SELECT pg_temp.try($$SELECT 5::awa.duration$$) AS cast_without_grant,
       pg_temp.try($$SELECT '5'::awa.duration$$) AS input_needs_no_grant;
RESET ROLE;
REVOKE USAGE ON SCHEMA awa FROM regress_awa_du_nobody;
DROP ROLE regress_awa_du_worker, regress_awa_du_nobody;
