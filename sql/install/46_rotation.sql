-- Rotation: appends (generation, slot) for the next empty slot to the ring's
-- ledger with ON CONFLICT DO NOTHING (a compare-and-swap; no row is ever
-- updated), only when some slot of the ring holds a row (an idle ring does not
-- rotate) and, for the queue ring, when its current slot holds something other
-- than rows prunes carried into it (a backlog nobody adds to stays put). It
-- never waits: with spare slots it passes every slot still in use
-- (left out of reuse) up to awa.ring_max_slots.
CREATE FUNCTION awa._rotate(ring text, OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    next_slot int;
    step int;
    kept int[] := '{}';
    family text;
    busy boolean := false;
    carried_only boolean;
    claims_carried_only boolean;
    cap int;
    n bigint;
BEGIN
    IF NOT awa._try_ring_lock() THEN
        outcome := 'skipped_busy';
        detail := jsonb_build_object('reason', 'another maintenance step holds the ring lock');
        RETURN;
    END IF;
    pos := awa._ring_position(ring);
    cap := awa._ring_slot_cap(ring);
    detail := jsonb_build_object('generation', pos.generation, 'slot', pos.slot);
    -- Nothing new to seal: the current queue slot holds ready rows, every one
    -- of them carried there by a prune (no enqueue wrote into this generation
    -- since a rotation of this server run entered it), the claim evidence a
    -- prune carried with them (the claims of attempts still open) if no claim
    -- wrote any since, and no tombstone, done row or completion. Rotating
    -- would only make the prunes carry the same rows forward again at every
    -- wrap while nothing arrives (docs/maintenance.md §3.6, "An idle backlog
    -- stays put").
    IF ring = 'queue' AND NOT awa._queue_generation_may_hold_enqueues(pos.generation) THEN
        claims_carried_only := NOT awa._queue_generation_may_hold_claims(pos.generation);
        FOREACH family IN ARRAY awa._slot_children('queue', pos.slot) LOOP
            IF family = format('awa.%I', 'ready_claim_attempt_batches_' || pos.slot) AND claims_carried_only THEN
                CONTINUE;
            END IF;
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', family) INTO busy;
            carried_only := busy = (family = format('awa.%I', 'ready_entries_' || pos.slot));
            EXIT WHEN NOT carried_only;
        END LOOP;
        IF carried_only THEN
            outcome := 'skipped_idle';
            detail := detail || jsonb_build_object('reason', 'the current slot holds only rows carried forward');
            RETURN;
        END IF;
    END IF;
    -- The next generation enters the next empty slot, in slot order from the
    -- current one (generation numbers of the slots passed are skipped, so a
    -- generation's slot stays generation % slot_count, awa._slot_of;
    -- docs/maintenance.md §2). Passed over: with spare slots (cap > width),
    -- every slot still in use, whatever holds it (an open transaction, a
    -- kept backlog, a prune behind), and every slot at or past the cap;
    -- without, only the queue slots kept out of the rotation for their many
    -- live rows (§3.6): a full ring waits for its prune, as before.
    IF ring = 'queue' AND cap = pos.width THEN
        SELECT t.kept INTO kept FROM awa._ring_prune_target('queue') t;
    END IF;
    step := 1;
    LOOP
        IF step >= pos.slot_count THEN
            outcome := 'skipped_busy';
            detail := detail || jsonb_build_object('reason', format('every one of the ring''s %s slots is in use', cap),
                                                   'cap_reached', true, 'slot_cap', cap);
            IF cap > pos.width THEN
                RAISE WARNING 'awa: the % ring uses all % of its slots (awa.ring_max_slots): it cannot rotate', ring, cap
                      USING HINT = 'Sessions idle in transaction hold old slots, see awa.storage_status(); end them, or raise awa.ring_max_slots.';
            END IF;
            RETURN;
        END IF;
        next_slot := awa._slot_of(pos.generation + step, pos.slot_count);
        IF next_slot < cap THEN
            EXIT WHEN awa._slot_is_empty(ring, next_slot);
        END IF;
        IF cap = pos.width AND next_slot < cap AND NOT next_slot = ANY (kept) THEN
            outcome := 'skipped_busy';
            detail := detail || jsonb_build_object('reason', 'the incoming slot is not empty: prune is behind',
                                                   'incoming_slot', next_slot);
            RETURN;
        END IF;
        step := step + 1;
    END LOOP;
    -- A partition without a block holds no row: an idle ring is known from
    -- the partitions' sizes (cheap), and only a ring with blocks is read
    -- (they may hold only rolled-back rows), through its partitioned
    -- parents: slot 0's children without their suffix.
    FOR s IN 0 .. pos.slot_count - 1 LOOP
        busy := NOT awa._slot_has_no_blocks(ring, s);
        EXIT WHEN busy;
    END LOOP;
    IF busy THEN
        FOREACH family IN ARRAY (SELECT array_agg(regexp_replace(c, '_0$', '')) FROM unnest(awa._slot_children(ring, 0)) c) LOOP
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', family) INTO busy;
            EXIT WHEN busy;
        END LOOP;
    END IF;
    IF NOT busy THEN
        outcome := 'skipped_idle';
        RETURN;
    END IF;
    PERFORM awa._rotation_begin();
    EXECUTE format('INSERT INTO awa.%I (generation, slot, rotated_at) VALUES ($1, $2, clock_timestamp())
                    ON CONFLICT (generation) DO NOTHING', ring || '_ring_rotations')
      USING pos.generation + step, next_slot;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        outcome := 'skipped_busy';
        detail := detail || jsonb_build_object('reason', 'another rotation appended this generation');
        RETURN;
    END IF;
    IF ring = 'queue' THEN
        PERFORM awa._queue_generation_entered(pos.generation + step);
    END IF;
    outcome := 'rotated';
    detail := jsonb_build_object('generation', pos.generation + step, 'slot', next_slot);
END
$$;

