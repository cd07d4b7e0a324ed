--
-- attempt_end: awa.retry(job_id, run_lease, receipt_id, error, delay),
-- awa.snooze(job_id, run_lease, receipt_id, delay) and
-- awa.fail(job_id, run_lease, receipt_id, error): how a running attempt ends
-- other than by success, and the rows each outcome writes.
-- Queues used here: ae_retry, ae_hist, ae_backoff, ae_exhaust, ae_dlq,
-- ae_snooze, ae_fail, ae_bad.
--
\set VERBOSITY default

\i test/sql/include/try.sql

\i test/sql/include/footprint.sql


-- A job's error history without the timestamps: [[attempt, error], ...].
-- Also checks every entry has exactly the keys attempt, error and at, with
-- "at" a time not in the future.
CREATE FUNCTION pg_temp.errors(payload jsonb) RETURNS jsonb LANGUAGE sql AS $f$
SELECT coalesce(jsonb_agg(CASE WHEN (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(e) k)
                                     = ARRAY['at', 'attempt', 'error']
                                AND (e ->> 'at')::timestamptz <= clock_timestamp()
                               THEN jsonb_build_array(e -> 'attempt', e -> 'error')
                               ELSE jsonb_build_array('malformed', e) END ORDER BY n), '[]')
  FROM jsonb_array_elements(payload -> 'errors') WITH ORDINALITY AS t(e, n)
$f$;

\i test/sql/include/counts.sql

-- Every call on an ended attempt: retry, snooze and fail say 'stale',
-- complete says false, heartbeat says 'stale'; none writes anything.
CREATE FUNCTION pg_temp.calls_after_end(j bigint, l bigint, r bigint)
RETURNS TABLE (retry text, retry_no_delay text, snooze text, fail text, complete boolean, heartbeat text,
               nothing_written boolean)
LANGUAGE plpgsql AS $f$
DECLARE
    before jsonb := pg_temp.footprint();
BEGIN
    retry := awa.retry(j, l, r, 'again', interval '1 second');
    retry_no_delay := awa.retry(j, l, r, 'again');
    snooze := awa.snooze(j, l, r, interval '1 second');
    fail := awa.fail(j, l, r, 'again');
    complete := awa.complete(j, l, r);
    heartbeat := awa.heartbeat(j, l, r, '{"late": true}');
    nothing_written := pg_temp.footprint() = before;
    RETURN NEXT;
END
$f$;

-- ---------------------------------------------------------------------------
-- awa.retry with an explicit delay: 'retryable'; the job moves to
-- deferred_jobs with run_at = now + delay, keeping its run_lease and attempt.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('rt.job', '{"n": 1}', 'ae_retry', 3, NULL, 3) AS rt \gset
SELECT awa.enqueue('rt.other', queue => 'ae_retry', priority => 3) AS rt_other \gset
SELECT run_lease AS rt_l, receipt_id AS rt_r, attempt FROM awa.claim('ae_retry') \gset
SELECT :rt_l AS run_lease, :attempt AS attempt;
SELECT * FROM pg_temp.counts('ae_retry');

SELECT pg_temp.footprint() AS before_retry \gset
SELECT clock_timestamp() AS t0 \gset
SELECT awa.retry(:rt, :rt_l, :rt_r, 'boom 1', interval '10 minutes') AS outcome;
SELECT clock_timestamp() AS t1 \gset
SELECT pg_temp.written(:'before_retry') AS written;
SELECT job_id = :rt AS is_rt, queue, priority, kind, args, state, run_lease, attempt, max_attempts,
       run_at BETWEEN :'t0'::timestamptz + interval '10 minutes'
                  AND :'t1'::timestamptz + interval '10 minutes' AS run_at_is_now_plus_delay,
       created_at = (SELECT created_at FROM awa.ready_entries WHERE job_id = :rt) AS created_at_kept,
       finalized_at, pg_temp.errors(payload) AS errors,
       (payload -> 'errors' -> 0 ->> 'at')::timestamptz BETWEEN :'t0' AND :'t1' AS error_at_is_now
  FROM awa.deferred_jobs WHERE queue = 'ae_retry';
-- The attempt is closed with outcome 'retryable'.
SELECT outcome, closed_count, claim_indexes, batch_id >> 14 = awa._claim_batch_of_closure(batch_id) AS keyed_under_claim_batch
  FROM awa.lease_claim_closure_batches WHERE awa._claim_batch_of_closure(batch_id) = :rt_r >> 18;
