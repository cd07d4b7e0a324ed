-- claim_generations: a claim with room reads on into later queue-ring
-- generations of its lane, a claim batch per generation (src/pg/fn_claim.cpp,
-- ClaimFromLane). Last in the schedule: it rotates the queue ring, which the
-- tests before it print the generations and slots of.
--
-- Before stop 42 a claim wrote one batch: a claim of 10 took 1 of 2 available
-- jobs when the second was enqueued or promoted after a rotation.

-- Rotates the queue ring, pruning first when the tests before left it with
-- no slot to rotate into (each step its own transaction, as the worker's).
CREATE PROCEDURE pg_temp.turn(INOUT outcome text DEFAULT NULL) LANGUAGE plpgsql AS $f$
DECLARE
    r record;
BEGIN
    FOR i IN 1 .. 64 LOOP
        SELECT * INTO r FROM awa.run_maintenance('rotate_queue');
        COMMIT;
        IF r.outcome = 'rotated' THEN
            outcome := r.outcome;
            RETURN;
        END IF;
        PERFORM awa.run_maintenance('prune_queue');
        COMMIT;
    END LOOP;
    outcome := r.outcome || ' ' || r.detail::text;
END
$f$;

-- One job of a lane in a generation, the next one enqueued after a rotation
-- (as a promoted scheduled job is): a claim of 10 takes both, in lane order,
-- in two claim batches.
SELECT awa.enqueue('gens.first', queue => 'cg_two') IS NOT NULL AS ok;
CALL pg_temp.turn();
SELECT awa.enqueue('gens.second', queue => 'cg_two') IS NOT NULL AS ok;
SELECT count(DISTINCT ready_generation) AS generations FROM awa.ready_entries WHERE queue = 'cg_two';
SELECT kind, attempt FROM awa.claim('cg_two', 10);
SELECT count(*) AS batches, sum(claimed_count) AS jobs FROM awa.ready_claim_attempt_batches WHERE queue = 'cg_two';
SELECT count(*) AS claimed FROM awa.claim('cg_two', 10);

-- Three generations, max_jobs below what they hold: the claim stops at
-- max_jobs, in lane order, and the next claim takes the rest.
SELECT count(*) AS enqueued FROM awa.enqueue_many(ARRAY['g1.a', 'g1.b'], NULL, 'cg_three');
CALL pg_temp.turn();
SELECT count(*) AS enqueued FROM awa.enqueue_many(ARRAY['g2.a', 'g2.b'], NULL, 'cg_three');
CALL pg_temp.turn();
SELECT count(*) AS enqueued FROM awa.enqueue_many(ARRAY['g3.a', 'g3.b'], NULL, 'cg_three');
SELECT count(DISTINCT ready_generation) AS generations FROM awa.ready_entries WHERE queue = 'cg_three';
SELECT kind FROM awa.claim('cg_three', 5);
SELECT kind FROM awa.claim('cg_three', 5);

-- A claim of one job is one batch whatever lies in later generations.
SELECT awa.enqueue('one.a', queue => 'cg_one') IS NOT NULL AS ok;
CALL pg_temp.turn();
SELECT awa.enqueue('one.b', queue => 'cg_one') IS NOT NULL AS ok;
SELECT kind FROM awa.claim('cg_one', 1);
SELECT count(*) AS batches FROM awa.ready_claim_attempt_batches WHERE queue = 'cg_one';
SELECT kind FROM awa.claim('cg_one', 1);

-- Inside one transaction, the batches of an earlier claim are this
-- transaction's own: a second claim takes none of their jobs again.
BEGIN;
SELECT count(*) AS enqueued FROM awa.enqueue_many(ARRAY['t.a', 't.b'], NULL, 'cg_txn');
COMMIT;
CALL pg_temp.turn();
SELECT count(*) AS enqueued FROM awa.enqueue_many(ARRAY['t.c', 't.d'], NULL, 'cg_txn');
BEGIN;
SELECT kind FROM awa.claim('cg_txn', 3);
SELECT kind FROM awa.claim('cg_txn', 3);
SELECT kind FROM awa.claim('cg_txn', 3);
COMMIT;
SELECT available, running FROM awa.queue_counts('cg_txn');
