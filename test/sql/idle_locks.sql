-- idle_locks: what ring slots a transaction still holds once an awa call has
-- returned, so what a session left idle in transaction after the call keeps
-- out of the rings' reuse (docs/maintenance.md §2, "The ring grows"). A slot
-- is held while the session has a lock on one of its children (the slot is
-- the number at the end of the child's name; the family its parent).
--
-- The class this guards: a call that reads a ring family through its parent
-- locks every child, spare slots included, and left idle it stops the rings
-- (found for awa.claim in issue 19 and for awa.get_job in review of stop 33).
-- The readers hold nothing once they return; a worker's calls hold the slots
-- they wrote and the queue slot of the rows they read (one of each here:
-- the queue's rows are all in one slot, while the ring's live generations
-- span every slot; the claim walk read them all and kept every lock until the
-- change that releases an empty read's); the admin writers that read through the parents (cancel
-- and the calls that move, retry or purge jobs) are listed as they are today:
-- every slot they read, to the end of their transaction (a documented limit).
SET client_min_messages = warning;
CREATE FUNCTION pg_temp.held() RETURNS text LANGUAGE sql AS $$
SELECT format('queue %s, claim %s, history %s',
              count(DISTINCT n.slot) FILTER (WHERE n.family IN ('ready_entries', 'ready_tombstones',
                                                               'ready_claim_attempt_batches', 'done_entries',
                                                               'receipt_completion_batches')),
              count(DISTINCT n.slot) FILTER (WHERE n.family LIKE 'lease_claim%'),
              count(DISTINCT n.slot) FILTER (WHERE n.family = 'job_history'))
  FROM (SELECT p.relname AS family, substring(c.relname FROM '_([0-9]+)$') AS slot
          FROM pg_locks l JOIN pg_class c ON c.oid = l.relation JOIN pg_inherits i ON i.inhrelid = c.oid
          JOIN pg_class p ON p.oid = i.inhparent
         WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND c.relnamespace = 'awa'::regnamespace) n
$$;
-- n rotations of the queue ring, each after a prune: the ring's live
-- generations then span every slot, as in a database that has run a while.
-- A job enqueued in another queue at each turn makes it rotate: a ring whose
-- current slot holds only carried rows stands still (idle_backlog.sql).
CREATE PROCEDURE pg_temp.rotate_queue(n int) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. n LOOP
        PERFORM * FROM awa.run_maintenance('prune_queue');
        COMMIT;
        PERFORM awa.enqueue('il.turn', '{}', 'il_turn');
        COMMIT;
        IF (SELECT outcome FROM awa.run_maintenance('rotate_queue')) <> 'rotated' THEN
            RAISE EXCEPTION 'queue rotation % did not rotate', i;
        END IF;
        COMMIT;
    END LOOP;
END $$;

SELECT awa.configure_queue('il', dlq_enabled => true) IS NULL AS configured;
SELECT count(*) AS enqueued FROM awa.enqueue_many(array_fill('il'::text, ARRAY[20]), NULL, 'il');
CALL pg_temp.rotate_queue(20);
SELECT job_id AS first_job FROM awa.list_jobs(queue => 'il') ORDER BY job_id LIMIT 1 \gset

-- Readers: nothing held once they return.
BEGIN; SELECT awa.get_job(:first_job) ->> 'state' AS state; SELECT pg_temp.held() AS get_job; ROLLBACK;
BEGIN; SELECT count(*) FROM awa.list_jobs(queue => 'il'); SELECT pg_temp.held() AS list_jobs; ROLLBACK;
BEGIN; SELECT count(*) FROM awa.list_jobs(queue => 'il', state => 'available'); SELECT pg_temp.held() AS list_jobs_available; ROLLBACK;
BEGIN; SELECT count(*) FROM awa.list_jobs(queue => 'il', state => 'completed'); SELECT pg_temp.held() AS list_jobs_completed; ROLLBACK;
BEGIN; SELECT count(*) FROM awa.list_jobs(queue => 'il', state => 'dlq'); SELECT pg_temp.held() AS list_jobs_dlq; ROLLBACK;
BEGIN; SELECT available FROM awa.queue_counts_exact('il'); SELECT pg_temp.held() AS queue_counts_exact; ROLLBACK;
BEGIN; SELECT available FROM awa.queue_counts('il'); SELECT pg_temp.held() AS queue_counts; ROLLBACK;
-- ... also while the counters are not trusted (a first limit per key makes
-- them untrusted at its commit, and they are not rebuilt for a second after
-- it, nor while older transactions run): queue_counts then answers from
-- its exact pass, which reads through the parents in a subtransaction it
-- rolls back (it read in the caller's transaction, to its end). The counter
-- rebuild's pass does the same, and holds the ring lock for the rebuild only
-- (it was an xact lock); the count of advisory locks shows none is left.
SELECT awa.configure_queue('il_keys', key_max_running => 1) IS NULL AS first_key_limit;
BEGIN;
SELECT available FROM awa.queue_counts('il');
SELECT pg_temp.held() AS queue_counts_rebuilt,
       (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory') AS advisory_locks;
ROLLBACK;
-- ... and the call that rebuilds them, once that second has passed (no other
-- transaction runs in this database): the rebuild's pass and its ring lock
-- (before: held to the end of the caller's transaction, the lock as an xact
-- lock that kept every ring step skipped).
SELECT pg_sleep(1.1) IS NOT NULL AS a_second_later;
BEGIN;
SELECT available FROM awa.queue_counts('il');
SELECT pg_temp.held() AS queue_counts_rebuilding,
       (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory') AS advisory_locks;
ROLLBACK;
SELECT available FROM awa.queue_counts('il') EXCEPT SELECT available FROM awa.queue_counts_exact('il') AS rebuilt_differs;
BEGIN; SELECT available FROM awa.queue_metrics() WHERE queue = 'il'; SELECT pg_temp.held() AS queue_metrics; ROLLBACK;
BEGIN; SELECT awa.bulk_count('cancel', queue => 'il'); SELECT pg_temp.held() AS bulk_count; ROLLBACK;
BEGIN; SELECT count(*) > 0 AS rings FROM awa.storage_status(); SELECT pg_temp.held() AS storage_status; ROLLBACK;
BEGIN; SELECT count(*) FROM awa.lane_cursors('il'); SELECT pg_temp.held() AS lane_cursors; ROLLBACK;
-- awa.key_metrics (awa_monitor): its running counts come from the claim ring,
-- read in a block it rolls back (found by adversarial testing: it held every
-- claim-ring slot, and the claim ring's prunes were blocked).
SELECT awa.enqueue('il.k', '{}', 'il_keyed', opts => '{"concurrency_key": "a"}') > 0 AS enqueued;
SELECT count(*) AS claimed FROM awa.claim('il_keyed', 1);
BEGIN; SELECT concurrency_key, running FROM awa.key_metrics('il_keyed', 10); SELECT pg_temp.held() AS key_metrics; ROLLBACK;

-- A producer: its jobs are written at its commit, nothing held before.
BEGIN; SELECT awa.enqueue('il', '{}', 'il') > 0 AS enqueued; SELECT pg_temp.held() AS enqueue; ROLLBACK;

-- A worker: the slots it wrote and read rows in.
BEGIN; SELECT count(*) AS claimed FROM awa.claim('il', 1); SELECT pg_temp.held() AS claim; ROLLBACK;
BEGIN; SELECT awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('il', 1) c; SELECT pg_temp.held() AS complete; ROLLBACK;
BEGIN; SELECT awa.retry(c.job_id, c.run_lease, c.receipt_id, 'x') FROM awa.claim('il', 1) c; SELECT pg_temp.held() AS retry; ROLLBACK;
BEGIN; SELECT awa.fail(c.job_id, c.run_lease, c.receipt_id, 'x') FROM awa.claim('il', 1) c; SELECT pg_temp.held() AS fail; ROLLBACK;
-- A claim when the queue has two lanes with work, so the claim orders them by
-- priority aging and looks up when each lane's head became due, reading the
-- lane in every live generation from its floor up to the head (found by an
-- adversarial review: that look-up read through a statement, whose lock
-- lasts to the end of the transaction, so a worker left idle after one claim
-- held every queue slot and the ring stopped at its cap; now a read that
-- finds nothing of the lane keeps no lock, as the claim walk's).
SELECT awa.enqueue('il.p1', '{}', 'il', 1) > 0 AS enqueued_priority_1;
BEGIN; SELECT count(*) AS claimed FROM awa.claim('il', 1); SELECT pg_temp.held() AS claim_two_lanes; ROLLBACK;

-- Admin writers that read through the parents: every slot they read, to the
-- end of their transaction (docs/maintenance.md §2: keep them in short
-- transactions; a bulk step commits each step).
BEGIN; SELECT awa.cancel(:first_job); SELECT pg_temp.held() AS cancel; ROLLBACK;
BEGIN; SELECT awa.move_jobs(ARRAY[:first_job]::bigint[], 'il_other'); SELECT pg_temp.held() AS move_jobs; ROLLBACK;