SELECT awa.get_job(:rt) ->> 'state' AS state, awa.get_job(:rt) -> 'attempt' AS attempt,
       awa.get_job(:rt) -> 'run_lease' AS run_lease, pg_temp.errors(awa.get_job(:rt)) AS errors;
SELECT * FROM pg_temp.counts('ae_retry');

-- Every call a second time, on the ended attempt: stale, nothing written.
SELECT * FROM pg_temp.calls_after_end(:rt, :rt_l, :rt_r);
SELECT * FROM pg_temp.counts('ae_retry');
-- Not claimable: the next claim takes the other job.
SELECT job_id = :rt_other AS is_other, run_lease, attempt FROM awa.claim('ae_retry', 10);
SELECT count(*) AS claimed FROM awa.claim('ae_retry', 10);
SELECT * FROM pg_temp.counts('ae_retry');

-- ---------------------------------------------------------------------------
-- Delay 0: still not claimable until promote_due. The error history
-- accumulates across attempts (claim, retry, promote_due, claim, retry).
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('hist', queue => 'ae_hist', max_attempts => 5) AS hi \gset
SELECT run_lease AS hi_l1, receipt_id AS hi_r1, attempt FROM awa.claim('ae_hist') \gset
SELECT :hi_l1 AS run_lease, :attempt AS attempt;
SELECT awa.retry(:hi, :hi_l1, :hi_r1, 'first failure', interval '0') AS outcome;
SELECT state, run_lease, attempt, run_at <= clock_timestamp() AS due, pg_temp.errors(payload) AS errors
  FROM awa.deferred_jobs WHERE job_id = :hi;
SELECT * FROM pg_temp.counts('ae_hist');
SELECT count(*) AS claimed_before_promotion FROM awa.claim('ae_hist', 10);
SELECT * FROM pg_temp.calls_after_end(:hi, :hi_l1, :hi_r1);

SELECT awa.promote_due() >= 1 AS promoted;
SELECT count(*) AS deferred_rows FROM awa.deferred_jobs WHERE job_id = :hi;
SELECT awa.get_job(:hi) ->> 'state' AS state, awa.get_job(:hi) -> 'attempt' AS attempt,
       pg_temp.errors(awa.get_job(:hi)) AS errors;
SELECT * FROM pg_temp.counts('ae_hist');
SELECT run_lease AS hi_l2, receipt_id AS hi_r2, attempt FROM awa.claim('ae_hist') \gset
SELECT :hi_l2 AS run_lease, :attempt AS attempt;
SELECT * FROM pg_temp.counts('ae_hist');
-- The first attempt stays ended.
SELECT * FROM pg_temp.calls_after_end(:hi, :hi_l1, :hi_r1);
SELECT awa.retry(:hi, :hi_l2, :hi_r2, 'second failure', interval '0') AS outcome;
SELECT state, run_lease, attempt, max_attempts, pg_temp.errors(payload) AS errors
  FROM awa.deferred_jobs WHERE job_id = :hi;
SELECT (payload -> 'errors' -> 0 ->> 'at')::timestamptz < (payload -> 'errors' -> 1 ->> 'at')::timestamptz
       AS errors_in_time_order
  FROM awa.deferred_jobs WHERE job_id = :hi;
SELECT * FROM pg_temp.counts('ae_hist');
SELECT * FROM pg_temp.calls_after_end(:hi, :hi_l2, :hi_r2);
-- Third attempt: it carries the history to a completion.
SELECT awa.promote_due() >= 1 AS promoted;
SELECT run_lease AS hi_l3, receipt_id AS hi_r3, attempt FROM awa.claim('ae_hist') \gset
SELECT :hi_l3 AS run_lease, :attempt AS attempt;
SELECT awa.complete(:hi, :hi_l3, :hi_r3) AS completed;
SELECT * FROM pg_temp.counts('ae_hist');

