--
-- complete: awa.complete(job_id, run_lease, receipt_id) and
-- awa.complete_many(job_ids, run_leases, receipt_ids).
-- Queues used here: co_one, co_many, co_tx, co_bad, cm_dups, co_whole.
--
\set VERBOSITY default

\i test/sql/include/try.sql

\i test/sql/include/footprint.sql


-- ---------------------------------------------------------------------------
-- awa.complete: accepted once for the live attempt, refused otherwise.
-- ---------------------------------------------------------------------------
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['c1', 'c2', 'c3'], NULL, 'co_one');
CREATE TEMP TABLE co_claims AS
SELECT job_id, run_lease, receipt_id, kind FROM awa.claim('co_one', 2);
SELECT job_id AS j1, run_lease AS l1, receipt_id AS r1 FROM co_claims WHERE kind = 'c1' \gset
SELECT job_id AS j2, run_lease AS l2, receipt_id AS r2 FROM co_claims WHERE kind = 'c2' \gset
-- c3 stays claimed by nobody: its job id with a made-up receipt is refused.
SELECT job_id AS j3 FROM awa.ready_entries WHERE queue = 'co_one' AND kind = 'c3' \gset

SELECT pg_temp.footprint() AS before \gset
SELECT label, awa.complete(job_id, run_lease, receipt_id) AS accepted FROM (VALUES
    ('wrong run_lease 2',          :j1::bigint, 2::bigint, :r1::bigint),
    ('wrong run_lease 0',          :j1, 0, :r1),
    ('wrong run_lease -1',         :j1, -1, :r1),
    ('wrong job (other claimed)',  :j2, :l1, :r1),
    ('wrong job (unclaimed)',      :j3, 1, :r1),
    ('wrong job (no such job)',    -1, 1, :r1),
    ('receipt of another job',     :j1, :l1, :r2),
    ('receipt 0',                  :j1, :l1, 0),
    ('receipt -1',                 :j1, :l1, -1),
    ('negative receipt',           :j1, :l1, -:r1),
    ('receipt 12345',              :j1, :l1, 12345),
    ('receipt max bigint',         :j1, :l1, 9223372036854775807),
    ('receipt min bigint',         :j1, :l1, -9223372036854775808),
    ('receipt slot 15',            :j1, :l1, (:r1 & ~15) | 15),
    ('receipt slot 7',             :j1, :l1, (:r1 & ~15) | 7),
    ('receipt index out of batch', :j1, :l1, :r1 | (5 << 4)),
    ('receipt of no batch',        :j1, :l1, ((:r1 >> 18) + 1000000) << 18),
    ('unclaimed job, made-up receipt', :j3, 1, (:r1 | (2 << 4)))
) AS t(label, job_id, run_lease, receipt_id);
SELECT pg_temp.written(:'before') AS written;

SELECT awa.complete(:j1, :l1, :r1) AS first_time;
SELECT pg_temp.written(:'before') AS written;
SELECT pg_temp.footprint() AS after_first \gset
SELECT awa.complete(:j1, :l1, :r1) AS second_time;
SELECT pg_temp.written(:'after_first') AS written;
-- The other attempt of the same claim batch is still live.
SELECT awa.complete(:j2, :l2, :r1) AS j2_with_j1_receipt, awa.complete(:j2, :l2, :r2) AS j2_own_receipt;

-- The evidence: one closure batch and one completion batch per completion,
-- naming the claim batch, the index in it, the job, its lease and lane. A
-- completion batch stores no job ids: its jobs are the slot's ready rows at its
-- lane positions.
CREATE FUNCTION pg_temp.receipt_jobs(r awa.receipt_completion_batches) RETURNS bigint[]
LANGUAGE sql AS $$
    SELECT array_agg(e.job_id ORDER BY u.n)
      FROM unnest(awa._lane_positions(r.first_lane_seq, r.completed_count, r.lane_seqs)) WITH ORDINALITY AS u(lane_seq, n)
      JOIN awa.ready_entries e ON e.ready_slot = r.ready_slot AND e.lane_id = r.lane_id AND e.lane_seq = u.lane_seq
