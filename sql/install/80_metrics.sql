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
-- first ready row that no claim covers and no tombstone hides; for a paused
-- queue, also its oldest parked job. Its cost
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
    -- (The lanes of jobs without a key: the heads kept in shared memory are
    -- theirs, and the two must agree; docs/monitoring.md.)
    FOR l IN SELECT q.lane_id, q.claim_cursor FROM awa.lane_cursors(p_queue) q
               JOIN awa.queue_lanes k ON k.lane_id = q.lane_id AND k.concurrency_key IS NULL LOOP
        cursor_at := l.claim_cursor;
        SELECT coalesce(range_agg(x.lanes), '{}'::int8multirange) INTO claimed
          FROM awa.ready_claim_attempt_batches b, unnest(coalesce(b.lane_ranges, int8multirange(int8range(b.first_lane_seq, b.next_lane_seq)))) AS x(lanes)
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
    -- A paused queue's parked jobs are in no lane (docs/architecture.md §6,
    -- "A paused queue parks its jobs"): as awa.queue_metrics counts them.
    IF EXISTS (SELECT FROM awa.queue_meta m WHERE m.queue = p_queue AND m.paused) THEN
        SELECT least(oldest, min(d.run_at)) INTO oldest
          FROM awa.deferred_jobs d WHERE d.state = 'available' AND d.queue = p_queue;
    END IF;
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

-- The claims a key's limits gave fewer jobs than they asked for, since the
-- server started (src/pg/key_limits.hpp: the key's counters entry; 0 without one).
CREATE FUNCTION awa._key_limit_stats(queue text, concurrency_key text,
                                     OUT claims_limited bigint, OUT claims_rate_limited bigint)
AS 'MODULE_PATHNAME', 'awa_internal_key_limit_stats'
LANGUAGE C VOLATILE STRICT;

-- The keys of the queues with keyed jobs (one queue, or all when NULL): per
-- queue the `top` keys with the most backlog and the `top` with the most
-- running attempts (docs/flow-control.md, "Seeing keys"). backlog: the
-- positions of the key's lanes its claim cursor has not passed (available
-- jobs, and jobs claimed or cancelled past a position still open: an upper
-- bound of its available jobs, exact once claims have moved the cursor);
-- running: counted from the claim ring (claimed - closed attempts).
-- (The work is awa._key_metrics: a PL/pgSQL function cannot name an argument
-- and a result column both "queue".)
CREATE FUNCTION awa._key_metrics(p_queue text, p_top int)
RETURNS TABLE (queue text, concurrency_key text, backlog bigint, running bigint, key_max_running int,
               key_rate_limit text, key_burst int, claims_limited bigint, claims_rate_limited bigint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
ROWS 100
AS $$
DECLARE
    running_by_key jsonb;
    release boolean;
BEGIN
    IF $1 IS NOT NULL THEN
        PERFORM awa._require_queue($1);
    END IF;
    IF $2 IS NULL OR $2 < 1 OR $2 > 10000 THEN
        RAISE EXCEPTION 'top must be between 1 and 10000' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass how many keys per queue to list, by backlog and by running attempts.';
    END IF;
    -- The running attempts per key, counted from the claim ring in a block
    -- rolled back as it ends (as the other readers, awa._hold_rings): the ring
    -- tables are held before the count's snapshot, so a claim-ring prune in
    -- progress is waited for and what it carries is counted, and their locks
    -- go with the block, so a monitoring session left idle in its transaction
    -- holds no claim-ring slot. (Found by adversarial testing: it held every
    -- one, and the claim ring's prunes were blocked until the session ended;
    -- racing a prune it counted 0 running.)
    BEGIN
        release := awa._hold_rings();
        SELECT coalesce(jsonb_object_agg(r.name, r.running), '{}') INTO running_by_key
          FROM (SELECT DISTINCT l.queue FROM awa.queue_lanes l
                 WHERE l.concurrency_key IS NOT NULL AND ($1 IS NULL OR l.queue = $1)) q,
               LATERAL awa._key_running_scan(q.queue, NULL, true) r;
        IF release THEN
            RAISE SQLSTATE 'AWARL';
        END IF;
    EXCEPTION WHEN SQLSTATE 'AWARL' THEN
        NULL;  -- the block's locks are released; running_by_key is kept
    END;
    RETURN QUERY
    WITH lanes AS (
        SELECT c.queue, l.concurrency_key AS key, sum(c.enqueue_cursor - c.claim_cursor)::bigint AS backlog
          FROM awa.lane_cursors($1) c
          JOIN awa.queue_lanes l ON l.lane_id = c.lane_id
         WHERE l.concurrency_key IS NOT NULL
         GROUP BY 1, 2
    ), keyed AS (
        SELECT lanes.queue, lanes.key, lanes.backlog,
               coalesce((running_by_key ->> awa._key_counter_name(lanes.queue, lanes.key))::bigint, 0) AS running
          FROM lanes
    ), ranked AS (
        SELECT k.*, row_number() OVER (PARTITION BY k.queue ORDER BY k.backlog DESC, k.key) AS by_backlog,
               row_number() OVER (PARTITION BY k.queue ORDER BY k.running DESC, k.key) AS by_running
          FROM keyed k
    )
    SELECT r.queue, r.key, r.backlog, r.running, m.key_max_running,
           CASE WHEN m.key_rate_count IS NOT NULL THEN m.key_rate_count || ' per ' || m.key_rate_period END,
           m.key_rate_burst, s.claims_limited, s.claims_rate_limited
      FROM ranked r
      LEFT JOIN awa.queue_meta m ON m.queue = r.queue
      CROSS JOIN LATERAL awa._key_limit_stats(r.queue, r.key) s
     WHERE r.by_backlog <= $2 OR r.by_running <= $2
     ORDER BY r.queue, r.backlog DESC, r.running DESC, r.key;
END
$$;

CREATE FUNCTION awa.key_metrics(queue text DEFAULT NULL, top int DEFAULT 10)
RETURNS TABLE (queue text, concurrency_key text, backlog bigint, running bigint, key_max_running int,
               key_rate_limit text, key_burst int, claims_limited bigint, claims_rate_limited bigint)
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
ROWS 100
AS $$ SELECT * FROM awa._key_metrics($1, $2) $$;

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
