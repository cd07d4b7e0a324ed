-- Rotation: appends (generation + 1, next slot) to the ring's ledger with
-- ON CONFLICT DO NOTHING (a compare-and-swap; no row is ever updated), only
-- when the incoming slot is empty (else the ring is full: prune is behind)
-- and some slot of the ring holds a row (an idle ring does not rotate).
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
    n bigint;
BEGIN
    IF NOT awa._try_ring_lock() THEN
        outcome := 'skipped_busy';
        detail := jsonb_build_object('reason', 'another maintenance step holds the ring lock');
        RETURN;
    END IF;
    pos := awa._ring_position(ring);
    detail := jsonb_build_object('generation', pos.generation, 'slot', pos.slot);
    -- The next generation enters the next slot; in the queue ring, past the
    -- slots kept out of the rotation for their many live rows (their
    -- generation numbers are skipped, so a generation's slot stays
    -- generation % slot_count; docs/maintenance.md §3.6).
    IF ring = 'queue' THEN
        SELECT t.kept INTO kept FROM awa._queue_prune_target() t;
    END IF;
    step := 1;
    LOOP
        next_slot := awa._slot_of(pos.generation + step, pos.slot_count);
        EXIT WHEN awa._slot_is_empty(ring, next_slot);
        IF NOT next_slot = ANY (kept) OR step = pos.slot_count - 1 THEN
            outcome := 'skipped_busy';
            detail := detail || jsonb_build_object('reason', 'the incoming slot is not empty: prune is behind',
                                                   'incoming_slot', next_slot);
            RETURN;
        END IF;
        step := step + 1;
    END LOOP;
    -- The ring's partitioned parents: slot 0's children without their suffix.
    FOREACH family IN ARRAY (SELECT array_agg(regexp_replace(c, '_0$', '')) FROM unnest(awa._slot_children(ring, 0)) c) LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', family) INTO busy;
        EXIT WHEN busy;
    END LOOP;
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
    outcome := 'rotated';
    detail := jsonb_build_object('generation', pos.generation + step, 'slot', next_slot);
END
$$;

