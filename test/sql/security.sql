--
-- security: EXECUTE grants per role, and callers with a hostile search_path.
-- Roles (cluster-wide) are named regress_awa_* and dropped at the end.
-- Queues used here: sec_q, sec_flow, sec_evil.
--
\set VERBOSITY default

-- Runs a statement; returns 'ok' or 'SQLSTATE: message' (lane ids, which
-- depend on the tests run before, are masked).
CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    state text;
    message text;
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
    RETURN state || ': ' || regexp_replace(message, 'lane_\d+_', 'lane_N_', 'g');
END
$f$;

SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_awa_nobody, regress_awa_noschema, regress_awa_producer,
                    regress_awa_worker, regress_awa_admin;
RESET client_min_messages;

-- No grants at all; no grants but the schema; and one member of each awa role.
CREATE ROLE regress_awa_noschema;
CREATE ROLE regress_awa_nobody;
GRANT USAGE ON SCHEMA awa TO regress_awa_nobody;
CREATE ROLE regress_awa_producer IN ROLE awa_producer;
CREATE ROLE regress_awa_worker IN ROLE awa_worker;
CREATE ROLE regress_awa_admin IN ROLE awa_admin;

-- A job to claim, a lane to look at.
SELECT awa.enqueue('sec.seed', queue => 'sec_q') IS NOT NULL AS ok;
SELECT lane_id AS sec_lane FROM awa.queue_lanes WHERE queue = 'sec_q' \gset

-- Every call is valid: 'ok' means the role may run it.
CREATE TEMP TABLE sec_calls (ord int, what text, call text);
INSERT INTO sec_calls VALUES
    (1, 'enqueue',       $$SELECT awa.enqueue('sec.job', queue => 'sec_q')$$),
    (2, 'enqueue_many',  $$SELECT awa.enqueue_many(ARRAY['sec.job'], NULL, 'sec_q')$$),
    (3, 'claim',         $$SELECT * FROM awa.claim('sec_q')$$),
    (4, 'complete',      $$SELECT awa.complete(1, 1, 1)$$),
    (5, 'complete_many', $$SELECT * FROM awa.complete_many('{1}', '{1}', '{1}')$$),
    (6, 'lanes view',    $$SELECT count(*) FROM awa.lanes$$),
    (7, 'read table',    $$SELECT count(*) FROM awa.ready_claim_attempt_batches$$),
    (8, 'delete evidence', $$DELETE FROM awa.ready_claim_attempt_batches$$),
    (9, 'insert ready',  $$INSERT INTO awa.ready_entries (ready_slot, ready_generation, lane_id, queue, priority,
                             lane_seq, job_id, max_attempts, kind, args, run_at, created_at)
                           VALUES (0, 0, 1, 'sec_q', 2, 99, 99, 1, 'forged', '{}', now(), now())$$),
    (10, 'move cursor',  format($$UPDATE awa.queue_lanes SET claim_cursor = 1000 WHERE lane_id = %s$$, :sec_lane)),
    (11, 'await_durable', $$SELECT awa.await_durable()$$);
GRANT SELECT ON sec_calls TO PUBLIC;

SET ROLE regress_awa_noschema;
SELECT what, pg_temp.try(call) AS outcome FROM sec_calls ORDER BY ord;
RESET ROLE;

SET ROLE regress_awa_nobody;
SELECT what, pg_temp.try(call) AS outcome FROM sec_calls ORDER BY ord;
RESET ROLE;

SET ROLE regress_awa_producer;
SELECT what, pg_temp.try(call) AS outcome FROM sec_calls ORDER BY ord;
RESET ROLE;

SET ROLE regress_awa_worker;
SELECT what, pg_temp.try(call) AS outcome FROM sec_calls ORDER BY ord;
RESET ROLE;

SET ROLE regress_awa_admin;
SELECT what, pg_temp.try(call) AS outcome FROM sec_calls ORDER BY ord;
RESET ROLE;

