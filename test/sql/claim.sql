--
-- claim: awa.claim(queue, max_jobs, deadline)
-- Queues used here: cl_prio, cl_fifo, cl_max, cl_cols, cl_tx, cl_async, cl_bad,
-- cl_unknown (never enqueued to).
--
\set VERBOSITY default

\i test/sql/include/try.sql

\i test/sql/include/footprint.sql

-- ---------------------------------------------------------------------------
-- Priority order: 1 before 2 before 3 before 4, whatever the enqueue order.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('p4', queue => 'cl_prio', priority => 4) IS NOT NULL AS ok;
SELECT awa.enqueue('p3', queue => 'cl_prio', priority => 3) IS NOT NULL AS ok;
SELECT awa.enqueue('p2', queue => 'cl_prio', priority => 2) IS NOT NULL AS ok;
SELECT awa.enqueue('p1', queue => 'cl_prio', priority => 1) IS NOT NULL AS ok;
SELECT kind, priority FROM awa.claim('cl_prio');
SELECT kind, priority FROM awa.claim('cl_prio');
SELECT kind, priority FROM awa.claim('cl_prio');
SELECT kind, priority FROM awa.claim('cl_prio');
SELECT count(*) AS claimed FROM awa.claim('cl_prio');
-- A more urgent job enqueued later is claimed before older less urgent ones.
SELECT awa.enqueue('late.p3', queue => 'cl_prio', priority => 3) IS NOT NULL AS ok;
SELECT awa.enqueue('late.p1', queue => 'cl_prio', priority => 1) IS NOT NULL AS ok;
SELECT kind, priority FROM awa.claim('cl_prio');
SELECT kind, priority FROM awa.claim('cl_prio');

-- ---------------------------------------------------------------------------
-- FIFO within a lane, across single and batch enqueues.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('f1', queue => 'cl_fifo') IS NOT NULL AS ok;
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['f2', 'f3', 'f4'], NULL, 'cl_fifo');
SELECT awa.enqueue('f5', queue => 'cl_fifo') IS NOT NULL AS ok;
SELECT kind FROM awa.claim('cl_fifo');
SELECT kind FROM awa.claim('cl_fifo');
SELECT kind FROM awa.claim('cl_fifo', 2);
SELECT kind FROM awa.claim('cl_fifo');
SELECT count(*) AS claimed FROM awa.claim('cl_fifo');

-- ---------------------------------------------------------------------------
-- max_jobs: exactly max_jobs when the lane holds that many; one lane per
-- claim, even when the next lane has jobs.
-- ---------------------------------------------------------------------------
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['a1', 'a2', 'a3'], NULL, 'cl_max', ARRAY[1, 1, 1]);
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['b1', 'b2', 'b3', 'b4', 'b5'], NULL, 'cl_max',
                                              ARRAY[2, 2, 2, 2, 2]);
SELECT kind, priority FROM awa.claim('cl_max', 2);
SELECT kind, priority FROM awa.claim('cl_max', 5);
SELECT kind, priority FROM awa.claim('cl_max', 5);
SELECT count(*) AS claimed FROM awa.claim('cl_max', 10000);
-- Every claim wrote one attempt batch and one claim batch, in its lane.
SELECT priority, claimed_count, lane_ranges IS NULL AS one_range, first_lane_seq, next_lane_seq
  FROM awa.ready_claim_attempt_batches WHERE queue = 'cl_max' ORDER BY batch_id;
SELECT priority, claimed_count, first_lane_seq, lane_seqs, run_leases, attempts
  FROM awa.lease_claim_batches WHERE queue = 'cl_max' ORDER BY batch_id;

-- A claim that finds nothing writes nothing.
SELECT pg_temp.footprint() AS before_empty \gset
SELECT count(*) AS claimed FROM awa.claim('cl_max', 10);
SELECT pg_temp.footprint() = :'before_empty'::jsonb AS nothing_written;

