-- A ring's position: current generation and slot, slot count.
CREATE FUNCTION awa._ring_position(ring text, OUT generation bigint, OUT slot int, OUT slot_count int)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    EXECUTE format('SELECT r.generation, r.slot, s.slot_count FROM awa.%I r, awa.%I s
                     ORDER BY r.generation DESC LIMIT 1', ring || '_ring_rotations', ring || '_ring_state')
       INTO generation, slot, slot_count;
END
$$;

-- True when no child of the slot holds a row.
CREATE FUNCTION awa._slot_is_empty(ring text, slot int)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    child text;
    found boolean;
BEGIN
    FOREACH child IN ARRAY awa._slot_children(ring, slot) LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', child) INTO found;
        IF found THEN
            RETURN false;
        END IF;
    END LOOP;
    RETURN true;
END
$$;

-- True when no child of the slot has a block on disk (it was truncated and
-- nothing was written since): prune has nothing to do and must not truncate
-- again (each TRUNCATE swaps the files and invalidates every backend's plans).
CREATE FUNCTION awa._slot_has_no_blocks(ring text, slot int)
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT coalesce(bool_and(pg_relation_size(c::regclass) = 0), true) FROM unnest(awa._slot_children(ring, slot)) c
$$;