$$;
SELECT c.batch_id = r.batch_id AS same_batch_id,
       awa._claim_batch_of_closure(c.batch_id) = :r1 >> 18 AS names_claim_batch,
       c.claim_slot, c.ready_slot, c.ready_generation, c.outcome, c.closed_count, c.claim_indexes,
       pg_temp.receipt_jobs(r) = ARRAY[CASE c.claim_indexes[1] WHEN 0 THEN :j1 ELSE :j2 END]::bigint[] AS job_ids,
       r.queue, r.priority, r.completed_count, r.run_leases, r.first_lane_seq, r.lane_seqs, r.claim_slot,
       -- keyed under the claim batch, by the first position it closes
       c.batch_id >> 14 = awa._claim_batch_of_closure(c.batch_id) AS keyed_under_claim_batch, c.batch_id & 16383 AS first_index,
       c.closed_at = r.completed_at AS same_time, c.closed_at <= now() AS closed_in_past
  FROM awa.lease_claim_closure_batches c
  JOIN awa.receipt_completion_batches r ON r.batch_id = c.batch_id
 WHERE r.queue = 'co_one' ORDER BY c.batch_id;
-- Completion never touches the ready row.
SELECT kind, run_lease, attempt FROM awa.ready_entries WHERE queue = 'co_one' ORDER BY lane_seq;

-- ---------------------------------------------------------------------------
-- Completion inside a rolled-back transaction leaves the attempt live; a
-- receipt from a rolled-back claim is dead.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('tx.a', queue => 'co_tx') AS tx_a \gset
SELECT awa.enqueue('tx.b', queue => 'co_tx') AS tx_b \gset
SELECT run_lease AS tx_lease, receipt_id AS tx_receipt FROM awa.claim('co_tx') \gset
SELECT pg_temp.footprint() AS before_tx \gset
BEGIN;
SELECT awa.complete(:tx_a, :tx_lease, :tx_receipt) AS accepted_inside;
SELECT awa.complete(:tx_a, :tx_lease, :tx_receipt) AS accepted_again_inside;
ROLLBACK;
SELECT pg_temp.footprint() = :'before_tx'::jsonb AS nothing_written;
SELECT awa.complete(:tx_a, :tx_lease, :tx_receipt) AS accepted_after_rollback;

BEGIN;
SELECT job_id = :tx_b AS is_b, run_lease AS rb_lease, receipt_id AS rb_receipt FROM awa.claim('co_tx') \gset
ROLLBACK;
SELECT :'is_b' AS is_b, awa.complete(:tx_b, :rb_lease, :rb_receipt) AS rolled_back_receipt_accepted;
SELECT job_id = :tx_b AS is_b, run_lease, receipt_id <> :rb_receipt AS new_receipt FROM awa.claim('co_tx');

-- ---------------------------------------------------------------------------
-- awa.complete_many: results in input order, one closure per run of
-- consecutive positions closed in a claim batch.
-- ---------------------------------------------------------------------------
SELECT min(id) AS m0 FROM awa.enqueue_many(ARRAY['m0', 'm1', 'm2', 'm3', 'm4', 'm5'], NULL, 'co_many') AS id \gset
-- Claim batch X = m0, m1, m2; claim batch Y = m3, m4; m5 is never claimed.
CREATE TEMP TABLE co_many_claims AS
SELECT 'X' AS batch, job_id, run_lease, receipt_id FROM awa.claim('co_many', 3);
INSERT INTO co_many_claims SELECT 'Y', job_id, run_lease, receipt_id FROM awa.claim('co_many', 2);
SELECT batch, job_id - :m0 AS job, run_lease, (receipt_id >> 4) & 16383 AS receipt_index
  FROM co_many_claims ORDER BY job_id;
