-- Carries what is live in queue-ring slot `slot` (generation `generation`)
-- forward into the newest generation, before the slot is truncated in the
-- same transaction (docs/maintenance.md §3.5). Run by the queue prune under
-- the ring lock and the slot's ACCESS EXCLUSIVE lock, after idle lanes'
-- cursors were advanced and the slot's finished jobs were copied to the
-- history ring. Carried, with every column but the slot and generation
-- unchanged (lane_seq, job_id, run_lease, attempt, args, payload, unique key):
--   * available rows: beyond their lane's claim cursor, handed out by no
--     claim and not tombstoned (idle lanes, paused queues, backlogs);
--   * the claims (attempt batches) of open attempts (long-running jobs) with
--     every row they cover, so their heartbeats and their end (complete,
--     retry, fail, cancel, rescue) find their body: the attempt's claim still
--     names the old slot, and src/pg/attempts.cpp looks the row up where it
--     went;
-- each ready row with its origin_generation (its ready_generation here when
-- NULL: the generation it was enqueued into), so claims see it committed and
-- still learn where its lane's head can be. Nothing else in the slot is live. A lane beyond its cursor
-- that is not carried (cancelled, or claimed and closed) becomes a hole that
-- the claim walk proves dead like a rolled-back enqueue (no row in any
-- generation, no reservation open): its job's state is in the history ring, a
-- deferred row or the DLQ. Returns how many rows (of them running) and
-- claims were carried.
CREATE FUNCTION awa._carry_queue_slot(slot int, generation bigint)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    carried jsonb;
BEGIN
    pos := awa._ring_position('queue');
    IF pos.slot = slot THEN
        RAISE EXCEPTION 'awa: queue slot % is the current one', slot USING ERRCODE = 'internal_error';
    END IF;
    EXECUTE format($q$
        WITH lanes AS MATERIALIZED (
            SELECT l.lane_id, l.claim_cursor AS cursor
              FROM awa.lane_cursors() l
             WHERE EXISTS (SELECT 1 FROM awa.%3$I g WHERE g.lane_id = l.lane_id)
        ), spent AS MATERIALIZED (
            SELECT a.lane_id, range_agg(coalesce(a.lane_ranges, int8multirange(int8range(a.first_lane_seq, a.next_lane_seq)))) AS ranges FROM awa.%2$I a GROUP BY a.lane_id
        ), open_batches AS MATERIALIZED (
            -- Claims with an attempt still open (closures fewer than claims);
            -- most batches are closed whole and are passed over here.
            SELECT c.batch_id, c.claim_slot, awa._claim_job_ids(c.first_job_id, c.claimed_count, c.job_ids) AS job_ids,
                   c.run_leases
              FROM awa.lease_claim_batches c
             WHERE c.ready_generation <= $3
               AND c.claimed_count > (SELECT coalesce(sum(x.closed_count), 0) FROM awa.lease_claim_closure_batches x
                                       WHERE x.batch_id BETWEEN awa._first_closure_batch_id(c.batch_id) AND awa._last_closure_batch_id(c.batch_id)
                                         AND x.claim_slot = c.claim_slot)
        ), open_attempts AS MATERIALIZED (
            -- A batch's positions less its closed ones, as sets (hashed):
            -- a NOT EXISTS per position compared every position with every
            -- closure of the slot, 25 s in the prune's section for one open
            -- claim of 8,000 jobs with 3,000 closures (found by adversarial
            -- testing).
            SELECT c.job_ids[o.i] AS job_id, c.run_leases[o.i] AS run_lease
              FROM open_batches c
             CROSS JOIN LATERAL (SELECT s.i FROM generate_subscripts(c.job_ids, 1) AS s(i)
                                 EXCEPT
                                 SELECT ci.i + 1 FROM awa.lease_claim_closure_batches x, unnest(x.claim_indexes) AS ci(i)
                                  WHERE x.batch_id BETWEEN awa._first_closure_batch_id(c.batch_id) AND awa._last_closure_batch_id(c.batch_id)
                                    AND x.claim_slot = c.claim_slot) o
        ), carried_evidence AS MATERIALIZED (
            -- The claims of open attempts on rows of the slot; every row they
            -- cover travels with them, so that ready rows - handed-out lanes -
            -- tombstones stays the available count of every slot
            -- (awa.queue_counts_exact). Probes from the (few) open attempts.
            SELECT DISTINCT ON (a.batch_id) a.*
              FROM open_attempts o
              JOIN LATERAL (SELECT e.lane_id, e.lane_seq FROM awa.%3$I e
                             WHERE e.job_id = o.job_id AND e.run_lease + 1 = o.run_lease LIMIT 1) r ON true
              JOIN LATERAL (SELECT b.* FROM awa.%2$I b
                             WHERE b.lane_id = r.lane_id AND b.next_lane_seq > r.lane_seq
                               AND b.first_lane_seq <= r.lane_seq AND (b.lane_ranges IS NULL OR b.lane_ranges @> r.lane_seq)
                             ORDER BY b.next_lane_seq LIMIT 1) a ON true
        ), carried_spent AS MATERIALIZED (
            SELECT e.lane_id, range_agg(coalesce(e.lane_ranges, int8multirange(int8range(e.first_lane_seq, e.next_lane_seq)))) AS ranges FROM carried_evidence e
             GROUP BY e.lane_id
        ), moving AS MATERIALIZED (
            SELECT r.*, o.job_id IS NOT NULL AS running
              FROM awa.%3$I r
              JOIN lanes l ON l.lane_id = r.lane_id
              LEFT JOIN spent s ON s.lane_id = r.lane_id
              LEFT JOIN carried_spent cs ON cs.lane_id = r.lane_id
              LEFT JOIN open_attempts o ON o.job_id = r.job_id AND o.run_lease = r.run_lease + 1
             WHERE coalesce(cs.ranges @> r.lane_seq, false)
                OR (r.lane_seq > l.cursor
                    AND NOT coalesce(s.ranges @> r.lane_seq, false)
                    AND NOT EXISTS (SELECT 1 FROM awa.%4$I t
                                     WHERE t.lane_id = r.lane_id AND t.lane_seq = r.lane_seq))
        ), ready AS (
            INSERT INTO awa.%5$I (ready_slot, ready_generation, lane_id, queue, priority, lane_seq, job_id, run_lease,
                                  attempt, max_attempts, kind, args, run_at, created_at, attempted_at, unique_key,
                                  unique_states, payload, origin_generation)
            SELECT $1, $2, m.lane_id, m.queue, m.priority, m.lane_seq, m.job_id, m.run_lease, m.attempt, m.max_attempts, m.kind,
                   m.args, m.run_at, m.created_at, m.attempted_at, m.unique_key, m.unique_states, m.payload,
                   coalesce(m.origin_generation, m.ready_generation)
              FROM moving m
            RETURNING 1
        ), evidence AS (
            INSERT INTO awa.%7$I (ready_slot, ready_generation, batch_id, lane_id, queue, priority, claim_slot,
                                  claim_generation, first_lane_seq, next_lane_seq, claimed_count, lane_ranges,
                                  claimed_at)
            SELECT $1, $2, e.batch_id, e.lane_id, e.queue, e.priority, e.claim_slot, e.claim_generation, e.first_lane_seq,
                   e.next_lane_seq, e.claimed_count, e.lane_ranges, e.claimed_at
              FROM carried_evidence e
            RETURNING 1
        )
        SELECT jsonb_build_object(
                   'rows', (SELECT count(*) FROM ready),
                   'running', (SELECT count(*) FROM moving WHERE running),
                   'evidence', (SELECT count(*) FROM evidence))$q$,
        NULL, 'ready_claim_attempt_batches_' || slot, 'ready_entries_' || slot,
        'ready_tombstones_' || slot, 'ready_entries_' || pos.slot, NULL,
        'ready_claim_attempt_batches_' || pos.slot)
      INTO carried
      USING pos.slot, pos.generation, generation;
    RETURN carried;
