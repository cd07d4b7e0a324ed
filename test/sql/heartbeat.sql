--
-- heartbeat: awa.heartbeat(job_id, run_lease, receipt_id, progress) and
-- awa.heartbeat_many(job_ids, run_leases, receipt_ids, progress).
-- Queues used here: hb_one, hb_short, hb_retry, hb_cancel, hb_many, hb_dups, hb_bad.
--
\set VERBOSITY default

\i test/sql/include/try.sql

\i test/sql/include/footprint.sql

-- The whole content of awa.attempt_state (heartbeat times included), so that
-- "nothing written" also covers updates.
CREATE FUNCTION pg_temp.attempt_state() RETURNS jsonb LANGUAGE sql AS $f$
SELECT coalesce(jsonb_agg(to_jsonb(s) ORDER BY s.job_id, s.run_lease), '[]') FROM awa.attempt_state s
$f$;

-- queue_counts (the counters) and whether they equal queue_counts_exact.
CREATE FUNCTION pg_temp.counts(q text)
RETURNS TABLE (available bigint, running bigint, completed bigint, failed bigint, cancelled bigint,
               scheduled bigint, retryable bigint, matches_exact boolean)
LANGUAGE sql AS $f$
SELECT c.available, c.running, c.completed, c.failed, c.cancelled, c.scheduled, c.retryable,
       c IS NOT DISTINCT FROM e AS matches_exact
  FROM awa.queue_counts(q) c FULL JOIN awa.queue_counts_exact(q) e ON true
$f$;

-- Nothing in attempt_state before any heartbeat.
SELECT count(*) AS attempt_state_rows FROM awa.attempt_state;

-- ---------------------------------------------------------------------------
-- awa.heartbeat on the live attempt: 'alive', with heartbeat_at and progress
-- stored in one attempt_state row.
-- ---------------------------------------------------------------------------
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['h1', 'h2', 'h3'], NULL, 'hb_one');
CREATE TEMP TABLE hb_claims AS SELECT job_id, run_lease, receipt_id, kind FROM awa.claim('hb_one', 2);
SELECT job_id AS j1, run_lease AS l1, receipt_id AS r1 FROM hb_claims WHERE kind = 'h1' \gset
SELECT job_id AS j2, run_lease AS l2, receipt_id AS r2 FROM hb_claims WHERE kind = 'h2' \gset
-- h3 is never claimed.
SELECT job_id AS j3 FROM awa.ready_entries WHERE queue = 'hb_one' AND kind = 'h3' \gset
SELECT :l1 AS l1, :l2 AS l2;

-- First beat without progress.
SELECT clock_timestamp() AS t0 \gset
SELECT awa.heartbeat(:j1, :l1, :r1) AS status;
SELECT job_id = :j1 AS is_j1, run_lease, progress,
       heartbeat_at BETWEEN :'t0' AND clock_timestamp() AS heartbeat_at_is_now,
       updated_at BETWEEN heartbeat_at AND clock_timestamp() AS updated_at_is_now
  FROM awa.attempt_state;
SELECT heartbeat_at AS hb1 FROM awa.attempt_state WHERE job_id = :j1 \gset

-- A beat with progress stores it and moves heartbeat_at.
SELECT awa.heartbeat(:j1, :l1, :r1, '{"done": 1, "total": 10}') AS status;
SELECT run_lease, progress, heartbeat_at > :'hb1' AS heartbeat_moved FROM awa.attempt_state WHERE job_id = :j1;
SELECT heartbeat_at AS hb2 FROM awa.attempt_state WHERE job_id = :j1 \gset

-- A later beat with NULL progress keeps the stored progress (explicit NULL
-- and the default alike).
SELECT awa.heartbeat(:j1, :l1, :r1, NULL) AS status;
SELECT progress, heartbeat_at > :'hb2' AS heartbeat_moved FROM awa.attempt_state WHERE job_id = :j1;
SELECT heartbeat_at AS hb3 FROM awa.attempt_state WHERE job_id = :j1 \gset
SELECT awa.heartbeat(:j1, :l1, :r1) AS status;
SELECT progress, heartbeat_at > :'hb3' AS heartbeat_moved FROM awa.attempt_state WHERE job_id = :j1;

