--
-- dlq: the dead-letter queue. awa.configure_queue(queue, dlq_enabled),
-- awa.retry / awa.fail routing (awa.dlq_entries vs awa.done_entries), the
-- awa.dlq view, awa.dlq_retry(job_ids) and awa.dlq_purge(job_ids).
-- Queues used here: dlq_on, dlq_off, dlq_toggle, dlq_bad.
--
\set VERBOSITY default

\i test/sql/include/try.sql

-- Where a job is: one row per table that holds it (a job is in at most one of
-- deferred_jobs / dlq_entries / done_entries), and its get_job state.
CREATE FUNCTION pg_temp.place(id bigint) RETURNS text LANGUAGE sql AS $f$
SELECT format('deferred=%s dlq=%s done=%s state=%s',
              (SELECT count(*) FROM awa.deferred_jobs WHERE job_id = id),
              (SELECT count(*) FROM awa.dlq_entries WHERE job_id = id),
              (SELECT count(*) FROM awa.done_entries WHERE job_id = id),
              coalesce(awa.get_job(id) ->> 'state', 'NULL'))
$f$;

-- The queue's counters, and whether they equal the exact pass.
CREATE FUNCTION pg_temp.counts(q text) RETURNS text LANGUAGE sql AS $f$
SELECT format('avail=%s sched=%s retry=%s run=%s done=%s failed=%s cancelled=%s dlq=%s exact=%s',
              c.available, c.scheduled, c.retryable, c.running, c.completed, c.failed, c.cancelled, c.dlq,
              (SELECT row(e.*)::text FROM awa.queue_counts_exact(q) e) = row(c.*)::text)
  FROM awa.queue_counts(q) c
$f$;

\i test/sql/include/footprint.sql

-- ---------------------------------------------------------------------------
-- DLQ on: an exhausted retry and a fail go to awa.dlq_entries.
-- ---------------------------------------------------------------------------
SELECT awa.configure_queue('dlq_on', dlq_enabled => true);
SELECT queue, dlq_enabled, paused FROM awa.queue_meta WHERE queue = 'dlq_on';
SELECT pg_temp.counts('dlq_on');

-- Job A: two attempts, both retried.
SELECT awa.enqueue('dlq.a', '{"n": 1}', 'dlq_on', 3, NULL, 2,
                   '{"metadata": {"tenant": "t1"}, "tags": ["x"]}') AS a \gset
SELECT run_lease AS a_l1, receipt_id AS a_r1, attempt FROM awa.claim('dlq_on') \gset
SELECT :attempt AS first_attempt, awa.retry(:a, :a_l1, :a_r1, 'boom 1', '0') AS outcome;
SELECT pg_temp.place(:a), pg_temp.counts('dlq_on');
SELECT awa.promote_due() AS promoted;
SELECT run_lease AS a_l2, receipt_id AS a_r2, attempt FROM awa.claim('dlq_on') \gset
SELECT :attempt AS second_attempt, :a_l2 > :a_l1 AS lease_grew;
SELECT awa.retry(:a, :a_l2, :a_r2, 'boom 2') AS outcome;
SELECT pg_temp.place(:a), pg_temp.counts('dlq_on');
-- The view: the error history in order, the last error as the reason.
SELECT job_id = :a AS is_a, queue, kind, args, attempt, priority, max_attempts, run_lease = :a_l2 AS run_lease_is_last,
       jsonb_path_query_array(errors, '$[*].attempt') AS error_attempts,
       jsonb_path_query_array(errors, '$[*].error') AS error_texts,
       jsonb_array_length(errors) AS n_errors,
       dlq_reason, dlq_at <= now() AS dlq_at_set, created_at <= dlq_at AS created_first
  FROM awa.dlq WHERE job_id = :a;
-- The worker's later calls on the dead attempt are stale.
SELECT awa.complete(:a, :a_l2, :a_r2) AS complete_accepted,
       awa.retry(:a, :a_l2, :a_r2, 'again') AS retry,
       awa.fail(:a, :a_l2, :a_r2, 'again') AS fail,
       awa.heartbeat(:a, :a_l2, :a_r2) AS heartbeat;