-- Complete m1 alone first: it is stale in the batch call below.
SELECT awa.complete(job_id, run_lease, receipt_id) AS m1_completed FROM co_many_claims WHERE job_id = :m0 + 1;

SELECT pg_temp.footprint() AS before_many \gset
-- Input: m4, m2, m1 (stale), m0, m4 (duplicate), m3 with a wrong lease, m3
-- with m0's receipt.
WITH input(ord, job, lease_delta, receipt_of) AS (VALUES
    (1, 4, 0, 4), (2, 2, 0, 2), (3, 1, 0, 1), (4, 0, 0, 0), (5, 4, 0, 4), (6, 3, 1, 3), (7, 3, 0, 0))
SELECT array_agg(i.job + :m0 ORDER BY i.ord) AS job_ids,
       array_agg(c.run_lease + i.lease_delta ORDER BY i.ord) AS run_leases,
       array_agg(r.receipt_id ORDER BY i.ord) AS receipt_ids
  FROM input i
  JOIN co_many_claims c ON c.job_id = i.job + :m0
  JOIN co_many_claims r ON r.job_id = i.receipt_of + :m0 \gset
SELECT ord, job_id - :m0 AS job, accepted
  FROM awa.complete_many(:'job_ids', :'run_leases', :'receipt_ids') WITH ORDINALITY AS t(job_id, accepted, ord);
-- Accepted: m4 (batch Y), m2 and m0 (batch X): one closure and one completion
-- batch per run of consecutive positions, keyed by its first: m0 and m2 are
-- not consecutive (m1 between them was closed before), so X has three
-- closures of one position each, Y one.
SELECT (SELECT batch FROM co_many_claims WHERE job_id = (pg_temp.receipt_jobs(r))[1]) AS claim_batch,
       c.closed_count, c.claim_indexes, (SELECT array_agg(j - :m0 ORDER BY n) FROM unnest(pg_temp.receipt_jobs(r)) WITH ORDINALITY u(j, n)) AS jobs,
       r.run_leases, r.completed_count, r.first_lane_seq, r.lane_seqs,
       c.batch_id >> 14 = awa._claim_batch_of_closure(c.batch_id) AS keyed_under_claim_batch, c.batch_id & 16383 AS first_index
  FROM awa.lease_claim_closure_batches c
  JOIN awa.receipt_completion_batches r ON r.batch_id = c.batch_id
 WHERE r.queue = 'co_many' ORDER BY claim_batch, c.batch_id;
SELECT pg_temp.written(:'before_many') AS written;

-- A call where nothing is accepted writes nothing.
SELECT pg_temp.footprint() AS before_stale \gset
SELECT job_id - :m0 AS job, accepted
  FROM awa.complete_many(:'job_ids', :'run_leases', :'receipt_ids');
SELECT job_id - :m0 AS job, accepted
  FROM awa.complete_many(ARRAY[:m0 + 5, :m0 + 5], ARRAY[1, 1]::bigint[], ARRAY[0, -1]::bigint[]);
SELECT pg_temp.footprint() = :'before_stale'::jsonb AS nothing_written;
-- m3 with its own lease is still live.
SELECT job_id - :m0 AS job, accepted
  FROM awa.complete_many(array(SELECT job_id FROM co_many_claims WHERE job_id = :m0 + 3),
                         array(SELECT run_lease FROM co_many_claims WHERE job_id = :m0 + 3),
                         array(SELECT receipt_id FROM co_many_claims WHERE job_id = :m0 + 3));

-- Empty arrays: no rows, nothing written.
SELECT pg_temp.footprint() AS before_empty \gset
SELECT count(*) AS results FROM awa.complete_many('{}', '{}', '{}');
SELECT count(*) AS results FROM awa.complete_many(ARRAY[]::bigint[], ARRAY[]::bigint[], ARRAY[]::bigint[]);
SELECT pg_temp.footprint() = :'before_empty'::jsonb AS nothing_written;

