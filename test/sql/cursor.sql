--
-- cursor: the claim cursor, the claim-evidence guard and recovery.
-- Queues used here: cur_a, cur_b, cur_c, cur_d, cur_d2, cur_e, cur_f, cur_g.
--
-- The claim cursor of a lane (awa.lanes.claim_cursor) is the highest lane_seq
-- proven spent. A claim never moves it past its own rows; the next claim of
-- the lane does, and only over lanes covered by a visible claim attempt batch
-- (claim evidence) or over holes proven dead.
--
\set VERBOSITY default
\i test/sql/include/ready_runs.sql

-- Every row the claims of this file handed out (RETURNING shows them).
CREATE TEMP TABLE cur_claimed (
    scenario text NOT NULL,
    job_id bigint NOT NULL,
    run_lease bigint NOT NULL,
    attempt int NOT NULL,
    receipt_id bigint NOT NULL
);

-- ---------------------------------------------------------------------------
-- (a) After claiming A the cursor has not moved past A; the next claim of
--     the lane moves it past A (A's evidence is visible), but not past its
--     own job.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('a.A', queue => 'cur_a') AS a_a \gset
SELECT awa.enqueue('a.B', queue => 'cur_a') AS a_b \gset
SELECT awa.enqueue('a.C', queue => 'cur_a') AS a_c \gset
SELECT lane_seq AS a_lane_seq FROM awa.ready_entries WHERE job_id = :a_a \gset
SELECT lane_seq AS b_lane_seq FROM awa.ready_entries WHERE job_id = :a_b \gset
SELECT :a_lane_seq AS a_lane_seq, :b_lane_seq AS b_lane_seq;
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_a';
INSERT INTO cur_claimed SELECT 'a', job_id, run_lease, attempt, receipt_id FROM awa.claim('cur_a')
RETURNING job_id = :a_a AS is_a, run_lease, attempt;
SELECT claim_cursor, claim_cursor < :a_lane_seq AS not_past_a FROM awa.lanes WHERE queue = 'cur_a';
-- The evidence of the claim of A exists.
SELECT coalesce(lane_ranges, int8multirange(int8range(first_lane_seq, next_lane_seq))) AS lanes, lane_ranges IS NULL AS one_range, claimed_count FROM awa.ready_claim_attempt_batches WHERE queue = 'cur_a';
INSERT INTO cur_claimed SELECT 'a', job_id, run_lease, attempt, receipt_id FROM awa.claim('cur_a')
RETURNING job_id = :a_b AS is_b, run_lease, attempt;
SELECT claim_cursor, claim_cursor >= :a_lane_seq AS past_a, claim_cursor < :b_lane_seq AS not_past_b
  FROM awa.lanes WHERE queue = 'cur_a';
INSERT INTO cur_claimed SELECT 'a', job_id, run_lease, attempt, receipt_id FROM awa.claim('cur_a')
RETURNING job_id = :a_c AS is_c, run_lease, attempt;
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_a';
-- A claim that finds nothing still moves the cursor over the evidence.
SELECT count(*) AS claimed FROM awa.claim('cur_a');
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_a';
SELECT count(*) AS claimed FROM awa.claim('cur_a');
SELECT coalesce(lane_ranges, int8multirange(int8range(first_lane_seq, next_lane_seq))) AS lanes, lane_ranges IS NULL AS one_range FROM awa.ready_claim_attempt_batches WHERE queue = 'cur_a' ORDER BY batch_id;

-- ---------------------------------------------------------------------------
-- (b) Lost claim: the claim of A is gone (its attempt batch and claim batch
--     deleted, as if its WAL was lost). The cursor did not pass A, so A is
--     claimable again as the same attempt; the old receipt is dead.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('b.A', queue => 'cur_b') AS b_a \gset
SELECT awa.enqueue('b.B', queue => 'cur_b') AS b_b \gset
SELECT job_id = :b_a AS b_is_a, run_lease AS b_old_lease, receipt_id AS b_old_receipt
  FROM awa.claim('cur_b') \gset
SELECT :'b_is_a' AS is_a, :b_old_lease AS run_lease;
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_b';
DELETE FROM awa.ready_claim_attempt_batches WHERE queue = 'cur_b' AND batch_id = :b_old_receipt >> 18;
DELETE FROM awa.lease_claim_batches WHERE queue = 'cur_b' AND batch_id = :b_old_receipt >> 18;
INSERT INTO cur_claimed SELECT 'b', job_id, run_lease, attempt, receipt_id FROM awa.claim('cur_b')
RETURNING job_id = :b_a AS is_a, run_lease, attempt, receipt_id <> :b_old_receipt AS new_receipt;
SELECT claim_cursor, claim_cursor < (SELECT lane_seq FROM awa.ready_entries WHERE job_id = :b_a) AS not_past_a
  FROM awa.lanes WHERE queue = 'cur_b';
SELECT receipt_id AS b_new_receipt FROM cur_claimed WHERE scenario = 'b' AND job_id = :b_a \gset
-- The old receipt is refused and writes nothing; the new one is accepted once.
SELECT count(*) AS closures_before FROM awa.lease_claim_closure_batches \gset
SELECT awa.complete(:b_a, 1, :b_old_receipt) AS old_receipt_accepted;
SELECT count(*) - :closures_before AS closures_written FROM awa.lease_claim_closure_batches;
SELECT awa.complete(:b_a, 1, :b_new_receipt) AS new_receipt_accepted;
SELECT awa.complete(:b_a, 1, :b_new_receipt) AS new_receipt_accepted_again;
SELECT count(*) - :closures_before AS closures_written FROM awa.lease_claim_closure_batches;
-- Then the lane goes on with B, and the cursor passes A.
INSERT INTO cur_claimed SELECT 'b', job_id, run_lease, attempt, receipt_id FROM awa.claim('cur_b')
RETURNING job_id = :b_b AS is_b, run_lease, attempt;
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_b';
SELECT count(*) AS claimed FROM awa.claim('cur_b');

-- ---------------------------------------------------------------------------
-- (c) A rolled-back enqueue leaves a hole below a committed row. With no
--     enqueue open on the lane the hole is proven dead and skipped.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('c.P', queue => 'cur_c') AS c_p \gset
BEGIN;
SELECT awa.enqueue('c.X', queue => 'cur_c') AS c_x \gset
-- Written now (a read-back), so its lane position is held until the rollback.
SELECT awa._flush_enqueues();
ROLLBACK;
SELECT awa.enqueue('c.Y', queue => 'cur_c') AS c_y \gset
SELECT job_id = :c_p AS is_p, job_id = :c_y AS is_y, lane_seq FROM awa.ready_entries
 WHERE queue = 'cur_c' ORDER BY lane_seq;
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_c';
INSERT INTO cur_claimed SELECT 'c', job_id, run_lease, attempt, receipt_id FROM awa.claim('cur_c')
RETURNING job_id = :c_p AS is_p, run_lease, attempt;
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_c';
INSERT INTO cur_claimed SELECT 'c', job_id, run_lease, attempt, receipt_id FROM awa.claim('cur_c')
RETURNING job_id = :c_y AS is_y, run_lease, attempt;
-- The cursor passed P (evidence) and the dead hole, but not Y.
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_c';
SELECT count(*) AS claimed FROM awa.claim('cur_c');
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_c';
-- Y's claim lists only Y's lane, not the hole.
SELECT coalesce(lane_ranges, int8multirange(int8range(first_lane_seq, next_lane_seq))) AS lanes, lane_ranges IS NULL AS one_range FROM awa.ready_claim_attempt_batches WHERE queue = 'cur_c' ORDER BY batch_id;

-- ---------------------------------------------------------------------------
-- (d) Gap then spent head: the cursor falls back below a dead hole and two
--     claimed rows (an UPDATE by hand simulates a lost cursor advance). The next claim
--     must not hand out a claimed job again, must repair the cursor and must
--     still return the jobs behind them.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('d.P', queue => 'cur_d') AS d_p \gset
BEGIN;
SELECT awa.enqueue('d.X', queue => 'cur_d') IS NOT NULL AS ok;
SELECT awa._flush_enqueues();
ROLLBACK;
SELECT awa.enqueue('d.Y', queue => 'cur_d') AS d_y \gset
SELECT awa.enqueue('d.Z1', queue => 'cur_d') AS d_z1 \gset
SELECT awa.enqueue('d.Z2', queue => 'cur_d') AS d_z2 \gset
INSERT INTO cur_claimed SELECT 'd', job_id, run_lease, attempt, receipt_id FROM awa.claim('cur_d')
RETURNING job_id = :d_p AS is_p;
INSERT INTO cur_claimed SELECT 'd', job_id, run_lease, attempt, receipt_id FROM awa.claim('cur_d')
RETURNING job_id = :d_y AS is_y;
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_d';
UPDATE awa.queue_lanes SET claim_cursor = 0 WHERE queue = 'cur_d';
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_d';
INSERT INTO cur_claimed SELECT 'd', job_id, run_lease, attempt, receipt_id FROM awa.claim('cur_d', 10)
RETURNING job_id = :d_z1 AS is_z1, job_id = :d_z2 AS is_z2, run_lease, attempt;
-- Repaired: past P, the hole and Y; not past Z1 and Z2 (their own claim).
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_d';
SELECT count(*) AS claimed FROM awa.claim('cur_d', 10);
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_d';

-- The same without a hole: the cursor falls back to 0 below two claimed rows.
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['d2.A', 'd2.B', 'd2.C'], NULL, 'cur_d2');
INSERT INTO cur_claimed SELECT 'd2', job_id, run_lease, attempt, receipt_id FROM awa.claim('cur_d2', 2)
RETURNING run_lease;
UPDATE awa.queue_lanes SET claim_cursor = 0 WHERE queue = 'cur_d2';
WITH c AS (INSERT INTO cur_claimed SELECT 'd2', job_id, run_lease, attempt, receipt_id
             FROM awa.claim('cur_d2', 10) RETURNING *)
