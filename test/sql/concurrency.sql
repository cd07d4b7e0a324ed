-- concurrency.sql: a queue's concurrency limit, awa.configure_queue(queue,
-- max_running => N): at most N attempts of the queue run at once, over all
-- sessions; a claim at the limit returns fewer jobs or none; an attempt's
-- slot is freed by the commit of whatever ends it; a rolled-back claim frees
-- its slots. Bad input: 22023 with a hint, nothing changed.
\set VERBOSITY terse
\i test/sql/include/try.sql

SELECT count(*) AS enqueued FROM awa.enqueue_many(array_fill('k'::text, ARRAY[6]), NULL, 'cc_q');
SELECT awa.configure_queue('cc_q', max_running => 2);
SELECT max_running FROM awa.queue_meta WHERE queue = 'cc_q';

-- Two at most, in one claim or in several.
CREATE TEMP TABLE cc_claimed AS SELECT job_id, run_lease, receipt_id FROM awa.claim('cc_q', 5);
SELECT count(*) AS first_claim FROM cc_claimed;
SELECT count(*) AS at_limit FROM awa.claim('cc_q', 5);

-- A completion frees its slot at its commit. (Its own transaction may claim in
-- its place: both commit, or roll back, together.)
BEGIN;
SELECT awa.complete(job_id, run_lease, receipt_id) FROM cc_claimed ORDER BY job_id LIMIT 1;
SELECT count(*) AS in_its_place FROM awa.claim('cc_q', 5);
ROLLBACK;
SELECT count(*) AS after_rollback FROM awa.claim('cc_q', 5);
SELECT awa.complete(job_id, run_lease, receipt_id) FROM cc_claimed ORDER BY job_id LIMIT 1;
DELETE FROM cc_claimed WHERE job_id = (SELECT min(job_id) FROM cc_claimed);
INSERT INTO cc_claimed SELECT job_id, run_lease, receipt_id FROM awa.claim('cc_q', 5);
SELECT count(*) AS running_now FROM cc_claimed;
-- Two claims in one transaction share the limit with it.
SELECT awa.complete(job_id, run_lease, receipt_id) FROM cc_claimed;
TRUNCATE cc_claimed;
BEGIN;
INSERT INTO cc_claimed SELECT job_id, run_lease, receipt_id FROM awa.claim('cc_q', 1);
INSERT INTO cc_claimed SELECT job_id, run_lease, receipt_id FROM awa.claim('cc_q', 5);
SELECT count(*) AS in_one_transaction FROM cc_claimed;
COMMIT;

-- A rolled-back claim frees its slots; so does a rolled-back savepoint.
SELECT awa.complete(job_id, run_lease, receipt_id) FROM cc_claimed;
TRUNCATE cc_claimed;
SELECT running FROM awa.queue_counts('cc_q');
BEGIN;
SELECT count(*) AS in_rolled_back FROM awa.claim('cc_q', 5);
ROLLBACK;
BEGIN;
SAVEPOINT s;
SELECT count(*) AS in_savepoint FROM awa.claim('cc_q', 1);
ROLLBACK TO SAVEPOINT s;
INSERT INTO cc_claimed SELECT job_id, run_lease, receipt_id FROM awa.claim('cc_q', 5);
SELECT count(*) AS after_savepoint FROM cc_claimed;
COMMIT;
SELECT running FROM awa.queue_counts('cc_q');

-- A retry and a fail free their slots too.
SELECT count(*) AS more FROM awa.enqueue_many(array_fill('k'::text, ARRAY[4]), NULL, 'cc_q');
INSERT INTO cc_claimed SELECT job_id, run_lease, receipt_id FROM awa.claim('cc_q', 5);
SELECT count(*) AS running_two FROM cc_claimed;
SELECT awa.retry(job_id, run_lease, receipt_id, 'again', 3600) AS retried
  FROM cc_claimed WHERE job_id = (SELECT min(job_id) FROM cc_claimed);
SELECT awa.fail(job_id, run_lease, receipt_id, 'no') AS failed
  FROM cc_claimed WHERE job_id = (SELECT max(job_id) FROM cc_claimed);
SELECT count(*) AS after_ends FROM awa.claim('cc_q', 5);

-- awa.queue_metrics shows the limit and counts the claims it cut (the first
-- claim above asked for 5 and got 2, the next ones got none).
SELECT max_running, running, claims_limited > 0 AS some_claims_limited
  FROM awa.queue_metrics() WHERE queue = 'cc_q';

-- 0 removes the limit; NULL leaves it.
SELECT awa.configure_queue('cc_q', max_running => 0);
SELECT max_running IS NULL AS unlimited FROM awa.queue_meta WHERE queue = 'cc_q';
SELECT awa.configure_queue('cc_q', max_running => 1);
SELECT awa.configure_queue('cc_q', dlq_enabled => false);
SELECT max_running FROM awa.queue_meta WHERE queue = 'cc_q';

-- Bad input: nothing changes.
SELECT pg_temp.try($$SELECT awa.configure_queue('cc_q', max_running => -1)$$);
SELECT max_running FROM awa.queue_meta WHERE queue = 'cc_q';

-- Many claims of one limited queue in one transaction, each in a savepoint
-- (drivers that wrap every statement in one) or with `wait` (each look runs
-- in a subtransaction): each released subtransaction's reservation joins its
-- parent's, so the transaction's table of reservations (1,024) does not fill
-- (it did: "more than 64 claims of limited queues in one transaction", when
-- the table held 64).
SELECT count(*) AS enqueued FROM awa.enqueue_many(array_fill('k'::text, ARRAY[2205]), NULL, 'cc_many');
SELECT awa.configure_queue('cc_many', max_running => 2200);
CREATE FUNCTION pg_temp.claim_in_savepoints(n int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE claimed int := 0;
BEGIN
  FOR i IN 1..n LOOP
    BEGIN
      claimed := claimed + (SELECT count(*) FROM awa.claim('cc_many', 1));
    EXCEPTION WHEN division_by_zero THEN NULL;  -- a block with a handler: a savepoint
    END;
  END LOOP;
  RETURN claimed;
END $$;
CREATE FUNCTION pg_temp.claim_waiting(n int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE claimed int := 0;
BEGIN
  FOR i IN 1..n LOOP
    claimed := claimed + (SELECT count(*) FROM awa.claim('cc_many', 1, wait => '1 second'));
  END LOOP;
  RETURN claimed;
END $$;
BEGIN;
SELECT pg_temp.claim_in_savepoints(1100) AS in_savepoints;
SELECT pg_temp.claim_waiting(1100) AS waiting;
SELECT count(*) AS at_limit FROM awa.claim('cc_many', 5);
SELECT running FROM awa.queue_counts('cc_many');
ROLLBACK;
SELECT running FROM awa.queue_counts('cc_many');
SELECT count(*) AS after_rollback FROM awa.claim('cc_many', 200);
