--
-- lifecycle_roles: EXECUTE grants of the lifecycle API per role.
-- awa_producer: enqueue, enqueue_many. awa_worker: claim, complete,
-- complete_many, heartbeat, heartbeat_many, retry, snooze, fail. awa_admin:
-- all of those plus cancel, get_job, promote_due, queue_counts,
-- queue_counts_exact, configure_queue, pause_queue, resume_queue, dlq_retry,
-- dlq_purge, run_maintenance, storage_status, maintenance_status (called in
-- test/sql/maintenance.sql) and SELECT on tables and views. awa_worker and
-- awa_admin: the casts from numbers to awa.duration. Internal awa._*
-- functions (maintenance's and awa.duration's input and output included):
-- nobody.
-- Roles (cluster-wide) are named regress_awa_lr_* and dropped at the end.
-- Queues used here: lr_q, lr_flow.
--
\set VERBOSITY default

\i test/sql/include/try.sql

SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_awa_lr_none, regress_awa_lr_usage, regress_awa_lr_producer, regress_awa_lr_worker, regress_awa_lr_admin, regress_awa_lr_monitor;
RESET client_min_messages;

-- No grant at all; USAGE on the schema only; and one member of each awa role
-- (none can log in).
CREATE ROLE regress_awa_lr_none;
CREATE ROLE regress_awa_lr_usage;
GRANT USAGE ON SCHEMA awa TO regress_awa_lr_usage;
CREATE ROLE regress_awa_lr_producer IN ROLE awa_producer;
CREATE ROLE regress_awa_lr_worker IN ROLE awa_worker;
CREATE ROLE regress_awa_lr_admin IN ROLE awa_admin;
CREATE ROLE regress_awa_lr_monitor IN ROLE awa_monitor;
SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname LIKE 'regress\_awa\_lr\_%' ORDER BY rolname;

-- ---------------------------------------------------------------------------
-- The grant matrix, from the catalog: every function of the schema.
-- ---------------------------------------------------------------------------
SELECT p.oid::regprocedure AS function,
       has_function_privilege('regress_awa_lr_none', p.oid, 'EXECUTE') AS none,
       has_function_privilege('regress_awa_lr_usage', p.oid, 'EXECUTE') AS usage,
       has_function_privilege('regress_awa_lr_producer', p.oid, 'EXECUTE') AS producer,
       has_function_privilege('regress_awa_lr_worker', p.oid, 'EXECUTE') AS worker,
       has_function_privilege('regress_awa_lr_admin', p.oid, 'EXECUTE') AS admin,
       has_function_privilege('regress_awa_lr_monitor', p.oid, 'EXECUTE') AS monitor
  FROM pg_proc p
 WHERE p.pronamespace = 'awa'::regnamespace
 ORDER BY p.proname, p.oid::regprocedure::text;
-- Nothing in the schema is executable by PUBLIC; the API is SECURITY DEFINER
-- but for awa.await_durable (it reads and writes no table: it runs as its
-- caller) and the six casts to awa.duration (conversions, run by the caller),
-- the internal functions are not.
SELECT count(*) AS public_execute_grants
  FROM pg_proc p, aclexplode(p.proacl) a
 WHERE p.pronamespace = 'awa'::regnamespace AND a.grantee = 0;
SELECT p.proname LIKE '\_%' AS internal, p.prosecdef, count(*) AS functions
  FROM pg_proc p WHERE p.pronamespace = 'awa'::regnamespace 
 GROUP BY 1, 2 ORDER BY 1, 2;

