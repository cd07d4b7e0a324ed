--
-- cancel: awa.cancel(job_id) in every state a job can be in.
-- Queues used here: ca_avail, ca_sched, ca_retry, ca_run, ca_done, ca_dlq,
-- ca_tx, ca_bad.
--
\set VERBOSITY default

\i test/sql/include/try.sql

\i test/sql/include/footprint.sql


\i test/sql/include/counts.sql

-- ---------------------------------------------------------------------------
-- Available: hidden by a ready tombstone, the ready row untouched; claims
-- skip it and hand out the rest of the lane in order; the cursor passes it.
-- ---------------------------------------------------------------------------
SELECT min(id) AS a0 FROM awa.enqueue_many(ARRAY['a0', 'a1', 'a2', 'a3', 'a4'], NULL, 'ca_avail') AS id \gset
SELECT * FROM pg_temp.counts('ca_avail');
CREATE TEMP TABLE a_ready AS SELECT * FROM awa.ready_entries WHERE queue = 'ca_avail';
SELECT pg_temp.footprint() AS before_a1 \gset
SELECT awa.cancel(:a0 + 1) AS a1;
SELECT pg_temp.written(:'before_a1') AS written;
-- The tombstone names the ready row exactly.
SELECT t.job_id - :a0 AS job, t.queue, t.priority, t.lane_seq = r.lane_seq AS same_lane_seq,
       t.ready_slot = r.ready_slot AS same_slot, t.ready_generation = r.ready_generation AS same_generation,
       t.tombstoned_at <= clock_timestamp() AS tombstoned_in_past
  FROM awa.ready_tombstones t JOIN a_ready r ON r.job_id = t.job_id
 WHERE t.queue = 'ca_avail';
-- The ready rows are exactly as before.
SELECT count(*) AS ready_rows,
       bool_and(to_jsonb(e) = (SELECT to_jsonb(a) FROM a_ready a WHERE a.job_id = e.job_id)) AS untouched
  FROM awa.ready_entries e WHERE e.queue = 'ca_avail';
-- The terminal fact: cancelled, never run.
SELECT job_id - :a0 AS job, kind, state, run_lease, attempt, finalized_at <= clock_timestamp() AS finalized,
       lane_seq = (SELECT lane_seq FROM a_ready WHERE job_id = d.job_id) AS same_lane_seq
  FROM awa.done_entries d WHERE queue = 'ca_avail';
SELECT awa.get_job(:a0 + 1) ->> 'state' AS state, awa.get_job(:a0 + 1) -> 'attempt' AS attempt;
SELECT * FROM pg_temp.counts('ca_avail');
-- A second cancel: already finished, nothing written.
SELECT pg_temp.footprint() AS before_again \gset
SELECT awa.cancel(:a0 + 1) AS a1_again;
SELECT pg_temp.written(:'before_again') AS written;
-- Cancel the last one too.
SELECT awa.cancel(:a0 + 4) AS a4;
SELECT * FROM pg_temp.counts('ca_avail');
-- Claims: a0, a2, a3 in order, one at a time, then nothing.
SELECT job_id - :a0 AS job, kind, run_lease, attempt FROM awa.claim('ca_avail');
SELECT job_id - :a0 AS job, kind, run_lease, attempt FROM awa.claim('ca_avail');
SELECT * FROM pg_temp.counts('ca_avail');
SELECT job_id - :a0 AS job, kind, run_lease, attempt FROM awa.claim('ca_avail');
SELECT count(*) AS claimed FROM awa.claim('ca_avail', 10);
-- The cursor has passed the cancelled rows (a claim that finds nothing
-- moves it over the claimed and tombstoned lane positions).
SELECT count(*) AS claimed FROM awa.claim('ca_avail', 10);
SELECT l.enqueue_cursor, l.claim_cursor,
       l.claim_cursor >= (SELECT max(lane_seq) FROM a_ready) AS cursor_past_all
  FROM awa.lanes l WHERE l.queue = 'ca_avail';
