--
-- prepare: a transaction that changed awa's state cannot be prepared
-- (PREPARE TRANSACTION), and which refusal the user sees follows the order of
-- the transaction callbacks (src/pg/callbacks.cpp: ring epoch, ..., counters,
-- ..., in-flight registry). test/regress.conf sets max_prepared_transactions,
-- so PREPARE itself is allowed. After each refusal nothing is prepared and
-- nothing of the transaction stays.
-- Queues used here: prep, prep_claim, prep_keyed.
--
\set VERBOSITY default
SET client_min_messages = warning;

-- An enqueue: the counters refuse.
BEGIN;
SELECT awa.enqueue('prep.k', queue => 'prep') IS NOT NULL AS enqueued;
PREPARE TRANSACTION 'awa_prep_enqueue';
SELECT count(*) AS prepared FROM pg_prepared_xacts;
SELECT count(*) AS jobs_left FROM awa.ready_entries WHERE queue = 'prep';

-- A claim: it moves a job (counters) and registers its positions (in-flight
-- registry); the counters' refusal comes first.
SELECT awa.enqueue('prep.k', queue => 'prep_claim') IS NOT NULL AS enqueued;
BEGIN;
SELECT count(*) AS claimed FROM awa.claim('prep_claim', 1);
PREPARE TRANSACTION 'awa_prep_claim';
SELECT count(*) AS prepared FROM pg_prepared_xacts;
SELECT available, running FROM awa.queue_counts('prep_claim');

-- A claim of nothing writes nothing: that transaction can be prepared.
BEGIN;
SELECT count(*) AS claimed FROM awa.claim('prep_nothing', 1);
PREPARE TRANSACTION 'awa_prep_nothing';
SELECT gid FROM pg_prepared_xacts;
ROLLBACK PREPARED 'awa_prep_nothing';

-- A rotation: the ring epoch refuses.
BEGIN;
SELECT outcome FROM awa.run_maintenance('rotate_queue');
PREPARE TRANSACTION 'awa_prep_rotate';
SELECT count(*) AS prepared FROM pg_prepared_xacts;

-- A rotation and a promotion that moved a job: the ring epoch's refusal
-- comes before the counters'.
SELECT awa.enqueue('prep.k', queue => 'prep', run_at => clock_timestamp() + interval '50 milliseconds') AS due_soon \gset
SELECT pg_sleep(0.1);
BEGIN;
SELECT task, outcome FROM awa.run_maintenance('promote');
SELECT task, outcome FROM awa.run_maintenance('rotate_queue');
PREPARE TRANSACTION 'awa_prep_both';
SELECT count(*) AS prepared FROM pg_prepared_xacts;
SELECT awa.get_job(:due_soon) ->> 'state' AS still_scheduled;

-- A prune (a TRUNCATE of a ring slot): refused too. Its truncation is
-- published at its commit for REPEATABLE READ readers, which are refused
-- with 40001 after it (src/pg/ring_truncations.cpp); a prepared prune would
-- commit without that. A finished job, then the queue ring turned until the
-- incoming slot is not empty (the ring has no spare slots here): the next
-- prune truncates it. Refused, nothing is pruned: the same prune runs after.
SELECT awa.complete(c.job_id, c.run_lease, c.receipt_id) AS completed
  FROM awa.claim('prep_claim', 1) c \gset
SELECT job_id AS finished FROM awa.list_jobs(queue => 'prep_claim', state => 'completed') \gset
DO $$
BEGIN
    FOR i IN 1 .. 40 LOOP
        EXIT WHEN (SELECT outcome FROM awa.run_maintenance('rotate_queue')) <> 'rotated';
    END LOOP;
END $$;
BEGIN;
SELECT outcome FROM awa.run_maintenance('prune_queue');
PREPARE TRANSACTION 'awa_prep_prune';
SELECT count(*) AS prepared FROM pg_prepared_xacts;
SELECT outcome FROM awa.run_maintenance('prune_queue');
SELECT awa.get_job(:finished) ->> 'state' AS still_completed;

-- A concurrency key's weight (awa.set_key_weight) on a queue with a keyed
-- lane moves no job, but it is noted for the fair-share scheduler, which a
-- prepared transaction's commit never reaches: refused. Nothing is prepared,
-- the weight is not stored, and the next change of it runs (the notes were
-- freed with the prepared transaction, and the next one read them: found by
-- the review of stop 49).
SELECT awa.enqueue('prep.k', queue => 'prep_keyed', opts => '{"concurrency_key": "a"}') IS NOT NULL AS enqueued;
BEGIN;
SELECT awa.set_key_weight('prep_keyed', 'a', 5);
PREPARE TRANSACTION 'awa_prep_weight';
SELECT count(*) AS prepared FROM pg_prepared_xacts;
SELECT count(*) AS weights FROM awa.key_weights WHERE queue = 'prep_keyed';
SELECT awa.set_key_weight('prep_keyed', 'a', 3);
SELECT concurrency_key, weight FROM awa.key_weights WHERE queue = 'prep_keyed';
RESET client_min_messages;