-- ---------------------------------------------------------------------------
-- Invalid input: SQLSTATE, message and hint; nothing written.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('bad', queue => 'co_bad') AS bad_job \gset
SELECT run_lease AS bad_lease, receipt_id AS bad_receipt FROM awa.claim('co_bad') \gset
SELECT * FROM awa.complete_many(ARRAY[1, 2]::bigint[], ARRAY[1]::bigint[], ARRAY[1, 2]::bigint[]);

SELECT pg_temp.footprint() AS before_bad \gset
-- These arguments have no default, so only the presence of a hint is checked
-- ("Omit the argument to use its default." would be wrong advice).
SELECT call, pg_temp.try(call, false) AS outcome FROM (VALUES
    ($$SELECT awa.complete(NULL, 1, 1)$$),
    ($$SELECT awa.complete(1, NULL, 1)$$),
    ($$SELECT awa.complete(1, 1, NULL)$$),
    ($$SELECT awa.complete_many(NULL, '{1}', '{1}')$$),
    ($$SELECT awa.complete_many('{1}', NULL, '{1}')$$),
    ($$SELECT awa.complete_many('{1}', '{1}', NULL)$$)
) AS t(call);
-- %1$s, %2$s, %3$s: the live attempt's job id, run lease and receipt id.
SELECT call, pg_temp.try(format(call, :bad_job, :bad_lease, :bad_receipt)) AS outcome
  FROM (VALUES
    ($$SELECT awa.complete_many('{%1$s, %1$s}', '{%2$s}', '{%3$s, %3$s}')$$),
    ($$SELECT awa.complete_many('{%1$s}', '{%2$s, %2$s}', '{%3$s}')$$),
    ($$SELECT awa.complete_many('{%1$s}', '{%2$s}', '{%3$s, %3$s}')$$),
    ($$SELECT awa.complete_many('{%1$s}', '{%2$s}', '{}')$$),
    ($$SELECT awa.complete_many('{%1$s, NULL}', '{%2$s, %2$s}', '{%3$s, %3$s}')$$),
    ($$SELECT awa.complete_many('{%1$s, %1$s}', '{%2$s, NULL}', '{%3$s, %3$s}')$$),
    ($$SELECT awa.complete_many('{%1$s, %1$s}', '{%2$s, %2$s}', '{%3$s, NULL}')$$),
    ($$SELECT awa.complete_many('{{%1$s}}', '{{%2$s}}', '{{%3$s}}')$$),
    ($$SELECT awa.complete_many('{%1$s}', '{{%2$s}}', '{%3$s}')$$)
) AS t(call);
SELECT pg_temp.footprint() = :'before_bad'::jsonb AS nothing_written;
-- The attempt is still live.
SELECT awa.complete(:bad_job, :bad_lease, :bad_receipt) AS accepted;

-- ---------------------------------------------------------------------------
-- Duplicates in a long call (qsort is not stable): the first occurrence of
-- each attempt is accepted, every later one refused, whatever the order.
-- ---------------------------------------------------------------------------
SELECT count(*) AS jobs FROM awa.enqueue_many(array_fill('dup'::text, ARRAY[6]), NULL, 'cm_dups');
CREATE TEMP TABLE dup_claim AS SELECT job_id, run_lease, receipt_id FROM awa.claim('cm_dups', 6);
-- Each attempt twice, interleaved: positions 1..6 then the same attempts again, reversed.
CREATE TEMP TABLE dup_input AS
  SELECT row_number() OVER () AS pos, job_id, run_lease, receipt_id
    FROM (SELECT * FROM (SELECT * FROM dup_claim ORDER BY job_id) a
          UNION ALL
          SELECT * FROM (SELECT * FROM dup_claim ORDER BY job_id DESC) b) t;
SELECT array_agg(accepted ORDER BY ord) AS accepted_in_input_order
  FROM awa.complete_many((SELECT array_agg(job_id ORDER BY pos) FROM dup_input),
                         (SELECT array_agg(run_lease ORDER BY pos) FROM dup_input),
                         (SELECT array_agg(receipt_id ORDER BY pos) FROM dup_input))
       WITH ORDINALITY AS r(job_id, accepted, ord);