-- A beat with progress replaces it (no merge with the stored object).
SELECT awa.heartbeat(:j1, :l1, :r1, '{"step": "upload"}') AS status;
SELECT progress FROM awa.attempt_state WHERE job_id = :j1;
SELECT awa.heartbeat(:j1, :l1, :r1, '{}') AS status;
SELECT progress FROM awa.attempt_state WHERE job_id = :j1;
SELECT awa.heartbeat(:j1, :l1, :r1, '{"done": 7, "nested": {"a": [1, 2]}}') AS status;
SELECT progress FROM awa.attempt_state WHERE job_id = :j1;
-- Still one row, for j1 only: j2 never beat.
SELECT count(*) AS rows, count(*) FILTER (WHERE job_id = :j1) AS j1_rows FROM awa.attempt_state;

-- get_job shows the running attempt's progress and heartbeat.
SELECT awa.get_job(:j1) ->> 'state' AS state,
       awa.get_job(:j1) -> 'progress' AS progress,
       (awa.get_job(:j1) ->> 'heartbeat_at')::timestamptz =
           (SELECT heartbeat_at FROM awa.attempt_state WHERE job_id = :j1) AS heartbeat_at_matches;
-- A heartbeat does not change the queue's counts.
SELECT * FROM pg_temp.counts('hb_one');

-- ---------------------------------------------------------------------------
-- 'stale' for anything but the live attempt; nothing written.
-- ---------------------------------------------------------------------------
SELECT pg_temp.footprint() AS before_stale \gset
SELECT pg_temp.attempt_state() AS state_before_stale \gset
SELECT label, awa.heartbeat(job_id, run_lease, receipt_id, '{"stale": true}') AS status FROM (VALUES
    ('wrong run_lease 2',          :j1::bigint, 2::bigint, :r1::bigint),
    ('wrong run_lease 0',          :j1, 0, :r1),
    ('wrong job (other claimed)',  :j2, :l1, :r1),
    ('wrong job (unclaimed)',      :j3, 1, :r1),
    ('wrong job (no such job)',    -1, 1, :r1),
    ('receipt of another job',     :j1, :l1, :r2),
    ('receipt 0',                  :j1, :l1, 0),
    ('receipt -1',                 :j1, :l1, -1),
    ('receipt 12345',              :j1, :l1, 12345),
    ('receipt index out of batch', :j1, :l1, :r1 | (5 << 4)),
    ('receipt of no batch',        :j1, :l1, ((:r1 >> 18) + 1000000) << 18)
) AS t(label, job_id, run_lease, receipt_id);
SELECT pg_temp.footprint() = :'before_stale'::jsonb AS nothing_written,
       pg_temp.attempt_state() = :'state_before_stale'::jsonb AS attempt_state_unchanged;

-- ---------------------------------------------------------------------------
-- complete removes the attempt_state row; later beats are 'stale'. A job
-- that never beat completes without touching attempt_state.
-- ---------------------------------------------------------------------------
SELECT awa.complete(:j1, :l1, :r1) AS completed;
SELECT count(*) AS j1_rows FROM awa.attempt_state WHERE job_id = :j1;
SELECT pg_temp.footprint() AS after_complete \gset
SELECT awa.heartbeat(:j1, :l1, :r1) AS status, awa.heartbeat(:j1, :l1, :r1, '{"late": 1}') AS with_progress;
SELECT pg_temp.footprint() = :'after_complete'::jsonb AS nothing_written;
SELECT awa.complete(:j2, :l2, :r2) AS completed;
SELECT count(*) AS attempt_state_rows FROM awa.attempt_state;
SELECT * FROM pg_temp.counts('hb_one');

