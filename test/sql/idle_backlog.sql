--
-- idle_backlog: a backlog nobody adds to stays put (docs/maintenance.md §3.6,
-- "An idle backlog stays put"). Once a prune has carried a queue's
-- unclaimed jobs into the current generation and nothing else arrives, the
-- queue ring's current slot holds only carried rows: the rotation reports
-- skipped_idle and writes nothing, where it used to rotate at every turn and
-- make the prunes carry the same rows again at every wrap. The claim of a
-- long-running job carried with the rows does not make it turn either.
-- Anything new in the slot (an enqueue, a claim's evidence, a completion)
-- makes it rotate again.
-- Its own database (a fixed ring of 4 queue slots), so that what this server
-- run noted of its generations (src/pg/enqueue_generations.hpp) is its own.
--
SET client_min_messages = warning;
CREATE DATABASE awa_idle_backlog;
\c awa_idle_backlog
SET client_min_messages = warning;
SET awa.queue_slot_count = 4;
CREATE EXTENSION awa;

CREATE TABLE rounds (n serial, prune text, rotate text, generation bigint, ready text);
CREATE PROCEDURE pg_temp.rounds(k int) LANGUAGE plpgsql AS $f$
DECLARE
    p record;
    r record;
BEGIN
    FOR i IN 1 .. k LOOP
        SELECT * INTO p FROM awa.run_maintenance('prune_queue');
        COMMIT;
        SELECT * INTO r FROM awa.run_maintenance('rotate_queue');
        COMMIT;
        INSERT INTO rounds (prune, rotate, generation, ready)
        SELECT p.outcome || coalesce(' ' || (p.detail ->> 'slot'), ''),
               r.outcome || coalesce(' (' || (r.detail ->> 'reason') || ')', ''),
               (SELECT max(generation) FROM awa.queue_ring_rotations),
               (SELECT string_agg(format('s%s:%s%s', ready_slot, n, CASE WHEN carried > 0 THEN format(' (%s carried)', carried) ELSE '' END),
                                  ', ' ORDER BY ready_slot)
                  FROM (SELECT ready_slot, count(*) AS n, count(origin_generation) AS carried
                          FROM awa.ready_entries GROUP BY ready_slot) s);
        COMMIT;
    END LOOP;
END
$f$;

-- Three jobs that nobody claims, in generation 0 (slot 0).
SELECT count(awa.enqueue('ib.k', jsonb_build_object('i', i), 'ib')) AS enqueued FROM generate_series(1, 3) i;

-- The ring turns past them; at the fourth turn the prune carries them into
-- generation 3 (slot 3), and from then on the rotation stands still: the
-- current slot holds only the carried rows.
CALL pg_temp.rounds(8);
SELECT n, prune, rotate, generation, ready FROM rounds ORDER BY n;
SELECT count(*) AS ledger_rows FROM awa.queue_ring_rotations;

-- A claim's evidence is new in the current slot: the ring turns again, and
-- the two jobs left are carried once more when slot 3's turn comes, then it
-- stands still again.
SELECT count(awa.complete(c.job_id, c.run_lease, c.receipt_id)) AS completed FROM awa.claim('ib', 1) c;
TRUNCATE rounds;
CALL pg_temp.rounds(5);
SELECT prune, rotate, generation, ready FROM rounds ORDER BY n;

-- An enqueue writes into the current generation: the ring turns again.
SELECT awa.enqueue('ib.k', '{"i": 4}', 'ib') IS NOT NULL AS enqueued;
TRUNCATE rounds;
CALL pg_temp.rounds(2);
SELECT prune, rotate, generation, ready FROM rounds ORDER BY n;

-- A job that runs for a long time beside the backlog: when its slot's turn
-- comes, the prune carries its claim's evidence with the rows, and that
-- evidence does not make the ring turn either (no claim wrote into the
-- generation). Its completion does.
CREATE TABLE running AS SELECT job_id, run_lease, receipt_id, args ->> 'i' AS i FROM awa.claim('ib', 1);
SELECT i AS running FROM running;
TRUNCATE rounds;
CALL pg_temp.rounds(8);
SELECT prune, rotate, generation, ready FROM rounds ORDER BY n;
SELECT count(*) AS carried_claims FROM awa.ready_claim_attempt_batches
 WHERE ready_slot = (SELECT current_slot FROM awa.storage_status() WHERE ring = 'queue');
SELECT awa.complete(job_id, run_lease, receipt_id) AS completed FROM running;
TRUNCATE rounds;
CALL pg_temp.rounds(1);
SELECT prune, rotate, generation FROM rounds ORDER BY n;

-- Nothing was lost or doubled: every job is claimed once, in lane order.
SELECT string_agg(c.args ->> 'i', ',' ORDER BY c.job_id) AS claimed,
       count(awa.complete(c.job_id, c.run_lease, c.receipt_id)) AS completed
  FROM awa.claim('ib', 10) c;
SELECT count(*) AS left_available FROM awa.claim('ib', 10);
SELECT count(*) AS counts_differ
  FROM (SELECT * FROM awa.queue_counts() EXCEPT SELECT * FROM awa.queue_counts_exact()) d;

-- The markers are internal: no other role may call them.
SELECT has_function_privilege('public', 'awa._queue_generation_entered(bigint)', 'execute') AS entered_public,
       has_function_privilege('public', 'awa._queue_generation_may_hold_enqueues(bigint)', 'execute') AS enqueues_public,
       has_function_privilege('public', 'awa._queue_generation_may_hold_claims(bigint)', 'execute') AS claims_public;
-- A NULL generation is refused.
SELECT awa._queue_generation_may_hold_enqueues(NULL);
SELECT awa._queue_generation_may_hold_claims(NULL);
SELECT awa._queue_generation_entered(NULL);

\c contrib_regression
DROP DATABASE awa_idle_backlog;

-- With spare slots, a slot passed over while a session held it is older than
-- the slots after it in slot order. Once freed, it is pruned even when a
-- younger slot before it is not due yet: before, the prune stopped at that
-- younger slot, and while the ring stood still (its current slot holding only
-- carried rows) the freed slot was never pruned.
CREATE DATABASE awa_idle_backlog_spare;
\c awa_idle_backlog_spare
SET client_min_messages = warning;
SET awa.queue_slot_count = 4;
SET awa.ring_spare_slots = 4;
CREATE EXTENSION awa;
RESET awa.ring_spare_slots;
CREATE FUNCTION step(task text) RETURNS text LANGUAGE sql AS $f$
SELECT outcome || coalesce(' ' || (detail ->> 'slot'), '') || coalesce(' g' || (detail ->> 'generation'), '')
  FROM awa.run_maintenance(task)
$f$;
-- Job A in slot 0, held by a prepared transaction that read it.
SELECT awa.enqueue('ib.a', '{}', 'ib_a') IS NOT NULL AS a;
BEGIN;
SELECT count(*) AS held_rows FROM awa.ready_entries_0;
PREPARE TRANSACTION 'ib_hold';
SELECT step('rotate_queue') FROM generate_series(1, 5);
-- Job B in slot 5, job C in slot 7; then the rotation passes the held slot 0.
SELECT awa.enqueue('ib.b', '{}', 'ib_b') IS NOT NULL AS b;
SELECT step('rotate_queue') FROM generate_series(1, 2);
SELECT awa.enqueue('ib.c', '{}', 'ib_c') IS NOT NULL AS c;
SELECT step('rotate_queue');
-- Slot 5 is due and carried into the current slot (1); slot 0 is held.
SELECT step('prune_queue');
ROLLBACK PREPARED 'ib_hold';
-- The current slot holds only carried rows: the ring stands still. Slot 7
-- (generation 7) is not due; slot 0 after it is, and is pruned.
SELECT step('rotate_queue');
SELECT step('prune_queue');
SELECT ready_slot, queue, origin_generation IS NOT NULL AS carried FROM awa.ready_entries ORDER BY queue;
SELECT (SELECT count(*) FROM awa.claim('ib_a', 10)) + (SELECT count(*) FROM awa.claim('ib_b', 10))
       + (SELECT count(*) FROM awa.claim('ib_c', 10)) AS claimed;
\c contrib_regression
DROP DATABASE awa_idle_backlog_spare;
