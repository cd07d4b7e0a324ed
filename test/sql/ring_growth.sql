--
-- ring_growth: the ring grows instead of stalling (docs/maintenance.md §2).
-- A slot another session holds a lock on is left out of reuse and the ring
-- takes a spare slot; it is pruned once the session ends; at the cap
-- (awa.ring_max_slots) the rotation stops, says so, and logs a WARNING.
-- The other files run without spare slots (test/regress.conf); this one makes
-- its own database with 4 queue slots, 2 claim slots and 4 spare slots each.
-- A prepared read-only transaction stands in for a session idle in
-- transaction: it keeps its locks, and nothing else.
--
SET client_min_messages = warning;
CREATE DATABASE awa_ring_growth;
\c awa_ring_growth
SET client_min_messages = warning;
SET awa.ring_spare_slots = 4;
SET awa.queue_slot_count = 4;
SET awa.claim_slot_count = 2;
CREATE EXTENSION awa;
RESET awa.ring_spare_slots;

-- Partitions: width plus spares for the queue and claim rings only.
SELECT ring, slot_count, width, slots_in_use, slot_cap, held_slots FROM awa.storage_status() ORDER BY ring;
SELECT (SELECT count(*) FROM pg_inherits WHERE inhparent = 'awa.ready_entries'::regclass) AS queue_partitions,
       (SELECT count(*) FROM pg_inherits WHERE inhparent = 'awa.lease_claim_batches'::regclass) AS claim_partitions,
       (SELECT count(*) FROM pg_inherits WHERE inhparent = 'awa.leases'::regclass) AS lease_partitions;

-- n rounds, each in transactions of its own: a job enqueued, claimed and
-- completed (the rings are not idle), then each ring's prune and rotation.
CREATE TABLE rounds (n serial, queue text, claim text);
CREATE PROCEDURE pg_temp.rounds(k int) LANGUAGE plpgsql AS $f$
DECLARE
    pq record;
    rq record;
    pc record;
    rc record;
BEGIN
    FOR i IN 1 .. k LOOP
        PERFORM awa.enqueue('rg.k', '{}', 'rg');
        COMMIT;
        PERFORM awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('rg', 1) c;
        COMMIT;
        SELECT * INTO pq FROM awa.run_maintenance('prune_queue');
        SELECT * INTO rq FROM awa.run_maintenance('rotate_queue');
        SELECT * INTO pc FROM awa.run_maintenance('prune_claim');
        SELECT * INTO rc FROM awa.run_maintenance('rotate_claim');
        INSERT INTO rounds (queue, claim) VALUES (
            format('prune %s %s%s | rotate %s g%s s%s', pq.outcome, coalesce(pq.detail ->> 'slot', '-'),
                   coalesce(' more ' || (SELECT string_agg(m ->> 'slot', ',') FROM jsonb_array_elements(pq.detail -> 'more') m), '')
                   || coalesce(' held ' || (pq.detail ->> 'held_slots'), ''),
                   rq.outcome, rq.detail ->> 'generation', rq.detail ->> 'slot'),
            format('prune %s %s%s | rotate %s g%s s%s', pc.outcome, coalesce(pc.detail ->> 'slot', '-'),
                   coalesce(' more ' || (SELECT string_agg(m ->> 'slot', ',') FROM jsonb_array_elements(pc.detail -> 'more') m), '')
                   || coalesce(' held ' || (pc.detail ->> 'held_slots'), ''),
                   rc.outcome, rc.detail ->> 'generation', rc.detail ->> 'slot'));
        COMMIT;
    END LOOP;
END
$f$;
CREATE FUNCTION pg_temp.last_rounds(k int) RETURNS SETOF rounds LANGUAGE sql AS $f$
SELECT * FROM (SELECT * FROM rounds ORDER BY n DESC LIMIT k) r ORDER BY n
$f$;

-- A job claimed in queue slot 0 / claim slot 0; its receipt kept.
SELECT awa.enqueue('rg.held', '{}', 'rg_held') IS NOT NULL AS enqueued;
CREATE TABLE held AS SELECT job_id, run_lease, receipt_id FROM awa.claim('rg_held', 1);
SELECT count(*) AS held_claims, min(receipt_id & 15) AS claim_slot FROM held;