-- Short jobs: claim and complete without a heartbeat, attempt_state is
-- never written (not even transiently: its row count and its insert count
-- stay the same).
BEGIN;
SELECT n_tup_ins AS ins_before FROM pg_stat_xact_user_tables WHERE relid = 'awa.attempt_state'::regclass \gset
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['s1', 's2', 's3'], NULL, 'hb_short');
CREATE TEMP TABLE hb_short_claims AS SELECT job_id, run_lease, receipt_id FROM awa.claim('hb_short', 3);
SELECT job_id, accepted FROM awa.complete_many(array(SELECT job_id FROM hb_short_claims ORDER BY job_id),
                                               array(SELECT run_lease FROM hb_short_claims ORDER BY job_id),
                                               array(SELECT receipt_id FROM hb_short_claims ORDER BY job_id))
 WHERE NOT accepted;
SELECT n_tup_ins - :ins_before AS attempt_state_inserts
  FROM pg_stat_xact_user_tables WHERE relid = 'awa.attempt_state'::regclass;
COMMIT;
SELECT count(*) AS attempt_state_rows FROM awa.attempt_state;
SELECT * FROM pg_temp.counts('hb_short');

-- ---------------------------------------------------------------------------
-- After a retry the old attempt is 'stale' (its row is gone); the next claim
-- is a new attempt with a fresh heartbeat row.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('rt', queue => 'hb_retry') AS rt \gset
SELECT run_lease AS rt_l1, receipt_id AS rt_r1 FROM awa.claim('hb_retry') \gset
SELECT awa.heartbeat(:rt, :rt_l1, :rt_r1, '{"pct": 50}') AS status;
SELECT count(*) AS rt_rows FROM awa.attempt_state WHERE job_id = :rt;
SELECT awa.retry(:rt, :rt_l1, :rt_r1, 'boom', interval '0') AS retried;
SELECT count(*) AS rt_rows FROM awa.attempt_state WHERE job_id = :rt;
SELECT pg_temp.footprint() AS after_retry \gset
SELECT awa.heartbeat(:rt, :rt_l1, :rt_r1) AS status, awa.heartbeat(:rt, :rt_l1, :rt_r1, '{"pct": 60}') AS with_progress;
SELECT pg_temp.footprint() = :'after_retry'::jsonb AS nothing_written;
SELECT awa.promote_due() >= 1 AS promoted;
SELECT run_lease AS rt_l2, receipt_id AS rt_r2, attempt AS rt_attempt FROM awa.claim('hb_retry') \gset
SELECT :rt_l2 AS run_lease, :rt_attempt AS attempt;
-- The old attempt stays stale, also with the new receipt or the new lease alone.
SELECT awa.heartbeat(:rt, :rt_l1, :rt_r1) AS old_attempt,
       awa.heartbeat(:rt, :rt_l1, :rt_r2) AS old_lease_new_receipt,
       awa.heartbeat(:rt, :rt_l2, :rt_r1) AS new_lease_old_receipt;
SELECT count(*) AS rt_rows FROM awa.attempt_state WHERE job_id = :rt;
SELECT awa.heartbeat(:rt, :rt_l2, :rt_r2) AS new_attempt;
SELECT run_lease, progress FROM awa.attempt_state WHERE job_id = :rt;
SELECT awa.heartbeat(:rt, :rt_l2, :rt_r2, '{"pct": 10}') AS new_attempt;
SELECT run_lease, progress FROM awa.attempt_state WHERE job_id = :rt;
SELECT awa.complete(:rt, :rt_l2, :rt_r2) AS completed;
SELECT count(*) AS rt_rows FROM awa.attempt_state WHERE job_id = :rt;
SELECT * FROM pg_temp.counts('hb_retry');

-- ---------------------------------------------------------------------------
-- Cancelled while running: 'cancel_requested' (every time, with or without
-- progress), nothing written; the worker's completion is refused.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('cn', queue => 'hb_cancel') AS cn \gset
SELECT awa.enqueue('cn.other', queue => 'hb_cancel') AS cn_other \gset
SELECT run_lease AS cn_l, receipt_id AS cn_r FROM awa.claim('hb_cancel') \gset
SELECT run_lease AS cno_l, receipt_id AS cno_r FROM awa.claim('hb_cancel') \gset
SELECT awa.heartbeat(:cn, :cn_l, :cn_r, '{"pct": 5}') AS status;
SELECT awa.cancel(:cn) AS cancel;
-- The attempt is closed: its attempt_state row is gone.
SELECT count(*) AS cn_rows FROM awa.attempt_state WHERE job_id = :cn;
SELECT pg_temp.footprint() AS after_cancel \gset
SELECT awa.heartbeat(:cn, :cn_l, :cn_r) AS first_beat,
       awa.heartbeat(:cn, :cn_l, :cn_r) AS second_beat,
       awa.heartbeat(:cn, :cn_l, :cn_r, '{"pct": 6}') AS with_progress;