-- ---------------------------------------------------------------------------
-- Closure batch ids are keyed under the claim batch: (claim_batch_id << 14) |
-- first position closed, the batch_id range awa._first_closure_batch_id(id) ..
-- awa._last_closure_batch_id(id); every lookup of a claim batch's closures
-- (completion, cancel, get_job) finds them there.
-- ---------------------------------------------------------------------------
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['w1', 'w2', 'w3', 'w4'], NULL, 'co_whole');
CREATE TEMP TABLE whole_claim AS SELECT job_id, run_lease, receipt_id FROM awa.claim('co_whole', 2);
SELECT min(receipt_id) >> 18 AS whole_batch FROM whole_claim \gset
SELECT awa._first_closure_batch_id(:whole_batch) = :whole_batch::bigint << 14 AS first_id,
       awa._last_closure_batch_id(:whole_batch) = (:whole_batch::bigint << 14) + 16383 AS last_id;
SELECT array_agg(accepted) AS accepted
  FROM awa.complete_many((SELECT array_agg(job_id ORDER BY job_id) FROM whole_claim),
                         (SELECT array_agg(run_lease ORDER BY job_id) FROM whole_claim),
                         (SELECT array_agg(receipt_id ORDER BY job_id) FROM whole_claim));
SELECT c.batch_id = awa._first_closure_batch_id(:whole_batch) AS first_of_its_range, r.batch_id = c.batch_id AS completion_too,
       awa._claim_batch_of_closure(c.batch_id) = :whole_batch AS names_claim_batch, c.closed_count, c.claim_indexes, r.completed_count
  FROM awa.lease_claim_closure_batches c
  JOIN awa.receipt_completion_batches r ON r.batch_id = c.batch_id
 WHERE r.queue = 'co_whole';
-- Found in the range: a second completion is refused (the closed
-- positions), get_job says completed, cancel says finished.
SELECT array_agg(accepted) AS again
  FROM awa.complete_many((SELECT array_agg(job_id ORDER BY job_id) FROM whole_claim),
                         (SELECT array_agg(run_lease ORDER BY job_id) FROM whole_claim),
                         (SELECT array_agg(receipt_id ORDER BY job_id) FROM whole_claim));
SELECT awa.get_job(job_id) ->> 'state' AS state, awa.cancel(job_id) AS cancel FROM whole_claim ORDER BY job_id;
-- A claim batch of two closed in three calls (a retry, a completion, a
-- refused one): closures keyed at positions 0 and 1, each found by the next
-- call and by get_job.
CREATE TEMP TABLE part_claim AS SELECT job_id, run_lease, receipt_id FROM awa.claim('co_whole', 2);
SELECT min(receipt_id) >> 18 AS part_batch FROM part_claim \gset
SELECT awa.retry(job_id, run_lease, receipt_id, 'again', '1 hour') AS retried
  FROM part_claim WHERE job_id = (SELECT min(job_id) FROM part_claim);
SELECT awa.complete(job_id, run_lease, receipt_id) AS completed, awa.complete(job_id, run_lease, receipt_id) AS again,
       awa.retry(job_id, run_lease, receipt_id, 'late', '1 hour') AS late_retry
  FROM part_claim WHERE job_id = (SELECT max(job_id) FROM part_claim);
SELECT outcome, claim_indexes, batch_id - awa._first_closure_batch_id(:part_batch) AS first_index
  FROM awa.lease_claim_closure_batches
 WHERE batch_id BETWEEN awa._first_closure_batch_id(:part_batch) AND awa._last_closure_batch_id(:part_batch)
 ORDER BY batch_id;
