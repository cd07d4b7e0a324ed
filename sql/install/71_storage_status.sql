-- Each ring: where it is, its oldest live slot, the last rotate and prune
-- outcomes, and the dead tuples of each of its table families (children
-- summed; from the statistics collector, so up to a few hundred ms old); its
-- width, the slots it uses (rows written since their last truncation), the
-- most it may use (awa.ring_max_slots) and the sealed slots other sessions
-- hold a lock on (left out of reuse; docs/maintenance.md §2).
-- The statistics are read in one pass over awa's tables: a pass per family
-- and ring read every relation of the database 24 times, and each queue's
-- lane adds two sequences (about 25 ms a call at 1,000 queues).
CREATE FUNCTION awa.storage_status()
RETURNS TABLE (ring text, slot_count int, current_slot int, generation bigint, oldest_live_slot int,
               oldest_live_generation bigint, last_rotated_at timestamptz, last_rotate text,
               last_rotate_at timestamptz, last_prune text, last_prune_at timestamptz, prune_backoff_level int,
               dead_tuples jsonb, width int, slots_in_use int, slot_cap int, held_slots int[])
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    families text[];
    dead jsonb;
BEGIN
    -- Dead tuples per table family: a child ring_table_<slot> counts for ring_table.
    SELECT coalesce(jsonb_object_agg(d.family, d.n), '{}') INTO dead
      FROM (SELECT regexp_replace(s.relname, '_[0-9]+$', '') AS family, sum(s.n_dead_tup) AS n
              FROM pg_stat_all_tables s
             WHERE s.schemaname = 'awa'
             GROUP BY 1) d;
    FOREACH ring IN ARRAY ARRAY['queue', 'claim', 'lease'] LOOP
        pos := awa._ring_position(ring);
        slot_count := pos.slot_count;
        current_slot := pos.slot;
        generation := pos.generation;
        width := pos.width;
        slot_cap := awa._ring_slot_cap(ring);
        slots_in_use := cardinality(awa._ring_slots_in_use(ring));
        held_slots := CASE WHEN ring IN ('queue', 'claim') AND slot_cap > width
                           THEN (SELECT coalesce(array_agg(h ORDER BY h), '{}')
                                   FROM unnest(awa._ring_held_slots(ring)) h WHERE h <> pos.slot)
                           ELSE '{}' END;
        oldest_live_generation := CASE WHEN ring = 'queue' THEN (awa._queue_live_generations())[1]
                                       WHEN slot_cap > width THEN
                                           (SELECT min(g) FROM unnest(awa._ring_slots_in_use(ring)) u(s),
                                                   LATERAL (SELECT max(r.generation) AS g FROM awa.claim_ring_rotations r
                                                             WHERE r.slot = u.s) o)
                                       ELSE awa._oldest_live_generation(pos.generation, pos.slot_count) END;
        oldest_live_slot := awa._slot_of(oldest_live_generation, pos.slot_count);
        EXECUTE format('SELECT max(rotated_at) FROM awa.%I', ring || '_ring_rotations') INTO last_rotated_at;
        SELECT m.last_outcome, m.last_run_at INTO last_rotate, last_rotate_at
          FROM awa.maintenance_status() m WHERE m.task = 'rotate_' || ring;
        SELECT m.last_outcome, m.last_run_at, m.prune_backoff_level INTO last_prune, last_prune_at, prune_backoff_level
          FROM awa.maintenance_status() m WHERE m.task = 'prune_' || ring;
        families := (SELECT array_agg(regexp_replace(c, '^awa\.(.*)_0$', '\1'))
                       FROM unnest(awa._slot_children(ring, 0)) c)
                    || ARRAY[ring || '_ring_rotations', ring || '_ring_slots', ring || '_ring_state'];
        SELECT jsonb_object_agg(f, coalesce((dead ->> f)::numeric, 0)) INTO dead_tuples FROM unnest(families) f;
        RETURN NEXT;
    END LOOP;
END
$$;