-- Only the cancelled attempt itself hears it: other triples are stale.
SELECT awa.heartbeat(:cn, :cn_l + 1, :cn_r) AS wrong_lease,
       awa.heartbeat(:cn, :cn_l, :cno_r) AS receipt_of_other_job;
SELECT pg_temp.footprint() = :'after_cancel'::jsonb AS nothing_written;
SELECT awa.complete(:cn, :cn_l, :cn_r) AS late_complete;
SELECT awa.heartbeat(:cn, :cn_l, :cn_r) AS after_late_complete;
-- The other job of the queue is unaffected.
SELECT awa.heartbeat(:cn_other, :cno_l, :cno_r) AS other_job;
SELECT awa.get_job(:cn) ->> 'state' AS state;
SELECT * FROM pg_temp.counts('hb_cancel');

-- ---------------------------------------------------------------------------
-- awa.heartbeat_many: one row per input, in input order, echoing job_id and
-- run_lease; one attempt_state row per live attempt.
-- ---------------------------------------------------------------------------
SELECT min(id) AS m0 FROM awa.enqueue_many(ARRAY['m0', 'm1', 'm2', 'm3', 'm4'], NULL, 'hb_many') AS id \gset
-- Two claim batches: m0, m1, m2 and m3, m4.
CREATE TEMP TABLE hbm AS SELECT job_id, run_lease, receipt_id FROM awa.claim('hb_many', 3);
INSERT INTO hbm SELECT job_id, run_lease, receipt_id FROM awa.claim('hb_many', 2);
SELECT job_id - :m0 AS job, run_lease FROM hbm ORDER BY job_id;
-- m1 completes (stale below), m2 is cancelled (cancel_requested below).
SELECT awa.complete(job_id, run_lease, receipt_id) AS m1_completed FROM hbm WHERE job_id = :m0 + 1;
SELECT awa.cancel(:m0 + 2) AS m2_cancel;

SELECT pg_temp.footprint() AS before_many \gset
-- Input: m3 (progress), m1 (stale), m2 (cancel_requested), m0 (no progress),
-- m3 again (other progress), m4 with a wrong lease, m4 with m0's receipt, m4.
CREATE TEMP TABLE hbm_input AS
SELECT ord, i.job + :m0 AS job_id, c.run_lease + i.lease_delta AS run_lease, r.receipt_id, i.progress
  FROM (VALUES (1, 3, 0, 3, '{"p": 3}'::jsonb), (2, 1, 0, 1, '{"p": 1}'), (3, 2, 0, 2, '{"p": 2}'),
               (4, 0, 0, 0, NULL), (5, 3, 0, 3, '{"p": "dup"}'), (6, 4, 1, 4, '{"p": "bad lease"}'),
               (7, 4, 0, 0, '{"p": "bad receipt"}'), (8, 4, 0, 4, NULL))
       AS i(ord, job, lease_delta, receipt_of, progress)
  JOIN hbm c ON c.job_id = i.job + :m0
  JOIN hbm r ON r.job_id = i.receipt_of + :m0;
SELECT ord, job_id - :m0 AS job, run_lease, status
  FROM awa.heartbeat_many(array(SELECT job_id FROM hbm_input ORDER BY ord),
                          array(SELECT run_lease FROM hbm_input ORDER BY ord),
                          array(SELECT receipt_id FROM hbm_input ORDER BY ord),
                          array(SELECT progress FROM hbm_input ORDER BY ord))
       WITH ORDINALITY AS t(job_id, run_lease, status, ord);
-- Rows for m0, m3, m4 only; a duplicate attempt gets one row (the first
-- progress given wins).
SELECT job_id - :m0 AS job, run_lease, progress FROM awa.attempt_state
 WHERE job_id BETWEEN :m0 AND :m0 + 4 ORDER BY job_id;