-- ---------------------------------------------------------------------------
-- Backoff: a NULL delay waits between 2^attempt s and 1.25 * 2^attempt s.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('bo.1', queue => 'ae_backoff') AS bo1 \gset
SELECT awa.enqueue('bo.2', queue => 'ae_backoff') AS bo2 \gset
SELECT run_lease AS bo1_l, receipt_id AS bo1_r FROM awa.claim('ae_backoff') \gset
SELECT run_lease AS bo2_l, receipt_id AS bo2_r FROM awa.claim('ae_backoff') \gset
-- bo.2: attempt 1 retried at once, attempt 2 with an explicit NULL delay: 4 s to 5 s.
SELECT awa.retry(:bo2, :bo2_l, :bo2_r, 'now', interval '0') AS outcome;
SELECT awa.promote_due() >= 1 AS promoted;
SELECT job_id = :bo2 AS is_bo2, run_lease AS bo2_l2, receipt_id AS bo2_r2, attempt AS bo2_attempt
  FROM awa.claim('ae_backoff') \gset
SELECT :'is_bo2' AS is_bo2, :bo2_l2 AS run_lease, :bo2_attempt AS attempt;
SELECT clock_timestamp() AS t0 \gset
SELECT awa.retry(:bo2, :bo2_l2, :bo2_r2, 'slow down', NULL) AS outcome;
SELECT clock_timestamp() AS t1 \gset
SELECT attempt, run_at >= :'t0'::timestamptz + interval '4 seconds' AS at_least_4s,
       run_at <= :'t1'::timestamptz + interval '5 seconds' AS at_most_5s
  FROM awa.deferred_jobs WHERE job_id = :bo2;
-- bo.1, attempt 1, default delay: 2 s to 2.5 s.
SELECT clock_timestamp() AS t0 \gset
SELECT awa.retry(:bo1, :bo1_l, :bo1_r, 'slow down') AS outcome;
SELECT clock_timestamp() AS t1 \gset
SELECT attempt, run_at >= :'t0'::timestamptz + interval '2 seconds' AS at_least_2s,
       run_at <= :'t1'::timestamptz + interval '2.5 seconds' AS at_most_2_5s
  FROM awa.deferred_jobs WHERE job_id = :bo1;
SELECT * FROM pg_temp.counts('ae_backoff');
-- Cancel both so that no later promote_due picks them up.
SELECT awa.cancel(:bo1) AS bo1, awa.cancel(:bo2) AS bo2;
SELECT * FROM pg_temp.counts('ae_backoff');
-- The backoff function itself, for every attempt: 2^n s to 1.25 * 2^n s,
-- capped at 24 hours; over many draws the jitter is not constant.
SELECT n, count(*) FILTER (WHERE d < make_interval(secs => least(2 ^ n, 86400))
                               OR d > make_interval(secs => least(1.25 * 2 ^ n, 86400))) AS out_of_range,
       count(DISTINCT d) > 1 OR n >= 17 AS jittered
  FROM generate_series(0, 20) n, LATERAL (SELECT awa._backoff(n) AS d FROM generate_series(1, 50)) b
 GROUP BY n ORDER BY n;
SELECT awa._backoff(17) = interval '24 hours' AS capped_17, awa._backoff(1000) = interval '24 hours' AS capped_1000,
       awa._backoff(0) BETWEEN interval '1 second' AND interval '1.25 seconds' AS attempt_0;

-- ---------------------------------------------------------------------------
-- Exhausted attempts: 'failed' (done_entries) or, with the queue's DLQ on,
-- 'dlq' (dlq_entries).
-- ---------------------------------------------------------------------------
-- max_attempts 1: the first retry fails the job.
SELECT awa.enqueue('ex.1', '{"x": 1}', 'ae_exhaust', max_attempts => 1) AS ex1 \gset
SELECT run_lease AS ex1_l, receipt_id AS ex1_r FROM awa.claim('ae_exhaust') \gset
SELECT pg_temp.footprint() AS before_ex1 \gset
SELECT awa.retry(:ex1, :ex1_l, :ex1_r, 'out of attempts', interval '0') AS outcome;
SELECT pg_temp.written(:'before_ex1') AS written;
SELECT kind, args, state, run_lease, attempt, max_attempts, finalized_at <= clock_timestamp() AS finalized,
       lane_seq = (SELECT lane_seq FROM awa.ready_entries WHERE job_id = :ex1) AS same_lane_seq,
       pg_temp.errors(payload) AS errors
  FROM awa.done_entries WHERE job_id = :ex1;
SELECT outcome, closed_count FROM awa.lease_claim_closure_batches WHERE awa._claim_batch_of_closure(batch_id) = :ex1_r >> 18;
SELECT awa.get_job(:ex1) ->> 'state' AS state, pg_temp.errors(awa.get_job(:ex1)) AS errors;
SELECT * FROM pg_temp.counts('ae_exhaust');
SELECT * FROM pg_temp.calls_after_end(:ex1, :ex1_l, :ex1_r);

