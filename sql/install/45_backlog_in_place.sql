-- Available rows of a queue slot, estimated from its small tables: lanes its
-- segments cover, less the lanes its claims handed out and its tombstones.
CREATE FUNCTION awa._slot_live_rows(slot int)
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('SELECT coalesce((SELECT sum(next_lane_seq - first_lane_seq) FROM awa.%I), 0)
                         - coalesce((SELECT sum(claimed_count) FROM awa.%I), 0)
                         - (SELECT count(*) FROM awa.%I)',
                   'ready_segments_' || slot, 'ready_claim_attempt_batches_' || slot, 'ready_tombstones_' || slot)
       INTO n;
    RETURN n;
END
$$;

-- The queue prune's target: the generation owning the slot the next rotation
-- enters. A sealed slot whose available rows exceed awa.carry_max_rows stays
-- out of the rotation instead (kept, while fewer than half the slots are),
-- and the next slot is looked at: copying a big backlog forward every ring
-- wrap would cost more than the slot frees (docs/maintenance.md §3.6).
-- generation NULL: the slot the next rotation enters was never used (the
-- ring has not filled); a target whose slot has no block is already pruned.
CREATE FUNCTION awa._queue_prune_target(OUT generation bigint, OUT slot int, OUT kept int[])
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    s int;
    owner bigint;
    limit_rows bigint := current_setting('awa.carry_max_rows')::bigint;
BEGIN
    pos := awa._ring_position('queue');
    kept := '{}';
    FOR k IN 1 .. pos.slot_count - 1 LOOP
        s := awa._slot_of(pos.generation + k, pos.slot_count);
        SELECT max(r.generation) INTO owner FROM awa.queue_ring_rotations r WHERE r.slot = s;
        IF owner IS NULL OR awa._slot_has_no_blocks('queue', s) THEN
            generation := owner;
            slot := s;
            RETURN;
        END IF;
        IF cardinality(kept) < pos.slot_count / 2 - 1 AND awa._slot_live_rows(s) > limit_rows THEN
            kept := kept || s;
            CONTINUE;
        END IF;
        generation := owner;
        slot := s;
        RETURN;
    END LOOP;
END
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