SELECT (pg_temp.footprint() ->> 'attempt_state')::int - (:'before_many'::jsonb ->> 'attempt_state')::int
       AS attempt_state_rows_added,
       pg_temp.footprint() - 'attempt_state' = :'before_many'::jsonb - 'attempt_state' AS nothing_else_written;

-- Without progress (the default): the stored progress is kept, heartbeat_at
-- moves for each live attempt.
SELECT pg_temp.attempt_state() AS state_before_default \gset
SELECT job_id - :m0 AS job, run_lease, status
  FROM awa.heartbeat_many(array(SELECT job_id FROM hbm ORDER BY job_id DESC),
                          array(SELECT run_lease FROM hbm ORDER BY job_id DESC),
                          array(SELECT receipt_id FROM hbm ORDER BY job_id DESC));
SELECT s.job_id - :m0 AS job, s.progress,
       s.heartbeat_at > (b ->> 'heartbeat_at')::timestamptz AS heartbeat_moved
  FROM awa.attempt_state s
  JOIN jsonb_array_elements(:'state_before_default'::jsonb) b ON (b ->> 'job_id')::bigint = s.job_id
 WHERE s.job_id BETWEEN :m0 AND :m0 + 4 ORDER BY s.job_id;
-- A progress array of NULLs keeps the stored progress too.
SELECT job_id - :m0 AS job, status
  FROM awa.heartbeat_many(array(SELECT job_id FROM hbm WHERE job_id = :m0 + 3),
                          array(SELECT run_lease FROM hbm WHERE job_id = :m0 + 3),
                          array(SELECT receipt_id FROM hbm WHERE job_id = :m0 + 3),
                          ARRAY[NULL]::jsonb[]);
SELECT progress FROM awa.attempt_state WHERE job_id = :m0 + 3;

-- Nothing live in the input (all stale or cancelled): nothing written.
SELECT pg_temp.footprint() AS before_dead \gset
SELECT pg_temp.attempt_state() AS state_before_dead \gset
SELECT CASE WHEN job_id < 0 THEN 'unknown job ' || job_id ELSE 'm' || (job_id - :m0) END AS job, run_lease, status
  FROM awa.heartbeat_many(ARRAY[:m0 + 1, :m0 + 2, :m0 + 3, -1]::bigint[],
                          ARRAY[1, 1, 2, 1]::bigint[],
                          array(SELECT receipt_id FROM hbm WHERE job_id IN (:m0 + 1, :m0 + 2, :m0 + 3) ORDER BY job_id)
                            || ARRAY[0::bigint],
                          ARRAY['{"x": 1}', '{"x": 2}', '{"x": 3}', '{"x": 4}']::jsonb[]);
SELECT pg_temp.footprint() = :'before_dead'::jsonb AS nothing_written,
       pg_temp.attempt_state() = :'state_before_dead'::jsonb AS attempt_state_unchanged;

-- Empty arrays: no rows, nothing written.
SELECT count(*) AS results FROM awa.heartbeat_many('{}', '{}', '{}');
SELECT count(*) AS results FROM awa.heartbeat_many('{}', '{}', '{}', '{}');
SELECT pg_temp.footprint() = :'before_dead'::jsonb AS nothing_written,
       pg_temp.attempt_state() = :'state_before_dead'::jsonb AS attempt_state_unchanged;

-- Duplicates in a long call (the attempts are sorted internally): every
-- occurrence of a live attempt is 'alive', and the progress of its first
-- occurrence is stored, whatever the order.
SELECT count(*) AS jobs FROM awa.enqueue_many(array_fill('dup'::text, ARRAY[6]), NULL, 'hb_dups');
CREATE TEMP TABLE dup_claim AS SELECT job_id, run_lease, receipt_id FROM awa.claim('hb_dups', 6);
SELECT min(job_id) AS d0 FROM dup_claim \gset
-- Each attempt twice: positions 1..6 in job order, then 7..12 reversed.
CREATE TEMP TABLE dup_input AS
  SELECT row_number() OVER () AS pos, job_id, run_lease, receipt_id
    FROM (SELECT * FROM (SELECT * FROM dup_claim ORDER BY job_id) a
          UNION ALL
          SELECT * FROM (SELECT * FROM dup_claim ORDER BY job_id DESC) b) t;