SELECT pg_temp.place(:a), pg_temp.counts('dlq_on');

-- Job B: fail on its first attempt of 25 goes straight to the DLQ.
SELECT awa.enqueue('dlq.b', '{"n": 2}', 'dlq_on') AS b \gset
SELECT run_lease AS b_l1, receipt_id AS b_r1 FROM awa.claim('dlq_on') \gset
SELECT awa.fail(:b, :b_l1, :b_r1, 'fatal: bad input') AS outcome;
SELECT kind, attempt, max_attempts, dlq_reason, jsonb_path_query_array(errors, '$[*].error') AS error_texts
  FROM awa.dlq WHERE queue = 'dlq_on' ORDER BY job_id;
SELECT pg_temp.place(:b), pg_temp.counts('dlq_on');

-- ---------------------------------------------------------------------------
-- dlq_retry: back to available with attempt 0; the next claim is attempt 1
-- with a run_lease above every earlier one.
-- ---------------------------------------------------------------------------
SELECT pg_temp.footprint() AS before_unknown \gset
SELECT awa.dlq_retry(ARRAY[-1, 0, 999999999]::bigint[]) AS unknown_ids,
       awa.dlq_retry('{}') AS empty_array;
SELECT pg_temp.footprint() = :'before_unknown'::jsonb AS nothing_written;

-- A is retried (B is not listed; -1 is unknown; A twice counts once).
SELECT awa.dlq_retry(ARRAY[:a, -1, :a]::bigint[]) AS retried;
SELECT pg_temp.place(:a), pg_temp.place(:b), pg_temp.counts('dlq_on');
SELECT awa.get_job(:a) ->> 'state' AS state, (awa.get_job(:a) ->> 'attempt')::int AS attempt,
       (awa.get_job(:a) ->> 'run_lease')::bigint = :a_l2 AS run_lease_kept,
       jsonb_array_length(awa.get_job(:a) -> 'errors') AS errors_kept,
       awa.get_job(:a) -> 'metadata' AS metadata, awa.get_job(:a) -> 'tags' AS tags;
SELECT count(*) AS a_in_dlq_view FROM awa.dlq WHERE job_id = :a;
-- Retrying it again while it is available does nothing.
SELECT awa.dlq_retry(ARRAY[:a]::bigint[]) AS retried_again;
SELECT pg_temp.place(:a), pg_temp.counts('dlq_on');

SELECT job_id = :a AS is_a, run_lease AS a_l3, receipt_id AS a_r3, attempt, max_attempts, metadata
  FROM awa.claim('dlq_on') \gset
SELECT :'is_a' AS is_a, :attempt AS attempt, :max_attempts AS max_attempts,
       :a_l3 > :a_l2 AS lease_above_last, :a_l3 > :a_l1 AS lease_above_first, :'metadata' AS metadata;
-- The dead attempts stay dead; the new one is live.
SELECT awa.complete(:a, :a_l2, :a_r2) AS old_attempt_accepted;
SELECT pg_temp.place(:a), pg_temp.counts('dlq_on');
SELECT awa.dlq_retry(ARRAY[:a]::bigint[]) AS retried_while_running;
SELECT awa.complete(:a, :a_l3, :a_r3) AS new_attempt_accepted;
SELECT pg_temp.place(:a), pg_temp.counts('dlq_on');
SELECT awa.dlq_retry(ARRAY[:a]::bigint[]) AS retried_when_completed;
SELECT pg_temp.place(:a), pg_temp.counts('dlq_on');