-- ---------------------------------------------------------------------------
-- Unknown queue: no rows, no error, nothing created.
-- ---------------------------------------------------------------------------
SELECT count(*) AS claimed FROM awa.claim('cl_unknown');
SELECT count(*) AS claimed FROM awa.claim('cl_unknown', 10000, '1 second');
SELECT pg_temp.footprint() = :'before_empty'::jsonb AS nothing_written,
       (SELECT count(*) FROM awa.queue_lanes WHERE queue = 'cl_unknown') AS lanes;

-- ---------------------------------------------------------------------------
-- Returned columns, and the evidence rows behind them.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('cl.cols', '{"order": 7}', 'cl_cols', 3, NULL, 7,
                   '{"metadata": {"trace": "abc"}, "tags": ["t"]}') AS cols_id \gset
SELECT job_id AS claimed_id, run_lease, receipt_id, deadline_at AS cols_deadline,
       job_id = :cols_id AS same_id, kind, args, queue, priority, attempt, max_attempts, metadata,
       deadline_at - now() BETWEEN interval '9 minutes' AND interval '11 minutes' AS deadline_in_10_minutes,
       created_at = (SELECT created_at FROM awa.ready_entries WHERE job_id = :cols_id) AS created_at_kept,
       created_at <= now() AS created_in_past
  FROM awa.claim('cl_cols', 1, '10 minutes') \gset
SELECT :claimed_id = :cols_id AS same_id, :run_lease AS run_lease, :'kind' AS kind, :'args' AS args,
       :'queue' AS queue, :priority AS priority, :attempt AS attempt, :max_attempts AS max_attempts,
       :'metadata' AS metadata, :'deadline_in_10_minutes' AS deadline_in_10_minutes,
       :'created_at_kept' AS created_at_kept, :'created_in_past' AS created_in_past;
-- receipt_id = (claim batch id << 18) | (index << 4) | claim slot
SELECT b.batch_id = :receipt_id >> 18 AS receipt_names_batch,
       (:receipt_id >> 4) & 16383 AS receipt_index,
       :receipt_id & 15 AS receipt_slot,
       b.claim_slot, b.claim_generation, b.ready_slot, b.ready_generation, b.priority, b.claimed_count,
       b.first_job_id = :cols_id AS first_job_id, b.job_ids, b.run_leases, b.first_lane_seq, b.lane_seqs, b.attempts, b.max_attempts,
       b.deadline_at = :'cols_deadline' AS deadline_kept,
       b.deadline_at - b.claimed_at = interval '10 minutes' AS deadline_is_claimed_at_plus_10_minutes
  FROM awa.lease_claim_batches b WHERE b.queue = 'cl_cols';
SELECT a.batch_id = :receipt_id >> 18 AS same_batch, a.ready_slot, a.ready_generation, a.priority,
       a.claim_slot, a.claim_generation, a.first_lane_seq, a.next_lane_seq, a.claimed_count, a.lane_ranges IS NULL AS one_range
  FROM awa.ready_claim_attempt_batches a WHERE a.queue = 'cl_cols';
-- The ready row itself is never updated by a claim.
SELECT run_lease, attempt, attempted_at FROM awa.ready_entries WHERE job_id = :cols_id;
-- A claimed job is not claimed again.
SELECT count(*) AS claimed FROM awa.claim('cl_cols', 10);

-- Default deadline is 5 minutes; day and month intervals are accepted.
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['d1', 'd2', 'd3'], NULL, 'cl_cols', ARRAY[1, 2, 4]);
SELECT kind, deadline_at - now() BETWEEN interval '4 minutes' AND interval '6 minutes' AS deadline_in_5_minutes
  FROM awa.claim('cl_cols');
SELECT kind, deadline_at BETWEEN now() + interval '1 day' - interval '1 minute'
                             AND now() + interval '1 day' + interval '1 minute' AS deadline_in_1_day
  FROM awa.claim('cl_cols', 1, '1 day');
