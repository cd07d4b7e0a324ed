--
-- get_job: awa.get_job(job_id), the document of one job in each state:
-- available, scheduled, retryable, running, completed, failed, cancelled, dlq.
-- Queues used here: gj_main, gj_run, gj_fail, gj_cancel, gj_dlq.
--
\set VERBOSITY default

\i test/sql/include/try.sql

-- The document without its timestamps: job_id checked against the id asked
-- for, each error without its "at", and "times" listing which of run_at,
-- created_at, finalized_at, deadline_at, heartbeat_at are set (not NULL).
-- Timestamps themselves are compared in the queries below.
CREATE FUNCTION pg_temp.doc(id bigint) RETURNS jsonb LANGUAGE sql AS $f$
SELECT d - ARRAY['job_id', 'run_at', 'created_at', 'attempted_at', 'finalized_at', 'deadline_at', 'heartbeat_at', 'errors']
       || jsonb_build_object(
            'job_id_ok', (d ->> 'job_id')::bigint = id,
            'errors', (SELECT coalesce(jsonb_agg(e - 'at' ORDER BY n), '[]')
                         FROM jsonb_array_elements(d -> 'errors') WITH ORDINALITY AS x(e, n)),
            'times', (SELECT coalesce(jsonb_agg(k ORDER BY k), '[]')
                        FROM unnest(ARRAY['run_at', 'created_at', 'finalized_at', 'deadline_at', 'heartbeat_at']) AS k
                       WHERE d ? k AND d -> k <> 'null'::jsonb))
  FROM awa.get_job(id) AS d
$f$;

-- The keys of the document.
CREATE FUNCTION pg_temp.keys(id bigint) RETURNS text LANGUAGE sql AS $f$
SELECT string_agg(k, ',' ORDER BY k) FROM jsonb_object_keys(awa.get_job(id)) AS k
$f$;

-- Every error's "at" is a timestamp no later than now.
CREATE FUNCTION pg_temp.errors_at_ok(id bigint) RETURNS boolean LANGUAGE sql AS $f$
SELECT bool_and((e ->> 'at')::timestamptz <= clock_timestamp())
  FROM jsonb_array_elements(awa.get_job(id) -> 'errors') AS e
$f$;

-- ---------------------------------------------------------------------------
-- Unknown and NULL ids.
-- ---------------------------------------------------------------------------
SELECT awa.get_job(NULL) IS NULL AS null_id, awa.get_job(-1) IS NULL AS negative, awa.get_job(0) IS NULL AS zero,
       awa.get_job(9223372036854775807) IS NULL AS max_bigint;

-- ---------------------------------------------------------------------------
-- available: args, metadata, tags, priority, max_attempts as enqueued.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('gj.avail', '{"order": 7, "items": [1, 2]}', 'gj_main', 3, NULL, 5,
                   '{"metadata": {"tenant": "acme"}, "tags": ["billing", "eu"]}') AS av \gset
SELECT pg_temp.keys(:av) AS keys;
SELECT pg_temp.doc(:av) AS doc;
SELECT (d ->> 'run_at')::timestamptz = e.run_at AS run_at_is_row, (d ->> 'created_at')::timestamptz = e.created_at AS created_at_is_row
  FROM awa.get_job(:av) d, awa.ready_entries e WHERE e.job_id = :av;
-- A job without options: empty metadata and tags, no progress, no errors.
SELECT awa.enqueue('gj.plain', '{}', 'gj_main', 2) AS pl \gset
SELECT pg_temp.doc(:pl) AS doc;

-- ---------------------------------------------------------------------------
-- scheduled: a future run_at.
-- ---------------------------------------------------------------------------
SELECT now() + interval '1 hour' AS later \gset
SELECT awa.enqueue('gj.sched', '{"s": 1}', 'gj_main', 1, :'later', 3, '{"tags": ["t"]}') AS sc \gset
SELECT pg_temp.keys(:sc) AS keys;
SELECT pg_temp.doc(:sc) AS doc;
SELECT (awa.get_job(:sc) ->> 'run_at')::timestamptz = :'later' AS run_at_kept;

-- ---------------------------------------------------------------------------
-- running: deadline_at and heartbeat_at added; progress from heartbeats.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('gj.run', '{"r": 1}', 'gj_run', opts => '{"metadata": {"m": 1}}') AS rn \gset
SELECT run_lease AS rn_l1, receipt_id AS rn_r1, deadline_at AS rn_deadline FROM awa.claim('gj_run', 1, '7 minutes') \gset
SELECT pg_temp.keys(:rn) AS keys;
SELECT pg_temp.doc(:rn) AS doc;
SELECT (awa.get_job(:rn) ->> 'run_lease')::bigint = :rn_l1 AS run_lease_is_claims,
       (awa.get_job(:rn) ->> 'deadline_at')::timestamptz = :'rn_deadline' AS deadline_is_claims,
       (awa.get_job(:rn) ->> 'attempted_at')::timestamptz <= now() AS attempted_in_past;