SELECT r.kind, c.run_lease, c.attempt FROM c JOIN awa.ready_entries r USING (job_id);
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_d2';

-- ---------------------------------------------------------------------------
-- (e) Multi-row claims: 3 of 5, then the remaining 2; the cursor follows the
--     evidence one claim behind.
-- ---------------------------------------------------------------------------
SELECT min(id) AS e_first FROM awa.enqueue_many(ARRAY['e1', 'e2', 'e3', 'e4', 'e5'], NULL, 'cur_e') AS id \gset
INSERT INTO cur_claimed SELECT 'e', job_id, run_lease, attempt, receipt_id FROM awa.claim('cur_e', 3)
RETURNING job_id - :e_first AS job, run_lease, attempt;
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_e';
INSERT INTO cur_claimed SELECT 'e', job_id, run_lease, attempt, receipt_id FROM awa.claim('cur_e', 3)
RETURNING job_id - :e_first AS job, run_lease, attempt;
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_e';
SELECT count(*) AS claimed FROM awa.claim('cur_e', 3);
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_e';
SELECT coalesce(lane_ranges, int8multirange(int8range(first_lane_seq, next_lane_seq))) AS lanes, lane_ranges IS NULL AS one_range, claimed_count FROM awa.ready_claim_attempt_batches WHERE queue = 'cur_e' ORDER BY batch_id;
-- Receipts of one claim: same batch, index 0, 1, 2.
SELECT (receipt_id >> 4) & 16383 AS receipt_index, count(DISTINCT receipt_id >> 18) AS batches
  FROM cur_claimed WHERE scenario = 'e' GROUP BY 1 ORDER BY 1;