-- max_attempts 2: retryable once, then failed.
SELECT awa.enqueue('ex.2', queue => 'ae_exhaust', max_attempts => 2) AS ex2 \gset
SELECT run_lease AS ex2_l1, receipt_id AS ex2_r1 FROM awa.claim('ae_exhaust') \gset
SELECT awa.retry(:ex2, :ex2_l1, :ex2_r1, 'try 1', interval '0') AS outcome;
SELECT * FROM pg_temp.counts('ae_exhaust');
SELECT awa.promote_due() >= 1 AS promoted;
SELECT run_lease AS ex2_l2, receipt_id AS ex2_r2, attempt FROM awa.claim('ae_exhaust') \gset
SELECT :ex2_l2 AS run_lease, :attempt AS attempt;
SELECT pg_temp.footprint() AS before_ex2 \gset
SELECT awa.retry(:ex2, :ex2_l2, :ex2_r2, 'try 2', interval '0') AS outcome;
SELECT pg_temp.written(:'before_ex2') AS written;
SELECT state, run_lease, attempt, max_attempts, pg_temp.errors(payload) AS errors
  FROM awa.done_entries WHERE job_id = :ex2;
SELECT count(*) AS deferred_rows FROM awa.deferred_jobs WHERE job_id = :ex2;
SELECT awa.get_job(:ex2) ->> 'state' AS state, awa.get_job(:ex2) -> 'attempt' AS attempt;
SELECT * FROM pg_temp.counts('ae_exhaust');
SELECT * FROM pg_temp.calls_after_end(:ex2, :ex2_l2, :ex2_r2);

-- The same with the DLQ on.
SELECT awa.configure_queue('ae_dlq', dlq_enabled => true);
SELECT awa.enqueue('dq.1', '{"d": 1}', 'ae_dlq', 1, NULL, 1) AS dq1 \gset
SELECT run_lease AS dq1_l, receipt_id AS dq1_r FROM awa.claim('ae_dlq') \gset
SELECT pg_temp.footprint() AS before_dq1 \gset
SELECT awa.retry(:dq1, :dq1_l, :dq1_r, 'dead letter', interval '0') AS outcome;
SELECT pg_temp.written(:'before_dq1') AS written;
SELECT queue, priority, kind, args, run_lease, original_run_lease, attempt, max_attempts, dlq_reason,
       dlq_at <= clock_timestamp() AS dlq_at_past,
       created_at = (SELECT created_at FROM awa.ready_entries WHERE job_id = :dq1) AS created_at_kept,
       run_at = (SELECT run_at FROM awa.ready_entries WHERE job_id = :dq1) AS run_at_kept,
       pg_temp.errors(payload) AS errors
  FROM awa.dlq_entries WHERE job_id = :dq1;
SELECT kind, attempt, errors = (SELECT payload -> 'errors' FROM awa.dlq_entries WHERE job_id = :dq1) AS same_errors,
       dlq_reason, run_lease FROM awa.dlq WHERE job_id = :dq1;
SELECT count(*) AS done_rows FROM awa.done_entries WHERE job_id = :dq1;
SELECT outcome FROM awa.lease_claim_closure_batches WHERE awa._claim_batch_of_closure(batch_id) = :dq1_r >> 18;
SELECT awa.get_job(:dq1) ->> 'state' AS state, awa.get_job(:dq1) ->> 'dlq_reason' AS dlq_reason;
SELECT * FROM pg_temp.counts('ae_dlq');
SELECT * FROM pg_temp.calls_after_end(:dq1, :dq1_l, :dq1_r);

-- max_attempts 2 with the DLQ on: retryable first (the DLQ is only for
-- exhausted attempts), then dlq.
SELECT awa.enqueue('dq.2', queue => 'ae_dlq', max_attempts => 2) AS dq2 \gset
SELECT run_lease AS dq2_l1, receipt_id AS dq2_r1 FROM awa.claim('ae_dlq') \gset
SELECT awa.retry(:dq2, :dq2_l1, :dq2_r1, 'try 1', interval '0') AS outcome;
SELECT state, run_lease, attempt FROM awa.deferred_jobs WHERE job_id = :dq2;
SELECT awa.promote_due() >= 1 AS promoted;
SELECT run_lease AS dq2_l2, receipt_id AS dq2_r2 FROM awa.claim('ae_dlq') \gset
SELECT awa.retry(:dq2, :dq2_l2, :dq2_r2, 'try 2', interval '0') AS outcome;
SELECT run_lease, original_run_lease, attempt, dlq_reason, pg_temp.errors(payload) AS errors
  FROM awa.dlq_entries WHERE job_id = :dq2;
