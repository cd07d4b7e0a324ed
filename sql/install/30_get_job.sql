-- ---------------------------------------------------------------------------
-- Operators: cancel, inspect, dead-letter queue, queue settings
-- ---------------------------------------------------------------------------
-- The document awa.get_job returns.
CREATE FUNCTION awa._job_document(job_id bigint, queue text, priority int, kind text, args jsonb, state text,
                                  attempt int, max_attempts int, run_lease bigint, run_at timestamptz,
                                  created_at timestamptz, payload jsonb, attempted_at timestamptz,
                                  finalized_at timestamptz, progress jsonb, extra jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE sql STABLE  -- timestamps are formatted in the session's time zone
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT jsonb_build_object(
    'job_id', job_id, 'queue', queue, 'priority', priority, 'kind', kind, 'args', args, 'state', state,
    'attempt', attempt, 'max_attempts', max_attempts, 'run_lease', run_lease, 'run_at', run_at,
    'created_at', created_at, 'attempted_at', attempted_at, 'finalized_at', finalized_at,
    'errors', coalesce(payload -> 'errors', '[]'::jsonb),
    'progress', coalesce(progress, payload -> 'progress'),
    'metadata', coalesce(payload -> 'metadata', '{}'::jsonb),
    'tags', coalesce(payload -> 'tags', '[]'::jsonb))
  || CASE WHEN payload ? 'concurrency_key' THEN jsonb_build_object('concurrency_key', payload -> 'concurrency_key')
          ELSE '{}'::jsonb END  -- only for a keyed job
  || coalesce(extra, '{}'::jsonb)
$$;

-- One job wherever it is: deferred (scheduled, retryable), dead-lettered, or in
-- the queue ring (available, running, completed, failed, cancelled). NULL when
-- unknown (never enqueued, purged, or reclaimed with its ring slot). STABLE:
-- every read is under one snapshot, so a job is seen in exactly one state.
CREATE FUNCTION awa._get_job(job_id bigint)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    p_job_id bigint := $1;
    d        record;
    r        record;
    b        record;
    c        record;
    x        record;
    s        record;
    idx      int;
BEGIN
    IF p_job_id IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT * INTO d FROM awa.deferred_jobs j WHERE j.job_id = p_job_id;
    IF FOUND THEN
        RETURN awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, d.state, d.attempt,
                                 d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, NULL, NULL, NULL);
    END IF;
    SELECT * INTO d FROM awa.dlq_entries j WHERE j.job_id = p_job_id;
    IF FOUND THEN
        RETURN awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, 'dlq', d.attempt,
                                 d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, NULL, d.dlq_at,
                                 NULL, jsonb_build_object('dlq_reason', d.dlq_reason));
    END IF;
    -- Finished, and its queue-ring slot reclaimed: kept in the history ring
    -- for awa.history_retention. Here and below, a failed or cancelled
    -- record of a job retried since (awa.retry_jobs) is passed over: the job
    -- lives on in a later incarnation.
    SELECT * INTO d FROM awa.job_history h WHERE h.job_id = p_job_id
       AND NOT EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = h.job_id AND sup.run_lease = h.run_lease)
     ORDER BY h.run_lease DESC LIMIT 1;
    IF FOUND THEN
        RETURN awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, d.state, d.attempt,
                                 d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, d.attempted_at,
                                 d.finalized_at, NULL);
    END IF;
    -- Cancelled while deferred: a synthetic done row (lane_seq = -job_id) is its
    -- final state, newer than any ready row an earlier attempt left.
    SELECT * INTO d FROM awa.done_entries e WHERE e.job_id = p_job_id AND e.lane_seq = -p_job_id
       AND NOT EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = e.job_id AND sup.run_lease = e.run_lease)
     ORDER BY e.run_lease DESC LIMIT 1;
    IF FOUND THEN
        RETURN awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, d.state, d.attempt,
                                 d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, NULL,
                                 d.finalized_at, NULL);
    END IF;
    -- The latest incarnation in the queue ring (each promotion appends a row
    -- with a higher run_lease).
    SELECT * INTO r FROM awa.ready_entries e WHERE e.job_id = p_job_id
     ORDER BY e.run_lease DESC, e.ready_generation DESC LIMIT 1;
    IF NOT FOUND THEN
        SELECT * INTO d FROM awa.done_entries e WHERE e.job_id = p_job_id
           AND NOT EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = e.job_id AND sup.run_lease = e.run_lease)
         ORDER BY e.finalized_at DESC LIMIT 1;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        RETURN awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, d.state, d.attempt,
                                 d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, NULL,
                                 d.finalized_at, NULL);
    END IF;
    SELECT * INTO d FROM awa.done_entries e
     WHERE e.lane_id = r.lane_id AND e.lane_seq = r.lane_seq AND e.ready_slot = r.ready_slot;
    IF FOUND THEN
        -- A record a retry superseded (awa.retry_jobs): the job lived on, and
        -- its later incarnation is gone (else it would have been found above).
        IF EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = d.job_id AND sup.run_lease = d.run_lease) THEN
            RETURN NULL;
        END IF;
        -- failed or cancelled (cancelled before its claim, or while it ran)
        RETURN awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, d.state, d.attempt,
                                 r.max_attempts, d.run_lease, r.run_at, r.created_at, d.payload, NULL,
                                 d.finalized_at, NULL);
    END IF;
    -- A tombstone without its done row: a move's (awa.move_jobs; a cancel
    -- always writes its done row). The job went on in its new lane, with a
    -- later run_lease; that row is gone (else it would have been found
    -- above): the job finished and was forgotten there.
    IF EXISTS (SELECT FROM awa.ready_tombstones t
                WHERE t.lane_id = r.lane_id AND t.lane_seq = r.lane_seq
                  AND t.ready_slot = r.ready_slot AND t.ready_generation = r.ready_generation) THEN
        RETURN NULL;
    END IF;
    SELECT a.batch_id, a.claim_slot INTO b FROM awa.ready_claim_attempt_batches a
     WHERE a.lane_id = r.lane_id AND a.ready_slot = r.ready_slot
       AND a.ready_generation = r.ready_generation AND a.next_lane_seq > r.lane_seq
       AND a.first_lane_seq <= r.lane_seq AND a.lane_ranges @> r.lane_seq;
    IF NOT FOUND THEN
        RETURN awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, 'available', r.attempt,
                                 r.max_attempts, r.run_lease, r.run_at, r.created_at, r.payload, NULL, NULL, NULL);
    END IF;
    -- The claim batch, in the slot it was written to or the one a prune
    -- carried it to while it was open (docs/maintenance.md §3.5).
    SELECT * INTO c FROM awa.lease_claim_batches k WHERE k.batch_id = b.batch_id;
    IF NOT FOUND THEN
        -- Its claim-ring slot was pruned, which needs every claim in it
        -- closed. A completion left its history in the queue ring (a slot
        -- the claim ring outlives it by less); every other end wrote a
        -- deferred, done or DLQ row found above, or a newer ready row.
        SELECT k.completed_at INTO x FROM awa.receipt_completion_batches k
         WHERE k.batch_id BETWEEN awa._first_closure_batch_id(b.batch_id) AND awa._last_closure_batch_id(b.batch_id)
           AND k.ready_slot = r.ready_slot AND p_job_id = ANY (k.job_ids);
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        RETURN awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, 'completed', r.attempt + 1,
                                 r.max_attempts, r.run_lease + 1, r.run_at, r.created_at, r.payload, NULL,
                                 x.completed_at, NULL);
    END IF;
    idx := array_position(c.job_ids, p_job_id);
    SELECT k.batch_id, k.outcome, k.closed_at, k.ready_slot, k.ready_generation INTO x
      FROM awa.lease_claim_closure_batches k
     WHERE k.batch_id BETWEEN awa._first_closure_batch_id(b.batch_id) AND awa._last_closure_batch_id(b.batch_id)
       AND k.claim_slot = c.claim_slot AND (idx - 1) = ANY (k.claim_indexes);
    IF NOT FOUND THEN
        SELECT * INTO s FROM awa.attempt_state t WHERE t.job_id = p_job_id AND t.run_lease = r.run_lease + 1;
        RETURN awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, 'running', c.attempts[idx],
                                 r.max_attempts, r.run_lease + 1, r.run_at, r.created_at, r.payload, c.claimed_at,
                                 NULL, s.progress,
                                 jsonb_build_object('deadline_at', c.deadline_at, 'heartbeat_at', s.heartbeat_at));
    END IF;
    -- A closed attempt. Its job is what the attempt's ending wrote, the record
    -- the counts count: a completion batch (completed) or a done row (failed,
    -- cancelled; looked up above in the ready row's slot, here in the
    -- closure's), written into the slot the ready row was in when the attempt
    -- closed (x.ready_slot); or a deferred row (retryable, scheduled, rescued,
    -- deadline_expired), which promotion turns into a later ready row; or a DLQ
    -- row. Every place but the queue-ring slot was looked up above. A prune
    -- that carried this ready row onward with its claim batch, still open for
    -- other jobs, reclaimed the slot of the record (or of the later ready row):
    -- it copied the finished job to the history ring (found above) or, with
    -- awa.history_retention = 0, dropped it and took it out of the counts. The
    -- job is then gone here too (docs/maintenance.md §3.3), as it is once the
    -- history step forgets it or the DLQ purges it.
    IF x.outcome = 'completed' THEN
        IF NOT EXISTS (SELECT FROM awa.receipt_completion_batches k
                        WHERE k.batch_id = x.batch_id AND k.ready_slot = x.ready_slot) THEN
            RETURN NULL;
        END IF;
        RETURN awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, 'completed', c.attempts[idx],
                                 r.max_attempts, r.run_lease + 1, r.run_at, r.created_at, r.payload, c.claimed_at,
                                 x.closed_at, NULL);
    ELSIF x.outcome IN ('failed', 'cancelled') THEN
        SELECT * INTO d FROM awa.done_entries e
         WHERE e.lane_id = r.lane_id AND e.lane_seq = r.lane_seq
           AND e.ready_slot = x.ready_slot
           AND NOT EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = e.job_id AND sup.run_lease = e.run_lease);
        IF FOUND THEN
            RETURN awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, d.state, d.attempt,
                                     r.max_attempts, d.run_lease, r.run_at, r.created_at, d.payload, NULL,
                                     d.finalized_at, NULL);
        END IF;
    END IF;
    RETURN NULL;
