-- ---------------------------------------------------------------------------
-- Lane reclaim: the rows of lanes drained and idle for awa.lane_reclaim_after
-- (default 1 day) are deleted (docs/architecture.md, "A drained, idle lane's
-- row is reclaimed"; src/pg/fn_reclaim_lanes.cpp). A lane is made again, with
-- a new lane_id, by its next enqueue.
-- ---------------------------------------------------------------------------

-- One pass over at most max_lanes (1 .. 100,000) lanes, after those the
-- previous pass of this session looked at: {examined, drained, reclaimed,
-- busy, skipped}. idle_after_s NULL: awa.lane_reclaim_after; -1: nothing is
-- reclaimed; 0: a drained lane with no row left in the queue ring is
-- reclaimed at once. skipped 1: another pass of the database was running.
CREATE FUNCTION awa._reclaim_idle_lanes(max_lanes int, idle_after_s int DEFAULT NULL)
RETURNS bigint[] AS 'MODULE_PATHNAME', 'awa_internal_reclaim_idle_lanes' LANGUAGE C VOLATILE;

-- The maintenance step (awa.run_maintenance('reclaim_lanes')): one pass of
-- 1,000 lanes.
CREATE FUNCTION awa._reclaim_lanes(OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    counts bigint[];
BEGIN
    counts := awa._reclaim_idle_lanes(1000);
    outcome := CASE WHEN counts[3] > 0 THEN 'reclaimed' WHEN counts[5] > 0 THEN 'skipped_busy' ELSE 'nothing_due' END;
    detail := jsonb_build_object('examined', counts[1], 'drained', counts[2], 'reclaimed', counts[3],
                                 'busy', counts[4]);
END
$$;