-- A retried job that exhausts its attempts again goes back to the DLQ, its
-- history growing.
SELECT awa.enqueue('dlq.c', '{"n": 3}', 'dlq_on', max_attempts => 1) AS c \gset
SELECT run_lease AS c_l1, receipt_id AS c_r1 FROM awa.claim('dlq_on') \gset
SELECT awa.retry(:c, :c_l1, :c_r1, 'c first') AS outcome;
SELECT awa.dlq_retry(ARRAY[:c]::bigint[]) AS retried;
SELECT run_lease AS c_l2, receipt_id AS c_r2, attempt FROM awa.claim('dlq_on') \gset
SELECT :attempt AS attempt, :c_l2 > :c_l1 AS lease_grew;
SELECT awa.retry(:c, :c_l2, :c_r2, 'c second') AS outcome;
SELECT attempt, run_lease = :c_l2 AS run_lease_is_last, dlq_reason,
       jsonb_path_query_array(errors, '$[*].error') AS error_texts,
       jsonb_path_query_array(errors, '$[*].attempt') AS error_attempts
  FROM awa.dlq WHERE job_id = :c;
SELECT pg_temp.place(:c), pg_temp.counts('dlq_on');

-- A rolled-back dlq_retry moves nothing.
SELECT pg_temp.footprint() AS before_tx \gset
BEGIN;
SELECT awa.dlq_retry(ARRAY[:b, :c]::bigint[]) AS retried_inside;
SELECT pg_temp.place(:b), pg_temp.place(:c);
ROLLBACK;
SELECT pg_temp.footprint() = :'before_tx'::jsonb AS nothing_written;
SELECT pg_temp.place(:b), pg_temp.place(:c), pg_temp.counts('dlq_on');

-- ---------------------------------------------------------------------------
-- dlq_purge: removes for good; get_job answers NULL.
-- ---------------------------------------------------------------------------
SELECT awa.dlq_purge(ARRAY[-1, 0]::bigint[]) AS unknown_ids, awa.dlq_purge('{}') AS empty_array;
SELECT awa.dlq_purge(ARRAY[:b, :a, -1]::bigint[]) AS purged;  -- a is completed: not purged
SELECT pg_temp.place(:b), pg_temp.place(:a), pg_temp.counts('dlq_on');
SELECT awa.get_job(:b) IS NULL AS b_unknown;
SELECT awa.dlq_purge(ARRAY[:b]::bigint[]) AS purged_again, awa.dlq_retry(ARRAY[:b]::bigint[]) AS retried_after_purge;
SELECT kind FROM awa.dlq WHERE queue = 'dlq_on' ORDER BY job_id;
SELECT awa.dlq_purge(ARRAY[:c, :c]::bigint[]) AS purged;
SELECT count(*) AS dlq_rows FROM awa.dlq WHERE queue = 'dlq_on';
SELECT pg_temp.place(:c), pg_temp.counts('dlq_on');

-- ---------------------------------------------------------------------------
-- DLQ off (the default): the same calls end in done_entries, state failed.
-- ---------------------------------------------------------------------------
SELECT count(*) AS settings FROM awa.queue_meta WHERE queue = 'dlq_off';
SELECT pg_temp.footprint() AS before_off \gset
SELECT awa.enqueue('dlq.off.a', '{}', 'dlq_off', max_attempts => 1) AS oa \gset
SELECT awa.enqueue('dlq.off.b', '{}', 'dlq_off') AS ob \gset
SELECT job_id AS j1, run_lease AS l1, receipt_id AS r1 FROM awa.claim('dlq_off') \gset
SELECT job_id AS j2, run_lease AS l2, receipt_id AS r2 FROM awa.claim('dlq_off') \gset
SELECT :j1 = :oa AND :j2 = :ob AS claimed_in_order;
SELECT awa.retry(:oa, :l1, :r1, 'exhausted') AS retry_outcome, awa.fail(:ob, :l2, :r2, 'fatal') AS fail_outcome;
SELECT pg_temp.place(:oa), pg_temp.place(:ob), pg_temp.counts('dlq_off');
SELECT kind, state, attempt, jsonb_path_query_array(payload -> 'errors', '$[*].error') AS error_texts
  FROM awa.done_entries WHERE queue = 'dlq_off' ORDER BY job_id;