SELECT kind, deadline_at BETWEEN now() + interval '1 month' - interval '1 minute'
                             AND now() + interval '1 month' + interval '1 minute' AS deadline_in_1_month
  FROM awa.claim('cl_cols', 1, '1 month');
-- deadline_at = claimed_at + deadline, in calendar arithmetic.
SELECT claimed_count,
       deadline_at = claimed_at + CASE row_number() OVER (ORDER BY batch_id)
                                      WHEN 1 THEN interval '10 minutes'
                                      WHEN 2 THEN interval '5 minutes'
                                      WHEN 3 THEN interval '1 day'
                                      ELSE interval '1 month' END AS deadline_kept
  FROM awa.lease_claim_batches WHERE queue = 'cl_cols' ORDER BY batch_id;

-- ---------------------------------------------------------------------------
-- A claim rolled back with its transaction hands out nothing: the job is
-- claimable again as the same attempt (run_lease 1).
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('tx.a', queue => 'cl_tx') AS tx_a \gset
SELECT awa.enqueue('tx.b', queue => 'cl_tx') AS tx_b \gset
BEGIN;
SELECT job_id = :tx_a AS is_a, run_lease, attempt FROM awa.claim('cl_tx');
ROLLBACK;
SELECT (SELECT count(*) FROM awa.ready_claim_attempt_batches WHERE queue = 'cl_tx') AS attempt_batches,
       (SELECT count(*) FROM awa.lease_claim_batches WHERE queue = 'cl_tx') AS claim_batches;
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cl_tx';
SELECT job_id = :tx_a AS is_a, run_lease, attempt FROM awa.claim('cl_tx');
-- A committed explicit transaction behaves like an implicit one.
BEGIN;
SELECT job_id = :tx_b AS is_b, run_lease, attempt FROM awa.claim('cl_tx');
COMMIT;
SELECT count(*) AS claimed FROM awa.claim('cl_tx');
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'cl_tx';

-- ---------------------------------------------------------------------------
-- awa.async_claim_commit: a claim in its own transaction commits with
-- synchronous_commit off (transaction-local); inside a transaction block, or
-- with the setting off, the caller's synchronous_commit stands.
-- ---------------------------------------------------------------------------
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['s1', 's2', 's3'], NULL, 'cl_async');
SHOW synchronous_commit;
SELECT kind, current_setting('synchronous_commit') AS during_claim FROM awa.claim('cl_async');
SHOW synchronous_commit;
SET awa.async_claim_commit = off;
SELECT kind, current_setting('synchronous_commit') AS during_claim FROM awa.claim('cl_async');
RESET awa.async_claim_commit;
BEGIN;
SELECT kind, current_setting('synchronous_commit') AS during_claim FROM awa.claim('cl_async');
COMMIT;
SHOW synchronous_commit;
-- The same choice per call, without a session SET (transaction poolers):
-- async_commit => false is synchronous whatever the setting, true is
-- asynchronous whatever the setting (not inside a transaction block), NULL
-- follows the setting.
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['s4', 's5', 's6', 's7'], NULL, 'cl_async');
SELECT kind, current_setting('synchronous_commit') AS during_claim FROM awa.claim('cl_async', async_commit => false);
SET awa.async_claim_commit = off;
SELECT kind, current_setting('synchronous_commit') AS during_claim FROM awa.claim('cl_async', async_commit => true);
SELECT kind, current_setting('synchronous_commit') AS during_claim FROM awa.claim('cl_async', async_commit => NULL);
RESET awa.async_claim_commit;
BEGIN;
SELECT kind, current_setting('synchronous_commit') AS during_claim FROM awa.claim('cl_async', async_commit => true);
COMMIT;