-- ---------------------------------------------------------------------------
-- No job was handed out twice, except the deliberately lost claim of (b),
-- which is not in cur_claimed; every job enqueued above was handed out.
-- ---------------------------------------------------------------------------
SELECT scenario, count(*) AS rows, count(DISTINCT job_id) AS jobs,
       bool_and(run_lease = 1 AND attempt = 1) AS first_attempts
  FROM cur_claimed GROUP BY scenario ORDER BY scenario;
SELECT count(*) AS rows, count(DISTINCT job_id) AS jobs, count(DISTINCT receipt_id) AS receipts
  FROM cur_claimed;
SELECT r.queue, count(*) AS ready, count(c.job_id) AS handed_out
  FROM awa.ready_entries r LEFT JOIN cur_claimed c USING (job_id)
 WHERE r.queue IN ('cur_a', 'cur_b', 'cur_c', 'cur_d', 'cur_d2', 'cur_e')
 GROUP BY r.queue ORDER BY r.queue;

-- ---------------------------------------------------------------------------
-- (f) Two claims of one lane in one transaction, then ROLLBACK. The second
--     claim sees the first one's evidence, but that evidence is not
--     committed: when the transaction rolls back both jobs must be claimable
--     again, so the cursor must not have moved past A.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('f.A', queue => 'cur_f') AS f_a \gset
SELECT awa.enqueue('f.B', queue => 'cur_f') AS f_b \gset
SELECT awa.enqueue('f.C', queue => 'cur_f') AS f_c \gset
BEGIN;
SELECT job_id = :f_a AS is_a FROM awa.claim('cur_f');
SELECT job_id = :f_b AS is_b FROM awa.claim('cur_f');
ROLLBACK;
SELECT count(*) AS evidence FROM awa.ready_claim_attempt_batches WHERE queue = 'cur_f';
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_f';
SELECT job_id = :f_a AS is_a, job_id = :f_b AS is_b, job_id = :f_c AS is_c, run_lease, attempt
  FROM awa.claim('cur_f', 10);

