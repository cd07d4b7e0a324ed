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

-- Jobs wherever they are: deferred (scheduled, retryable), dead-lettered, or
-- in the queue ring (available, running, completed, failed, cancelled); one
-- row per job found, none for a job unknown (never enqueued, purged, or
-- reclaimed with its ring slot). The one definition of a job's state, for a
-- set of jobs at once (awa._get_job is this for one, awa.list_jobs for a page):
-- each step below is one statement for every job still unresolved, in the
-- order a job is looked for, so a job is resolved by the first place that
-- holds it. STABLE: every read is under one snapshot, so a job is seen in
-- exactly one state. The ring tables are read slot by slot, each statement
-- with the slot a parameter (pruned when the plan starts), and by job_id only
-- in the slots with a block on disk (a truncated slot has none; the callers
-- hold the ring tables, so none is truncated under them): a probe by job_id
-- costs an index descent per job and slot, and most slots are empty. The
-- claim ring, whose slot a claim batch may have been carried out of, is read
-- whole, by a statement that runs only for claimed jobs.
CREATE FUNCTION awa._get_jobs(p_job_ids bigint[])
RETURNS TABLE (job_id bigint, doc jsonb)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
-- Planned once per session: a custom plan of a statement joining ring tables
-- over every slot cost 3 ms to plan, at every call.
SET plan_cache_mode = force_generic_plan
-- (and never a sequential scan of a ring slot: the probes are few)
SET enable_seqscan = off
AS $$
DECLARE
    todo  bigint[];
    found bigint[];
    docs  jsonb[];
    rs    awa.ready_entries[] := '{}';
    ds    awa.done_entries[] := '{}';
    hs    awa.job_history[] := '{}';
    slots smallint[];
    slot  smallint;
    claimed_rows    awa.ready_entries[];
    claimed_batches bigint[];
