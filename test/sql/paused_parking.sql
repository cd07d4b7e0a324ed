-- Proves: the jobs that become available while their queue is paused are
-- parked (deferred rows in state available) rather than appended to a lane,
-- so a paused queue's backlog is outside the queue ring; they read as
-- available everywhere (get_job, the counts, the exact counts, list_jobs),
-- can be cancelled, moved and found; awa.resume_queue appends them in order
-- (priority first, then each lane in enqueue order), in its own transaction;
-- a parked job of a queue that is not paused is promoted by promote_due;
-- due scheduled jobs of a paused queue are parked by promotion; a queue that
-- is not paused parks nothing.
-- Fails without: enqueue parking (the ready rows count), the resume's
-- unpark (the claims after it), the counts' parked term, list_jobs's
-- deferred source for available, promote_due's parked step, queue_metrics's
-- parked probe, the refusal of a database of an earlier layout.
\set VERBOSITY terse
SET client_min_messages = warning;

-- A queue that is not paused parks nothing.
SELECT awa.enqueue('pk.free', queue => 'pk_free') IS NOT NULL AS enqueued;
SELECT count(*) AS parked_free FROM awa.deferred_jobs WHERE queue = 'pk_free';

-- Paused: single enqueues, enqueue_many over two priorities, a unique job.
SELECT awa.pause_queue('pk_a');
SELECT awa.enqueue('pk.one', jsonb_build_object('i', i), 'pk_a', priority => 2) IS NOT NULL AS enqueued
  FROM generate_series(1, 3) i;
SELECT count(*) AS many
  FROM awa.enqueue_many(ARRAY(SELECT 'pk.many' FROM generate_series(4, 9) i),
                        ARRAY(SELECT jsonb_build_object('i', i) FROM generate_series(4, 9) i), 'pk_a',
                        ARRAY(SELECT 1 + i % 2 FROM generate_series(4, 9) i));
SELECT awa.enqueue('pk.unique', '{"u": 1}', 'pk_a', opts => '{"unique": {}}') AS unique_id \gset
SELECT state, count(*) FROM awa.deferred_jobs WHERE queue = 'pk_a' GROUP BY state;
-- Nothing of the paused queue is in the queue ring.
SELECT count(*) AS ready_rows FROM awa.ready_entries WHERE queue = 'pk_a';
SELECT awa.get_job(:unique_id) ->> 'state' AS unique_state;
SELECT available, scheduled FROM awa.queue_counts() WHERE queue = 'pk_a';
SELECT available, scheduled FROM awa.queue_counts_exact('pk_a');
-- queue_metrics: the oldest available job is the oldest parked one.
SELECT m.oldest_available_at = (SELECT min(run_at) FROM awa.deferred_jobs WHERE queue = 'pk_a') AS oldest_is_parked,
       m.paused
  FROM awa.queue_metrics() m WHERE m.queue = 'pk_a';