SELECT awa.heartbeat(:rn, :rn_l1, :rn_r1, '{"pct": 40, "step": "load"}') AS heartbeat;
SELECT pg_temp.doc(:rn) AS doc;
SELECT (awa.get_job(:rn) ->> 'heartbeat_at')::timestamptz <= clock_timestamp() AS heartbeat_in_past;
-- A heartbeat without progress keeps the last progress.
SELECT awa.heartbeat(:rn, :rn_l1, :rn_r1) AS heartbeat;
SELECT awa.get_job(:rn) -> 'progress' AS progress;

-- ---------------------------------------------------------------------------
-- retryable: the error recorded with its attempt; progress carried.
-- ---------------------------------------------------------------------------
SELECT awa.retry(:rn, :rn_l1, :rn_r1, 'timeout talking to api', '2 hours') AS outcome;
SELECT pg_temp.keys(:rn) AS keys;
SELECT pg_temp.doc(:rn) AS doc;
SELECT (awa.get_job(:rn) ->> 'run_at')::timestamptz > now() + interval '119 minutes' AS run_at_in_2_hours,
       pg_temp.errors_at_ok(:rn) AS errors_at_ok;
-- Back to available, then running for a second attempt: the errors and the
-- last progress are carried.
SELECT awa.enqueue('gj.run2', '{}', 'gj_run', max_attempts => 3) AS r2 \gset
SELECT run_lease AS r2_l1, receipt_id AS r2_r1 FROM awa.claim('gj_run') \gset
SELECT awa.heartbeat(:r2, :r2_l1, :r2_r1, '{"pct": 90}') AS heartbeat;
SELECT awa.retry(:r2, :r2_l1, :r2_r1, 'first failure', '0') AS outcome;
SELECT awa.promote_due() >= 1 AS promoted;
SELECT pg_temp.doc(:r2) AS doc_available_again;
SELECT run_lease AS r2_l2, receipt_id AS r2_r2 FROM awa.claim('gj_run') \gset
SELECT pg_temp.doc(:r2) AS doc_second_attempt;
SELECT (awa.get_job(:r2) ->> 'run_lease')::bigint = :r2_l2 AS run_lease_is_claims, :r2_l2 > :r2_l1 AS lease_grew;

-- ---------------------------------------------------------------------------
-- completed
-- ---------------------------------------------------------------------------
SELECT awa.complete(:r2, :r2_l2, :r2_r2) AS completed;
SELECT pg_temp.keys(:r2) AS keys;
SELECT pg_temp.doc(:r2) AS doc;
SELECT (awa.get_job(:r2) ->> 'finalized_at')::timestamptz <= clock_timestamp() AS finalized_in_past;

-- ---------------------------------------------------------------------------
-- failed: by fail, and by an exhausted retry (DLQ off).
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('gj.fail', '{"f": 1}', 'gj_fail', opts => '{"tags": ["x"]}') AS fl \gset
SELECT run_lease AS fl_l, receipt_id AS fl_r FROM awa.claim('gj_fail') \gset
SELECT awa.heartbeat(:fl, :fl_l, :fl_r, '{"pct": 10}') AS heartbeat;
SELECT awa.fail(:fl, :fl_l, :fl_r, 'invalid input') AS outcome;
SELECT pg_temp.keys(:fl) AS keys;
SELECT pg_temp.doc(:fl) AS doc;
SELECT awa.enqueue('gj.exhaust', '{}', 'gj_fail', max_attempts => 1) AS ex \gset
SELECT run_lease AS ex_l, receipt_id AS ex_r FROM awa.claim('gj_fail') \gset
SELECT awa.retry(:ex, :ex_l, :ex_r, 'last try') AS outcome;
SELECT pg_temp.doc(:ex) AS doc;