SELECT * FROM pg_temp.counts('ca_avail');
-- Claimed (running) now: cancel of a claimed job asks the worker to stop.
SELECT awa.cancel(:a0 + 1) AS a1_after_claims, awa.cancel(:a0) AS a0_running;
SELECT * FROM pg_temp.counts('ca_avail');

-- ---------------------------------------------------------------------------
-- Scheduled (future run_at): the deferred row is deleted, a cancelled
-- terminal fact written.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('s1', '{"s": 1}', 'ca_sched', 3, now() + interval '1 hour', 7,
                   '{"metadata": {"m": 1}}') AS s1 \gset
SELECT awa.enqueue('s2', queue => 'ca_sched', run_at => now() + interval '1 hour') AS s2 \gset
SELECT state FROM awa.deferred_jobs WHERE job_id = :s1;
SELECT * FROM pg_temp.counts('ca_sched');
SELECT pg_temp.footprint() AS before_s1 \gset
SELECT awa.cancel(:s1) AS s1;
SELECT pg_temp.written(:'before_s1') AS written;
SELECT count(*) AS deferred_rows FROM awa.deferred_jobs WHERE job_id = :s1;
SELECT queue, priority, kind, args, state, run_lease, attempt, max_attempts, payload,
       run_at > now() + interval '59 minutes' AS run_at_kept, finalized_at <= clock_timestamp() AS finalized
  FROM awa.done_entries WHERE job_id = :s1;
SELECT awa.get_job(:s1) ->> 'state' AS state, awa.get_job(:s1) -> 'metadata' AS metadata;
SELECT * FROM pg_temp.counts('ca_sched');
SELECT pg_temp.footprint() AS before_s1_again \gset
SELECT awa.cancel(:s1) AS s1_again;
SELECT pg_temp.written(:'before_s1_again') AS written;
-- The other scheduled job is untouched.
SELECT job_id = :s2 AS is_s2, state FROM awa.deferred_jobs WHERE queue = 'ca_sched';
SELECT awa.cancel(:s2) AS s2;
SELECT * FROM pg_temp.counts('ca_sched');
-- Scheduled by a snooze (it has run once): the same.
SELECT awa.enqueue('sz', queue => 'ca_sched') AS sz \gset
SELECT run_lease AS sz_l, receipt_id AS sz_r FROM awa.claim('ca_sched') \gset
SELECT awa.snooze(:sz, :sz_l, :sz_r, interval '1 hour') AS snoozed;
SELECT * FROM pg_temp.counts('ca_sched');
SELECT pg_temp.footprint() AS before_sz \gset
SELECT awa.cancel(:sz) AS sz;
SELECT pg_temp.written(:'before_sz') AS written;
SELECT kind, state, run_lease, attempt FROM awa.done_entries WHERE job_id = :sz;
SELECT awa.get_job(:sz) ->> 'state' AS state, awa.get_job(:sz) -> 'run_lease' AS run_lease;
SELECT * FROM pg_temp.counts('ca_sched');
SELECT pg_temp.footprint() AS before_sz_again \gset
SELECT awa.cancel(:sz) AS sz_again;
SELECT pg_temp.written(:'before_sz_again') AS written;
SELECT awa.complete(:sz, :sz_l, :sz_r) AS late_complete, awa.heartbeat(:sz, :sz_l, :sz_r) AS heartbeat;