BEGIN
    todo := ARRAY(SELECT DISTINCT i FROM unnest(p_job_ids) i WHERE i IS NOT NULL);
    IF cardinality(todo) = 0 THEN
        RETURN;
    END IF;
    SELECT array_agg(d.job_id), array_agg(awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, d.state,
               d.attempt, d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, NULL, NULL, NULL))
      INTO found, docs
      FROM awa.deferred_jobs d WHERE d.job_id = ANY (todo);
    IF found IS NOT NULL THEN
        RETURN QUERY SELECT * FROM unnest(found, docs);
        todo := ARRAY(SELECT i FROM unnest(todo) i WHERE NOT i = ANY (found));
    END IF;
    IF cardinality(todo) = 0 THEN
        RETURN;
    END IF;
    SELECT array_agg(d.job_id), array_agg(awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, 'dlq',
               d.attempt, d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, NULL, d.dlq_at, NULL,
               jsonb_build_object('dlq_reason', d.dlq_reason)))
      INTO found, docs
      FROM awa.dlq_entries d WHERE d.job_id = ANY (todo);
    IF found IS NOT NULL THEN
        RETURN QUERY SELECT * FROM unnest(found, docs);
        todo := ARRAY(SELECT i FROM unnest(todo) i WHERE NOT i = ANY (found));
    END IF;
    IF cardinality(todo) = 0 THEN
        RETURN;
    END IF;
    -- Finished, and its queue-ring slot reclaimed: kept in the history ring
    -- for awa.history_retention (the newest row of a job, should it have two),
    -- read slot by slot as the queue ring is below. Here and below, a failed
    -- or cancelled record of a job retried since (awa.retry_jobs, marked in
    -- awa.superseded_records) is passed over: the job lives on in a later
    -- incarnation.
    FOREACH slot IN ARRAY ARRAY(SELECT s.slot FROM awa.history_ring_slots s
                                 WHERE pg_relation_size(format('awa.job_history_%s', s.slot)::regclass) > 0
                                 ORDER BY s.slot) LOOP
        hs := hs || ARRAY(SELECT h FROM awa.job_history h WHERE h.history_slot = slot AND h.job_id = ANY (todo)
                             AND NOT EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = h.job_id AND sup.run_lease = h.run_lease));
    END LOOP;
    SELECT array_agg(d.job_id), array_agg(awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, d.state,
               d.attempt, d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, d.attempted_at,
               d.finalized_at, NULL))
      INTO found, docs
      FROM (SELECT DISTINCT ON (h.job_id) h.* FROM unnest(hs) h
             ORDER BY h.job_id, h.finalized_at DESC, h.run_lease DESC) d;
    IF found IS NOT NULL THEN
        RETURN QUERY SELECT * FROM unnest(found, docs);
        todo := ARRAY(SELECT i FROM unnest(todo) i WHERE NOT i = ANY (found));
    END IF;
    IF cardinality(todo) = 0 THEN
        RETURN;
    END IF;
    -- The queue-ring slots that can hold a row: those with a block on disk
    -- (a slot is emptied by TRUNCATE, which the callers' hold of the ring
    -- tables keeps out; a row this snapshot sees was written before it).
    -- Each is read on its own (the slot a parameter, pruned at the plan's
    -- start): a probe by job_id of each slot's index costs a descent per job,
    -- and most slots are empty.
    slots := ARRAY(SELECT s.slot FROM awa.queue_ring_slots s
                    WHERE pg_relation_size(format('awa.ready_entries_%s', s.slot)::regclass) > 0
                       OR pg_relation_size(format('awa.done_entries_%s', s.slot)::regclass) > 0
                    ORDER BY s.slot);
    -- The done rows of the jobs, wherever they are.
    FOREACH slot IN ARRAY slots LOOP
        ds := ds || ARRAY(SELECT e FROM awa.done_entries e WHERE e.ready_slot = slot AND e.job_id = ANY (todo)
                             AND NOT EXISTS (SELECT FROM awa.superseded_records sup
                                              WHERE sup.job_id = e.job_id AND sup.run_lease = e.run_lease));
    END LOOP;
    -- Cancelled while deferred: a synthetic done row (lane_seq = -job_id) is its
    -- final state, newer than any ready row an earlier attempt left.
    SELECT array_agg(d.job_id), array_agg(awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, d.state,
               d.attempt, d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, NULL, d.finalized_at, NULL))
      INTO found, docs
      FROM (SELECT DISTINCT ON (e.job_id) e.* FROM unnest(ds) e
             WHERE e.lane_seq = -e.job_id ORDER BY e.job_id, e.finalized_at DESC) d;
    IF found IS NOT NULL THEN
        RETURN QUERY SELECT * FROM unnest(found, docs);
        todo := ARRAY(SELECT i FROM unnest(todo) i WHERE NOT i = ANY (found));
    END IF;
    IF cardinality(todo) = 0 THEN
        RETURN;
    END IF;
    -- The latest incarnation in the queue ring (each promotion appends a row
    -- with a higher run_lease).
    FOREACH slot IN ARRAY slots LOOP
        rs := rs || ARRAY(SELECT e FROM awa.ready_entries e WHERE e.ready_slot = slot AND e.job_id = ANY (todo));
    END LOOP;
    rs := ARRAY(SELECT e::awa.ready_entries FROM (SELECT DISTINCT ON (e.job_id) e.* FROM unnest(rs) e
                                                    ORDER BY e.job_id, e.run_lease DESC, e.ready_generation DESC) e);
    -- None: its latest done row, if any.
    RETURN QUERY
    SELECT d.job_id, awa._job_document(d.job_id, d.queue, d.priority, d.kind, d.args, d.state, d.attempt,
                                       d.max_attempts, d.run_lease, d.run_at, d.created_at, d.payload, NULL,
                                       d.finalized_at, NULL)
      FROM (SELECT DISTINCT ON (e.job_id) e.* FROM unnest(ds) e
             WHERE e.job_id = ANY (todo) AND NOT e.job_id = ANY (ARRAY(SELECT r.job_id FROM unnest(rs) r))
             ORDER BY e.job_id, e.finalized_at DESC) d;
    IF cardinality(rs) = 0 THEN
        RETURN;
    END IF;
    -- Each ready row, with every probe after it made with its lane and slot,
    -- a statement per slot (pruned at the plan's start: a probe per row of a
    -- table's every slot cost more than the row's own, and the start of a
    -- plan over every slot more than a job's whole resolution); each probe
    -- runs only while the job is unresolved (a one-time filter). First its
    -- done row, tombstone and claim: failed, cancelled, available, or claimed.
    FOREACH slot IN ARRAY ARRAY(SELECT DISTINCT r.ready_slot FROM unnest(rs) r) LOOP
        SELECT array_agg(q.job_id) FILTER (WHERE q.doc IS NOT NULL),
               array_agg(q.doc) FILTER (WHERE q.doc IS NOT NULL),
               array_agg(q.r) FILTER (WHERE q.batch_id IS NOT NULL),
               array_agg(q.batch_id) FILTER (WHERE q.batch_id IS NOT NULL)
          INTO found, docs, claimed_rows, claimed_batches
          FROM (
        SELECT r.job_id, r, b.batch_id, CASE
            -- A record a retry superseded: the job lived on, and its later
            -- incarnation is gone (else it would have been found above).
            WHEN d.job_id IS NOT NULL AND d.superseded THEN NULL
            -- failed or cancelled (cancelled before its claim, or while it ran)
            WHEN d.job_id IS NOT NULL THEN
                awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, d.state, d.attempt, r.max_attempts,
                                  d.run_lease, r.run_at, r.created_at, d.payload, NULL, d.finalized_at, NULL)
            -- A tombstone without its done row: a move's (awa.move_jobs; a
            -- cancel always writes its done row). The job went on in its new
            -- lane with a later run_lease; that row is gone (else it would
            -- be r): it finished and was forgotten there. Unknown.
            WHEN t.tombstoned_at IS NOT NULL THEN NULL
            WHEN b.batch_id IS NULL THEN
                awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, 'available', r.attempt,
                                  r.max_attempts, r.run_lease, r.run_at, r.created_at, r.payload, NULL, NULL, NULL)
            END AS doc
          FROM unnest(rs) r
          LEFT JOIN LATERAL (SELECT e.*, EXISTS (SELECT FROM awa.superseded_records sup
                                                  WHERE sup.job_id = e.job_id AND sup.run_lease = e.run_lease) AS superseded
                               FROM awa.done_entries e
                              WHERE e.lane_id = r.lane_id AND e.lane_seq = r.lane_seq AND e.ready_slot = slot
                              LIMIT 1) d ON true
          LEFT JOIN LATERAL (SELECT k.tombstoned_at FROM awa.ready_tombstones k
                              WHERE d.job_id IS NULL
                                AND k.lane_id = r.lane_id AND k.lane_seq = r.lane_seq
                                AND k.ready_slot = slot AND k.ready_generation = r.ready_generation
                              LIMIT 1) t ON true
          LEFT JOIN LATERAL (SELECT a.batch_id FROM awa.ready_claim_attempt_batches a
                              WHERE d.job_id IS NULL AND t.tombstoned_at IS NULL
                                AND a.lane_id = r.lane_id AND a.ready_slot = slot
                                AND a.ready_generation = r.ready_generation AND a.next_lane_seq > r.lane_seq
                                AND a.first_lane_seq <= r.lane_seq AND (a.lane_ranges IS NULL OR a.lane_ranges @> r.lane_seq)
                              LIMIT 1) b ON true
         WHERE r.ready_slot = slot
          ) q;
        IF found IS NOT NULL THEN
            RETURN QUERY SELECT * FROM unnest(found, docs);
        END IF;
        CONTINUE WHEN claimed_rows IS NULL;
        -- Then a claimed one's claim batch, closure and what its ending
        -- wrote (a statement that starts only for claimed jobs: its claim-ring
        -- probes read every claim slot).
        RETURN QUERY
        SELECT q.job_id, q.doc FROM (
        SELECT r.job_id, CASE
            -- Its claim-ring slot was pruned, which needs every claim in it
            -- closed. A completion left its history in the queue ring (a slot
            -- the claim ring outlives it by less); every other end wrote a
            -- deferred, done or DLQ row found above, or a newer ready row.
            WHEN c.batch_id IS NULL THEN
                CASE WHEN kc.completed_at IS NOT NULL THEN
                    awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, 'completed', r.attempt + 1,
                                      r.max_attempts, r.run_lease + 1, r.run_at, r.created_at, r.payload, NULL,
                                      kc.completed_at, NULL)
                END
            WHEN x.batch_id IS NULL THEN
                awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, 'running', c.attempts[c.idx],
                                  r.max_attempts, r.run_lease + 1, r.run_at, r.created_at, r.payload, c.claimed_at,
                                  NULL, s.progress,
                                  jsonb_build_object('deadline_at', c.deadline_at, 'heartbeat_at', s.heartbeat_at))
            -- A closed attempt. Its job is what the attempt's ending wrote, the
            -- record the counts count: a completion batch (completed) or a done
            -- row (failed, cancelled; looked up above in the ready row's slot,
            -- here in the closure's), written into the slot the ready row was in
            -- when the attempt closed (x.ready_slot); or a deferred row
            -- (retryable, scheduled, rescued, deadline_expired), which promotion
            -- turns into a later ready row; or a DLQ row. Every place but the
            -- queue-ring slot was looked up above. A prune that carried this
            -- ready row onward with its claim batch, still open for other jobs,
            -- reclaimed the slot of the record (or of the later ready row): it
            -- copied the finished job to the history ring (found above) or, with
            -- awa.history_retention = 0, dropped it and took it out of the
            -- counts. The job is then gone here too (docs/maintenance.md §3.3),
            -- as it is once the history step forgets it or the DLQ purges it.
            WHEN x.outcome = 'completed' THEN
                CASE WHEN xc.found THEN
                    awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, 'completed', c.attempts[c.idx],
                                      r.max_attempts, r.run_lease + 1, r.run_at, r.created_at, r.payload,
                                      c.claimed_at, x.closed_at, NULL)
                END
            WHEN xd.job_id IS NOT NULL THEN
                awa._job_document(r.job_id, r.queue, r.priority, r.kind, r.args, xd.state, xd.attempt,
                                  r.max_attempts, xd.run_lease, r.run_at, r.created_at, xd.payload, NULL,
                                  xd.finalized_at, NULL)
            END AS doc
          FROM unnest(claimed_rows) WITH ORDINALITY AS r
          CROSS JOIN LATERAL (SELECT claimed_batches[r.ordinality] AS batch_id) u
          -- The claim batch, in the slot it was written to or the one a prune
          -- carried it to while it was open (docs/maintenance.md §3.5).
          LEFT JOIN LATERAL (SELECT k.batch_id, k.claim_slot, k.attempts, k.claimed_at, k.deadline_at,
                                    array_position(awa._claim_job_ids(k.first_job_id, k.claimed_count, k.job_ids), r.job_id) AS idx
                               FROM awa.lease_claim_batches k
                              WHERE k.batch_id = u.batch_id
                              LIMIT 1) c ON true
          LEFT JOIN LATERAL (SELECT k.completed_at FROM awa.receipt_completion_batches k
                              WHERE c.batch_id IS NULL
                                AND k.batch_id BETWEEN awa._first_closure_batch_id(u.batch_id)
                                                   AND awa._last_closure_batch_id(u.batch_id)
                                AND k.ready_slot = slot AND k.lane_id = r.lane_id
                                AND r.lane_seq = ANY (awa._lane_positions(k.first_lane_seq, k.completed_count, k.lane_seqs))
                              LIMIT 1) kc ON true
          LEFT JOIN LATERAL (SELECT k.batch_id, k.outcome, k.closed_at, k.ready_slot
                               FROM awa.lease_claim_closure_batches k
                              WHERE c.batch_id IS NOT NULL
                                AND k.batch_id BETWEEN awa._first_closure_batch_id(c.batch_id)
                                                   AND awa._last_closure_batch_id(c.batch_id)
                                AND k.claim_slot = c.claim_slot AND (c.idx - 1) = ANY (k.claim_indexes)
                              LIMIT 1) x ON true
          LEFT JOIN LATERAL (SELECT k.progress, k.heartbeat_at FROM awa.attempt_state k
                              WHERE c.batch_id IS NOT NULL AND x.batch_id IS NULL
                                AND k.job_id = r.job_id AND k.run_lease = r.run_lease + 1
                              LIMIT 1) s ON true
          LEFT JOIN LATERAL (SELECT true AS found FROM awa.receipt_completion_batches k
                              WHERE x.outcome = 'completed' AND k.batch_id = x.batch_id
                                AND k.ready_slot = x.ready_slot
                              LIMIT 1) xc ON true
          LEFT JOIN LATERAL (SELECT e.* FROM awa.done_entries e
                              WHERE x.outcome IN ('failed', 'cancelled')
                                AND e.lane_id = r.lane_id AND e.lane_seq = r.lane_seq AND e.ready_slot = x.ready_slot
                                AND NOT EXISTS (SELECT FROM awa.superseded_records sup
                                                 WHERE sup.job_id = e.job_id AND sup.run_lease = e.run_lease)
                              LIMIT 1) xd ON true
        ) q WHERE q.doc IS NOT NULL;
    END LOOP;
