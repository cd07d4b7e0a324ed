-- Prune: TRUNCATE the ring's oldest sealed slot, whole, on proof that nothing
-- in it is live; the proof is made again once the slot is locked. In the
-- queue and claim rings, while the ring uses more slots than its width (it
-- grew past slots left out of reuse, docs/maintenance.md §2), the next
-- oldest is pruned in the same call too, up to 4 slots, so a ring that grew
-- comes back to its width while it keeps rotating.
CREATE FUNCTION awa._prune(ring text, OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    more jsonb := '[]';
    r record;
BEGIN
    IF NOT awa._try_ring_lock() THEN
        outcome := 'skipped_busy';
        detail := jsonb_build_object('reason', 'another maintenance step holds the ring lock');
        RETURN;
    END IF;
    SELECT x.outcome, x.detail INTO outcome, detail FROM awa._prune_slot(ring) x;
    -- Every pass, pruned or not: the completion receipts' full BRIN ranges,
    -- so that awa.get_job finds a completion without reading its slot
    -- (12_ring_partitions.sql).
    IF ring = 'queue' THEN
        PERFORM awa._summarize_receipts();
    END IF;
    IF outcome <> 'pruned' OR ring NOT IN ('queue', 'claim') THEN
        RETURN;
    END IF;
    FOR round IN 2 .. 4 LOOP
        SELECT x.outcome, x.detail INTO r FROM awa._prune_slot(ring) x;
        EXIT WHEN r.outcome <> 'pruned';
        more := more || jsonb_build_array(r.detail);
    END LOOP;
    IF jsonb_array_length(more) > 0 THEN
        detail := detail || jsonb_build_object('more', more);
    END IF;
END
$$;

-- One slot of awa._prune, under its ring lock.
CREATE FUNCTION awa._prune_slot(ring text, OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    t record;
    target bigint;
    target_slot int;
    kept int[] := '{}';
    held int[] := '{}';
    due boolean := true;
    blocker text;
    filled text;  -- the slot's children with a block, to truncate
BEGIN
    pos := awa._ring_position(ring);
    -- The target is the oldest slot in use once the ring uses its width, so
    -- every slot keeps its rows for width - 1 rotations, from the ring's
    -- first use on; in the queue and claim rings, past the slots left out of
    -- reuse (awa._ring_prune_target; docs/maintenance.md §2, §3.6).
    IF ring IN ('queue', 'claim') THEN
        t := awa._ring_prune_target(ring);
        kept := t.kept;
        held := t.held;
        due := t.due;
        IF NOT due AND cardinality(held) > 0 AND t.in_use >= t.cap THEN
            outcome := 'blocked';
            detail := jsonb_build_object('reason', 'every sealed slot in use is held by another session or kept, '
                                                   'and the ring uses all its slots (awa.ring_max_slots)',
                                         'held_slots', to_jsonb(held), 'slot_cap', t.cap);
            RETURN;
        END IF;
        target := t.generation;
        target_slot := t.slot;
        IF NOT due AND target IS NULL AND t.cap > pos.width THEN
            -- With spare slots the next empty slot may never have been used:
            -- the ring has filled once it has rotated width - 1 times.
            EXECUTE format('SELECT count(*) >= $1 FROM (SELECT 1 FROM awa.%I LIMIT $1) x', ring || '_ring_rotations')
               INTO due USING pos.width;
            IF due THEN
                outcome := 'already_pruned';
                detail := jsonb_build_object('slot', target_slot, 'generation', NULL);
                IF cardinality(kept) > 0 THEN
                    detail := detail || jsonb_build_object('kept_slots', to_jsonb(kept));
                END IF;
                IF cardinality(held) > 0 THEN
                    detail := detail || jsonb_build_object('held_slots', to_jsonb(held));
                END IF;
                RETURN;
            END IF;
        END IF;
    ELSE
        target := awa._prune_target(pos.generation, pos.slot_count);
        target_slot := CASE WHEN target >= 0 THEN awa._slot_of(target, pos.slot_count) END;
    END IF;
    IF target IS NULL OR target < 0 THEN
        outcome := 'skipped_idle';
        detail := jsonb_build_object('reason', 'the ring has not filled yet', 'generation', pos.generation);
        RETURN;
    END IF;
    detail := jsonb_build_object('slot', target_slot, 'generation', target);
    IF cardinality(kept) > 0 THEN
        detail := detail || jsonb_build_object('kept_slots', to_jsonb(kept));
    END IF;
    IF cardinality(held) > 0 THEN
        detail := detail || jsonb_build_object('held_slots', to_jsonb(held));
    END IF;
    IF NOT due THEN
        outcome := 'already_pruned';
        RETURN;
    END IF;
    IF awa._slot_has_no_blocks(ring, target_slot) THEN
        outcome := 'already_pruned';
        RETURN;
    END IF;
    IF ring = 'queue' THEN
        -- Idle lanes' cursors lag behind their last claims until moved.
        PERFORM awa._advance_cursors();
    END IF;
    FOR pass IN 1 .. 2 LOOP
        blocker := CASE ring
                     WHEN 'queue' THEN awa._queue_slot_blocker(target_slot, target)
                     WHEN 'claim' THEN awa._claim_slot_blocker(target_slot)
                     ELSE (SELECT CASE WHEN count(*) > 0 THEN format('%s leases are live', count(*)) END
                             FROM awa.leases l WHERE l.lease_slot = target_slot)
                   END;
        IF blocker IS NOT NULL THEN
            outcome := 'skipped_active';
            detail := detail || jsonb_build_object('reason', blocker);
            RETURN;
        END IF;
        EXIT WHEN pass = 2;
        IF NOT awa._lock_slot(ring, target_slot) THEN
            outcome := 'blocked';
            detail := detail || jsonb_build_object('reason', 'a session held a child of the slot past awa.prune_lock_timeout');
            RETURN;
        END IF;
    END LOOP;
    IF ring = 'queue' THEN
        IF awa._history_retention() > interval '0' THEN
            -- The slot's finished jobs move to the history ring, where they
            -- stay counted and keep their unique keys until it reclaims them.
            detail := detail || jsonb_build_object('history_jobs', awa._keep_history(target_slot));
        ELSE
            -- No history kept: the slot's finished jobs leave the counts, and
            -- the unique keys they hold (states that include a final one) are
            -- released.
            detail := detail || jsonb_build_object('terminal_jobs', awa._forget_finished(format(
                'SELECT r.queue, ''completed'' AS state, e.job_id, NULL::bigint AS run_lease
                   FROM awa.%1$I r, unnest(awa._lane_positions(r.first_lane_seq, r.completed_count, r.lane_seqs)) u(lane_seq)
                   JOIN LATERAL (SELECT e.job_id FROM awa.%3$I e
                                  WHERE e.lane_id = r.lane_id AND e.lane_seq = u.lane_seq LIMIT 1) e ON true
                 UNION ALL
                 SELECT d.queue, d.state, d.job_id, d.run_lease FROM awa.%2$I d WHERE d.state IN (''failed'', ''cancelled'')',
                'receipt_completion_batches_' || target_slot, 'done_entries_' || target_slot,
                'ready_entries_' || target_slot)));
        END IF;
        -- The records of the slot that retries superseded go with it.
        EXECUTE format('DELETE FROM awa.superseded_records sup USING awa.%I d'
                       ' WHERE sup.job_id = d.job_id AND sup.run_lease = d.run_lease', 'done_entries_' || target_slot);
        detail := detail || jsonb_build_object('carried', awa._carry_queue_slot(target_slot, target));
    ELSIF ring = 'claim' THEN
        detail := detail || jsonb_build_object('carried', awa._carry_claim_slot(target_slot));
    END IF;
    -- (published at commit: a REPEATABLE READ reader whose snapshot is older
    -- is refused, awa._hold_rings)
    PERFORM awa._note_ring_truncation();
    -- Only the children with a block in their heap or its TOAST table (an
    -- insert that failed after writing its TOAST chunks leaves blocks there
    -- alone): every child is locked ACCESS EXCLUSIVE already (awa._lock_slot),
    -- so none can gain one before commit, and one with none holds no row. A
    -- TRUNCATE gives each table, index and TOAST table a new file and a new
    -- pg_class row version: the families a workload does not use
    -- (tombstones, done entries, the per-job claim tables in a batch-1
    -- drain) cost that catalog WAL and pg_class's dead rows every prune
    -- (docs/maintenance.md, "History, carry, truncate"). What a kept child
    -- can still hold is an index's dead pages after a manual VACUUM emptied
    -- its heap: nothing anyone reads.
    SELECT string_agg(c, ', ') INTO filled
      FROM unnest(awa._slot_children(ring, target_slot)) c
      JOIN pg_catalog.pg_class k ON k.oid = c::regclass
     WHERE pg_catalog.pg_relation_size(k.oid) > 0
        OR (k.reltoastrelid <> 0 AND pg_catalog.pg_relation_size(k.reltoastrelid) > 0);
    IF filled IS NOT NULL THEN
        EXECUTE format('TRUNCATE %s', filled);
    END IF;
    IF ring = 'queue' THEN
        -- TRUNCATE (of a receipts table with a block) rebuilt the completion
        -- receipts' BRIN index, whose build summarizes the first page range
        -- as empty: every completion written there would widen that
        -- summary, 72 bytes of WAL each. Unsummarized, it costs a completion
        -- nothing (12_ring_partitions.sql).
        PERFORM pg_catalog.brin_desummarize_range(
            format('awa.%I', 'receipt_completion_batches_' || target_slot || '_batch_id_idx')::regclass, 0);
    END IF;
    outcome := 'pruned';
END
$$;

-- awa.history_retention as an interval.
