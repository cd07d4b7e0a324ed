-- Why a queue-ring slot cannot be truncated now, or NULL when it can. What is
-- live in the slot never stops it: available rows, the rows of open attempts
-- and the evidence the claim walk still needs are carried forward into the
-- newest generation by awa._carry_queue_slot in the truncating transaction
-- (docs/maintenance.md §3.5). Only what cannot be carried stops it:
--  (d) an enqueue is between reserving lane_seqs for a generation <= the
--      target and inserting its rows (it could write into the slot after the
--      truncation);
--  (a) a lease references the slot (the lease ring is not written in 0.6);
--  row-local claims (awa.lease_claims, not written in 0.6) of its rows are
--      open.
-- Claims and readers that hold one of the slot's children keep the prune's
-- lock from being granted (outcome blocked) instead.
CREATE FUNCTION awa._queue_slot_blocker(slot int, generation bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    n bigint;
BEGIN
    -- (d) first: it costs one pass over shared memory.
    IF awa._enqueue_generation_in_use(generation) THEN
        RETURN 'an enqueue into the generation is in flight';
    END IF;
    SELECT count(*) INTO n FROM awa.leases l WHERE l.ready_slot = slot;
    IF n > 0 THEN
        RETURN format('%s leases reference the slot', n);
    END IF;
    SELECT count(*) INTO n
      FROM awa.lease_claims c
     WHERE c.ready_slot = slot
       AND NOT EXISTS (SELECT 1 FROM awa.lease_claim_closures x
                        WHERE x.job_id = c.job_id AND x.run_lease = c.run_lease AND x.claim_slot = c.claim_slot);
    IF n > 0 THEN
        RETURN format('%s row-local claims of its jobs are open', n);
    END IF;
    RETURN NULL;
END
$$;