-- ---------------------------------------------------------------------------
-- Retryable (after a retry): the deferred row is deleted; the terminal fact
-- keeps the attempt, run_lease and error history. The worker's old attempt
-- stays ended.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('rt', queue => 'ca_retry') AS rt \gset
SELECT run_lease AS rt_l, receipt_id AS rt_r FROM awa.claim('ca_retry') \gset
SELECT awa.retry(:rt, :rt_l, :rt_r, 'transient', interval '1 hour') AS retried;
SELECT * FROM pg_temp.counts('ca_retry');
SELECT pg_temp.footprint() AS before_rt \gset
SELECT awa.cancel(:rt) AS rt;
SELECT pg_temp.written(:'before_rt') AS written;
SELECT count(*) AS deferred_rows FROM awa.deferred_jobs WHERE job_id = :rt;
SELECT kind, state, run_lease, attempt, payload -> 'errors' -> 0 ->> 'error' AS error,
       jsonb_array_length(payload -> 'errors') AS errors
  FROM awa.done_entries WHERE job_id = :rt;
SELECT awa.get_job(:rt) ->> 'state' AS state, awa.get_job(:rt) -> 'run_lease' AS run_lease,
       jsonb_array_length(awa.get_job(:rt) -> 'errors') AS errors;
SELECT * FROM pg_temp.counts('ca_retry');
SELECT awa.complete(:rt, :rt_l, :rt_r) AS late_complete, awa.heartbeat(:rt, :rt_l, :rt_r) AS heartbeat;
SELECT pg_temp.footprint() AS before_rt_again \gset
SELECT awa.cancel(:rt) AS rt_again;
SELECT pg_temp.written(:'before_rt_again') AS written;
-- Retryable and due, not yet promoted: cancelled as well, and promote_due
-- does not bring it back.
SELECT awa.enqueue('rt0', queue => 'ca_retry') AS rt0 \gset
SELECT run_lease AS rt0_l, receipt_id AS rt0_r FROM awa.claim('ca_retry') \gset
SELECT awa.retry(:rt0, :rt0_l, :rt0_r, 'transient', interval '0') AS retried;
SELECT awa.cancel(:rt0) AS rt0;
SELECT awa.promote_due() >= 0 AS promoted;
SELECT count(*) AS claimed FROM awa.claim('ca_retry', 10);
SELECT awa.get_job(:rt0) ->> 'state' AS state;
SELECT * FROM pg_temp.counts('ca_retry');

-- ---------------------------------------------------------------------------
-- Running: 'cancel_requested'. The attempt is closed (outcome cancelled),
-- its heartbeat row dropped; the worker's heartbeat answers
-- cancel_requested, its completion is refused.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('run', '{"r": 1}', 'ca_run') AS run \gset
SELECT awa.enqueue('run.other', queue => 'ca_run') AS run_other \gset
CREATE TEMP TABLE run_claims AS SELECT job_id, run_lease, receipt_id FROM awa.claim('ca_run', 2);
SELECT run_lease AS run_l, receipt_id AS run_r FROM run_claims WHERE job_id = :run \gset
SELECT run_lease AS oth_l, receipt_id AS oth_r FROM run_claims WHERE job_id = :run_other \gset
SELECT awa.heartbeat(:run, :run_l, :run_r, '{"pct": 30}') AS heartbeat;
SELECT * FROM pg_temp.counts('ca_run');
SELECT pg_temp.footprint() AS before_run \gset
SELECT awa.cancel(:run) AS run;
SELECT pg_temp.written(:'before_run') AS written;
SELECT outcome, closed_count, claim_indexes, batch_id >> 14 = awa._claim_batch_of_closure(batch_id) AS keyed_under_claim_batch
  FROM awa.lease_claim_closure_batches WHERE awa._claim_batch_of_closure(batch_id) = :run_r >> 18;
SELECT kind, args, state, run_lease, attempt FROM awa.done_entries WHERE job_id = :run;
SELECT count(*) AS ready_tombstones FROM awa.ready_tombstones WHERE job_id = :run;
SELECT awa.get_job(:run) ->> 'state' AS state, awa.get_job(:run) -> 'attempt' AS attempt,
       awa.get_job(:run) -> 'run_lease' AS run_lease;