-- ---------------------------------------------------------------------------
-- Calling them: every call is valid, so 'ok' means the role may run it.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('lr.seed', '{}', 'lr_q') IS NOT NULL AS seeded;
CREATE TEMP TABLE lr_calls (ord int, what text, call text);
INSERT INTO lr_calls VALUES
    (1,  'enqueue',            $$SELECT awa.enqueue('lr.job', '{}', 'lr_q')$$),
    (2,  'enqueue_many',       $$SELECT awa.enqueue_many(ARRAY['lr.job'], NULL, 'lr_q')$$),
    (3,  'claim',              $$SELECT * FROM awa.claim('lr_q')$$),
    (4,  'complete',           $$SELECT awa.complete(1, 1, 1)$$),
    (5,  'complete_many',      $$SELECT * FROM awa.complete_many('{1}', '{1}', '{1}')$$),
    (6,  'heartbeat',          $$SELECT awa.heartbeat(1, 1, 1, '{"pct": 1}')$$),
    (7,  'heartbeat_many',     $$SELECT * FROM awa.heartbeat_many('{1}', '{1}', '{1}')$$),
    (8,  'retry',              $$SELECT awa.retry(1, 1, 1, 'e')$$),
    (9,  'snooze',             $$SELECT awa.snooze(1, 1, 1, '1 second')$$),
    (10, 'fail',               $$SELECT awa.fail(1, 1, 1, 'e')$$),
    (11, 'cancel',             $$SELECT awa.cancel(-1)$$),
    (12, 'get_job',            $$SELECT awa.get_job(-1)$$),
    (13, 'promote_due',        $$SELECT awa.promote_due(1)$$),
    (14, 'queue_counts',       $$SELECT * FROM awa.queue_counts('lr_q')$$),
    (15, 'queue_counts_exact', $$SELECT * FROM awa.queue_counts_exact('lr_q')$$),
    (16, 'configure_queue',    $$SELECT awa.configure_queue('lr_q', aging_interval => '60 seconds')$$),
    (17, 'pause_queue',        $$SELECT awa.pause_queue('lr_q')$$),
    (18, 'resume_queue',       $$SELECT awa.resume_queue('lr_q')$$),
    (19, 'dlq_retry',          $$SELECT awa.dlq_retry('{-1}')$$),
    (20, 'dlq_purge',          $$SELECT awa.dlq_purge('{-1}')$$),
    (21, 'dlq view',           $$SELECT count(*) FROM awa.dlq$$),
    (22, 'read queue_meta',    $$SELECT count(*) FROM awa.queue_meta$$),
    (23, 'read unique claims', $$SELECT count(*) FROM awa.job_unique_claims$$),
    (24, 'write queue_meta',   $$INSERT INTO awa.queue_meta (queue, paused) VALUES ('lr_forged', true)$$),
    (25, 'delete dlq_entries', $$DELETE FROM awa.dlq_entries$$),
    -- Internal building blocks: nobody, not even awa_admin.
    (30, '_attempt',           $$SELECT * FROM awa._attempt(1, 1, 1, NULL)$$),
    (31, '_tombstone',         $$SELECT awa._tombstone('lr_q', 2, 1, 0, 0, 1)$$),
    (32, '_requeue_jobs',      $$SELECT awa._requeue_jobs('{}')$$),
    (33, '_count_move',        $$SELECT awa._count_move('lr_q', 'available', 'running', 0)$$),
    (34, '_backoff',           $$SELECT awa._backoff(1)$$),
    (35, '_queue_meta_changed', $$SELECT awa._queue_meta_changed('lr_q')$$),
    (36, '_queue_counts_scan', $$SELECT * FROM awa._queue_counts_scan('lr_q')$$),
    (38, '_require_queue',     $$SELECT awa._require_queue('lr_q')$$),
    (40, '_job_document',      $$SELECT awa._job_document(1, 'q', 1, 'k', '{}', 'available', 0, 1, 0, now(), now(), NULL, NULL, NULL, NULL)$$);
GRANT SELECT ON lr_calls TO PUBLIC;

-- The state the calls can change, to show refused calls change nothing.
CREATE FUNCTION pg_temp.state() RETURNS jsonb LANGUAGE sql AS $f$
SELECT jsonb_build_object(
    'ready', (SELECT count(*) FROM awa.ready_entries WHERE queue = 'lr_q'),
    'claims', (SELECT count(*) FROM awa.ready_claim_attempt_batches WHERE queue = 'lr_q'),
    'meta', (SELECT count(*) FROM awa.queue_meta WHERE queue LIKE 'lr\_%'),
    'paused', (SELECT count(*) FROM awa.queue_meta WHERE paused))
$f$;

SELECT pg_temp.state() AS before_none \gset
SET ROLE regress_awa_lr_none;
SELECT what, pg_temp.try(call, false) AS outcome FROM lr_calls ORDER BY ord;
RESET ROLE;
SELECT pg_temp.state() = :'before_none'::jsonb AS none_changed_nothing;

SELECT pg_temp.state() AS before_usage \gset
SET ROLE regress_awa_lr_usage;
SELECT what, pg_temp.try(call, false) AS outcome FROM lr_calls ORDER BY ord;
RESET ROLE;
SELECT pg_temp.state() = :'before_usage'::jsonb AS usage_changed_nothing;