SELECT * FROM pg_temp.counts('ae_dlq');

-- ---------------------------------------------------------------------------
-- awa.fail: 'failed' whatever attempts remain, or 'dlq' with the DLQ on.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('fl', '{"f": 1}', 'ae_fail', 2, NULL, 25) AS fl \gset
SELECT run_lease AS fl_l, receipt_id AS fl_r FROM awa.claim('ae_fail') \gset
SELECT awa.heartbeat(:fl, :fl_l, :fl_r, '{"half": true}') AS heartbeat;
SELECT pg_temp.footprint() AS before_fail \gset
SELECT awa.fail(:fl, :fl_l, :fl_r, 'fatal') AS outcome;
SELECT pg_temp.written(:'before_fail') AS written;
SELECT kind, args, state, run_lease, attempt, max_attempts, pg_temp.errors(payload) AS errors,
       payload -> 'progress' AS progress
  FROM awa.done_entries WHERE job_id = :fl;
SELECT outcome FROM awa.lease_claim_closure_batches WHERE awa._claim_batch_of_closure(batch_id) = :fl_r >> 18;
SELECT count(*) AS deferred_rows FROM awa.deferred_jobs WHERE job_id = :fl;
SELECT awa.get_job(:fl) ->> 'state' AS state, awa.get_job(:fl) -> 'progress' AS progress;
SELECT * FROM pg_temp.counts('ae_fail');
SELECT * FROM pg_temp.calls_after_end(:fl, :fl_l, :fl_r);
-- Not claimable, not promoted.
SELECT awa.promote_due() >= 0 AS promoted;
SELECT count(*) AS claimed FROM awa.claim('ae_fail', 10);

SELECT awa.enqueue('dq.fail', queue => 'ae_dlq', max_attempts => 25) AS dqf \gset
SELECT run_lease AS dqf_l, receipt_id AS dqf_r FROM awa.claim('ae_dlq') \gset
SELECT pg_temp.footprint() AS before_dqf \gset
SELECT awa.fail(:dqf, :dqf_l, :dqf_r, 'poison') AS outcome;
SELECT pg_temp.written(:'before_dqf') AS written;
SELECT run_lease, attempt, max_attempts, dlq_reason, pg_temp.errors(payload) AS errors
  FROM awa.dlq_entries WHERE job_id = :dqf;
SELECT * FROM pg_temp.counts('ae_dlq');
SELECT * FROM pg_temp.calls_after_end(:dqf, :dqf_l, :dqf_r);

-- ---------------------------------------------------------------------------
-- awa.snooze: 'scheduled'; the attempt is given back (the next claim has the
-- same attempt number), the run_lease moves on; no error recorded.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('sn', '{"s": 1}', 'ae_snooze', 4, NULL, 1) AS sn \gset
SELECT run_lease AS sn_l1, receipt_id AS sn_r1, attempt FROM awa.claim('ae_snooze') \gset
SELECT :sn_l1 AS run_lease, :attempt AS attempt;
SELECT pg_temp.footprint() AS before_snooze \gset
SELECT clock_timestamp() AS t0 \gset
SELECT awa.snooze(:sn, :sn_l1, :sn_r1, interval '5 minutes') AS outcome;
SELECT clock_timestamp() AS t1 \gset
SELECT pg_temp.written(:'before_snooze') AS written;
SELECT queue, priority, kind, args, state, run_lease, attempt, max_attempts, payload,
       run_at BETWEEN :'t0'::timestamptz + interval '5 minutes'
                  AND :'t1'::timestamptz + interval '5 minutes' AS run_at_is_now_plus_delay
  FROM awa.deferred_jobs WHERE job_id = :sn;
SELECT outcome FROM awa.lease_claim_closure_batches WHERE awa._claim_batch_of_closure(batch_id) = :sn_r1 >> 18;
SELECT awa.get_job(:sn) ->> 'state' AS state, awa.get_job(:sn) -> 'attempt' AS attempt,
       awa.get_job(:sn) -> 'errors' AS errors;
