-- Takes ACCESS EXCLUSIVE on every child of the slot, waiting at most
-- awa.prune_lock_timeout; false (and nothing locked) when a reader or writer
-- kept one of them longer. The caller's lock_timeout is restored.
CREATE FUNCTION awa._lock_slot(ring text, slot int)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    previous text := current_setting('lock_timeout');
    locked boolean := true;
BEGIN
    BEGIN
        PERFORM set_config('lock_timeout', current_setting('awa.prune_lock_timeout'), true);
        EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', array_to_string(awa._slot_children(ring, slot), ', '));
    EXCEPTION WHEN lock_not_available THEN
        locked := false;
    END;
    PERFORM set_config('lock_timeout', previous, true);
    RETURN locked;
END
$$;

-- The ring maintenance try-lock (rotate and prune of every ring, per database).
CREATE FUNCTION awa._try_ring_lock()
RETURNS boolean
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$ SELECT pg_try_advisory_xact_lock(4708303813097377351) $$;