SELECT * FROM pg_temp.counts('ca_run');
-- The worker's side.
SELECT pg_temp.footprint() AS before_worker \gset
SELECT awa.heartbeat(:run, :run_l, :run_r) AS heartbeat,
       awa.heartbeat(:run, :run_l, :run_r, '{"pct": 40}') AS heartbeat_with_progress;
SELECT awa.complete(:run, :run_l, :run_r) AS complete;
SELECT job_id = :run AS is_run, accepted FROM awa.complete_many(ARRAY[:run]::bigint[], ARRAY[:run_l]::bigint[],
                                                                ARRAY[:run_r]::bigint[]);
SELECT awa.retry(:run, :run_l, :run_r, 'e') AS retry, awa.snooze(:run, :run_l, :run_r, interval '0') AS snooze,
       awa.fail(:run, :run_l, :run_r, 'e') AS fail;
SELECT awa.heartbeat(:run, :run_l, :run_r) AS heartbeat_still;
SELECT pg_temp.written(:'before_worker') AS written;
-- The other attempt of the claim batch is still live.
SELECT awa.heartbeat(:run_other, :oth_l, :oth_r) AS other_heartbeat;
SELECT awa.complete(:run_other, :oth_l, :oth_r) AS other_complete;
SELECT * FROM pg_temp.counts('ca_run');
-- Cancelling again: already finished, nothing written.
SELECT pg_temp.footprint() AS before_run_again \gset
SELECT awa.cancel(:run) AS run_again;
SELECT pg_temp.written(:'before_run_again') AS written;
-- Not claimable again.
SELECT count(*) AS claimed FROM awa.claim('ca_run', 10);
SELECT * FROM pg_temp.counts('ca_run');

-- ---------------------------------------------------------------------------
-- Finished jobs (completed, failed, dlq, cancelled): 'already_finished';
-- unknown ids: 'not_found'. Nothing written.
-- ---------------------------------------------------------------------------
SELECT awa.configure_queue('ca_dlq', dlq_enabled => true);
SELECT awa.enqueue('done.completed', queue => 'ca_done') AS d_completed \gset
SELECT awa.enqueue('done.failed', queue => 'ca_done') AS d_failed \gset
SELECT awa.enqueue('done.exhausted', queue => 'ca_done', max_attempts => 1) AS d_exhausted \gset
SELECT awa.enqueue('done.cancelled', queue => 'ca_done') AS d_cancelled \gset
SELECT awa.enqueue('done.dlq', queue => 'ca_dlq') AS d_dlq \gset
SELECT awa.enqueue('done.dlq_retry', queue => 'ca_dlq', max_attempts => 1) AS d_dlq_retry \gset
CREATE TEMP TABLE done_claims AS SELECT job_id, run_lease, receipt_id FROM awa.claim('ca_done', 3);
INSERT INTO done_claims SELECT job_id, run_lease, receipt_id FROM awa.claim('ca_dlq', 2);
SELECT awa.complete(job_id, run_lease, receipt_id) AS completed FROM done_claims WHERE job_id = :d_completed;
SELECT awa.fail(job_id, run_lease, receipt_id, 'e') AS failed FROM done_claims WHERE job_id = :d_failed;
SELECT awa.retry(job_id, run_lease, receipt_id, 'e') AS exhausted FROM done_claims WHERE job_id = :d_exhausted;
SELECT awa.cancel(:d_cancelled) AS cancelled;
SELECT awa.fail(job_id, run_lease, receipt_id, 'e') AS dlq FROM done_claims WHERE job_id = :d_dlq;
SELECT awa.retry(job_id, run_lease, receipt_id, 'e') AS dlq FROM done_claims WHERE job_id = :d_dlq_retry;
SELECT * FROM pg_temp.counts('ca_done');
SELECT * FROM pg_temp.counts('ca_dlq');