-- A session holds both slot 0s (AccessShareLock, as a reader or a claimer
-- left idle in transaction), then three wraps of each ring's width.
BEGIN;
SELECT count(*) AS queue_rows FROM awa.ready_entries_0;
SELECT count(*) AS claim_rows FROM awa.lease_claim_batches_0;
PREPARE TRANSACTION 'rg_hold';
CALL pg_temp.rounds(12);
SELECT * FROM pg_temp.last_rounds(12);
-- Slot 0 was passed over: the generation numbers of its turns are skipped,
-- so a generation's slot is still generation % slot_count.
SELECT generation, slot FROM awa.queue_ring_rotations WHERE generation BETWEEN 6 AND 12 ORDER BY generation;
SELECT ring, slots_in_use, slot_cap, held_slots, oldest_live_slot FROM awa.storage_status()
 WHERE ring IN ('queue', 'claim') ORDER BY ring;
-- Every ready row is in a slot in use, and the held job is where it was.
SELECT count(*) FILTER (WHERE ready_slot = 0) AS in_held_slot, count(DISTINCT ready_slot) AS slots
  FROM awa.ready_entries;

-- The held claim's receipt still works: its claim slot was never reused.
SELECT awa.complete(job_id, run_lease, receipt_id) AS completed FROM held;

-- The session ends: the freed slots are pruned at the next turn (with the
-- slots the ring grew by) and come back into use.
ROLLBACK PREPARED 'rg_hold';
CALL pg_temp.rounds(4);
SELECT * FROM pg_temp.last_rounds(4);
SELECT ring, slots_in_use, slot_cap, held_slots FROM awa.storage_status() WHERE ring IN ('queue', 'claim') ORDER BY ring;
SELECT job_id = (SELECT job_id FROM held) AS held_job_in_history, state FROM awa.job_history;

-- The cap: awa.ring_max_slots = 3 lets the claim ring (width 2) use one slot
-- beyond its width (the queue ring's cap is its width, 4: a fixed ring).
-- Once its rotation keeps to slots 0..2, two held slots leave it nothing:
-- the rotation stops with cap_reached and a WARNING, the prune says the
-- sealed slots are held. Nothing is lost; it goes on once they are let go.
SET awa.ring_max_slots = 3;
SELECT ring, width, slot_cap FROM awa.storage_status() WHERE ring IN ('queue', 'claim') ORDER BY ring;
CALL pg_temp.rounds(4);
SELECT * FROM pg_temp.last_rounds(4);
SELECT current_slot AS c1 FROM awa.storage_status() WHERE ring = 'claim' \gset
BEGIN;
SELECT count(*) > 0 AS read FROM awa.lease_claim_batches_:c1;
PREPARE TRANSACTION 'rg_hold1';
CALL pg_temp.rounds(1);
SELECT current_slot AS c2 FROM awa.storage_status() WHERE ring = 'claim' \gset
BEGIN;
SELECT count(*) > 0 AS read FROM awa.lease_claim_batches_:c2;
PREPARE TRANSACTION 'rg_hold2';
CALL pg_temp.rounds(3);
SELECT * FROM pg_temp.last_rounds(4);
SELECT outcome, detail ->> 'cap_reached' AS cap_reached, detail ->> 'slot_cap' AS slot_cap
  FROM awa.run_maintenance('rotate_claim');
SELECT outcome, detail ->> 'held_slots' AS held, detail ->> 'slot_cap' AS slot_cap FROM awa.run_maintenance('prune_claim');
SELECT ring, slots_in_use, slot_cap, held_slots FROM awa.storage_status() WHERE ring = 'claim';
ROLLBACK PREPARED 'rg_hold1';
ROLLBACK PREPARED 'rg_hold2';
CALL pg_temp.rounds(3);
SELECT * FROM pg_temp.last_rounds(3);
SELECT ring, slots_in_use, slot_cap, held_slots FROM awa.storage_status() WHERE ring IN ('queue', 'claim') ORDER BY ring;
RESET awa.ring_max_slots;

-- Settings.
SELECT name, setting, context, min_val, max_val FROM pg_settings
 WHERE name IN ('awa.ring_spare_slots', 'awa.ring_max_slots') ORDER BY name;

-- Bad input changes nothing: the cap is an integer in 2..64.
SET awa.ring_max_slots = 1;
SET awa.ring_max_slots = 'many';

SELECT count(*) AS counts_differ
  FROM (SELECT * FROM awa.queue_counts() EXCEPT SELECT * FROM awa.queue_counts_exact()) d;
\c contrib_regression
DROP DATABASE awa_ring_growth;
