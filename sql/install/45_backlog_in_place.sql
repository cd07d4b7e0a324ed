-- Available rows of a queue slot: its ready rows, less the lanes its claims
-- handed out and its tombstones, counted up to awa.carry_max_rows + 1 (all
-- the caller asks is whether a slot holds more than that: a backlog of a
-- million rows costs no more to look at than one of carry_max_rows).
CREATE FUNCTION awa._slot_live_rows(slot int)
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    spent bigint;
    ready bigint;
BEGIN
    EXECUTE format('SELECT coalesce((SELECT sum(claimed_count) FROM awa.%I), 0) + (SELECT count(*) FROM awa.%I)',
                   'ready_claim_attempt_batches_' || slot, 'ready_tombstones_' || slot)
       INTO spent;
    EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM awa.%I LIMIT $1) r', 'ready_entries_' || slot)
       INTO ready USING spent + current_setting('awa.carry_max_rows')::bigint + 1;
    RETURN ready - spent;
END
$$;

-- A prune's target in the queue or claim ring: the oldest slot in use that
-- is not left out of reuse: without spare slots, when the rotation would
-- enter it next; with spare slots, once width - 1 rotations have passed since
-- its generation or the ring uses every slot up to its cap
-- (docs/maintenance.md §2, §3.6). Looked at in the order
-- the rotation enters them (the oldest first), a slot in use is left out:
--  - (queue ring) kept: its available rows exceed awa.carry_max_rows, while
--    fewer than (cap - width) + width / 2 - 1 slots are kept: copying a big
--    backlog forward every wrap would cost more than the slot frees;
--  - held: another session holds a lock on one of its children (an idle
--    transaction after a claim or a read), while the ring has spare slots
--    (cap > width): its prune would only wait, so the ring takes a spare
--    slot instead, and prunes it once the session has let go.
-- With spare slots the first due slot in that order is taken, past younger
-- ones that are not due yet (neither counted as kept nor as held).
-- due is false when nothing needs pruning: generation and slot then name the
-- first slot the rotation would enter that holds nothing (generation NULL: it
-- was never used, the ring has not filled yet). in_use counts the slots with
-- rows, cap is awa._ring_slot_cap. The decision is made again at every turn,
-- from the data: nothing records it.
CREATE FUNCTION awa._ring_prune_target(ring text, OUT generation bigint, OUT slot int, OUT due boolean,
                                       OUT kept int[], OUT held int[], OUT in_use int, OUT cap int)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    s int;
    owner bigint;
    used int[];
    locked int[];  -- awa._ring_held_slots, read when a slot in use is first looked at
    keep_limit int;
    rotations int;
    unused_before boolean := false;
    limit_rows bigint := current_setting('awa.carry_max_rows')::bigint;
    -- A slot's generation: the newest the ledger maps to it.
    slot_generation text := format('SELECT max(r.generation) FROM awa.%I r WHERE r.slot = $1', ring || '_ring_rotations');
BEGIN
    pos := awa._ring_position(ring);
    cap := awa._ring_slot_cap(ring);
    used := awa._ring_slots_in_use(ring);
    in_use := cardinality(used);
    kept := '{}';
    held := '{}';
    due := false;
    keep_limit := (cap - pos.width) + pos.width / 2 - 1;
    FOR k IN 1 .. pos.slot_count - 1 LOOP
        s := awa._slot_of(pos.generation + k, pos.slot_count);
        -- The slot's generation, read only where it is used: the first unused
        -- slot and every slot in use.
        IF NOT s = ANY (used) THEN
            unused_before := unused_before OR s < cap;
            IF slot IS NULL THEN
                EXECUTE slot_generation INTO generation USING s;
                slot := s;
            END IF;
            CONTINUE;
        END IF;
        EXECUTE slot_generation INTO owner USING s;
        IF cap > pos.width THEN
            -- Spare slots: due once width - 1 rotations have passed since its
            -- generation (left-out slots cost no rotating slot its time), or
            -- at once when the ring uses every slot up to its cap. Slot order
            -- is not age order here (a slot passed over while it was held or
            -- kept is older than the slots after it), so a slot not due yet
            -- is passed over, uncounted, and the search goes on: a younger
            -- slot does not hold back an older one that is due (found when the
            -- queue ring stood still with a backlog: a freed slot behind a
            -- young one was never pruned). Deciding this first spares the
            -- young slots the count of their live rows.
            EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM awa.%I r WHERE r.generation > $1
                                                   ORDER BY r.generation LIMIT $2) x', ring || '_ring_rotations')
               INTO rotations USING owner, pos.width;
            IF NOT (rotations >= pos.width - 1
                    OR NOT EXISTS (SELECT 1 FROM generate_series(0, cap - 1) u WHERE NOT u = ANY (used))) THEN
                CONTINUE;
            END IF;
        END IF;
        IF ring = 'queue' AND cardinality(kept) < keep_limit AND awa._slot_live_rows(s) > limit_rows THEN
            kept := kept || s;
            CONTINUE;
        END IF;
        -- Which slots sessions hold (pg_locks joined with pg_stat_activity,
        -- the costly read of this function) only once a slot in use needs it:
        -- an idle ring's prune never does.
        IF cap > pos.width AND locked IS NULL THEN
            locked := awa._ring_held_slots(ring);
        END IF;
        IF s = ANY (locked) THEN
            held := held || s;
            CONTINUE;
        END IF;
        -- No spare slots: due when the rotation would enter it next (only
        -- kept slots before it), as in the fixed ring; the search ends here
        -- either way. With spare slots it is due (above).
        due := cap > pos.width OR NOT unused_before;
        IF due THEN
            generation := owner;
            slot := s;
        END IF;
        RETURN;
    END LOOP;
END
$$;

-- The queue prune's target (awa._ring_prune_target('queue')): the generation
-- and slot, NULL when nothing is due; kept: the slots kept out of the
-- rotation for their many live rows.
CREATE FUNCTION awa._queue_prune_target(OUT generation bigint, OUT slot int, OUT kept int[])
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT CASE WHEN t.due THEN t.generation END, CASE WHEN t.due THEN t.slot END, t.kept
  FROM awa._ring_prune_target('queue') t
$$;

-- The generations that own a queue slot (newest per slot), oldest first: the
-- queue ring's live generations.
CREATE FUNCTION awa._queue_live_generations()
RETURNS bigint[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT array_agg(g ORDER BY g)
  FROM awa.queue_ring_slots s,
       LATERAL (SELECT max(r.generation) AS g FROM awa.queue_ring_rotations r WHERE r.slot = s.slot) x
 WHERE g IS NOT NULL
$$;