SELECT awa.get_job(job_id) ->> 'state' AS state, awa.cancel(job_id) AS cancel FROM part_claim ORDER BY job_id;
-- Bad input: NULL in, NULL out; an id no claim batch can have is refused.
SELECT awa._first_closure_batch_id(NULL) IS NULL AS null_first, awa._last_closure_batch_id(NULL) IS NULL AS null_last;
SELECT pg_temp.try($$SELECT awa._first_closure_batch_id(0)$$);
SELECT pg_temp.try($$SELECT awa._last_closure_batch_id(-5)$$);
SELECT pg_temp.try($$SELECT awa._first_closure_batch_id(35184372088832)$$);
-- The claim batch of a closure batch id (no closure or completion row stores
-- it): the inverse of the key; NULL in, NULL out; an id no closure can have
-- is refused.
SELECT awa._claim_batch_of_closure(awa._first_closure_batch_id(:whole_batch)) = :whole_batch AS of_first,
       awa._claim_batch_of_closure(awa._last_closure_batch_id(:whole_batch)) = :whole_batch AS of_last,
       awa._claim_batch_of_closure(NULL) IS NULL AS null_in;
SELECT pg_temp.try($$SELECT awa._claim_batch_of_closure(16383)$$);
SELECT pg_temp.try($$SELECT awa._claim_batch_of_closure(-1)$$);
-- A receipt's (or claim batch's) lane positions: lane_seqs when stored, else
-- first_lane_seq and the next count - 1; NULL first or count gives NULL; a
-- count no claim batch can have, or a first position below 1, is refused.
SELECT awa._lane_positions(7, 3, NULL) AS consecutive, awa._lane_positions(7, 3, '{2,9}') AS stored,
       awa._lane_positions(NULL, 3, NULL) IS NULL AS null_first, awa._lane_positions(7, NULL, NULL) IS NULL AS null_count,
       cardinality(awa._lane_positions(1, 16384, NULL)) AS largest;
SELECT pg_temp.try($$SELECT awa._lane_positions(7, 0, NULL)$$);
SELECT pg_temp.try($$SELECT awa._lane_positions(7, 16385, NULL)$$);
SELECT pg_temp.try($$SELECT awa._lane_positions(0, 1, NULL)$$);
-- A claim batch's job ids, stored the same way: job_ids when stored, else
-- first_job_id and the next count - 1.
SELECT awa._claim_job_ids(40, 3, NULL) AS consecutive, awa._claim_job_ids(40, 2, '{40,57}') AS stored,
       awa._claim_job_ids(NULL, 3, NULL) IS NULL AS null_first, awa._claim_job_ids(40, NULL, NULL) IS NULL AS null_count,
       cardinality(awa._claim_job_ids(1, 16384, NULL)) AS largest;
SELECT pg_temp.try($$SELECT awa._claim_job_ids(40, 0, NULL)$$);
SELECT pg_temp.try($$SELECT awa._claim_job_ids(40, 16385, NULL)$$);
SELECT pg_temp.try($$SELECT awa._claim_job_ids(0, 1, NULL)$$);

-- ---------------------------------------------------------------------------
-- A receipt of no claim batch takes no lock that outlives the call: a long
-- call of made-up receipts (each id a batch of its own) cannot fill the shared
-- lock table. A real batch's lock is kept to the transaction's end.
-- ---------------------------------------------------------------------------
BEGIN;
SELECT count(*) FILTER (WHERE accepted) AS accepted, count(*) AS calls
  FROM awa.complete_many(array(SELECT g::bigint FROM generate_series(1, 1000) g),
                         array_fill(1::bigint, ARRAY[1000]),
                         array(SELECT (g::bigint + 1000000) << 18 FROM generate_series(1, 1000) g));
SELECT count(*) AS claim_batch_locks FROM pg_locks
 WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND objsubid = 16644;
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['l1'], NULL, 'co_whole');
SELECT awa.complete(job_id, run_lease, receipt_id) AS completed FROM awa.claim('co_whole', 1);
SELECT count(*) AS claim_batch_locks FROM pg_locks
 WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND objsubid = 16644;
COMMIT;