SELECT array_agg(status ORDER BY ord) AS statuses_in_input_order,
       array_agg(job_id - :d0 ORDER BY ord) AS jobs_in_input_order
  FROM awa.heartbeat_many((SELECT array_agg(job_id ORDER BY pos) FROM dup_input),
                          (SELECT array_agg(run_lease ORDER BY pos) FROM dup_input),
                          (SELECT array_agg(receipt_id ORDER BY pos) FROM dup_input),
                          (SELECT array_agg(jsonb_build_object('pos', pos) ORDER BY pos) FROM dup_input))
       WITH ORDINALITY AS r(job_id, run_lease, status, ord);
SELECT job_id - :d0 AS job, progress FROM awa.attempt_state WHERE job_id IN (SELECT job_id FROM dup_claim)
 ORDER BY job_id;

-- A heartbeat rolled back with its transaction leaves nothing.
SELECT pg_temp.attempt_state() AS state_before_tx \gset
BEGIN;
SELECT job_id - :d0 AS job, status
  FROM awa.heartbeat_many(array(SELECT job_id FROM dup_claim ORDER BY job_id LIMIT 2),
                          array(SELECT run_lease FROM dup_claim ORDER BY job_id LIMIT 2),
                          array(SELECT receipt_id FROM dup_claim ORDER BY job_id LIMIT 2),
                          ARRAY['{"tx": 1}', '{"tx": 2}']::jsonb[]);
SELECT job_id - :d0 AS job, progress FROM awa.attempt_state WHERE job_id IN (SELECT job_id FROM dup_claim)
 ORDER BY job_id LIMIT 2;
ROLLBACK;
SELECT pg_temp.attempt_state() = :'state_before_tx'::jsonb AS attempt_state_unchanged;
SELECT count(*) AS accepted
  FROM awa.complete_many(array(SELECT job_id FROM dup_claim ORDER BY job_id),
                         array(SELECT run_lease FROM dup_claim ORDER BY job_id),
                         array(SELECT receipt_id FROM dup_claim ORDER BY job_id))
 WHERE accepted;
SELECT count(*) AS dup_rows FROM awa.attempt_state WHERE job_id IN (SELECT job_id FROM dup_claim);
SELECT * FROM pg_temp.counts('hb_dups');

-- Completing the batch removes the rows of the attempts it closes.
SELECT job_id - :m0 AS job, accepted
  FROM awa.complete_many(array(SELECT job_id FROM hbm WHERE job_id IN (:m0, :m0 + 3) ORDER BY job_id),
                         array(SELECT run_lease FROM hbm WHERE job_id IN (:m0, :m0 + 3) ORDER BY job_id),
                         array(SELECT receipt_id FROM hbm WHERE job_id IN (:m0, :m0 + 3) ORDER BY job_id));
SELECT job_id - :m0 AS job FROM awa.attempt_state WHERE job_id BETWEEN :m0 AND :m0 + 4 ORDER BY job_id;
SELECT * FROM pg_temp.counts('hb_many');

-- ---------------------------------------------------------------------------
-- Invalid input: SQLSTATE, message and hint; nothing written, the live
-- attempt's heartbeat untouched.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('bad', queue => 'hb_bad') AS bad_job \gset
SELECT run_lease AS bad_lease, receipt_id AS bad_receipt FROM awa.claim('hb_bad') \gset
SELECT awa.heartbeat(:bad_job, :bad_lease, :bad_receipt, '{"v": 1}') AS status;