-- ---------------------------------------------------------------------------
-- (g) A lost claim far behind a fallen-back cursor: 40 jobs written one by one;
--     claims of 35, 1 and 1 jobs; the claim of job 36 is lost and the cursor
--     falls back to 0. Job 36 is committed and unclaimed, so the next claim
--     must hand it out again (more ready rows lie between the cursor and job
--     36 than one claim reads in its first page).
-- ---------------------------------------------------------------------------
-- (Each job written on its own, as 40 transactions would.)
SELECT count(*) AS jobs
  FROM (SELECT awa.enqueue('g' || i, queue => 'cur_g') AS id, awa._flush_enqueues()
          FROM generate_series(1, 40) i) s;
SELECT count(*) AS ready_rows, max(lane_seq) AS last_lane_seq FROM awa.ready_entries WHERE queue = 'cur_g';
SELECT count(*) AS claimed FROM awa.claim('cur_g', 35);
SELECT kind AS g_lost_kind, receipt_id AS g_lost_receipt FROM awa.claim('cur_g') \gset
SELECT :'g_lost_kind' AS lost_kind;
SELECT kind FROM awa.claim('cur_g');
DELETE FROM awa.ready_claim_attempt_batches WHERE queue = 'cur_g' AND batch_id = :g_lost_receipt >> 18;
DELETE FROM awa.lease_claim_batches WHERE queue = 'cur_g' AND batch_id = :g_lost_receipt >> 18;
UPDATE awa.queue_lanes SET claim_cursor = 0 WHERE queue = 'cur_g';
SELECT kind, run_lease, attempt FROM awa.claim('cur_g');
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_g';
SELECT kind FROM awa.claim('cur_g', 10);

-- ---------------------------------------------------------------------------
-- awa.lane_cursors (behind awa.lanes): one queue's lanes, or every lane for
-- NULL; an unknown queue has none.
-- ---------------------------------------------------------------------------
SELECT count(*) = (SELECT count(*) FROM awa.queue_lanes) AS every_lane FROM awa.lane_cursors(NULL);
SELECT count(*) AS unknown_queue FROM awa.lane_cursors('cur_no_such_queue');
SELECT l.enqueue_cursor = v.enqueue_cursor AND l.claim_cursor = v.claim_cursor AS same_as_view
  FROM awa.lane_cursors('cur_g') l JOIN awa.lanes v USING (queue, priority);

-- ---------------------------------------------------------------------------
-- The cursors live in the lane's row and are rewritten in place: no relation
-- per lane, and a row that VACUUM FULL moved (a new file, new row positions)
-- is found again by every call that kept where it was.
-- ---------------------------------------------------------------------------
SELECT count(*) AS relations_before FROM pg_class WHERE relnamespace = 'awa'::regnamespace \gset
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['v.1', 'v.2'], NULL, 'cur_v1');
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['v.1', 'v.2'], NULL, 'cur_v2', ARRAY[1, 3]);
SELECT count(*) - :relations_before AS new_relations FROM pg_class WHERE relnamespace = 'awa'::regnamespace;
SELECT (SELECT relfilenode FROM pg_class WHERE oid = 'awa.queue_lanes'::regclass) AS lanes_file \gset
VACUUM FULL awa.queue_lanes;
SELECT relfilenode <> :lanes_file AS rewritten FROM pg_class WHERE oid = 'awa.queue_lanes'::regclass;
SELECT awa.enqueue('v.3', queue => 'cur_v1') IS NOT NULL AS enqueued;
SELECT kind FROM awa.claim('cur_v1', 10) ORDER BY kind;
SELECT queue, priority, enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue LIKE 'cur_v_' ORDER BY 1, 2;
-- The dead versions a hand UPDATE leaves behind are never written: the
-- cursors move in the live one.
UPDATE awa.queue_lanes SET created_at = created_at WHERE queue = 'cur_v1';
SELECT awa.enqueue('v.4', queue => 'cur_v1') IS NOT NULL AS enqueued;
SELECT kind FROM awa.claim('cur_v1', 10) ORDER BY kind;
SELECT count(*) AS nothing_left FROM awa.claim('cur_v1', 10);
SELECT queue, priority, enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cur_v1';