END
$$;

-- One job wherever it is (awa._get_jobs, for one job); NULL when unknown.
CREATE FUNCTION awa._get_job(job_id bigint)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT g.doc FROM awa._get_jobs(ARRAY[$1]) g
$$;

-- The ring truncations a reader's snapshot has seen (src/pg/ring_truncations.hpp):
-- the prune and the history step note theirs before they truncate; a reader
-- asks, once it has locked the ring tables, whether it may release them when
-- its call ends.
CREATE FUNCTION awa._note_ring_truncation()
RETURNS void AS 'MODULE_PATHNAME', 'awa_internal_note_ring_truncation' LANGUAGE C VOLATILE;
CREATE FUNCTION awa._ring_locks_releasable()
RETURNS boolean AS 'MODULE_PATHNAME', 'awa_internal_ring_locks_releasable' LANGUAGE C VOLATILE;

-- Holds every ring table a reader scans (ACCESS SHARE): a prune that holds
-- one of them is waited for, and a prune not yet started cannot truncate what
-- the reader reads. A reader calls it before its snapshot is taken, so that
-- the snapshot follows any prune it waited for: TRUNCATE is not MVCC-safe, and
-- an older snapshot would see a pruned slot empty without seeing the rows the
-- prune carried or copied to history.
--
-- True when the reader may release the locks as its call returns (it reads
-- in a block that it rolls back, SQLSTATE AWARL, the locks with it: a session
-- left idle in transaction after reading jobs then holds no ring slot). That
-- is so under READ COMMITTED; under REPEATABLE READ and SERIALIZABLE it is so
-- when no truncation committed after the transaction's snapshot, and 40001 is
-- raised when one did (awa._ring_locks_releasable). False only without
-- shared_preload_libraries under REPEATABLE READ: the locks are kept to the
-- transaction's end. A writer (awa.retry_jobs) keeps them to its end; one
-- that reads the claim ring only for a running job (awa.cancel) or never
-- (awa.move_jobs, awa.set_priority) holds the queue and history rings only
-- (claim_ring false), so a session left idle after it keeps the claim ring
-- turning (awa.cancel checks the claim ring's truncations once it reads it).
CREATE FUNCTION awa._hold_rings(claim_ring boolean DEFAULT true)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    LOCK TABLE awa.ready_entries, awa.ready_tombstones, awa.ready_claim_attempt_batches, awa.done_entries,
               awa.receipt_completion_batches, awa.job_history
          IN ACCESS SHARE MODE;
    IF claim_ring THEN
        LOCK TABLE awa.lease_claims, awa.lease_claim_batches, awa.lease_claim_closures, awa.lease_claim_closure_batches
              IN ACCESS SHARE MODE;
    END IF;
    RETURN awa._ring_locks_releasable();
END
$$;

-- One job wherever it is (awa._get_job), read under one snapshot taken after
-- the ring tables are held (awa._hold_rings): a prune in progress is waited
-- for, so a job it carries or copies to the history ring is seen where it
-- went (found in review of issue 9: a call waiting on a prune saw neither).
-- The locks are released as it returns (test/t/034).
CREATE FUNCTION awa.get_job(job_id bigint)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    doc     jsonb;
    release boolean;
BEGIN
    IF $1 IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM awa._flush_enqueues();
    BEGIN
        release := awa._hold_rings();
        doc := awa._get_job($1);
        IF release THEN
            RAISE SQLSTATE 'AWARL';
        END IF;
    EXCEPTION WHEN SQLSTATE 'AWARL' THEN
        NULL;  -- the block's locks are released; doc is kept
    END;
    RETURN doc;
END
$$;