-- ---------------------------------------------------------------------------
-- wait: a claim that finds jobs returns them at once; one that finds none
-- returns no row once its wait has passed (the sleep itself, its wake-ups and
-- what it holds meanwhile: test/t/016_waiting_claim.pl).
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('wait.now', queue => 'cl_wait') IS NOT NULL AS ok;
SELECT kind FROM awa.claim('cl_wait', 5, NULL, '1 hour');
SELECT count(*) AS none FROM awa.claim('cl_wait', 1, NULL, '0');
SELECT count(*) AS none FROM awa.claim('cl_wait', 1, NULL, NULL);
SELECT count(*) AS none FROM awa.claim('cl_wait', 1, NULL, '10 milliseconds');
SELECT count(*) AS none FROM awa.claim('cl_wait', 1, wait => '1 millisecond');
-- A paused queue is not claimed, even by a claim that waits.
SELECT awa.enqueue('wait.paused', queue => 'cl_wait_paused') IS NOT NULL AS ok;
SELECT awa.pause_queue('cl_wait_paused');
SELECT count(*) AS none FROM awa.claim('cl_wait_paused', 1, NULL, '10 milliseconds');
SELECT awa.resume_queue('cl_wait_paused');
SELECT kind FROM awa.claim('cl_wait_paused', 1, NULL, '10 milliseconds');

-- Two claims in one SQL statement (the call depends on the outer row, so it
-- runs twice): the second sees the first's evidence (the
-- claim walk reads after a command counter increment, as SPI did) and takes
-- the next job, never the same one.
SELECT count(*) AS rows FROM awa.enqueue_many(ARRAY['t1', 't2', 't3'], NULL, queue => 'cl_twice');
SELECT count(*) AS claimed, count(DISTINCT c.job_id) AS distinct_jobs, string_agg(c.kind, ' ' ORDER BY c.kind) AS kinds
  FROM generate_series(1, 2) g, LATERAL awa.claim('cl_twice', 1 + 0 * g) c;  -- correlated: called once per row

-- ---------------------------------------------------------------------------
-- Invalid input: SQLSTATE, message and hint; nothing written.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('bad.keep', queue => 'cl_bad') IS NOT NULL AS ok;
SELECT * FROM awa.claim('cl_bad', 0);

SELECT pg_temp.footprint() AS before \gset
SELECT call, pg_temp.try(call) AS outcome FROM (VALUES
    ($$SELECT * FROM awa.claim(NULL)$$),
    ($$SELECT * FROM awa.claim('')$$),
    ($$SELECT * FROM awa.claim(repeat('q', 201))$$),
    ($$SELECT * FROM awa.claim('cl_bad', 0)$$),
    ($$SELECT * FROM awa.claim('cl_bad', -1)$$),
    ($$SELECT * FROM awa.claim('cl_bad', 10001)$$),
    ($$SELECT * FROM awa.claim('cl_bad', NULL)$$),
    ($$SELECT * FROM awa.claim('cl_bad', 1, '0')$$),
    ($$SELECT * FROM awa.claim('cl_bad', 1, '-1 minute')$$),
    ($$SELECT * FROM awa.claim('cl_bad', 1, '1 day -24 hours')$$),
    ($$SELECT * FROM awa.claim('cl_bad', 1, '-1 day')$$),
    ($$SELECT * FROM awa.claim(NULL, NULL, NULL)$$),
    ($$SELECT * FROM awa.claim('cl_bad', 1, NULL, '-1 second')$$),
    ($$SELECT * FROM awa.claim('cl_bad', 1, NULL, '1 day 1 microsecond')$$),
    ($$SELECT * FROM awa.claim('cl_bad', 1, NULL, '2 months')$$),
    ($$SELECT * FROM awa.claim('cl_bad', 0, NULL, '1 second')$$)
) AS t(call);
SELECT pg_temp.footprint() = :'before'::jsonb AS nothing_written;
-- The job is still there for a valid claim.
SELECT kind FROM awa.claim('cl_bad', 10000);
