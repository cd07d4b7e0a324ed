-- ---------------------------------------------------------------------------
-- Metrics surface (docs/monitoring.md): readable by awa_monitor, which may
-- do nothing else. Every function here answers in time that grows with the
-- number of queues, lanes and waiting claims, never with the backlog (the
-- oldest available job is found from each lane's claim cursor).
-- ---------------------------------------------------------------------------
-- Per queue, the jobs each event moved since the server started (shared
-- memory; a restart or a new CREATE EXTENSION starts them at 0, as
-- Prometheus counters expect). A rescued attempt counts as rescued, not as
-- retried; claimed counts the jobs handed out, a job claimed again counting again.
CREATE FUNCTION awa.job_event_totals()
RETURNS TABLE (queue text, enqueued bigint, claimed bigint, completed bigint, retried bigint, snoozed bigint,
               failed bigint, rescued bigint)
AS 'MODULE_PATHNAME', 'awa_job_event_totals'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 10;

-- The claims of this database that are waiting for work now.
CREATE FUNCTION awa.waiting_claims()
RETURNS TABLE (pid int, queue text, waiting_since timestamptz)
AS 'MODULE_PATHNAME', 'awa_waiting_claims'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 10;

-- The run_at of the queue's oldest available job, by a walk in SQL: what
-- awa.queue_metrics falls back to when a lane has more claim evidence above
-- its cursor than its C++ walk reads at once (src/pg/claim_walk.cpp,
-- LaneHeadNow, which does the same per lane). Per lane: the lanes that
-- claims handed out above the claim cursor (their evidence's lane_ranges,
-- merged), the first lane above the cursor outside them, and from there the
-- first ready row that no claim covers and no tombstone hides. Its cost
-- follows the claims since the cursor last moved, not the rows they took (a
-- row claimed by a transaction still open counts as available).
CREATE FUNCTION awa._oldest_available_at(p_queue text)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    l record;
    cursor_at bigint;
    claimed int8multirange;
    r int8range;
    free bigint;
    lane_oldest timestamptz;
    oldest timestamptz;
BEGIN
    FOR l IN SELECT q.lane_id, q.claim_cursor FROM awa.lane_cursors(p_queue) q LOOP
        cursor_at := l.claim_cursor;
        SELECT coalesce(range_agg(x.lanes), '{}'::int8multirange) INTO claimed
          FROM awa.ready_claim_attempt_batches b, unnest(b.lane_ranges) AS x(lanes)
         WHERE b.lane_id = l.lane_id AND b.next_lane_seq > cursor_at;
        free := cursor_at + 1;
        FOR r IN SELECT unnest(claimed) LOOP
            EXIT WHEN lower(r) > free;
            free := greatest(free, upper(r));
        END LOOP;
        SELECT e.run_at INTO lane_oldest
          FROM awa.ready_entries e
         WHERE e.lane_id = l.lane_id AND e.lane_seq >= free
           AND NOT claimed @> e.lane_seq
           AND NOT EXISTS (SELECT 1 FROM awa.ready_tombstones t
                            WHERE t.lane_id = e.lane_id AND t.lane_seq = e.lane_seq)
         ORDER BY e.lane_seq
         LIMIT 1;
        IF lane_oldest IS NOT NULL AND (oldest IS NULL OR lane_oldest < oldest) THEN
            oldest := lane_oldest;
        END IF;
    END LOOP;
    RETURN oldest;
END
$$;

-- One row per queue, ordered by name: its jobs per state (the O(1) counters
-- of awa.queue_counts), its oldest available job (the lane heads kept next to
-- the counters; a lane whose head is not kept is walked once and kept,
-- src/pg/counters.hpp), the claims waiting on it, whether it is paused, and
-- its concurrency and rate limits with the claims each cut short since the
-- server started (docs/flow-control.md).
CREATE FUNCTION awa.queue_metrics()
RETURNS TABLE (queue text, available bigint, scheduled bigint, retryable bigint, running bigint,
               completed bigint, failed bigint, cancelled bigint, dlq bigint,
               oldest_available_at timestamptz, oldest_available_age_seconds double precision,
               waiting_claims bigint, paused boolean, max_running int, claims_limited bigint,
               rate_limit text, burst int, claims_rate_limited bigint)
AS 'MODULE_PATHNAME', 'awa_queue_metrics'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 1000;

-- The queues whose oldest available job is not kept in shared memory now
-- (tests and bench/queue_metrics.sh): awa.queue_metrics walks them.
CREATE FUNCTION awa._oldest_unknown_queues()
RETURNS bigint
AS 'MODULE_PATHNAME', 'awa_oldest_unknown_queues'
LANGUAGE C VOLATILE;

-- The lane heads kept for a queue (tests): state unknown, empty or known.
CREATE FUNCTION awa._lane_heads(queue text)
RETURNS TABLE (priority int, state text, lane_seq bigint, run_at timestamptz)
AS 'MODULE_PATHNAME', 'awa_lane_heads'
LANGUAGE C VOLATILE;