SELECT * FROM pg_temp.counts('ae_snooze');
SELECT * FROM pg_temp.calls_after_end(:sn, :sn_l1, :sn_r1);
-- Not due yet: promote_due leaves it, claim finds nothing.
SELECT awa.promote_due() >= 0 AS promoted;
SELECT count(*) AS claimed FROM awa.claim('ae_snooze', 10);
SELECT state FROM awa.deferred_jobs WHERE job_id = :sn;

-- A snooze with delay 0 is due at once, but claimable only after promote_due.
SELECT awa.enqueue('sn0', queue => 'ae_snooze', max_attempts => 1) AS sn0 \gset
SELECT run_lease AS sn0_l1, receipt_id AS sn0_r1, attempt FROM awa.claim('ae_snooze') \gset
SELECT :sn0_l1 AS run_lease, :attempt AS attempt;
SELECT awa.snooze(:sn0, :sn0_l1, :sn0_r1, interval '0') AS outcome;
SELECT state, run_lease, attempt, run_at <= clock_timestamp() AS due FROM awa.deferred_jobs WHERE job_id = :sn0;
SELECT count(*) AS claimed_before_promotion FROM awa.claim('ae_snooze', 10);
SELECT * FROM pg_temp.counts('ae_snooze');
SELECT awa.promote_due() >= 1 AS promoted;
SELECT * FROM pg_temp.counts('ae_snooze');
SELECT job_id = :sn0 AS is_sn0, run_lease AS sn0_l2, receipt_id AS sn0_r2, attempt AS sn0_attempt
  FROM awa.claim('ae_snooze') \gset
-- Same attempt number, next run_lease.
SELECT :'is_sn0' AS is_sn0, :sn0_l2 AS run_lease, :sn0_attempt AS attempt;
SELECT * FROM pg_temp.calls_after_end(:sn0, :sn0_l1, :sn0_r1);
-- Snoozed again: the attempt is still the first one.
SELECT awa.snooze(:sn0, :sn0_l2, :sn0_r2, interval '0') AS outcome;
SELECT state, run_lease, attempt FROM awa.deferred_jobs WHERE job_id = :sn0;
SELECT awa.promote_due() >= 1 AS promoted;
SELECT run_lease AS sn0_l3, receipt_id AS sn0_r3, attempt AS sn0_attempt FROM awa.claim('ae_snooze') \gset
SELECT :sn0_l3 AS run_lease, :sn0_attempt AS attempt;
-- max_attempts 1 and the snoozes used none: the retry now exhausts it.
SELECT awa.retry(:sn0, :sn0_l3, :sn0_r3, 'finally', interval '0') AS outcome;
SELECT state, run_lease, attempt, pg_temp.errors(payload) AS errors FROM awa.done_entries WHERE job_id = :sn0;
SELECT * FROM pg_temp.counts('ae_snooze');