SELECT pg_temp.footprint() AS before_finished \gset
SELECT label, awa.get_job(job_id) ->> 'state' AS state_before, awa.cancel(job_id) AS cancel,
       awa.get_job(job_id) ->> 'state' AS state_after
  FROM (VALUES ('completed', :d_completed::bigint), ('failed', :d_failed), ('exhausted', :d_exhausted),
               ('cancelled', :d_cancelled), ('dlq by fail', :d_dlq), ('dlq by retry', :d_dlq_retry)) AS t(label, job_id);
SELECT label, awa.cancel(job_id) AS cancel
  FROM (VALUES ('-1', -1::bigint), ('0', 0), ('max bigint', 9223372036854775807),
               ('min bigint', -9223372036854775808), ('next job id', :d_dlq_retry + 1000000)) AS t(label, job_id);
SELECT pg_temp.written(:'before_finished') AS written;
SELECT * FROM pg_temp.counts('ca_done');
SELECT * FROM pg_temp.counts('ca_dlq');

-- NULL: 22004 with a hint, nothing written.
SELECT pg_temp.try($$SELECT awa.cancel(NULL)$$) AS cancel_null;
SELECT pg_temp.written(:'before_finished') AS written;

-- ---------------------------------------------------------------------------
-- A cancel rolled back with its transaction leaves the job as it was.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('tx.avail', queue => 'ca_tx') AS tx_a \gset
SELECT awa.enqueue('tx.sched', queue => 'ca_tx', run_at => now() + interval '1 hour') AS tx_s \gset
SELECT * FROM pg_temp.counts('ca_tx');
SELECT pg_temp.footprint() AS before_tx \gset
BEGIN;
SELECT awa.cancel(:tx_a) AS avail_inside, awa.cancel(:tx_s) AS sched_inside;
SELECT count(*) AS claimed_inside FROM awa.claim('ca_tx', 10);
SELECT * FROM pg_temp.counts('ca_tx');
ROLLBACK;
SELECT pg_temp.footprint() = :'before_tx'::jsonb AS nothing_written;
SELECT * FROM pg_temp.counts('ca_tx');
SELECT awa.get_job(:tx_a) ->> 'state' AS avail_state, awa.get_job(:tx_s) ->> 'state' AS sched_state;
-- Still claimable, as its first attempt.
SELECT job_id = :tx_a AS is_avail, run_lease AS tx_l, receipt_id AS tx_r, attempt FROM awa.claim('ca_tx') \gset
SELECT :'is_avail' AS is_avail, :tx_l AS run_lease, :attempt AS attempt;
-- A running cancel rolled back: the attempt stays live and completes.
BEGIN;
SELECT awa.cancel(:tx_a) AS running_inside;
SELECT awa.heartbeat(:tx_a, :tx_l, :tx_r) AS heartbeat_inside;
ROLLBACK;
SELECT awa.heartbeat(:tx_a, :tx_l, :tx_r) AS heartbeat_after;
SELECT awa.complete(:tx_a, :tx_l, :tx_r) AS completed;
SELECT awa.cancel(:tx_s) AS sched;
SELECT * FROM pg_temp.counts('ca_tx');

-- ---------------------------------------------------------------------------
-- Cancel in a paused queue works the same.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('paused', queue => 'ca_bad') AS pz \gset
SELECT awa.pause_queue('ca_bad');
SELECT awa.cancel(:pz) AS paused_cancel;
SELECT awa.resume_queue('ca_bad');
SELECT count(*) AS claimed FROM awa.claim('ca_bad', 10);
SELECT * FROM pg_temp.counts('ca_bad');

-- awa._attempt (cancel's building block) takes only the outcomes that end an
-- attempt other than by success; the rest are refused before anything is read.
SELECT o AS outcome, pg_temp.try(format('SELECT awa._attempt(1, 1, 1, %L)', o)) AS result
  FROM unnest(ARRAY['completed', 'running', 'available', 'bogus', '']) AS o;