SELECT pg_temp.state() AS before_producer \gset
SET ROLE regress_awa_lr_producer;
SELECT what, pg_temp.try(call, false) AS outcome FROM lr_calls ORDER BY ord;
RESET ROLE;
-- The producer's two enqueues, nothing else.
SELECT key, value::int - (:'before_producer'::jsonb ->> key)::int AS added
  FROM jsonb_each_text(pg_temp.state()) ORDER BY key;

SELECT pg_temp.state() AS before_worker \gset
SET ROLE regress_awa_lr_worker;
SELECT what, pg_temp.try(call, false) AS outcome FROM lr_calls ORDER BY ord;
RESET ROLE;
-- The worker's one claim, nothing else.
SELECT key, value::int - (:'before_worker'::jsonb ->> key)::int AS added
  FROM jsonb_each_text(pg_temp.state()) ORDER BY key;

SELECT pg_temp.state() AS before_admin \gset
SET ROLE regress_awa_lr_admin;
SELECT what, pg_temp.try(call, false) AS outcome FROM lr_calls ORDER BY ord;
RESET ROLE;
-- The admin's two enqueues, one claim, and the lr_q settings row (paused then
-- resumed); no forged row.
SELECT key, value::int - (:'before_admin'::jsonb ->> key)::int AS added
  FROM jsonb_each_text(pg_temp.state()) ORDER BY key;
SELECT queue, paused FROM awa.queue_meta WHERE queue LIKE 'lr\_%' ORDER BY queue;

-- ---------------------------------------------------------------------------
-- A job's life, each step by the role that owns it.
-- ---------------------------------------------------------------------------
SET ROLE regress_awa_lr_admin;
SELECT awa.configure_queue('lr_flow', dlq_enabled => true);
RESET ROLE;
SET ROLE regress_awa_lr_producer;
SELECT awa.enqueue('lr.flow', '{"n": 1}', 'lr_flow', max_attempts => 2) AS flow \gset
RESET ROLE;
SET ROLE regress_awa_lr_worker;
SELECT run_lease AS fl1, receipt_id AS fr1 FROM awa.claim('lr_flow') \gset
SELECT awa.heartbeat(:flow, :fl1, :fr1, '{"pct": 50}') AS heartbeat;
SELECT awa.retry(:flow, :fl1, :fr1, 'first', '0') AS retry;
SELECT pg_temp.try('SELECT awa.promote_due()', false) AS worker_promote;
RESET ROLE;
SET ROLE regress_awa_lr_admin;
SELECT awa.get_job(:flow) ->> 'state' AS state;
SELECT awa.promote_due() >= 1 AS promoted;
RESET ROLE;
SET ROLE regress_awa_lr_worker;
SELECT run_lease AS fl2, receipt_id AS fr2 FROM awa.claim('lr_flow') \gset
SELECT awa.fail(:flow, :fl2, :fr2, 'second') AS fail;
SELECT pg_temp.try(format('SELECT awa.dlq_retry(ARRAY[%s]::bigint[])', :flow), false) AS worker_dlq_retry;
RESET ROLE;
SET ROLE regress_awa_lr_producer;
SELECT pg_temp.try(format('SELECT awa.get_job(%s)', :flow), false) AS producer_get_job,
       pg_temp.try(format('SELECT awa.cancel(%s)', :flow), false) AS producer_cancel;
RESET ROLE;
SET ROLE regress_awa_lr_admin;
SELECT kind, attempt, dlq_reason FROM awa.dlq WHERE job_id = :flow;
SELECT awa.dlq_retry(ARRAY[:flow]::bigint[]) AS retried;
SELECT awa.cancel(:flow) AS cancelled;
SELECT awa.get_job(:flow) ->> 'state' AS state;
SELECT available, running, failed, cancelled, dlq FROM awa.queue_counts('lr_flow');
RESET ROLE;

-- ---------------------------------------------------------------------------
-- Clean up the cluster-wide roles.
-- ---------------------------------------------------------------------------
DROP OWNED BY regress_awa_lr_none, regress_awa_lr_usage, regress_awa_lr_producer, regress_awa_lr_worker, regress_awa_lr_admin, regress_awa_lr_monitor;
DROP ROLE regress_awa_lr_none, regress_awa_lr_usage, regress_awa_lr_producer, regress_awa_lr_worker, regress_awa_lr_admin, regress_awa_lr_monitor;
SELECT count(*) AS leftover_roles FROM pg_roles WHERE rolname LIKE 'regress\_awa\_lr\_%';
