-- Rescue: closes open attempts whose deadline passed or whose last heartbeat
-- (else claim) is older than awa.heartbeat_staleness, at most
-- awa.rescue_batch_size per call, oldest claim slots first and, within a slot,
-- the queues in turn.
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
        -- Linear in the slot's claim batches and open attempts: the batches with an attempt
        -- left open (a batch_id range probe of their closures each), then
        -- their closed positions once, anti-joined by hash, and each batch's
        -- arrays unnested once (a probe of claim_indexes per attempt, and a
        -- subscript of the compressed arrays per attempt, made a 10,000-job
        -- batch with one attempt open cost 1.3 s per tick). The queues take turns: each queue's oldest
        -- attempts first (`turn`), so one queue's backlog of expired attempts
        -- does not hold up another queue's rescue for many ticks.
        FOR r IN EXECUTE format(
            'WITH due AS MATERIALIZED (
                 SELECT b.batch_id, b.queue, b.claim_generation, b.deadline_at, b.claimed_at,
                        awa._claim_job_ids(b.first_job_id, b.claimed_count, b.job_ids) AS job_ids, b.run_leases
                   FROM awa.%1$I b
                  WHERE (b.deadline_at < $1 OR b.claimed_at < $2)
                    AND b.claimed_count > (SELECT coalesce(sum(c.closed_count), 0) FROM awa.%2$I c
                                            WHERE c.batch_id BETWEEN awa._first_closure_batch_id(b.batch_id)
                                                                 AND awa._last_closure_batch_id(b.batch_id))
             ), closed AS MATERIALIZED (
                 SELECT d.batch_id, x AS idx
                   FROM due d
                   JOIN awa.%2$I c ON c.batch_id BETWEEN awa._first_closure_batch_id(d.batch_id)
                                                     AND awa._last_closure_batch_id(d.batch_id),
                        unnest(c.claim_indexes) AS x
             ), open_due AS (
                 SELECT d.batch_id, (u.i - 1)::int AS idx, u.job_id, u.run_lease, d.claim_generation,
                        row_number() OVER (PARTITION BY d.queue ORDER BY d.batch_id, u.i) AS turn
                   FROM due d CROSS JOIN LATERAL unnest(d.job_ids, d.run_leases) WITH ORDINALITY AS u(job_id, run_lease, i)
                  WHERE NOT EXISTS (SELECT 1 FROM closed z WHERE z.batch_id = d.batch_id AND z.idx = u.i - 1)
                    AND (d.deadline_at < $1
                         OR coalesce((SELECT s.heartbeat_at FROM awa.attempt_state s
                                       WHERE s.job_id = u.job_id AND s.run_lease = u.run_lease),
                                     d.claimed_at) < $2)
             )
             SELECT o.batch_id, o.idx, o.job_id, o.run_lease, awa._slot_of(o.claim_generation, $4) AS receipt_slot
               FROM open_due o
              ORDER BY o.turn, o.batch_id, o.idx LIMIT $3',
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