END
$$;

-- Holds every ring table a reader scans (ACCESS SHARE, to the end of the
-- transaction): a prune that holds one of them is waited for, and a prune not
-- yet started cannot truncate what the reader reads. A reader calls it before
-- its snapshot is taken, so that the snapshot follows any prune it waited for:
-- TRUNCATE is not MVCC-safe, and an older snapshot would see a pruned slot
-- empty without seeing the rows the prune carried or copied to history.
CREATE FUNCTION awa._hold_rings()
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    LOCK TABLE awa.ready_entries, awa.ready_tombstones, awa.ready_claim_attempt_batches, awa.done_entries,
               awa.receipt_completion_batches, awa.lease_claims, awa.lease_claim_batches,
               awa.lease_claim_closures, awa.lease_claim_closure_batches, awa.job_history
          IN ACCESS SHARE MODE;
END
$$;

-- One job wherever it is (awa._get_job), read under one snapshot taken after
-- the ring tables are held (awa._hold_rings): a prune in progress is waited
-- for, so a job it carries or copies to the history ring is seen where it
-- went (found in review of issue 9: a call waiting on a prune saw neither).
CREATE FUNCTION awa.get_job(job_id bigint)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    IF $1 IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM awa._flush_enqueues();
    PERFORM awa._hold_rings();
    RETURN awa._get_job($1);
END
$$;