-- The refused calls changed nothing: the producer's and the admin's two
-- enqueue calls each wrote a job, the worker's and the admin's claims took
-- the seed job and one more; nothing was forged, deleted or moved.
SELECT kind, count(*) AS jobs FROM awa.ready_entries WHERE queue = 'sec_q' GROUP BY kind ORDER BY kind;
SELECT count(*) AS claims FROM awa.ready_claim_attempt_batches WHERE queue = 'sec_q';
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'sec_q';

-- ---------------------------------------------------------------------------
-- A producer enqueues, a worker claims and completes, an admin watches.
-- ---------------------------------------------------------------------------
SET ROLE regress_awa_producer;
SELECT awa.enqueue('flow', '{"step": 1}', 'sec_flow') AS flow_job \gset
SELECT * FROM awa.claim('sec_flow');
RESET ROLE;
-- The lane the producer created is a row of awa.queue_lanes, which only the
-- extension owner may change.
SELECT count(*) AS lanes, bool_and(NOT has_table_privilege('regress_awa_producer', 'awa.queue_lanes', 'UPDATE'))
       AS producer_cannot_update
  FROM awa.queue_lanes WHERE queue = 'sec_flow';
SET ROLE regress_awa_worker;
SELECT job_id = :flow_job AS same_job, run_lease AS flow_lease, receipt_id AS flow_receipt, kind, args
  FROM awa.claim('sec_flow') \gset
SELECT :'same_job' AS same_job, :'kind' AS kind, :'args' AS args;
SELECT awa.complete(:flow_job, :flow_lease, :flow_receipt) AS completed;
SELECT awa.complete(:flow_job, :flow_lease, :flow_receipt) AS completed_again;
SELECT awa.enqueue('flow', queue => 'sec_flow');
RESET ROLE;
SET ROLE regress_awa_admin;
SELECT queue, priority, enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'sec_flow';
SELECT count(*) AS completions FROM awa.receipt_completion_batches WHERE queue = 'sec_flow';
RESET ROLE;

-- ---------------------------------------------------------------------------
-- Hostile search_path: a schema that shadows operators and functions the
-- awa statements use (text =, smallint =, bigint = and >, unnest,
-- cardinality) and awa's table names, first in the caller's path. The API
-- runs its statements under a pinned path, so the results are correct and
-- none of the shadowing objects ever runs (with the definer's rights).
-- ---------------------------------------------------------------------------
CREATE SCHEMA regress_awa_evil;
GRANT USAGE, CREATE ON SCHEMA regress_awa_evil TO PUBLIC;
CREATE TABLE regress_awa_evil.calls (who name, what text);
GRANT INSERT, SELECT ON regress_awa_evil.calls TO PUBLIC;
CREATE FUNCTION regress_awa_evil.text_eq(text, text) RETURNS boolean LANGUAGE sql VOLATILE
    AS $$ INSERT INTO regress_awa_evil.calls VALUES (current_user, 'text ='); SELECT false $$;
CREATE FUNCTION regress_awa_evil.int2_eq(smallint, smallint) RETURNS boolean LANGUAGE sql VOLATILE
    AS $$ INSERT INTO regress_awa_evil.calls VALUES (current_user, 'smallint ='); SELECT false $$;
CREATE FUNCTION regress_awa_evil.int8_eq(bigint, bigint) RETURNS boolean LANGUAGE sql VOLATILE
    AS $$ INSERT INTO regress_awa_evil.calls VALUES (current_user, 'bigint ='); SELECT false $$;
CREATE FUNCTION regress_awa_evil.int8_gt(bigint, bigint) RETURNS boolean LANGUAGE sql VOLATILE
    AS $$ INSERT INTO regress_awa_evil.calls VALUES (current_user, 'bigint >'); SELECT false $$;
CREATE OPERATOR regress_awa_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = regress_awa_evil.text_eq);
CREATE OPERATOR regress_awa_evil.= (LEFTARG = smallint, RIGHTARG = smallint, FUNCTION = regress_awa_evil.int2_eq);
CREATE OPERATOR regress_awa_evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = regress_awa_evil.int8_eq);
CREATE OPERATOR regress_awa_evil.> (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = regress_awa_evil.int8_gt);
CREATE FUNCTION regress_awa_evil.unnest(anyarray) RETURNS SETOF anyelement LANGUAGE sql VOLATILE
    AS $$ INSERT INTO regress_awa_evil.calls VALUES (current_user, 'unnest'); SELECT NULL::text::anyelement WHERE false $$;