SELECT count(*) AS dlq_rows FROM awa.dlq WHERE queue = 'dlq_off';
-- Two ready rows and two done rows; nothing in the DLQ or deferred.
SELECT key, value::int - (:'before_off'::jsonb ->> key)::int AS added
  FROM jsonb_each_text(pg_temp.footprint()) ORDER BY key;
-- dlq_retry / dlq_purge do not touch failed jobs.
SELECT awa.dlq_retry(ARRAY[:oa, :ob]::bigint[]) AS retried, awa.dlq_purge(ARRAY[:oa, :ob]::bigint[]) AS purged;
SELECT pg_temp.place(:oa), pg_temp.place(:ob), pg_temp.counts('dlq_off');

-- ---------------------------------------------------------------------------
-- The setting is read at the moment the attempt ends.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('dlq.toggle', '{"n": 1}', 'dlq_toggle') AS t1 \gset
SELECT awa.enqueue('dlq.toggle', '{"n": 2}', 'dlq_toggle') AS t2 \gset
CREATE TEMP TABLE toggle_claims AS SELECT job_id, run_lease, receipt_id FROM awa.claim('dlq_toggle', 2);
SELECT count(*) AS claimed FROM toggle_claims;
SELECT awa.configure_queue('dlq_toggle', dlq_enabled => true);
SELECT awa.fail(job_id, run_lease, receipt_id, 'while on') AS outcome FROM toggle_claims WHERE job_id = :t1;
SELECT awa.configure_queue('dlq_toggle', dlq_enabled => false);
SELECT awa.fail(job_id, run_lease, receipt_id, 'while off') AS outcome FROM toggle_claims WHERE job_id = :t2;
SELECT pg_temp.place(:t1), pg_temp.place(:t2), pg_temp.counts('dlq_toggle');
-- Turning it off does not empty the DLQ: retry still works.
SELECT awa.dlq_retry(ARRAY[:t1, :t2]::bigint[]) AS retried;
SELECT pg_temp.place(:t1), pg_temp.place(:t2), pg_temp.counts('dlq_toggle');

-- ---------------------------------------------------------------------------
-- Invalid input: NULL arrays; nothing written.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('dlq.bad', '{}', 'dlq_bad') AS bad \gset
SELECT awa.configure_queue('dlq_bad', dlq_enabled => true);
SELECT run_lease AS bad_l, receipt_id AS bad_r FROM awa.claim('dlq_bad') \gset
SELECT awa.fail(:bad, :bad_l, :bad_r, 'dead') AS outcome;
SELECT pg_temp.footprint() AS before_bad \gset
SELECT call, pg_temp.try(call) AS outcome FROM (VALUES
    ($$SELECT awa.dlq_retry(NULL)$$),
    ($$SELECT awa.dlq_purge(NULL)$$),
    ($$SELECT awa.dlq_retry(NULL::bigint[])$$),
    ($$SELECT awa.dlq_purge(NULL::bigint[])$$)
) AS t(call);
SELECT pg_temp.footprint() = :'before_bad'::jsonb AS nothing_written;
-- NULL elements are ignored.
SELECT awa.dlq_retry(ARRAY[NULL]::bigint[]) AS retried_null, awa.dlq_purge(ARRAY[NULL]::bigint[]) AS purged_null;
SELECT pg_temp.place(:bad), pg_temp.counts('dlq_bad');
SELECT awa.dlq_purge(ARRAY[NULL, :bad]::bigint[]) AS purged;
SELECT pg_temp.place(:bad), pg_temp.counts('dlq_bad');

-- Every queue of this file: counters equal the exact pass.
SELECT c.queue, row(c.*)::text = row(e.*)::text AS counters_exact
  FROM awa.queue_counts() c JOIN awa.queue_counts_exact() e USING (queue)
 WHERE c.queue LIKE 'dlq\_%'
 ORDER BY c.queue;