-- ---------------------------------------------------------------------------
-- Invalid input: SQLSTATE, message and hint; nothing written, the attempt
-- stays live.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('bad', queue => 'ae_bad') AS bad_job \gset
SELECT run_lease AS bad_lease, receipt_id AS bad_receipt FROM awa.claim('ae_bad') \gset
SELECT pg_temp.footprint() AS before_bad \gset
-- %1$s, %2$s, %3$s: the live attempt's job id, run lease and receipt id.
SELECT call, pg_temp.try(format(call, :bad_job, :bad_lease, :bad_receipt)) AS outcome
  FROM (VALUES
    ($$SELECT awa.retry(NULL, %2$s, %3$s, 'e')$$),
    ($$SELECT awa.retry(%1$s, NULL, %3$s, 'e')$$),
    ($$SELECT awa.retry(%1$s, %2$s, NULL, 'e')$$),
    ($$SELECT awa.retry(%1$s, %2$s, %3$s, NULL)$$),
    ($$SELECT awa.retry(%1$s, %2$s, %3$s, NULL, interval '1 second')$$),
    ($$SELECT awa.retry(%1$s, %2$s, %3$s, 'e', interval '-1 second')$$),
    ($$SELECT awa.retry(%1$s, %2$s, %3$s, 'e', interval '1 day' - interval '2 days')$$),
    ($$SELECT awa.retry(%1$s, %2$s, %3$s, 'e', interval '1 day -25 hours')$$),
    ($$SELECT awa.retry(%1$s, %2$s, %3$s, 'e', interval '-1 month')$$),
    ($$SELECT awa.retry(%1$s, %2$s, %3$s, 'e', interval '-0.000001 seconds')$$),
    ($$SELECT awa.retry(%1$s, %2$s, %3$s, 'e', interval '1000000 years')$$),
    ($$SELECT awa.retry(%1$s, %2$s, %3$s, 'e', interval '36526 days')$$),
    ($$SELECT awa.retry(%1$s, %2$s, %3$s, 'e', interval '-1000000 years')$$),
    ($$SELECT awa.snooze(NULL, %2$s, %3$s, interval '1 second')$$),
    ($$SELECT awa.snooze(%1$s, NULL, %3$s, interval '1 second')$$),
    ($$SELECT awa.snooze(%1$s, %2$s, NULL, interval '1 second')$$),
    ($$SELECT awa.snooze(%1$s, %2$s, %3$s, NULL)$$),
    ($$SELECT awa.snooze(%1$s, %2$s, %3$s, interval '-1 second')$$),
    ($$SELECT awa.snooze(%1$s, %2$s, %3$s, interval '1 day' - interval '2 days')$$),
    ($$SELECT awa.snooze(%1$s, %2$s, %3$s, interval '1 day -25 hours')$$),
    ($$SELECT awa.snooze(%1$s, %2$s, %3$s, interval '1000000 years')$$),
    ($$SELECT awa.snooze(%1$s, %2$s, %3$s, interval '1218 months')$$),
    ($$SELECT awa.fail(NULL, %2$s, %3$s, 'e')$$),
    ($$SELECT awa.fail(%1$s, NULL, %3$s, 'e')$$),
    ($$SELECT awa.fail(%1$s, %2$s, NULL, 'e')$$),
    ($$SELECT awa.fail(%1$s, %2$s, %3$s, NULL)$$)
) AS t(call);
SELECT pg_temp.footprint() = :'before_bad'::jsonb AS nothing_written;
SELECT awa.get_job(:bad_job) ->> 'state' AS state;
SELECT * FROM pg_temp.counts('ae_bad');
-- Invalid input on an ended attempt is still an error (checked first).
SELECT awa.fail(:bad_job, :bad_lease, :bad_receipt, 'valid now') AS outcome;
SELECT pg_temp.footprint() AS before_bad_ended \gset
SELECT pg_temp.try(format($$SELECT awa.retry(%s, %s, %s, 'e', interval '-1 second')$$,
                          :bad_job, :bad_lease, :bad_receipt)) AS retry_negative,
       pg_temp.try(format($$SELECT awa.snooze(%s, %s, %s, NULL)$$,
                          :bad_job, :bad_lease, :bad_receipt)) AS snooze_null;
SELECT pg_temp.footprint() = :'before_bad_ended'::jsonb AS nothing_written;
SELECT * FROM pg_temp.counts('ae_bad');

-- ---------------------------------------------------------------------------
-- Ending an attempt inside a rolled-back transaction leaves it live.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('tx', queue => 'ae_bad') AS tx_job \gset
SELECT run_lease AS tx_lease, receipt_id AS tx_receipt FROM awa.claim('ae_bad') \gset
SELECT pg_temp.footprint() AS before_tx \gset
BEGIN;
SELECT awa.retry(:tx_job, :tx_lease, :tx_receipt, 'rolled back', interval '0') AS retry_inside;
SELECT * FROM pg_temp.counts('ae_bad');
ROLLBACK;
BEGIN;
SELECT awa.fail(:tx_job, :tx_lease, :tx_receipt, 'rolled back') AS fail_inside;
ROLLBACK;
BEGIN;
SELECT awa.snooze(:tx_job, :tx_lease, :tx_receipt, interval '0') AS snooze_inside;
ROLLBACK;
SELECT pg_temp.footprint() = :'before_tx'::jsonb AS nothing_written;
SELECT * FROM pg_temp.counts('ae_bad');
SELECT awa.complete(:tx_job, :tx_lease, :tx_receipt) AS completed;
SELECT * FROM pg_temp.counts('ae_bad');

-- Leave no deferred job behind for later files' promote_due.
SELECT awa.cancel(:rt) AS rt, awa.cancel(:sn) AS sn;
SELECT count(*) AS deferred_rows FROM awa.deferred_jobs WHERE queue LIKE 'ae\_%';