-- ---------------------------------------------------------------------------
-- cancelled: while available, scheduled, running, retryable and snoozed.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('gj.c.avail', '{}', 'gj_cancel', opts => '{"metadata": {"c": 1}}') AS ca \gset
SELECT awa.enqueue('gj.c.sched', '{}', 'gj_cancel', run_at => now() + interval '1 day') AS cs \gset
SELECT awa.cancel(:ca) AS cancel_available, awa.cancel(:cs) AS cancel_scheduled;
SELECT pg_temp.keys(:ca) AS keys;
SELECT pg_temp.doc(:ca) AS doc_available;
SELECT pg_temp.doc(:cs) AS doc_scheduled;
SELECT awa.enqueue('gj.c.run', '{}', 'gj_cancel') AS cr \gset
SELECT run_lease AS cr_l, receipt_id AS cr_r FROM awa.claim('gj_cancel') \gset
SELECT awa.cancel(:cr) AS cancel_running;
SELECT pg_temp.doc(:cr) AS doc_running;
SELECT (awa.get_job(:cr) ->> 'run_lease')::bigint = :cr_l AS run_lease_is_claims;
SELECT awa.heartbeat(:cr, :cr_l, :cr_r) AS heartbeat, awa.complete(:cr, :cr_l, :cr_r) AS complete;
SELECT awa.get_job(:cr) ->> 'state' AS state_after_worker;
-- Retried, then cancelled while waiting for its retry.
SELECT awa.enqueue('gj.c.retry', '{}', 'gj_cancel') AS crt \gset
SELECT run_lease AS crt_l, receipt_id AS crt_r FROM awa.claim('gj_cancel') \gset
SELECT awa.retry(:crt, :crt_l, :crt_r, 'flaky', '1 hour') AS outcome;
SELECT awa.cancel(:crt) AS cancel_retryable;
SELECT awa.get_job(:crt) ->> 'state' AS state, awa.get_job(:crt) ->> 'attempt' AS attempt,
       jsonb_path_query_array(awa.get_job(:crt) -> 'errors', '$[*].error') AS errors,
       awa.get_job(:crt) ->> 'finalized_at' IS NOT NULL AS finalized;
-- Snoozed, then cancelled.
SELECT awa.enqueue('gj.c.snooze', '{}', 'gj_cancel') AS csn \gset
SELECT run_lease AS csn_l, receipt_id AS csn_r FROM awa.claim('gj_cancel') \gset
SELECT awa.snooze(:csn, :csn_l, :csn_r, '1 hour') AS outcome;
SELECT pg_temp.doc(:csn) AS doc_snoozed;
SELECT awa.cancel(:csn) AS cancel_snoozed;
SELECT awa.get_job(:csn) ->> 'state' AS state, awa.get_job(:csn) -> 'errors' AS errors,
       awa.get_job(:csn) ->> 'finalized_at' IS NOT NULL AS finalized;
SELECT * FROM awa.queue_counts_exact('gj_cancel');

-- ---------------------------------------------------------------------------
-- dlq: dlq_reason added; progress kept; after dlq_retry, available again
-- without progress; after dlq_purge, unknown.
-- ---------------------------------------------------------------------------
SELECT awa.configure_queue('gj_dlq', dlq_enabled => true);
SELECT awa.enqueue('gj.dlq', '{"d": 1}', 'gj_dlq', 4, NULL, 2, '{"metadata": {"k": "v"}, "tags": ["a", "b"]}') AS dl \gset
SELECT run_lease AS dl_l1, receipt_id AS dl_r1 FROM awa.claim('gj_dlq') \gset
SELECT awa.retry(:dl, :dl_l1, :dl_r1, 'attempt one', '0') AS outcome;
SELECT awa.promote_due() >= 1 AS promoted;
SELECT run_lease AS dl_l2, receipt_id AS dl_r2 FROM awa.claim('gj_dlq') \gset
SELECT awa.heartbeat(:dl, :dl_l2, :dl_r2, '{"pct": 75}') AS heartbeat;
SELECT awa.fail(:dl, :dl_l2, :dl_r2, 'attempt two: fatal') AS outcome;
SELECT pg_temp.keys(:dl) AS keys;
SELECT pg_temp.doc(:dl) AS doc;
SELECT (awa.get_job(:dl) ->> 'finalized_at')::timestamptz = q.dlq_at AS finalized_is_dlq_at,
       (awa.get_job(:dl) ->> 'run_lease')::bigint = :dl_l2 AS run_lease_is_last
  FROM awa.dlq q WHERE q.job_id = :dl;
SELECT awa.dlq_retry(ARRAY[:dl]::bigint[]) AS retried;
SELECT pg_temp.keys(:dl) AS keys;
SELECT pg_temp.doc(:dl) AS doc;
SELECT run_lease AS dl_l3, receipt_id AS dl_r3 FROM awa.claim('gj_dlq') \gset
SELECT awa.fail(:dl, :dl_l3, :dl_r3, 'again') AS outcome;
SELECT jsonb_path_query_array(awa.get_job(:dl) -> 'errors', '$[*].error') AS errors;
SELECT awa.dlq_purge(ARRAY[:dl]::bigint[]) AS purged;
SELECT awa.get_job(:dl) IS NULL AS unknown_after_purge;

-- Every state seen above, counted by the exact pass.
SELECT queue, available, scheduled, retryable, running, completed, failed, cancelled, dlq
  FROM awa.queue_counts_exact() WHERE queue LIKE 'gj\_%' ORDER BY queue;
