-- Rescue: closes open attempts whose deadline passed or whose last heartbeat
-- (else claim) is older than awa.heartbeat_staleness, at most
-- awa.rescue_batch_size per call, oldest claim slots first.
CREATE FUNCTION awa._rescue(OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    budget int := current_setting('awa.rescue_batch_size')::int;
    now_at timestamptz := clock_timestamp();
    stale_before timestamptz := clock_timestamp() - current_setting('awa.heartbeat_staleness')::interval;
    results jsonb := '{}';
    slot int;
    r record;
    result text;
    g bigint;
BEGIN
    pos := awa._ring_position('claim');
    FOR g IN awa._oldest_live_generation(pos.generation, pos.slot_count) .. pos.generation LOOP
        EXIT WHEN budget <= 0;
        slot := awa._slot_of(g, pos.slot_count);
        FOR r IN EXECUTE format(
            'SELECT b.batch_id, i - 1 AS idx, b.job_ids[i] AS job_id, b.run_leases[i] AS run_lease,
                    awa._slot_of(b.claim_generation, $4) AS receipt_slot
               FROM awa.%1$I b CROSS JOIN LATERAL generate_subscripts(b.job_ids, 1) AS i
              WHERE (b.deadline_at < $1 OR b.claimed_at < $2)
                AND NOT EXISTS (SELECT 1 FROM awa.%2$I c
                                 WHERE c.batch_id BETWEEN awa._first_closure_batch_id(b.batch_id) AND awa._last_closure_batch_id(b.batch_id)
                                   AND (i - 1) = ANY (c.claim_indexes))
                AND (b.deadline_at < $1
                     OR coalesce((SELECT s.heartbeat_at FROM awa.attempt_state s
                                   WHERE s.job_id = b.job_ids[i] AND s.run_lease = b.run_leases[i]),
                                 b.claimed_at) < $2)
              ORDER BY b.batch_id, i LIMIT $3',
            'lease_claim_batches_' || slot, 'lease_claim_closure_batches_' || slot)
            USING now_at, stale_before, budget, pos.slot_count
        LOOP
            -- A batch carried forward while open keeps the generation, and so
            -- the receipt slot, it was claimed in.
            result := awa._rescue_attempt(r.job_id, r.run_lease, awa._receipt(r.batch_id, r.idx, r.receipt_slot::int),
                                          stale_before);
            results := jsonb_set(results, ARRAY[result], to_jsonb(coalesce((results ->> result)::int, 0) + 1));
            budget := budget - 1;
        END LOOP;
    END LOOP;
    outcome := CASE WHEN results = '{}' THEN 'nothing_due' ELSE 'rescued' END;
    detail := results;
END
$$;