SELECT count(*) AS listed_available FROM awa.list_jobs(queue => 'pk_a', state => 'available');
SELECT count(*) AS listed_all FROM awa.list_jobs(queue => 'pk_a');
-- The unique key is held while parked.
SELECT awa.enqueue('pk.unique', '{"u": 1}', 'pk_a', opts => '{"unique": {}}');
-- Not claimed while paused; promote_due leaves a paused queue's parked jobs.
SELECT count(*) AS claimed_paused FROM awa.claim('pk_a', 100);
SELECT awa.promote_due() >= 0 AS promote_ran;  -- (other tests' due jobs may be promoted too)
SELECT count(*) AS still_parked FROM awa.deferred_jobs WHERE queue = 'pk_a' AND state = 'available';

-- Cancel a parked job.
SELECT min(job_id) AS first_parked FROM awa.deferred_jobs WHERE queue = 'pk_a' AND kind = 'pk.one' \gset
SELECT awa.cancel(:first_parked) AS cancelled;
SELECT awa.get_job(:first_parked) ->> 'state' AS after_cancel;
SELECT available, cancelled FROM awa.queue_counts() WHERE queue = 'pk_a';

-- A due scheduled job of the paused queue is parked by promotion.
SELECT awa.enqueue('pk.sched', '{}', 'pk_a', run_at => clock_timestamp() + interval '50 milliseconds') AS sched_id \gset
SELECT pg_sleep(0.1);
SELECT awa.promote_due() >= 1 AS promoted_parks;
SELECT state FROM awa.deferred_jobs WHERE job_id = :sched_id;
SELECT count(*) AS ready_rows FROM awa.ready_entries WHERE queue = 'pk_a';

-- Resume: the parked jobs go to their lanes in this transaction, priority
-- first, each lane in enqueue order; the sweep finds none left.
BEGIN;
SELECT awa.resume_queue('pk_a');
SELECT count(*) AS left_parked FROM awa.deferred_jobs WHERE queue = 'pk_a';
COMMIT;
SELECT available, scheduled FROM awa.queue_counts() WHERE queue = 'pk_a';
SELECT available, scheduled FROM awa.queue_counts_exact('pk_a');
-- (a claim takes one lane: priority 1's, then priority 2's, as claimed)
SELECT priority, kind, args FROM awa.claim('pk_a', 100);
SELECT priority, kind, args FROM awa.claim('pk_a', 100);
SELECT count(*) AS nothing_left FROM awa.claim('pk_a', 100);

-- A rolled-back resume leaves the jobs parked.
SELECT awa.pause_queue('pk_b');
SELECT awa.enqueue('pk.b', '{}', 'pk_b') AS b_id \gset
BEGIN;
SELECT awa.resume_queue('pk_b');
ROLLBACK;
SELECT state FROM awa.deferred_jobs WHERE job_id = :b_id;

-- A parked job moved to a queue that is not paused waits there, and
-- promote_due appends it; a ring job moved into a paused queue is parked.
SELECT awa.move_jobs(ARRAY[:b_id]::bigint[], queue => 'pk_free') AS moved;
SELECT queue, state FROM awa.deferred_jobs WHERE job_id = :b_id;
SELECT awa.promote_due() >= 1 AS promoted_moved;
SELECT count(*) AS deferred_left FROM awa.deferred_jobs WHERE job_id = :b_id;
SELECT kind FROM awa.claim('pk_free', 10) ORDER BY job_id;
SELECT awa.enqueue('pk.into_paused', '{}', 'pk_free') AS c_id \gset
SELECT awa.move_jobs(ARRAY[:c_id]::bigint[], queue => 'pk_b') AS moved;
SELECT queue, state FROM awa.deferred_jobs WHERE job_id = :c_id;
SELECT awa.resume_queue('pk_b');
SELECT kind FROM awa.claim('pk_b', 10);

-- A producer that saw the queue paused and commits after its resume: the
-- job is parked in a queue that is not paused, and promotion appends it.
SELECT awa.pause_queue('pk_c');
BEGIN;
SELECT awa.enqueue('pk.late', '{}', 'pk_c') AS late_id \gset
SELECT state FROM awa.deferred_jobs WHERE job_id = :late_id;
COMMIT;
-- (the resume ran before that commit in a real race: here the rows are
-- committed first and the queue resumed by hand, without the unpark)
UPDATE awa.queue_meta SET paused = false WHERE queue = 'pk_c';
SELECT awa._queue_meta_changed('pk_c');
SELECT awa.promote_due() >= 1 AS promoted_late;
SELECT kind FROM awa.claim('pk_c', 10);

-- A database made by an earlier build of 0.6 (no deferred_jobs_parked_idx,
-- and a CHECK without 'available'): while a queue is paused, an enqueue is
-- refused with a clear error, not a CHECK violation (found in review).
BEGIN;
DROP INDEX awa.deferred_jobs_parked_idx;
SELECT awa.pause_queue('pk_old');
SELECT awa.enqueue('pk.old', '{}', 'pk_old');
ROLLBACK;
SELECT count(*) AS old_left FROM awa.deferred_jobs WHERE queue = 'pk_old';

RESET client_min_messages;