END
$$;

-- Why a claim-ring slot cannot be truncated now (a row-local claim in it is
-- open: awa.lease_claims is not written in 0.6), or NULL. Open compact claims
-- never stop it: awa._carry_claim_slot carries them forward.
CREATE FUNCTION awa._claim_slot_blocker(slot int)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    claimed bigint;
    closed bigint;
BEGIN
    EXECUTE format('SELECT (SELECT count(*) FROM awa.%I), (SELECT count(*) FROM awa.%I)',
                   'lease_claims_' || slot, 'lease_claim_closures_' || slot)
       INTO claimed, closed;
    IF claimed <> closed THEN
        RETURN format('%s row-local claims in the slot are open', claimed - closed);
    END IF;
    RETURN NULL;
END
$$;

-- Carries the open claims of claim-ring slot `slot` (long-running attempts)
-- forward into the current claim slot, with every closure already written
-- for them, before the slot is truncated in the same transaction
-- (docs/maintenance.md §3.5). The batch keeps its batch_id and its
-- claim_generation (whose slot is the one the worker's receipt names): a
-- completion, heartbeat or rescue that does not find the batch in the
-- receipt's slot looks in the others (src/pg/attempts.cpp).
-- Returns how many claim and closure batches were carried.
CREATE FUNCTION awa._carry_claim_slot(slot int)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    pos record;
    carried jsonb;
BEGIN
    pos := awa._ring_position('claim');
    IF pos.slot = slot THEN
        RAISE EXCEPTION 'awa: claim slot % is the current one', slot USING ERRCODE = 'internal_error';
    END IF;
    EXECUTE format($q$
        WITH open_batches AS MATERIALIZED (
            SELECT c.* FROM awa.%1$I c
             WHERE c.claimed_count > (SELECT coalesce(sum(x.closed_count), 0) FROM awa.%2$I x
                                       WHERE x.batch_id BETWEEN awa._first_closure_batch_id(c.batch_id) AND awa._last_closure_batch_id(c.batch_id))
        ), claims AS (
            INSERT INTO awa.%3$I (claim_slot, claim_generation, batch_id, ready_slot, ready_generation, lane_id, queue,
                                  priority, claimed_count, first_job_id, job_ids, run_leases, first_lane_seq, lane_seqs, attempts,
                                  max_attempts, deadline_at, claimed_at)
            SELECT $1, b.claim_generation, b.batch_id, b.ready_slot, b.ready_generation, b.lane_id, b.queue, b.priority,
                   b.claimed_count,
                   b.first_job_id, b.job_ids, b.run_leases, b.first_lane_seq, b.lane_seqs, b.attempts, b.max_attempts,
                   b.deadline_at,
                   b.claimed_at
              FROM open_batches b
            RETURNING 1
        ), closures AS (
            INSERT INTO awa.%4$I (claim_slot, batch_id, ready_slot, ready_generation, outcome,
                                  closed_count, claim_indexes, closed_at)
            SELECT $1, x.batch_id, x.ready_slot, x.ready_generation, x.outcome, x.closed_count,
                   x.claim_indexes, x.closed_at
              FROM awa.%2$I x
             WHERE awa._claim_batch_of_closure(x.batch_id) IN (SELECT b.batch_id FROM open_batches b)
            RETURNING 1
        )
        SELECT jsonb_build_object('claims', (SELECT count(*) FROM claims),
                                  'closures', (SELECT count(*) FROM closures))$q$,
        'lease_claim_batches_' || slot, 'lease_claim_closure_batches_' || slot,
        'lease_claim_batches_' || pos.slot, 'lease_claim_closure_batches_' || pos.slot)
      INTO carried
      USING pos.slot, pos.generation;
    RETURN carried;
END
$$;

