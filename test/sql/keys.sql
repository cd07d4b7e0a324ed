-- keys.sql: jobs with opts.concurrency_key go into their key's lane, and
-- claims choose between a queue's keys (src/pg/key_lanes.hpp): with fairness
-- 'key' in turn by weight (awa.set_key_weight), with 'none' (the default) the
-- key whose work came first, until it is drained. Bad keys, weights and
-- fairness settings are refused with 22023 and change nothing.
\set VERBOSITY terse
\i test/sql/include/try.sql

CREATE FUNCTION pg_temp.fill(q text) RETURNS void LANGUAGE sql AS $$
  SELECT count(*) FROM (
    SELECT awa.enqueue('k', jsonb_build_object('key', k), q, opts => jsonb_build_object('concurrency_key', k))
      FROM unnest(ARRAY['a','a','a','a','a','a','b','b','b','c','c','c']) k) x;
  SELECT count(*) FROM (SELECT awa.enqueue('k', '{"key": "-"}', q) FROM generate_series(1, 2)) y;
$$;
-- One claim of one job at a time: the keys in the order the claims took them.
CREATE FUNCTION pg_temp.drain(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  taken text[] := '{}';
  k text;
BEGIN
  LOOP
    SELECT args->>'key' INTO k FROM awa.claim(q, 1);
    EXIT WHEN NOT FOUND;
    taken := taken || k;
  END LOOP;
  RETURN array_to_string(taken, ',');
END
$$;

-- Without fairness: the key whose work came first drains first (a, then b,
-- then c, then the jobs without a key).
SELECT pg_temp.fill('keys_fifo');
SELECT pg_temp.drain('keys_fifo') AS fifo;
-- Each key has its lane; the jobs without a key keep theirs.
SELECT count(*) AS lanes, count(concurrency_key) AS keyed_lanes FROM awa.queue_lanes WHERE queue = 'keys_fifo';
SELECT available, running FROM awa.queue_counts('keys_fifo');

-- Fair share: keys with work take turns; the jobs without a key are a key of
-- their own.
SELECT awa.configure_queue('keys_fair', fairness => 'key');
SELECT fairness FROM awa.queue_meta WHERE queue = 'keys_fair';
SELECT pg_temp.fill('keys_fair');
SELECT pg_temp.drain('keys_fair') AS fair;

-- Weights: a of weight 3 takes three claims to b's and c's one while all
-- have work.
SELECT awa.configure_queue('keys_weighted', fairness => 'key');
SELECT awa.set_key_weight('keys_weighted', 'a', 3);
SELECT * FROM awa.key_weights WHERE queue = 'keys_weighted';
SELECT pg_temp.fill('keys_weighted');
SELECT pg_temp.drain('keys_weighted') AS weighted;
-- A weight set while the key has work applies to its next claims.
SELECT pg_temp.fill('keys_weighted');
SELECT awa.set_key_weight('keys_weighted', 'a', 1);
SELECT awa.set_key_weight('keys_weighted', 'c', 2);
SELECT pg_temp.drain('keys_weighted') AS reweighted;
-- A weight set in a transaction that rolls back changes nothing.
SELECT pg_temp.fill('keys_weighted');
BEGIN;
SELECT awa.set_key_weight('keys_weighted', 'b', 10000);
ROLLBACK;
SELECT weight FROM awa.key_weights WHERE queue = 'keys_weighted' AND concurrency_key = 'b';
SELECT pg_temp.drain('keys_weighted') AS after_rollback;

-- A keyed job keeps its key through a retry, a promotion and a claim: back
-- in its key's lane, claimed in turn with the others.
SELECT awa.configure_queue('keys_retry', fairness => 'key');
SELECT count(*) FROM (SELECT awa.enqueue('k', '{"key": "r"}', 'keys_retry', opts => '{"concurrency_key": "r", "tags": ["t"]}')) x;
CREATE TEMP TABLE keys_first AS SELECT job_id, run_lease, receipt_id, metadata FROM awa.claim('keys_retry', 1);
SELECT metadata FROM keys_first;
SELECT awa.get_job(job_id)->'concurrency_key' AS key, awa.get_job(job_id)->'tags' AS tags FROM keys_first;
SELECT awa.retry(job_id, run_lease, receipt_id, 'again', 0) FROM keys_first;
SELECT awa.promote_due(100) >= 1 AS promoted;
SELECT count(*) AS keyed_lanes FROM awa.queue_lanes WHERE queue = 'keys_retry' AND concurrency_key = 'r';
SELECT args->>'key' AS key, attempt FROM awa.claim('keys_retry', 1);
-- A job without a key has none in its document.
SELECT awa.get_job(awa.enqueue('k', '{}', 'keys_retry')) ? 'concurrency_key' AS has_key;

-- Several jobs of one key in one claim; a claim of more than a key has takes
-- what that key has (the next claim serves the next key).
SELECT awa.configure_queue('keys_batch', fairness => 'key');
SELECT pg_temp.fill('keys_batch');
SELECT string_agg(args->>'key', ',') AS batch FROM awa.claim('keys_batch', 4);
SELECT string_agg(args->>'key', ',') AS batch FROM awa.claim('keys_batch', 4);
SELECT string_agg(args->>'key', ',') AS batch FROM awa.claim('keys_batch', 4);

-- enqueue_many with keys, and a cancel of an available keyed job (its
-- tombstone goes into its key's lane).
SELECT count(*) AS enqueued FROM awa.enqueue_many(ARRAY['k','k','k'], ARRAY['{"key":"x"}','{"key":"y"}','{"key":"x"}']::jsonb[],
    'keys_many', opts => ARRAY['{"concurrency_key":"x"}','{"concurrency_key":"y"}','{"concurrency_key":"x"}']::jsonb[]);
SELECT awa.cancel(min(job_id)) FROM awa.ready_entries WHERE queue = 'keys_many';
SELECT available, cancelled FROM awa.queue_counts('keys_many');
-- (A claim takes jobs of one lane: one key.)
SELECT string_agg(args->>'key', ',' ORDER BY job_id) AS rest FROM awa.claim('keys_many', 10);
SELECT string_agg(args->>'key', ',' ORDER BY job_id) AS rest FROM awa.claim('keys_many', 10);
-- A scheduled keyed job cancelled: its terminal row names its key's lane.
SELECT awa.enqueue('k', '{}', 'keys_many', run_at => now() + interval '1 hour',
                   opts => '{"concurrency_key": "later"}') AS later \gset
SELECT awa.cancel(:later);
SELECT e.lane_id = l.lane_id AS in_its_lane FROM awa.done_entries e, awa.queue_lanes l
 WHERE e.job_id = :later AND l.queue = 'keys_many' AND l.concurrency_key = 'later';

-- Bad input: 22023 (22004 for NULL) with a hint; nothing changes.
SELECT pg_temp.try($$SELECT awa.enqueue('k', '{}', 'keys_bad', opts => jsonb_build_object('concurrency_key', repeat('x', 1048576)))$$);
SELECT pg_temp.try($$SELECT awa.enqueue('k', '{}', 'keys_bad', opts => jsonb_build_object('concurrency_key', repeat('é', 128)))$$);
SELECT pg_temp.try($$SELECT awa.enqueue('k', '{}', 'keys_bad', opts => jsonb_build_object('concurrency_key', repeat('x', 255)))$$);
SELECT pg_temp.try($$SELECT awa.enqueue('k', '{}', 'keys_bad', opts => '{"concurrency_key": ""}')$$);
SELECT pg_temp.try($$SELECT awa.enqueue('k', '{}', 'keys_bad', opts => '{"concurrency_key": 42}')$$);
SELECT pg_temp.try($$SELECT awa.enqueue('k', '{}', 'keys_bad', opts => '{"concurrency_key": null}')$$);
SELECT pg_temp.try($$SELECT awa.enqueue_many(ARRAY['k','k'], NULL, 'keys_bad', opts => ARRAY['{}', '{"concurrency_key": ""}']::jsonb[])$$);
SELECT pg_temp.try($$SELECT awa.set_key_weight('keys_bad', 'a', 0)$$);
SELECT pg_temp.try($$SELECT awa.set_key_weight('keys_bad', 'a', -1)$$);
SELECT pg_temp.try($$SELECT awa.set_key_weight('keys_bad', 'a', 10001)$$);
SELECT pg_temp.try($$SELECT awa.set_key_weight('keys_bad', 'a', NULL)$$);
SELECT pg_temp.try($$SELECT awa.set_key_weight('keys_bad', '', 2)$$);
SELECT pg_temp.try($$SELECT awa.set_key_weight('keys_bad', NULL, 2)$$);
SELECT pg_temp.try($$SELECT awa.set_key_weight('', 'a', 2)$$);
SELECT pg_temp.try($$SELECT awa.configure_queue('keys_bad', fairness => 'round-robin')$$);
SELECT pg_temp.try($$SELECT awa.configure_queue('keys_bad', fairness => '')$$);
SELECT count(*) AS jobs, (SELECT count(*) FROM awa.key_weights WHERE queue = 'keys_bad') AS weights,
       (SELECT count(*) FROM awa.queue_meta WHERE queue = 'keys_bad') AS settings
  FROM awa.ready_entries WHERE queue = 'keys_bad';
