CREATE FUNCTION awa._history_retention()
RETURNS interval
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$ SELECT current_setting('awa.history_retention')::interval $$;

-- Finished jobs leave the books: `source` is a query of (queue, state,
-- job_id, run_lease) rows. Records the negative counter moves per queue and
-- state, releases the unique keys those jobs hold, and returns {state: jobs};
-- a record a retry superseded (awa.superseded_records) is left out of all
-- three (the retry counted the job out of it, and the job lives on with its
-- key). (run_lease NULL: a record no retry supersedes, a completion.)
CREATE FUNCTION awa._forget_finished(source text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    q record;
    moved jsonb := '{}';
BEGIN
    source := format('SELECT t.* FROM (%s) t WHERE NOT EXISTS (SELECT FROM awa.superseded_records sup'
                     ' WHERE sup.job_id = t.job_id AND sup.run_lease = t.run_lease)', source);
    FOR q IN EXECUTE format('SELECT queue, state, count(*) AS n FROM (%s) t GROUP BY queue, state', source) LOOP
        PERFORM awa._count_move(q.queue, q.state, NULL, q.n);
        moved := jsonb_set(moved, ARRAY[q.state], to_jsonb(coalesce((moved ->> q.state)::bigint, 0) + q.n));
    END LOOP;
    IF EXISTS (SELECT 1 FROM awa.job_unique_claims) THEN
        EXECUTE format('DELETE FROM awa.job_unique_claims u WHERE u.job_id IN (SELECT t.job_id FROM (%s) t)', source);
    END IF;
    RETURN moved;
END
$$;

-- Copies the finished jobs of queue-ring slot `slot` (whatever get_job would
-- return for them) into the current history slot; returns how many. Run by
-- the queue prune under the ring lock, after its proof and before its
-- TRUNCATE, in the same transaction: a finished job is always visible in one
-- of the two places.
CREATE FUNCTION awa._keep_history(slot int)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    n bigint;
BEGIN
    pos := awa._ring_position('history');
    EXECUTE format($q$
        INSERT INTO awa.job_history
               (history_slot, job_id, queue, priority, kind, args, state, attempt, max_attempts, run_lease,
                run_at, created_at, attempted_at, finalized_at, unique_key, payload)
        SELECT $1, r.job_id, r.queue, r.priority, r.kind, r.args, 'completed', r.attempt + 1, r.max_attempts,
               c.run_lease, r.run_at, r.created_at, a.claimed_at, c.completed_at, r.unique_key, r.payload
          FROM (SELECT b.lane_id, b.completed_at, u.run_lease, u.lane_seq
                  FROM awa.%1$I b,
                       unnest(b.run_leases, awa._lane_positions(b.first_lane_seq, b.completed_count, b.lane_seqs))
                         u(run_lease, lane_seq)) c
          -- One probe of the lane position index per job (LIMIT 1 keeps the planner from
          -- hashing a lane's whole slot once per completion batch).
          JOIN LATERAL (SELECT * FROM awa.%2$I e
                         WHERE e.lane_id = c.lane_id AND e.lane_seq = c.lane_seq LIMIT 1) r
            ON true
          -- The claim that took it, by lane (the evidence's only index: a
          -- probe by batch id read the slot's whole evidence once per job,
          -- quadratic in the slot's completions; test/sql/history.sql).
          LEFT JOIN LATERAL (SELECT x.claimed_at FROM awa.%3$I x
                              WHERE x.lane_id = c.lane_id AND x.next_lane_seq > c.lane_seq
                                AND x.first_lane_seq <= c.lane_seq AND x.ready_generation = r.ready_generation
                                AND (x.lane_ranges IS NULL OR x.lane_ranges @> c.lane_seq)
                              ORDER BY x.next_lane_seq LIMIT 1) a
            ON true
        UNION ALL
        SELECT $1, d.job_id, d.queue, d.priority, coalesce(r.kind, d.kind), coalesce(r.args, d.args), d.state,
               d.attempt, coalesce(r.max_attempts, d.max_attempts), d.run_lease, coalesce(r.run_at, d.run_at),
               coalesce(r.created_at, d.created_at), NULL, d.finalized_at, coalesce(r.unique_key, d.unique_key),
               d.payload
          FROM awa.%4$I d
          LEFT JOIN awa.%2$I r ON r.lane_id = d.lane_id AND r.lane_seq = d.lane_seq
         WHERE d.state IN ('failed', 'cancelled')
           -- (a record a retry superseded is not kept: the job lives on)
           AND NOT EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = d.job_id AND sup.run_lease = d.run_lease)$q$,
        'receipt_completion_batches_' || slot, 'ready_entries_' || slot, 'ready_claim_attempt_batches_' || slot,
        'done_entries_' || slot)
      USING pos.slot;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- The history ring's step: reclaims (TRUNCATE) every sealed history slot
-- whose rows are all older than awa.history_retention (its generation was
-- sealed, by the next rotation, that long ago), recording their counter moves
-- and releasing their unique keys; then rotates when the current slot has
-- been open for retention / (slot_count - 2) and holds a row, and the
-- incoming slot is empty. So every finished job stays at least the retention
-- and at most the retention plus one slot's width.
CREATE FUNCTION awa._history(OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    retention interval := awa._history_retention();
    pos record;
    sealed record;
    next_slot int;
    pruned int[] := '{}';
    blocked_slot int;
    forgotten jsonb := '{}';
    n bigint;
BEGIN
    IF NOT awa._try_ring_lock() THEN
        outcome := 'skipped_busy';
        detail := jsonb_build_object('reason', 'another maintenance step holds the ring lock');
        RETURN;
    END IF;
    pos := awa._ring_position('history');
    -- Sealed generations still holding rows: oldest first; a slot is sealed
    -- at the rotated_at of the generation after it.
    FOR sealed IN
        SELECT g.generation, g.slot, s.rotated_at AS sealed_at
          FROM awa.history_ring_rotations g
          JOIN awa.history_ring_rotations s ON s.generation = g.generation + 1
         WHERE g.generation > pos.generation - pos.slot_count
         ORDER BY g.generation
    LOOP
        EXIT WHEN sealed.sealed_at > clock_timestamp() - retention;
        CONTINUE WHEN awa._slot_has_no_blocks('history', sealed.slot);
        IF NOT awa._lock_slot('history', sealed.slot) THEN
            blocked_slot := sealed.slot;
            EXIT;
        END IF;
        pruned := pruned || sealed.slot;
    END LOOP;
    IF cardinality(pruned) > 0 THEN
        -- The expired slots' jobs leave the books, then the slots go, whole.
        forgotten := awa._forget_finished((SELECT string_agg(format('SELECT h.queue, h.state, h.job_id, h.run_lease FROM awa.%I h',
                                                                    'job_history_' || p), ' UNION ALL ')
                                             FROM unnest(pruned) p));
        -- The records of the slots that retries superseded go with them.
        EXECUTE format('DELETE FROM awa.superseded_records sup USING (%s) h'
                       ' WHERE sup.job_id = h.job_id AND sup.run_lease = h.run_lease',
                       (SELECT string_agg(format('SELECT h.job_id, h.run_lease FROM awa.%I h', 'job_history_' || p),
                                          ' UNION ALL ')
                          FROM unnest(pruned) p));
        PERFORM awa._note_ring_truncation();
        EXECUTE format('TRUNCATE %s', (SELECT string_agg(format('awa.%I', 'job_history_' || p), ', ')
                                         FROM unnest(pruned) p));
    ELSIF blocked_slot IS NOT NULL THEN
        outcome := 'blocked';
        detail := jsonb_build_object('slot', blocked_slot,
                                     'reason', 'a session held the slot past awa.prune_lock_timeout');
        RETURN;
    END IF;
    next_slot := awa._slot_of(pos.generation + 1, pos.slot_count);
    IF clock_timestamp() - (SELECT r.rotated_at FROM awa.history_ring_rotations r WHERE r.generation = pos.generation)
           >= retention / (pos.slot_count - 2)
       AND EXISTS (SELECT 1 FROM awa.job_history h WHERE h.history_slot = pos.slot)
       AND awa._slot_is_empty('history', next_slot) THEN
        INSERT INTO awa.history_ring_rotations (generation, slot, rotated_at)
        VALUES (pos.generation + 1, next_slot, clock_timestamp())
        ON CONFLICT (generation) DO NOTHING;
        GET DIAGNOSTICS n = ROW_COUNT;
        IF n = 1 THEN
            outcome := 'rotated';
            detail := jsonb_build_object('generation', pos.generation + 1, 'slot', next_slot,
                                         'pruned_slots', to_jsonb(pruned), 'forgotten_jobs', forgotten);
            RETURN;
        END IF;
    END IF;
    IF cardinality(pruned) > 0 THEN
        outcome := 'pruned';
        detail := jsonb_build_object('pruned_slots', to_jsonb(pruned), 'forgotten_jobs', forgotten);
    ELSE
        outcome := 'nothing_due';
        detail := jsonb_build_object('generation', pos.generation, 'slot', pos.slot);
    END IF;
END
$$;

