-- Cancels a job: 'cancelled' (it was available, scheduled or retryable),
-- 'cancel_requested' (it was running: the attempt is closed, so the worker's
-- completion is refused and its next heartbeat answers cancel_requested),
-- 'already_finished' or 'not_found'. An available job is hidden by a ready
-- tombstone (src/pg/fn_tombstone.cpp), never by changing its ready row.
CREATE FUNCTION awa.cancel(job_id bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    p_job_id bigint := $1;
    d        record;     -- the job's body: a deferred row or a ready row
    r        record;
    b        record;
    a        record;
    ring     record;
    outcome  text;
    idx      int;
    -- where the cancelled terminal row goes
    slot     smallint;
    gen      bigint;
    lane     bigint;
    lane_key bigint;     -- its lane_id
    lease    bigint;
    tries    smallint;
    batch_slot int;  -- the claim slot holding the claim batch
    moved_on bigint; -- run_lease of a ready row seen, last round, closed as moved on
BEGIN
    IF p_job_id IS NULL THEN
        RAISE EXCEPTION 'job_id must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass the job_id awa.enqueue returned.';
    END IF;
    PERFORM awa._flush_enqueues();  -- a job this transaction enqueued
    -- The ring tables held before the reads below take their snapshots (as
    -- awa._relocate): under REPEATABLE READ a prune that committed after the
    -- transaction's snapshot raises 40001, never 'not_found' for a job it
    -- carried (found by adversarial testing). Held to the end: this writes.
    PERFORM awa._hold_rings(claim_ring => false);
    -- A job can move while we look (promotion, retry); each round looks again.
    FOR round IN 1 .. 100 LOOP
        DELETE FROM awa.deferred_jobs j WHERE j.job_id = p_job_id RETURNING j.* INTO d;
        IF FOUND THEN
            -- Scheduled or retryable: a synthetic terminal row in the current queue slot.
            SELECT q.slot, q.generation INTO ring FROM awa.queue_ring_rotations q ORDER BY q.generation DESC LIMIT 1;
            slot := ring.slot; gen := ring.generation; lane := -d.job_id; lease := d.run_lease; tries := d.attempt;
            -- The job's lane, made again if maintenance reclaimed it while the
            -- job waited, and kept from the reclaim until this transaction
            -- ends: the terminal row below is keyed by it.
            lane_key := awa._ensure_lane(d.queue, d.priority, d.payload->>'concurrency_key');
            PERFORM awa._count_move(d.queue, d.state, 'cancelled');
            outcome := 'cancelled';
            EXIT;
        END IF;
        IF EXISTS (SELECT FROM awa.dlq_entries j WHERE j.job_id = p_job_id)
           OR EXISTS (SELECT FROM awa.job_history h WHERE h.job_id = p_job_id
                         AND NOT EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = h.job_id AND sup.run_lease = h.run_lease))
           OR EXISTS (SELECT FROM awa.done_entries e WHERE e.job_id = p_job_id AND e.lane_seq = -p_job_id
                         AND NOT EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = e.job_id AND sup.run_lease = e.run_lease)) THEN
            -- dead-lettered, in the history ring, or cancelled while deferred
            -- (a record a retry superseded does not count: awa.retry_jobs)
            RETURN 'already_finished';
        END IF;
        SELECT * INTO r FROM awa.ready_entries e WHERE e.job_id = p_job_id
         ORDER BY e.run_lease DESC, e.ready_generation DESC LIMIT 1;
        IF NOT FOUND THEN
            IF EXISTS (SELECT FROM awa.done_entries e WHERE e.job_id = p_job_id) THEN
                RETURN 'already_finished';
            END IF;
            RETURN 'not_found';
        END IF;
        IF EXISTS (SELECT FROM awa.done_entries e WHERE e.lane_id = r.lane_id
                      AND e.lane_seq = r.lane_seq AND e.ready_slot = r.ready_slot) THEN
            RETURN 'already_finished';
        END IF;
        -- A committed tombstone without a done row is a move's (a cancel
        -- writes both): the job went on in its new lane with a later
        -- run_lease, and that row is gone (else it would be r): it finished
        -- and was forgotten there.
        IF EXISTS (SELECT FROM awa.ready_tombstones t
                    WHERE t.lane_id = r.lane_id AND t.lane_seq = r.lane_seq
                      AND t.ready_slot = r.ready_slot AND t.ready_generation = r.ready_generation) THEN
            RETURN 'already_finished';
        END IF;
        d := r;
        slot := r.ready_slot; gen := r.ready_generation; lane := r.lane_seq; lane_key := r.lane_id;

        -- Available: a tombstone (src/pg/fn_tombstone.cpp closes the race with claims).
        outcome := awa._tombstone(r.queue, r.priority, r.lane_seq, r.ready_slot, r.ready_generation, r.job_id,
                                  r.lane_id);
        IF outcome = 'tombstoned' THEN
            lease := r.run_lease; tries := r.attempt;
            outcome := 'cancelled';
            EXIT;
        ELSIF outcome = 'already_tombstoned' THEN
            -- Cancelled (its done row), or moved to another queue or priority
            -- by a transaction that has ended (awa.move_jobs: no done row, a
            -- later ready row). The next round finds either; a snapshot that
            -- sees neither (REPEATABLE READ) cannot tell which.
            IF current_setting('transaction_isolation') = 'read committed' THEN
                CONTINUE;
            END IF;
            IF EXISTS (SELECT FROM awa.done_entries e WHERE e.lane_id = r.lane_id
                          AND e.lane_seq = r.lane_seq AND e.ready_slot = r.ready_slot) THEN
                RETURN 'already_finished';
            END IF;
            RAISE EXCEPTION 'could not cancel the job: it was cancelled or moved by a transaction this snapshot cannot see'
                USING ERRCODE = 'serialization_failure', DETAIL = format('Job %s.', p_job_id),
                      HINT = 'Retry the transaction.';
        END IF;

        -- Claimed: close the attempt that took this ready row.
        SELECT x.batch_id, x.claim_slot INTO b FROM awa.ready_claim_attempt_batches x
         WHERE x.lane_id = r.lane_id AND x.ready_slot = r.ready_slot
           AND x.ready_generation = r.ready_generation AND x.next_lane_seq > r.lane_seq
           AND x.first_lane_seq <= r.lane_seq AND (x.lane_ranges IS NULL OR x.lane_ranges @> r.lane_seq);
        IF NOT FOUND AND current_setting('transaction_isolation') <> 'read committed' THEN
            -- The claim committed after this transaction's snapshot was taken.
            RAISE EXCEPTION 'could not cancel the job: it was claimed by a transaction this snapshot cannot see'
                USING ERRCODE = 'serialization_failure', DETAIL = format('Job %s.', p_job_id),
                      HINT = 'Retry the transaction.';
        END IF;
        IF NOT FOUND THEN
            RETURN 'already_finished';
        END IF;
        -- The claim batch, where it was written or where a prune carried it
        -- while it was open (docs/maintenance.md §3.5).
        SELECT array_position(awa._claim_job_ids(k.first_job_id, k.claimed_count, k.job_ids), p_job_id), k.claim_slot
          INTO idx, batch_slot FROM awa.lease_claim_batches k
         WHERE k.batch_id = b.batch_id;
        -- The claim ring is read through its parents here (and below), its
        -- tables locked now, not before: under REPEATABLE READ a claim-ring
        -- prune that committed after the snapshot (carrying this batch while
        -- it was open) raises 40001 rather than 'already_finished' for a
        -- running job (found in review). A cancel of a waiting job never
        -- gets here, and holds no claim slot.
        PERFORM awa._ring_locks_releasable();
        IF idx IS NULL THEN
            RETURN 'already_finished';
        END IF;
        -- Already ended for good (completed, failed, cancelled, dead-lettered):
        -- answer without the claim batch's lock, which a transaction working
        -- on another job of the batch may hold for long. An attempt closed as
        -- retryable or scheduled moved on (a deferred row, found next round);
        -- an open one is closed under the lock below.
        IF EXISTS (SELECT FROM awa.lease_claim_closure_batches x
                    WHERE x.batch_id BETWEEN awa._first_closure_batch_id(b.batch_id) AND awa._last_closure_batch_id(b.batch_id)
                      AND x.claim_slot = batch_slot
                      AND (idx - 1) = ANY (x.claim_indexes)
                      AND x.outcome IN ('completed', 'failed', 'cancelled', 'dlq')) THEN
            RETURN 'already_finished';
        END IF;
        -- Closed as moved on (retried, snoozed, rescued), also without the
        -- lock: the job went to a deferred row, and from there to a later
        -- ready row, the DLQ or a cancelled done row, each looked for at the
        -- top of the next round. If that round still finds this row the
        -- latest, its later record was there before the round began and is
        -- gone: a prune reclaimed it with its slot while this row, carried
        -- with its claim batch still open for other jobs, lived on (docs/
        -- maintenance.md §3.5). Only finished work is reclaimed, so the job
        -- finished (awa.get_job returns NULL for it).
        IF EXISTS (SELECT FROM awa.lease_claim_closure_batches x
                    WHERE x.batch_id BETWEEN awa._first_closure_batch_id(b.batch_id) AND awa._last_closure_batch_id(b.batch_id)
                      AND x.claim_slot = batch_slot
                      AND (idx - 1) = ANY (x.claim_indexes)
                      AND x.outcome IN ('retryable', 'scheduled', 'rescued', 'deadline_expired')) THEN
            IF moved_on = r.run_lease THEN
                RETURN 'already_finished';
            END IF;
            moved_on := r.run_lease;
            CONTINUE;
        END IF;
        SELECT * INTO a FROM awa._attempt(p_job_id, r.run_lease + 1, awa._receipt(b.batch_id, idx - 1, b.claim_slot),
                                          'cancelled');
        IF a.status = 'closed_now' THEN
            lease := r.run_lease + 1; tries := a.attempt;
            outcome := 'cancel_requested';
            EXIT;
        END IF;
        IF a.status = 'closed' AND a.closed_outcome IN ('retryable', 'scheduled') THEN
            CONTINUE;  -- retried or snoozed meanwhile: cancel it where it went
        END IF;
        RETURN 'already_finished';
    END LOOP;
    IF outcome IS NULL OR outcome NOT IN ('cancelled', 'cancel_requested') THEN
        RAISE EXCEPTION 'job % kept changing state while it was being cancelled', p_job_id
            USING ERRCODE = 'lock_not_available', HINT = 'Try again.';
    END IF;
    IF lane = -p_job_id THEN
        -- A job cancelled while deferred, retried (awa.retry_jobs) and
        -- cancelled while deferred again within one queue-ring slot: its
        -- first synthetic row, superseded, holds the key (lane, -job_id,
        -- slot). No reader sees a superseded record, so it goes now, with its
        -- mark (a dead tuple in a ring table, in this case only).
        WITH gone AS (
            DELETE FROM awa.done_entries e
             WHERE e.lane_id = lane_key AND e.lane_seq = lane AND e.ready_slot = slot
               AND EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = e.job_id AND sup.run_lease = e.run_lease)
            RETURNING e.job_id, e.run_lease
        )
        DELETE FROM awa.superseded_records sup USING gone
         WHERE sup.job_id = gone.job_id AND sup.run_lease = gone.run_lease;
    END IF;
    INSERT INTO awa.done_entries (ready_slot, ready_generation, lane_id, queue, priority, lane_seq, job_id, run_lease,
                                  attempt, kind, state, finalized_at, args, max_attempts, run_at, created_at,
                                  unique_key, payload)
    VALUES (slot, gen, lane_key, d.queue, d.priority, lane, p_job_id, lease, tries, d.kind, 'cancelled', clock_timestamp(),
            d.args, d.max_attempts, d.run_at, d.created_at, d.unique_key, d.payload);
    -- A running job's key was freed when its attempt closed; the others' here.
    DELETE FROM awa.job_unique_claims u WHERE u.job_id = p_job_id AND (u.unique_states & 64) = 0;
    RETURN outcome;
END
$$;