CREATE FUNCTION regress_awa_evil.cardinality(anyarray) RETURNS int LANGUAGE sql VOLATILE
    AS $$ INSERT INTO regress_awa_evil.calls VALUES (current_user, 'cardinality'); SELECT 0 $$;
CREATE TABLE regress_awa_evil.queue_lanes (LIKE awa.queue_lanes);
CREATE TABLE regress_awa_evil.ready_entries (LIKE awa.ready_entries);
CREATE TABLE regress_awa_evil.ready_tombstones (LIKE awa.ready_tombstones);

-- A fresh session: no statement of awa has been prepared in it yet.
\c -
\set VERBOSITY default
SET ROLE regress_awa_admin;
SET search_path = regress_awa_evil, pg_catalog, public;
-- The shadowing is effective for the caller's own statements.
SELECT 'a'::text = 'a'::text AS text_eq, 1::smallint = 1::smallint AS int2_eq,
       2::bigint > 1::bigint AS int8_gt, cardinality(ARRAY[1, 2]) AS cardinality;
SELECT what, count(*) FROM regress_awa_evil.calls GROUP BY what ORDER BY what;

-- The first enqueue creates the lane, the later ones must find it.
SELECT awa.enqueue('evil.1', '{"n": 1}', 'sec_evil') IS NOT NULL AS ok;
SELECT awa.enqueue('evil.2', '{"n": 2}', 'sec_evil') IS NOT NULL AS ok;
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['evil.3', 'evil.4'], NULL, 'sec_evil');
SELECT kind, args, run_lease, attempt FROM awa.claim('sec_evil', 3);
CREATE TEMP TABLE evil_claim AS SELECT job_id, run_lease, receipt_id, kind FROM awa.claim('sec_evil', 10);
SELECT kind, run_lease FROM evil_claim;
SELECT awa.complete(job_id, run_lease, receipt_id) AS completed FROM evil_claim;
SELECT c.accepted
  FROM evil_claim e, awa.complete_many(ARRAY[e.job_id], ARRAY[e.run_lease], ARRAY[e.receipt_id]) c;
SELECT count(*) AS claimed FROM awa.claim('sec_evil', 10);
RESET search_path;
SELECT queue, priority, enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'sec_evil';
-- Only the caller's own statements above ran the shadowing objects.
SELECT who = current_user AS caller, what, count(*) FROM regress_awa_evil.calls
 GROUP BY 1, 2 ORDER BY 1, 2;
RESET ROLE;
SELECT kind, lane_seq FROM awa.ready_entries WHERE queue = 'sec_evil' ORDER BY lane_seq;
SELECT count(*) AS lanes FROM awa.queue_lanes WHERE queue = 'sec_evil';

-- ---------------------------------------------------------------------------
-- Clean up the cluster-wide roles.
-- ---------------------------------------------------------------------------
SET client_min_messages = warning;
DROP SCHEMA regress_awa_evil CASCADE;
RESET client_min_messages;
DROP OWNED BY regress_awa_noschema, regress_awa_nobody, regress_awa_producer,
              regress_awa_worker, regress_awa_admin;
DROP ROLE regress_awa_noschema, regress_awa_nobody, regress_awa_producer,
          regress_awa_worker, regress_awa_admin;
SELECT count(*) AS leftover_roles FROM pg_roles WHERE rolname LIKE 'regress_awa_%';
