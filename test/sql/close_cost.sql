--
-- close_cost: a closing call (complete, complete_many, retry, fail, heartbeat)
-- reads the closures that can cover its own attempts, not every closure its
-- claim batch already has (docs/architecture.md, "Closures keyed under their
-- claim batch"). Counted, not timed: the closure rows the call reads, from
-- pg_stat_xact_user_tables of the closure children inside its transaction
-- (a sequential scan's rows read plus an index scan's rows fetched). Reading
-- every earlier closure, these counts were 2,000 and more. Likewise the claim
-- batch's arrays: the backend keeps a copy of the last big claim batch's
-- arrays, so the calls after the first read none of its toast rows
-- (pg_stat_xact_all_tables of the claim children's toast tables).
-- Queues used here: cc_big, cc_gap, cc_run.
--
\set VERBOSITY default
-- (A schema of its own, not pg_temp: a second session uses it below.)
CREATE SCHEMA close_cost;

CREATE FUNCTION close_cost.claim_toast_rows_read() RETURNS bigint LANGUAGE sql AS $$
    SELECT coalesce(sum(coalesce(t.seq_tup_read, 0) + coalesce(t.idx_tup_fetch, 0)), 0)::bigint
      FROM pg_stat_xact_all_tables t
      JOIN pg_class c ON c.reltoastrelid = t.relid
     WHERE c.relnamespace = 'awa'::regnamespace AND c.relname LIKE 'lease\_claim\_batches\_%'
$$;
CREATE FUNCTION close_cost.closure_rows_read() RETURNS bigint LANGUAGE sql AS $$
    SELECT coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0)::bigint
      FROM pg_stat_xact_user_tables
     WHERE schemaname = 'awa' AND relname LIKE 'lease\_claim\_closure\_batches\_%'
$$;

-- One claim of 2,100 jobs; positions 0..1999 closed one call each (1999 by a
-- retry), the other 100 open. Their ids are every other id (each enqueue
-- into cc_big follows one into cc_gap), so the claim batch stores job_ids,
-- out of line: a batch of consecutive ids stores only its first
-- (05_claim_ring.sql), and then has no toast rows to count below.
SELECT count(*) FILTER (WHERE q = 'cc_big') AS jobs
  FROM (SELECT q, awa.enqueue('cc', queue => q)
          FROM generate_series(1, 4200) g, LATERAL (SELECT CASE g % 2 WHEN 0 THEN 'cc_big' ELSE 'cc_gap' END AS q) x) s;
CREATE TABLE close_cost.cc AS
SELECT ((receipt_id >> 4) & 16383)::int AS pos, job_id, run_lease, receipt_id FROM awa.claim('cc_big', 2100);
SELECT count(*) AS claimed, count(DISTINCT receipt_id >> 18) AS claim_batches, min(pos), max(pos) FROM close_cost.cc;
SELECT job_ids IS NOT NULL AS job_ids_stored
  FROM awa.lease_claim_batches WHERE batch_id = (SELECT min(receipt_id) >> 18 FROM close_cost.cc);
SELECT count(*) FILTER (WHERE awa.complete(job_id, run_lease, receipt_id)) AS completed_one_call_each
  FROM (SELECT * FROM close_cost.cc WHERE pos < 1999 ORDER BY pos) c;
SELECT awa.retry(job_id, run_lease, receipt_id, 'later', '1 hour') AS retried FROM close_cost.cc WHERE pos = 1999;
-- One closure per call, keyed by its position; each a run of one.
SELECT count(*) AS closures, sum(closed_count) AS closed,
       bool_and(claim_indexes = ARRAY[(batch_id & 16383)::int] AND closed_count = 1) AS each_its_position
  FROM awa.lease_claim_closure_batches WHERE awa._claim_batch_of_closure(batch_id) = (SELECT min(receipt_id) >> 18 FROM close_cost.cc);

-- Each call below runs in a transaction of its own and reads at most two
-- closure rows (the one keyed at or below its first position, and those
-- inside its run), whatever the 2,000 before.
BEGIN;
SELECT close_cost.closure_rows_read() AS r0, close_cost.claim_toast_rows_read() AS t0 \gset
SELECT awa.heartbeat(job_id, run_lease, receipt_id) AS heartbeat FROM close_cost.cc WHERE pos = 2050;
SELECT close_cost.closure_rows_read() - :r0 AS heartbeat_closure_rows_read,
       close_cost.claim_toast_rows_read() - :t0 AS heartbeat_claim_toast_rows_read;
COMMIT;

BEGIN;
SELECT close_cost.closure_rows_read() AS r0, close_cost.claim_toast_rows_read() AS t0 \gset
SELECT awa.complete(job_id, run_lease, receipt_id) AS completed FROM close_cost.cc WHERE pos = 2000;
SELECT close_cost.closure_rows_read() - :r0 AS complete_closure_rows_read,
       close_cost.claim_toast_rows_read() - :t0 AS complete_claim_toast_rows_read;
COMMIT;

-- A new session has no copy: its first call reads the arrays' toast rows.
\c
BEGIN;
SELECT close_cost.claim_toast_rows_read() AS t0 \gset
SELECT awa.heartbeat(job_id, run_lease, receipt_id) AS heartbeat FROM close_cost.cc WHERE pos = 2050;
SELECT close_cost.claim_toast_rows_read() - :t0 > 0 AS first_call_reads_toast;
COMMIT;

-- Refused: a second completion of the same attempt, a late retry of it, the
-- first and a middle position (the closure keyed at them), a retried one.
BEGIN;
SELECT close_cost.closure_rows_read() AS r0 \gset
SELECT pos, awa.complete(job_id, run_lease, receipt_id) AS again FROM close_cost.cc WHERE pos IN (0, 1000, 1999, 2000) ORDER BY pos;
SELECT awa.retry(job_id, run_lease, receipt_id, 'late', '1 hour') AS late_retry FROM close_cost.cc WHERE pos = 2000;
SELECT awa.heartbeat(job_id, run_lease, receipt_id) AS heartbeat_of_closed FROM close_cost.cc WHERE pos = 2000;
SELECT (close_cost.closure_rows_read() - :r0) <= 6 * 2 AS six_calls_read_at_most_two_each;
COMMIT;

-- complete_many of positions 2001..2010 and 2012, with 2000 (closed) and a
-- duplicate of 2005: two runs, 2001..2010 and 2012, each one closure; the
-- closed and the duplicate refused.
BEGIN;
SELECT close_cost.closure_rows_read() AS r0 \gset
SELECT array_agg(t.accepted ORDER BY t.ord) AS accepted
  FROM awa.complete_many((SELECT array_agg(job_id ORDER BY o) FROM (SELECT *, pos AS o FROM close_cost.cc WHERE pos BETWEEN 2000 AND 2010 OR pos = 2012
                                                                 UNION ALL SELECT *, 9999 FROM close_cost.cc WHERE pos = 2005) x),
                         (SELECT array_agg(run_lease ORDER BY o) FROM (SELECT *, pos AS o FROM close_cost.cc WHERE pos BETWEEN 2000 AND 2010 OR pos = 2012
                                                                   UNION ALL SELECT *, 9999 FROM close_cost.cc WHERE pos = 2005) x),
                         (SELECT array_agg(receipt_id ORDER BY o) FROM (SELECT *, pos AS o FROM close_cost.cc WHERE pos BETWEEN 2000 AND 2010 OR pos = 2012
                                                                    UNION ALL SELECT *, 9999 FROM close_cost.cc WHERE pos = 2005) x))
       WITH ORDINALITY AS t(job_id, accepted, ord);
SELECT (close_cost.closure_rows_read() - :r0) <= 4 AS complete_many_read_at_most_four;
COMMIT;
SELECT batch_id & 16383 AS first_index, closed_count, claim_indexes, outcome
  FROM awa.lease_claim_closure_batches
 WHERE awa._claim_batch_of_closure(batch_id) = (SELECT min(receipt_id) >> 18 FROM close_cost.cc) AND batch_id & 16383 >= 1999
 ORDER BY batch_id;
-- A run that meets closed positions on both sides, from inside: 2011 alone
-- (2010 and 2012 closed), then 2013..2099 in one call, then all of them
-- again (every one refused, reading only the closures keyed inside).
SELECT awa.fail(job_id, run_lease, receipt_id, 'no') AS failed FROM close_cost.cc WHERE pos = 2011;
SELECT count(*) FILTER (WHERE t.accepted) AS accepted
  FROM awa.complete_many((SELECT array_agg(job_id ORDER BY pos) FROM close_cost.cc WHERE pos >= 2013),
                         (SELECT array_agg(run_lease ORDER BY pos) FROM close_cost.cc WHERE pos >= 2013),
                         (SELECT array_agg(receipt_id ORDER BY pos) FROM close_cost.cc WHERE pos >= 2013)) t;
SELECT count(*) FILTER (WHERE t.accepted) AS accepted_again
  FROM awa.complete_many((SELECT array_agg(job_id ORDER BY pos) FROM close_cost.cc),
                         (SELECT array_agg(run_lease ORDER BY pos) FROM close_cost.cc),
                         (SELECT array_agg(receipt_id ORDER BY pos) FROM close_cost.cc)) t;
-- Every position closed exactly once; what get_job says of a few.
SELECT count(*) AS positions, count(DISTINCT i) AS distinct_positions, min(i), max(i)
  FROM awa.lease_claim_closure_batches x, unnest(x.claim_indexes) AS i
 WHERE awa._claim_batch_of_closure(x.batch_id) = (SELECT min(receipt_id) >> 18 FROM close_cost.cc);
SELECT pos, awa.get_job(job_id) ->> 'state' AS state FROM close_cost.cc WHERE pos IN (0, 1999, 2000, 2005, 2011, 2099) ORDER BY pos;

-- A big batch of consecutive ids stores no job_ids (05_claim_ring.sql). Its
-- jobs have max_attempts of many values, so that array is stored out of line.
-- The backend's copy is keyed by the row version, not by job_ids' TOAST value
-- (which this row has none of), so the calls after the first read none of
-- the batch's toast rows either.
SELECT count(*) AS jobs
  FROM (SELECT awa.enqueue('run', queue => 'cc_run', max_attempts => 1 + (g * 7919) % 500)
          FROM generate_series(1, 10000) g) e;
CREATE TABLE close_cost.run AS
SELECT ((receipt_id >> 4) & 16383)::int AS pos, job_id, run_lease, receipt_id FROM awa.claim('cc_run', 10000);
SELECT job_ids IS NULL AS job_ids_not_stored, lane_seqs IS NULL AS lane_seqs_not_stored
  FROM awa.lease_claim_batches WHERE batch_id = (SELECT min(receipt_id) >> 18 FROM close_cost.run);
\c
BEGIN;
SELECT close_cost.claim_toast_rows_read() AS t0 \gset
SELECT awa.heartbeat(job_id, run_lease, receipt_id) AS heartbeat FROM close_cost.run WHERE pos = 0;
SELECT close_cost.claim_toast_rows_read() - :t0 > 0 AS first_call_reads_toast;
COMMIT;
BEGIN;
SELECT close_cost.claim_toast_rows_read() AS t0 \gset
SELECT count(*) FILTER (WHERE awa.complete(job_id, run_lease, receipt_id)) AS completed_one_call_each
  FROM (SELECT * FROM close_cost.run WHERE pos BETWEEN 1 AND 50 ORDER BY pos) r;
SELECT close_cost.claim_toast_rows_read() - :t0 AS later_calls_claim_toast_rows_read;
COMMIT;
-- The rest completed, so that no attempt of this test stays open.
SELECT count(*) FILTER (WHERE t.accepted) AS completed_rest
  FROM awa.complete_many((SELECT array_agg(job_id ORDER BY pos) FROM close_cost.run WHERE pos = 0 OR pos > 50),
                         (SELECT array_agg(run_lease ORDER BY pos) FROM close_cost.run WHERE pos = 0 OR pos > 50),
                         (SELECT array_agg(receipt_id ORDER BY pos) FROM close_cost.run WHERE pos = 0 OR pos > 50)) t;
SELECT count(*) AS attempt_state_rows FROM awa.attempt_state;

DROP SCHEMA close_cost CASCADE;
