-- A ring's position: current generation and slot, slot count (partitions),
-- width (slots in use while none is left out of reuse).
CREATE FUNCTION awa._ring_position(ring text, OUT generation bigint, OUT slot int, OUT slot_count int,
                                   OUT width int)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    EXECUTE format('SELECT r.generation, r.slot, s.slot_count, s.width FROM awa.%I r, awa.%I s
                     ORDER BY r.generation DESC LIMIT 1', ring || '_ring_rotations', ring || '_ring_state')
       INTO generation, slot, slot_count, width;
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
AS 'MODULE_PATHNAME', 'awa_internal_slot_has_no_blocks'
LANGUAGE C VOLATILE STRICT;

-- The most slots a ring may use: awa.ring_max_slots, never fewer than its
-- width nor more than its partitions.
CREATE FUNCTION awa._ring_slot_cap(ring text)
RETURNS int
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    n int;
BEGIN
    EXECUTE format('SELECT greatest(s.width, least(s.slot_count, $1)) FROM awa.%I s', ring || '_ring_state')
       INTO n USING current_setting('awa.ring_max_slots')::int;
    RETURN n;
END
$$;

-- The slots of a ring that another transaction holds: it has a granted lock
-- on a child of the slot and it is not just running a statement (idle in
-- transaction, a prepared transaction, or a transaction older than
-- awa.prune_lock_timeout). A prune of such a slot would wait for it, so it is
-- left out of reuse while the ring has spare slots (docs/maintenance.md §2).
-- A statement in flight (a claim, awa.storage_status) holds its locks only
-- until it ends: the prune's lock, bounded by awa.prune_lock_timeout, waits
-- for it as before.
CREATE FUNCTION awa._ring_held_slots(ring text)
RETURNS int[]
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT coalesce(array_agg(DISTINCT c.slot ORDER BY c.slot), '{}')
  FROM (SELECT s AS slot, child::regclass AS rel
          FROM awa._ring_position(ring) p, generate_series(0, p.slot_count - 1) s,
               unnest(awa._slot_children(ring, s)) child) c
  JOIN pg_locks l ON l.locktype = 'relation' AND l.relation = c.rel
  LEFT JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.granted AND l.pid IS DISTINCT FROM pg_backend_pid()
   AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
   AND (l.pid IS NULL
        OR a.state IN ('idle in transaction', 'idle in transaction (aborted)')
        OR a.xact_start < clock_timestamp() - current_setting('awa.prune_lock_timeout')::interval)
$$;

-- The slots of a ring with a block on disk (rows written since their last
-- truncation), the current one always included.
CREATE FUNCTION awa._ring_slots_in_use(ring text)
RETURNS int[]
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT array_agg(s ORDER BY s)
  FROM awa._ring_position(ring) p, generate_series(0, p.slot_count - 1) s
 WHERE s = p.slot OR NOT awa._slot_has_no_blocks(ring, s)
$$;
