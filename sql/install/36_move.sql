-- ---------------------------------------------------------------------------
-- Moving waiting jobs: another queue (awa.move_jobs) or another priority
-- (awa.set_priority), by job id; the bulk actions move and set_priority
-- (35_bulk.sql) call the same building block (docs/operations-ui.md,
-- "Acting on many jobs"; docs/lifecycle.md, "Moving a waiting job").
-- ---------------------------------------------------------------------------

-- Internal: the lane of a deferred job (src/pg/fn_lane_cursors.cpp), made if
-- it is new and held from the lane reclaim (51_lane_reclaim.sql) until the
-- caller's transaction ends: a move makes the lane of the job's new queue and
-- priority, as its enqueue there would have, so the queue is listed at once;
-- a cancel keys the job's terminal row by it.
CREATE FUNCTION awa._ensure_lane(queue text, priority int, concurrency_key text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'awa_internal_ensure_lane'
LANGUAGE C VOLATILE;

-- Internal: records that n jobs left from_state of from_queue and entered
-- to_state of to_queue in this transaction, counted as no job event (the job
-- was neither enqueued nor ended: awa.job_event_totals does not move).
CREATE FUNCTION awa._count_transfer(from_queue text, from_state text, to_queue text, to_state text,
                                    n bigint DEFAULT 1)
RETURNS void
AS 'MODULE_PATHNAME', 'awa_internal_count_transfer'
LANGUAGE C VOLATILE;

-- Raises what a priority argument of the C functions raises
-- (src/core/validate.cpp), naming the parameter.
CREATE FUNCTION awa._require_priority(priority int, name text DEFAULT 'priority')
RETURNS void
LANGUAGE plpgsql VOLATILE  -- raises: never evaluated ahead of time
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    IF priority IS NULL THEN
        RAISE EXCEPTION '% must not be NULL', name USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Priority 1 is the most urgent, 4 the least.';
    END IF;
    IF priority < 1 OR priority > 4 THEN
        RAISE EXCEPTION '% must be between 1 and 4, got %', name, priority USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Priority 1 is the most urgent, 4 the least.';
    END IF;
END
$$;

-- Moves the given jobs that wait (available, scheduled, retryable) to
-- to_queue and/or to_priority (NULL: unchanged); returns how many changed.
-- Jobs in another state (running, finished, dead-lettered, unknown) and jobs
-- already there are left alone. A job keeps its job_id, attempt, errors,
-- run_at (so its wait still counts for aging), unique key and concurrency
-- key.
--   * scheduled, retryable: its deferred row is updated under its row lock
--     (a promotion skips a locked row; a move that waits for a promotion
--     finds the job available, below), and its new lane is made;
--   * available: its ready row is hidden by a ready tombstone, exactly as a
--     cancel hides it (awa._tombstone: under the lane's claim lock, after any
--     claim in flight on it has ended, and registered for this transaction
--     so that no claim takes it before this commits; a claimed job is
--     running and is left alone), and the job is appended to its new lane as
--     a promotion appends it (awa._requeue_jobs, in this transaction),
--     with run_lease + 1: the new ready row is the job's latest incarnation
--     (awa._get_job, awa.cancel), and (job_id, run_lease) still names one
--     ready row. A rollback takes back the tombstone and the new row
--     together. The old row leaves with its slot (no done row: it is not a
--     finished job, and the counts never counted it as one).
-- Ids are handled in job_id order (the deferred rows' locks, then the
-- tombstones), so two moves never wait for each other in a cycle.
CREATE FUNCTION awa._relocate(job_ids bigint[], to_queue text, to_priority int)
RETURNS int
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    ids      bigint[];
    in_lanes bigint[];    -- ids without a deferred row (available, or not waiting at all)
    parked   awa.deferred_jobs[] := '{}';
    q        record;
    r        record;
    id       bigint;
    outcome  text;
    seen     bigint;      -- a ready row (its run_lease) found tombstoned by another transaction
    moved    int := 0;
BEGIN
    SELECT coalesce(array_agg(DISTINCT u.id ORDER BY u.id), '{}') INTO ids
      FROM unnest(job_ids) AS u(id) WHERE u.id IS NOT NULL;
    IF cardinality(ids) = 0 THEN
        RETURN 0;
    END IF;
    PERFORM awa._flush_enqueues();  -- jobs this transaction enqueued
    -- Scheduled and retryable jobs.
    FOR q IN
        WITH old AS MATERIALIZED (
            SELECT j.job_id, j.queue, j.priority, j.state, j.payload ->> 'concurrency_key' AS ckey
              FROM awa.deferred_jobs j
             WHERE j.job_id = ANY (ids)
               AND (j.queue <> coalesce(to_queue, j.queue) OR j.priority <> coalesce(to_priority, j.priority))
             ORDER BY j.job_id
               FOR UPDATE OF j
        ), changed AS (
            UPDATE awa.deferred_jobs j
               SET queue = coalesce(to_queue, j.queue), priority = coalesce(to_priority, j.priority)
              FROM old o
             WHERE j.job_id = o.job_id
            RETURNING o.queue AS from_queue, j.queue AS to_queue, j.priority, j.state, o.ckey
        )
        SELECT c.from_queue, c.to_queue, c.priority, c.state, c.ckey, count(*) AS n
          FROM changed c GROUP BY c.from_queue, c.to_queue, c.priority, c.state, c.ckey
          ORDER BY c.to_queue, c.priority, c.ckey, c.from_queue, c.state
    LOOP
        PERFORM awa._ensure_lane(q.to_queue, q.priority, q.ckey);
        IF q.from_queue <> q.to_queue THEN
            PERFORM awa._count_transfer(q.from_queue, q.state, q.to_queue, q.state, q.n);
        END IF;
        moved := moved + q.n;
    END LOOP;
    -- The ids that are not deferred, once, as a set (a test per id against
    -- the deferred ones would be quadratic in the ids).
    SELECT coalesce(array_agg(u.id ORDER BY u.ord), '{}') INTO in_lanes
      FROM unnest(ids) WITH ORDINALITY u(id, ord)
     WHERE NOT EXISTS (SELECT FROM awa.deferred_jobs j WHERE j.job_id = u.id);
    IF cardinality(in_lanes) > 0 THEN
        -- The ring tables held before the reads below take their snapshots:
        -- a prune in progress is waited for, and under REPEATABLE READ a
        -- prune that committed after the transaction's snapshot (which would
        -- see its slot empty, not where it carried the jobs) raises 40001
        -- rather than moving nothing (found by adversarial testing). Held to
        -- the end: this writes. (Only here: a move of deferred jobs alone
        -- reads no ring and holds none.)
        PERFORM awa._hold_rings(claim_ring => false);
    END IF;
    -- Available jobs, one at a time (each looks again if its job moved meanwhile).
    FOREACH id IN ARRAY in_lanes LOOP
        seen := NULL;
        FOR round IN 1 .. 100 LOOP
            -- Finished (dead-lettered, in the history ring, cancelled while
            -- deferred) or deferred meanwhile (a claim that ended): not waiting in a lane.
            EXIT WHEN EXISTS (SELECT FROM awa.deferred_jobs j WHERE j.job_id = id)
                   OR EXISTS (SELECT FROM awa.dlq_entries j WHERE j.job_id = id)
                   OR EXISTS (SELECT FROM awa.job_history h WHERE h.job_id = id
                                 AND NOT EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = h.job_id AND sup.run_lease = h.run_lease))
                   OR EXISTS (SELECT FROM awa.done_entries e WHERE e.job_id = id AND e.lane_seq = -id
                                 AND NOT EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = e.job_id AND sup.run_lease = e.run_lease));
            SELECT * INTO r FROM awa.ready_entries e WHERE e.job_id = id
             ORDER BY e.run_lease DESC, e.ready_generation DESC LIMIT 1;
            EXIT WHEN NOT FOUND;
            EXIT WHEN EXISTS (SELECT FROM awa.done_entries e WHERE e.lane_id = r.lane_id
                                 AND e.lane_seq = r.lane_seq AND e.ready_slot = r.ready_slot);
            EXIT WHEN r.queue = coalesce(to_queue, r.queue) AND r.priority = coalesce(to_priority, r.priority);
            outcome := awa._tombstone(r.queue, r.priority, r.lane_seq, r.ready_slot, r.ready_generation, r.job_id,
                                      r.lane_id);
            IF outcome = 'tombstoned' THEN
                -- The tombstone counted the job as cancelled in its old queue:
                -- it is scheduled in its new one until it is appended below.
                PERFORM awa._count_transfer(r.queue, 'cancelled', coalesce(to_queue, r.queue), 'scheduled');
                parked := parked || ROW(r.job_id, coalesce(to_queue, r.queue), coalesce(to_priority, r.priority), r.kind,
                                        r.args, 'scheduled', r.run_at, r.run_lease + 1, r.attempt, r.max_attempts,
                                        r.created_at, NULL, r.unique_key, r.unique_states, r.payload)::awa.deferred_jobs;
                EXIT;
            ELSIF outcome = 'already_tombstoned' THEN
                -- Cancelled or moved by a transaction that has ended: the next
                -- round finds its done row or its later ready row. A snapshot
                -- that sees neither (REPEATABLE READ) leaves the job alone.
                EXIT WHEN seen = r.run_lease;
                seen := r.run_lease;
                CONTINUE;
            END IF;
            EXIT;  -- claimed: running, or finished since
        END LOOP;
    END LOOP;
    IF cardinality(parked) > 0 THEN
        moved := moved + awa._requeue_jobs(parked);
    END IF;
    RETURN moved;
END
$$;

-- Moves waiting jobs (available, scheduled, retryable) to another queue;
-- returns how many moved. The others (running, finished, dead-lettered,
-- unknown, already in that queue) are left alone.
CREATE FUNCTION awa.move_jobs(job_ids bigint[], queue text)
RETURNS int
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    IF job_ids IS NULL THEN
        RAISE EXCEPTION 'job_ids must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass the job ids to move, as listed by awa.list_jobs.';
    END IF;
    PERFORM awa._require_queue(queue);
    RETURN awa._relocate(job_ids, queue, NULL);
END
$$;

-- Gives waiting jobs (available, scheduled, retryable) another priority;
-- returns how many changed. The others are left alone.
CREATE FUNCTION awa.set_priority(job_ids bigint[], priority int)
RETURNS int
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    IF job_ids IS NULL THEN
        RAISE EXCEPTION 'job_ids must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass the job ids to change, as listed by awa.list_jobs.';
    END IF;
    PERFORM awa._require_priority(priority);
    RETURN awa._relocate(job_ids, NULL, priority);
END
$$;