SELECT pg_temp.footprint() AS before_bad \gset
SELECT pg_temp.attempt_state() AS state_before_bad \gset
-- These arguments have no default, so only the presence of a hint is checked.
SELECT call, pg_temp.try(call, false) AS outcome FROM (VALUES
    ($$SELECT awa.heartbeat(NULL, 1, 1)$$),
    ($$SELECT awa.heartbeat(1, NULL, 1)$$),
    ($$SELECT awa.heartbeat(1, 1, NULL)$$),
    ($$SELECT awa.heartbeat(NULL, NULL, NULL, '{}')$$),
    ($$SELECT awa.heartbeat_many(NULL, '{1}', '{1}')$$),
    ($$SELECT awa.heartbeat_many('{1}', NULL, '{1}')$$),
    ($$SELECT awa.heartbeat_many('{1}', '{1}', NULL)$$)
) AS t(call);
-- %1$s, %2$s, %3$s: the live attempt's job id, run lease and receipt id.
SELECT call, pg_temp.try(format(call, :bad_job, :bad_lease, :bad_receipt)) AS outcome
  FROM (VALUES
    ($$SELECT awa.heartbeat(%1$s, %2$s, %3$s, '[1, 2]')$$),
    ($$SELECT awa.heartbeat(%1$s, %2$s, %3$s, '[]')$$),
    ($$SELECT awa.heartbeat(%1$s, %2$s, %3$s, '"text"')$$),
    ($$SELECT awa.heartbeat(%1$s, %2$s, %3$s, '42')$$),
    ($$SELECT awa.heartbeat(%1$s, %2$s, %3$s, 'true')$$),
    ($$SELECT awa.heartbeat(%1$s, %2$s, %3$s, 'null')$$),
    ($$SELECT awa.heartbeat_many('{%1$s, NULL}', '{%2$s, %2$s}', '{%3$s, %3$s}')$$),
    ($$SELECT awa.heartbeat_many('{%1$s, %1$s}', '{%2$s, NULL}', '{%3$s, %3$s}')$$),
    ($$SELECT awa.heartbeat_many('{%1$s, %1$s}', '{%2$s, %2$s}', '{%3$s, NULL}')$$),
    ($$SELECT awa.heartbeat_many('{%1$s, %1$s}', '{%2$s}', '{%3$s, %3$s}')$$),
    ($$SELECT awa.heartbeat_many('{%1$s}', '{%2$s}', '{%3$s, %3$s}')$$),
    ($$SELECT awa.heartbeat_many('{%1$s}', '{%2$s}', '{}')$$),
    ($$SELECT awa.heartbeat_many('{%1$s}', '{%2$s}', '{%3$s}', '{}')$$),
    ($$SELECT awa.heartbeat_many('{%1$s}', '{%2$s}', '{%3$s}', ARRAY['{"a": 1}', '{"a": 2}']::jsonb[])$$),
    ($$SELECT awa.heartbeat_many('{%1$s, %1$s}', '{%2$s, %2$s}', '{%3$s, %3$s}', ARRAY['{"a": 1}']::jsonb[])$$),
    ($$SELECT awa.heartbeat_many('{%1$s, %1$s}', '{%2$s, %2$s}', '{%3$s, %3$s}', ARRAY['{"a": 1}', '[1]']::jsonb[])$$),
    ($$SELECT awa.heartbeat_many('{%1$s}', '{%2$s}', '{%3$s}', ARRAY['"s"']::jsonb[])$$),
    ($$SELECT awa.heartbeat_many('{%1$s, %1$s}', '{%2$s, %2$s}', '{%3$s, %3$s}', ARRAY[NULL, 'null']::jsonb[])$$),
    ($$SELECT awa.heartbeat_many('{{%1$s}}', '{{%2$s}}', '{{%3$s}}')$$)
) AS t(call);
SELECT pg_temp.footprint() = :'before_bad'::jsonb AS nothing_written,
       pg_temp.attempt_state() = :'state_before_bad'::jsonb AS attempt_state_unchanged;
-- The attempt is still live and its progress kept.
SELECT awa.heartbeat(:bad_job, :bad_lease, :bad_receipt) AS status;
SELECT progress FROM awa.attempt_state WHERE job_id = :bad_job;
SELECT awa.complete(:bad_job, :bad_lease, :bad_receipt) AS completed;
SELECT count(*) AS bad_job_rows FROM awa.attempt_state WHERE job_id = :bad_job;
SELECT * FROM pg_temp.counts('hb_bad');
