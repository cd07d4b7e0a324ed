-- ---------------------------------------------------------------------------
-- Finding jobs: awa.list_jobs (docs/operations-ui.md, "Finding jobs").
-- ---------------------------------------------------------------------------

-- A row of awa.list_jobs (a type, not OUT parameters: its columns queue,
-- kind and state are also names of the function's filters).
CREATE TYPE awa.job_listing AS (
    job_id       bigint,
    queue        text,
    kind         text,
    state        text,
    priority     int,
    attempt      int,
    max_attempts int,
    run_at       timestamptz,
    enqueued_at  timestamptz,
    finished_at  timestamptz,
    last_error   text,
    args         jsonb,   -- NULL unless the caller may read payloads
    metadata     jsonb,   -- NULL unless the caller may read payloads
    tags         jsonb
);

-- The states a job can be listed in (awa.get_job's, every one).
CREATE FUNCTION awa._job_states()
RETURNS text[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT ARRAY['available', 'running', 'scheduled', 'retryable', 'completed', 'failed', 'cancelled', 'dlq']
$$;

-- The jobs that match, newest first (by job_id), below p_before; at most
-- p_max_rows. Every read under the caller's one snapshot (STABLE), so a job
-- is seen in exactly one state. Candidates come from the sources that can
-- hold a job of the state asked for, each read backward along a job_id index
-- with the filters its columns answer, one statement per source; a chunk of
-- the newest candidates is resolved together by awa._get_jobs (the one
-- definition of a job's state) and checked again whole, and the next chunk
-- follows while the page is not full. What bounds each source's read:
-- - a floor: the sources are read one after the other, and once those read
--   hold a chunk of candidates, the rest read only above the lowest of it
--   (below it nothing can enter this chunk);
-- - exhaustion: a source that gave fewer than a chunk without a floor has no
--   more below, and is not read again;
-- - a queue: the DLQ is not read when it holds none of the queue's jobs (an
--   index probe), the queue ring only in the slots that hold a row of the
--   queue's lanes, the deferred jobs along their queue index.
-- Where a state is not a column (the queue ring), the sources are: for
-- 'available', ready rows above their lane's claim cursor (p_cursors, read
-- before this snapshot: a row it passed was spent before the snapshot) that
-- no claim batch covers (a probe of the index the claim walk uses); for
-- 'completed', the jobs of the queue ring's completion batches (every
-- completion awa._get_jobs finds in the ring has one), the history ring's and
-- the done rows' completed jobs; for 'running', the open claim batches of the
-- claim ring, gathered once (docs/operations-ui.md, "Finding jobs", has what
-- each page costs). The first chunk is the page; each next one is twice the
-- one before.
CREATE FUNCTION awa._list_jobs(p_queue text, p_state text, p_kind text, p_tag text, p_args jsonb,
                               p_after timestamptz, p_before_at timestamptz, p_before bigint, p_max_rows int,
                               p_metadata jsonb, p_cursors jsonb)
RETURNS SETOF awa.job_listing
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
-- Every candidate scan walks a job_id index backward and stops at its LIMIT.
-- With a filter the planner guesses selective (args @>, a rare kind), a
-- session's first calls (custom plans) chose to read ring slots whole and
-- sort them: 788 ms for the first page at 1,000,000 jobs, 72 ms without
-- (bench/list_jobs.sh's store, a fresh session).
SET enable_seqscan = off
-- Planned once per session: a custom plan of a statement over every slot of
-- a ring cost up to 20 ms to plan (the claim ring's gathering, at 10,000
-- jobs), at each of a session's first five calls.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    chunk    int := p_max_rows;
    from_ready    boolean := p_state IS NULL OR p_state = 'available';
    from_deferred boolean := p_state IS NULL OR p_state IN ('scheduled', 'retryable', 'available');  -- (available: parked)
    from_dlq      boolean := p_state IS NULL OR p_state = 'dlq';
    from_history  boolean := p_state IS NULL OR p_state = 'completed';
    from_history_unsuccessful boolean := coalesce(p_state IN ('failed', 'cancelled'), false);
    from_done     boolean := p_state IS NULL OR p_state IN ('completed', 'failed', 'cancelled');
    from_running  boolean := coalesce(p_state = 'running', false);
    from_completions boolean := coalesce(p_state = 'completed', false);
    available_only boolean := coalesce(p_state = 'available', false);
    gathered bigint[] := '{}';
    lanes    bigint[];
    ready_slots smallint[];
    done_slots  smallint[];
    slot     smallint;
    part     bigint[];
    below    bigint := coalesce(p_before, 9223372036854775807);
    top      bigint;
    floor    bigint;
    ids      bigint[];
    got      bigint[];
    g        record;
    doc      jsonb;
    r        awa.job_listing;
    n_found  int := 0;
BEGIN
    IF p_state IS NOT NULL AND NOT p_state = ANY (awa._job_states()) THEN
        RAISE EXCEPTION 'unknown job state "%"', left(p_state, 64)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass one of ' || array_to_string(awa._job_states(), ', ') || ', or NULL for every state.';
    END IF;
    IF p_queue IS NOT NULL THEN
        from_dlq := from_dlq AND EXISTS (SELECT FROM awa.dlq_entries q WHERE q.queue = p_queue);
        -- The queue-ring slots that hold a row of the queue's lanes (a probe
        -- of each slot's primary key): each is read on its own, and
        -- the others not at all (a slot without a match would be read whole
        -- along its job_id index before the merge of the slots gave a row).
        lanes := ARRAY(SELECT l.lane_id FROM awa.queue_lanes l WHERE l.queue = p_queue);
        IF from_ready THEN
            ready_slots := ARRAY(SELECT s.slot FROM awa.queue_ring_slots s,
                                  LATERAL (SELECT FROM awa.ready_entries e
                                            WHERE e.ready_slot = s.slot AND e.lane_id = ANY (lanes) LIMIT 1) e
                                  ORDER BY s.slot);
            from_ready := cardinality(ready_slots) > 0;
        END IF;
        IF from_done THEN
            done_slots := ARRAY(SELECT s.slot FROM awa.queue_ring_slots s,
                                  LATERAL (SELECT FROM awa.done_entries e
                                            WHERE e.ready_slot = s.slot AND e.lane_id = ANY (lanes) LIMIT 1) e
                                  ORDER BY s.slot);
            from_done := cardinality(done_slots) > 0;
        END IF;
    END IF;
    IF from_running THEN
        -- The jobs of the open claim batches (claimed more than their
        -- closures closed) that no closure names: the running attempts
        -- (awa._get_job's definition), newest first. Slot by slot, only
        -- the claim-ring slots with a block (as the completion batches
        -- below).
        FOREACH slot IN ARRAY ARRAY(SELECT s.slot FROM awa.claim_ring_slots s
                                     WHERE pg_relation_size(format('awa.lease_claim_batches_%s', s.slot)::regclass) > 0
                                     ORDER BY s.slot) LOOP
            -- (a claim batch's closures read once, by their key range: as a
            -- NOT EXISTS per job the plan hashed the slot's every closure and
            -- compared each with each job, 60 ms at 10,000 jobs. OFFSET 0
            -- keeps z a subquery evaluated once per claim batch: pulled up,
            -- its closed-index array became a subplan of the filter on
            -- unnest(c.job_ids), read again for every job of the batch, 70 s
            -- for one claim batch of 8,000 jobs with 2,520 closures; found by
            -- adversarial testing)
            gathered := awa._list_jobs_merge(gathered,
                ARRAY(SELECT DISTINCT j.id
                        FROM awa.lease_claim_batches c
                       CROSS JOIN LATERAL (
                             SELECT (SELECT coalesce(sum(x.closed_count), 0) FROM awa.lease_claim_closure_batches x
                                      WHERE x.claim_slot = slot
                                        AND x.batch_id BETWEEN awa._first_closure_batch_id(c.batch_id)
                                                           AND awa._last_closure_batch_id(c.batch_id)) AS closed,
                                    (SELECT coalesce(array_agg(i.i), '{}')
                                       FROM awa.lease_claim_closure_batches x, unnest(x.claim_indexes) AS i(i)
                                      WHERE x.claim_slot = slot
                                        AND x.batch_id BETWEEN awa._first_closure_batch_id(c.batch_id)
                                                           AND awa._last_closure_batch_id(c.batch_id)) AS indexes
                              OFFSET 0) z
                       CROSS JOIN LATERAL unnest(awa._claim_job_ids(c.first_job_id, c.claimed_count, c.job_ids))
                                         WITH ORDINALITY AS j(id, n)
                       WHERE c.claim_slot = slot AND c.batch_id > 0
                         AND (p_queue IS NULL OR c.queue = p_queue) AND j.id < below
                         AND c.claimed_count > z.closed
                         AND NOT (j.n - 1)::int = ANY (z.indexes)
                       ORDER BY j.id DESC), NULL);
        END LOOP;
    ELSIF from_completions THEN
        -- The jobs the queue ring's completion batches completed: a batch
        -- per completion call, in the ring until its slot is pruned (15
        -- rotations, about 15 s by default), then in the history ring. Read
        -- whole, slot by slot, only the slots with a block on disk (the slot
        -- a parameter, pruned at the plan's start); a batch's jobs are the
        -- slot's ready rows at its lane positions (it stores no job ids).
        FOREACH slot IN ARRAY ARRAY(SELECT s.slot FROM awa.queue_ring_slots s
                                     WHERE pg_relation_size(format('awa.receipt_completion_batches_%s',
                                                                   s.slot)::regclass) > 0
                                     ORDER BY s.slot) LOOP
            gathered := awa._list_jobs_merge(gathered,
                ARRAY(SELECT DISTINCT e.job_id FROM awa.receipt_completion_batches k
                       CROSS JOIN LATERAL unnest(awa._lane_positions(k.first_lane_seq, k.completed_count,
                                                                     k.lane_seqs)) AS u(lane_seq)
                       -- one probe of the lane position index per job (a join
                       -- the function's settings planned as a product of the
                       -- slot's receipts and ready rows: 150 s for 20,000)
                       CROSS JOIN LATERAL (SELECT e.job_id FROM awa.ready_entries e
                                            WHERE e.ready_slot = slot AND e.lane_id = k.lane_id
                                              AND e.lane_seq = u.lane_seq LIMIT 1) e
                       WHERE k.ready_slot = slot AND k.batch_id > 0
                         AND (p_queue IS NULL OR k.queue = p_queue) AND e.job_id < below
                       ORDER BY e.job_id DESC), NULL);
        END LOOP;
    END IF;
    gathered := coalesce(gathered, '{}');
    LOOP
        -- Each source's newest candidates below `below` (and above the floor),
        -- merged: the chunk is the newest `chunk` of them.
        ids := '{}';
        floor := 0;
        IF from_ready THEN
            -- (DISTINCT before the LIMIT: a job has a ready row per
            -- promotion; a chunk of rows would hold fewer jobs than the
            -- chunk, and the merge would pass over the rest)
            IF ready_slots IS NULL THEN
                got := ARRAY(SELECT DISTINCT e.job_id FROM awa.ready_entries e
                  WHERE e.job_id < below AND e.job_id > floor
                    AND (NOT available_only OR (e.lane_seq > coalesce((p_cursors ->> e.lane_id::text)::bigint, 0)
                         -- above a cursor that lags, the rows a claim took
                         AND NOT EXISTS (SELECT FROM awa.ready_claim_attempt_batches a
                                          WHERE a.lane_id = e.lane_id AND a.ready_slot = e.ready_slot
                                            AND a.next_lane_seq > e.lane_seq
                                            AND a.first_lane_seq <= e.lane_seq AND (a.lane_ranges IS NULL OR a.lane_ranges @> e.lane_seq))))
                    AND (p_queue IS NULL OR e.queue = p_queue) AND (p_kind IS NULL OR e.kind = p_kind)
                    AND (p_args IS NULL OR e.args @> p_args)
                    AND (p_tag IS NULL OR coalesce(e.payload -> 'tags', '[]') ? p_tag)
                    AND (p_metadata IS NULL OR coalesce(e.payload -> 'metadata', '{}') @> p_metadata)
                    AND (p_after IS NULL OR e.created_at >= p_after)
                    AND (p_before_at IS NULL OR e.created_at < p_before_at)
                  ORDER BY e.job_id DESC LIMIT chunk);
            ELSE
                -- slot by slot (each statement reads one slot: the slot is a
                -- parameter, pruned at the plan's start)
                got := '{}';
                FOREACH slot IN ARRAY ready_slots LOOP
                    -- Where the slot's read starts: just above the queue's
                    -- newest job in it below `below`, found by a backward
                    -- probe per lane of the (job_id, lane_id) index that
                    -- checks the lane inside the index pages. The read
                    -- below fetches each row it passes; started at `below`
                    -- it fetched every newer row of other queues first
                    -- (160,000 of them, 20 ms, for the first page of a
                    -- queue filled before three others; bench/list_jobs.sh).
                    -- Each probe passes over those rows too, so with many
                    -- lanes (keyed queues) the read starts at `below`. A
                    -- probe stops where the read would (the floor, the
                    -- chunk gathered so far): a lane with no row there
                    -- does not walk the slot down to its oldest job.
                    top := below;
                    IF cardinality(lanes) <= 8 THEN
                        top := (SELECT max(t.job_id) + 1 FROM unnest(lanes) AS l(id),
                                LATERAL (SELECT e.job_id FROM awa.ready_entries e
                                          WHERE e.ready_slot = slot AND e.lane_id = l.id AND e.job_id < below
                                            AND e.job_id > greatest(floor, CASE WHEN cardinality(got) >= chunk
                                                                               THEN got[chunk] ELSE 0 END)
                                          ORDER BY e.job_id DESC LIMIT 1) t);
                        CONTINUE WHEN top IS NULL;
                    END IF;
                    part := ARRAY(SELECT DISTINCT e.job_id FROM awa.ready_entries e
                  WHERE e.ready_slot = slot AND e.job_id < top
                    AND e.job_id > greatest(floor, CASE WHEN cardinality(got) >= chunk THEN got[chunk] ELSE 0 END)
                    AND (NOT available_only OR (e.lane_seq > coalesce((p_cursors ->> e.lane_id::text)::bigint, 0)
                         -- above a cursor that lags, the rows a claim took
                         AND NOT EXISTS (SELECT FROM awa.ready_claim_attempt_batches a
                                          WHERE a.lane_id = e.lane_id AND a.ready_slot = e.ready_slot
                                            AND a.next_lane_seq > e.lane_seq
                                            AND a.first_lane_seq <= e.lane_seq AND (a.lane_ranges IS NULL OR a.lane_ranges @> e.lane_seq))))
                    AND (p_queue IS NULL OR e.queue = p_queue) AND (p_kind IS NULL OR e.kind = p_kind)
                    AND (p_args IS NULL OR e.args @> p_args)
                    AND (p_tag IS NULL OR coalesce(e.payload -> 'tags', '[]') ? p_tag)
                    AND (p_metadata IS NULL OR coalesce(e.payload -> 'metadata', '{}') @> p_metadata)
                    AND (p_after IS NULL OR e.created_at >= p_after)
                    AND (p_before_at IS NULL OR e.created_at < p_before_at)
                  ORDER BY e.job_id DESC LIMIT chunk);
                    got := awa._list_jobs_merge(got, part, NULL);
                END LOOP;
                got := got[1:chunk];
            END IF;
            IF cardinality(got) < chunk AND floor = 0 THEN
                from_ready := false;
                gathered := awa._list_jobs_merge(gathered, got, NULL);
            END IF;
            ids := awa._list_jobs_merge(ids, got, chunk);
            floor := CASE WHEN cardinality(ids) >= chunk THEN ids[chunk] ELSE 0 END;
        END IF;
        IF from_history THEN
            got := ARRAY(SELECT h.job_id FROM awa.job_history h
                  WHERE h.job_id < below AND h.job_id > floor
                    AND (p_state IS NULL OR h.state = p_state)
                    AND (p_queue IS NULL OR h.queue = p_queue) AND (p_kind IS NULL OR h.kind = p_kind)
                    AND (p_args IS NULL OR h.args @> p_args)
                    AND (p_tag IS NULL OR coalesce(h.payload -> 'tags', '[]') ? p_tag)
                    AND (p_metadata IS NULL OR coalesce(h.payload -> 'metadata', '{}') @> p_metadata)
                    AND (p_after IS NULL OR h.created_at >= p_after)
                    AND (p_before_at IS NULL OR h.created_at < p_before_at)
                  ORDER BY h.job_id DESC LIMIT chunk);
            IF cardinality(got) < chunk AND floor = 0 THEN
                from_history := false;
                gathered := awa._list_jobs_merge(gathered, got, NULL);
            END IF;
            ids := awa._list_jobs_merge(ids, got, chunk);
            floor := CASE WHEN cardinality(ids) >= chunk THEN ids[chunk] ELSE 0 END;
        END IF;
        IF from_history_unsuccessful THEN
            -- Failed and cancelled ones along their own index (the
            -- history ring holds mostly completed jobs).
            got := ARRAY(SELECT h.job_id FROM awa.job_history h
                  WHERE h.state <> 'completed' AND h.job_id < below AND h.job_id > floor
                    AND h.state = p_state
                    AND (p_queue IS NULL OR h.queue = p_queue) AND (p_kind IS NULL OR h.kind = p_kind)
                    AND (p_args IS NULL OR h.args @> p_args)
                    AND (p_tag IS NULL OR coalesce(h.payload -> 'tags', '[]') ? p_tag)
                    AND (p_metadata IS NULL OR coalesce(h.payload -> 'metadata', '{}') @> p_metadata)
                    AND (p_after IS NULL OR h.created_at >= p_after)
                    AND (p_before_at IS NULL OR h.created_at < p_before_at)
                  ORDER BY h.job_id DESC LIMIT chunk);
            IF cardinality(got) < chunk AND floor = 0 THEN
                from_history_unsuccessful := false;
                gathered := awa._list_jobs_merge(gathered, got, NULL);
            END IF;
            ids := awa._list_jobs_merge(ids, got, chunk);
            floor := CASE WHEN cardinality(ids) >= chunk THEN ids[chunk] ELSE 0 END;
        END IF;
        IF from_done THEN
            -- Failed and cancelled jobs (and wide completions); narrow
            -- rows keep their body in the ready row (NULL columns here
            -- pass, the whole check decides).
            IF done_slots IS NULL THEN
                got := ARRAY(SELECT DISTINCT x.job_id FROM awa.done_entries x
                  WHERE x.job_id < below AND x.job_id > floor
                    AND (p_state IS NULL OR x.state = p_state)
                    AND (p_queue IS NULL OR x.queue = p_queue) AND (p_kind IS NULL OR x.kind = p_kind)
                    AND (p_args IS NULL OR x.args IS NULL OR x.args @> p_args)
                    AND (p_tag IS NULL OR x.payload IS NULL OR coalesce(x.payload -> 'tags', '[]') ? p_tag)
                    AND (p_metadata IS NULL OR x.payload IS NULL
                         OR coalesce(x.payload -> 'metadata', '{}') @> p_metadata)
                    AND (p_after IS NULL OR x.created_at IS NULL OR x.created_at >= p_after)
                    AND (p_before_at IS NULL OR x.created_at IS NULL OR x.created_at < p_before_at)
                  ORDER BY x.job_id DESC LIMIT chunk);
            ELSE
                got := '{}';
                FOREACH slot IN ARRAY done_slots LOOP
                    part := ARRAY(SELECT DISTINCT x.job_id FROM awa.done_entries x
                  WHERE x.ready_slot = slot AND x.job_id < below
                    AND x.job_id > greatest(floor, CASE WHEN cardinality(got) >= chunk THEN got[chunk] ELSE 0 END)
                    AND (p_state IS NULL OR x.state = p_state)
                    AND (p_queue IS NULL OR x.queue = p_queue) AND (p_kind IS NULL OR x.kind = p_kind)
                    AND (p_args IS NULL OR x.args IS NULL OR x.args @> p_args)
                    AND (p_tag IS NULL OR x.payload IS NULL OR coalesce(x.payload -> 'tags', '[]') ? p_tag)
                    AND (p_metadata IS NULL OR x.payload IS NULL
                         OR coalesce(x.payload -> 'metadata', '{}') @> p_metadata)
                    AND (p_after IS NULL OR x.created_at IS NULL OR x.created_at >= p_after)
                    AND (p_before_at IS NULL OR x.created_at IS NULL OR x.created_at < p_before_at)
                  ORDER BY x.job_id DESC LIMIT chunk);
                    got := awa._list_jobs_merge(got, part, NULL);
                END LOOP;
                got := got[1:chunk];
            END IF;
            IF cardinality(got) < chunk AND floor = 0 THEN
                from_done := false;
                gathered := awa._list_jobs_merge(gathered, got, NULL);
            END IF;
            ids := awa._list_jobs_merge(ids, got, chunk);
            floor := CASE WHEN cardinality(ids) >= chunk THEN ids[chunk] ELSE 0 END;
        END IF;
        IF from_deferred THEN
            IF p_queue IS NULL THEN
                got := ARRAY(SELECT d.job_id FROM awa.deferred_jobs d
                  WHERE d.job_id < below AND d.job_id > floor
                    AND (p_state IS NULL OR d.state = p_state)
                    AND (p_queue IS NULL OR d.queue = p_queue) AND (p_kind IS NULL OR d.kind = p_kind)
                    AND (p_args IS NULL OR d.args @> p_args)
                    AND (p_tag IS NULL OR coalesce(d.payload -> 'tags', '[]') ? p_tag)
                    AND (p_metadata IS NULL OR coalesce(d.payload -> 'metadata', '{}') @> p_metadata)
                    AND (p_after IS NULL OR d.created_at >= p_after)
                    AND (p_before_at IS NULL OR d.created_at < p_before_at)
                  ORDER BY d.job_id DESC LIMIT chunk);
            ELSE
                -- Along the queue's index, planned for the queue named: a
                -- generic plan judged from the table's statistics (one queue
                -- in the benchmark's deferred jobs) read the primary key
                -- backward past every other queue's job (8 ms at 1,000,000).
                EXECUTE format($q$SELECT ARRAY(SELECT d.job_id FROM awa.deferred_jobs d
                  WHERE d.queue = %L AND d.job_id < $1 AND d.job_id > $2
                    AND ($3::text IS NULL OR d.state = $3) AND ($4::text IS NULL OR d.kind = $4)
                    AND ($5::jsonb IS NULL OR d.args @> $5)
                    AND ($6::text IS NULL OR coalesce(d.payload -> 'tags', '[]') ? $6)
                    AND ($7::jsonb IS NULL OR coalesce(d.payload -> 'metadata', '{}') @> $7)
                    AND ($8::timestamptz IS NULL OR d.created_at >= $8)
                    AND ($9::timestamptz IS NULL OR d.created_at < $9)
                  ORDER BY d.job_id DESC LIMIT $10)$q$, p_queue)
                   INTO got
                  USING below, floor, p_state, p_kind, p_args, p_tag, p_metadata, p_after, p_before_at, chunk;
            END IF;
            IF cardinality(got) < chunk AND floor = 0 THEN
                from_deferred := false;
                gathered := awa._list_jobs_merge(gathered, got, NULL);
            END IF;
            ids := awa._list_jobs_merge(ids, got, chunk);
            floor := CASE WHEN cardinality(ids) >= chunk THEN ids[chunk] ELSE 0 END;
        END IF;
        IF from_dlq THEN
            got := ARRAY(SELECT q.job_id FROM awa.dlq_entries q
                  WHERE q.job_id < below AND q.job_id > floor
                    AND (p_queue IS NULL OR q.queue = p_queue) AND (p_kind IS NULL OR q.kind = p_kind)
                    AND (p_args IS NULL OR q.args @> p_args)
                    AND (p_tag IS NULL OR coalesce(q.payload -> 'tags', '[]') ? p_tag)
                    AND (p_metadata IS NULL OR coalesce(q.payload -> 'metadata', '{}') @> p_metadata)
                    AND (p_after IS NULL OR q.created_at >= p_after)
                    AND (p_before_at IS NULL OR q.created_at < p_before_at)
                  ORDER BY q.job_id DESC LIMIT chunk);
            IF cardinality(got) < chunk AND floor = 0 THEN
                from_dlq := false;
                gathered := awa._list_jobs_merge(gathered, got, NULL);
            END IF;
            ids := awa._list_jobs_merge(ids, got, chunk);
            floor := CASE WHEN cardinality(ids) >= chunk THEN ids[chunk] ELSE 0 END;
        END IF;
        -- The candidates known whole: running jobs or ring completions,
        -- gathered once, and what exhausted sources gave.
        got := ARRAY(SELECT j.id FROM unnest(gathered) j(id) WHERE j.id < below AND j.id > floor
                      ORDER BY j.id DESC LIMIT chunk);
        ids := awa._list_jobs_merge(ids, got, chunk);
        EXIT WHEN cardinality(ids) = 0;
        FOR g IN SELECT j.job_id, j.doc FROM awa._get_jobs(ids) j ORDER BY j.job_id DESC LOOP
            doc := g.doc;
            CONTINUE WHEN (p_state IS NOT NULL AND doc ->> 'state' <> p_state)
                OR (p_queue IS NOT NULL AND doc ->> 'queue' <> p_queue)
                OR (p_kind IS NOT NULL AND doc ->> 'kind' <> p_kind)
                OR (p_args IS NOT NULL AND NOT (doc -> 'args') @> p_args)
                OR (p_tag IS NOT NULL AND NOT (doc -> 'tags') ? p_tag)
                OR (p_metadata IS NOT NULL AND NOT (doc -> 'metadata') @> p_metadata)
                OR (p_after IS NOT NULL AND (doc ->> 'created_at')::timestamptz < p_after)
                OR (p_before_at IS NOT NULL AND (doc ->> 'created_at')::timestamptz >= p_before_at);
            r.job_id := g.job_id;
            r.queue := doc ->> 'queue';
            r.kind := doc ->> 'kind';
            r.state := doc ->> 'state';
            r.priority := (doc ->> 'priority')::int;
            r.attempt := (doc ->> 'attempt')::int;
            r.max_attempts := (doc ->> 'max_attempts')::int;
            r.run_at := (doc ->> 'run_at')::timestamptz;
            r.enqueued_at := (doc ->> 'created_at')::timestamptz;
            r.finished_at := coalesce(doc ->> 'finalized_at', doc ->> 'dlq_at')::timestamptz;
            r.last_error := doc -> 'errors' -> -1 ->> 'error';
            r.args := doc -> 'args';
            r.metadata := doc -> 'metadata';
            r.tags := doc -> 'tags';
            RETURN NEXT r;
            n_found := n_found + 1;
            IF n_found >= p_max_rows THEN
                RETURN;
            END IF;
        END LOOP;
        below := ids[cardinality(ids)];
        -- (the first chunk is the page: a page of jobs in every state, or of
        -- a filter the sources answer, is resolved once; the next ones grow)
        chunk := least(chunk * 2, 1000);
        -- Every source read is exhausted, and the chunk held all they had.
        EXIT WHEN NOT (from_ready OR from_history OR from_history_unsuccessful OR from_done OR from_deferred
                       OR from_dlq) AND coalesce(gathered[cardinality(gathered)] >= below, true);
    END LOOP;
END
$$;

-- The newest n (NULL: all) of two sets of job ids (each newest first, no
-- duplicates), newest first, without duplicates.
CREATE FUNCTION awa._list_jobs_merge(a bigint[], b bigint[], n int)
RETURNS bigint[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT CASE WHEN cardinality(b) = 0 THEN a WHEN cardinality(a) = 0 THEN b[1:coalesce(n, cardinality(b))]
            ELSE ARRAY(SELECT DISTINCT i FROM unnest(a || b) i ORDER BY i DESC LIMIT n) END
$$;

-- The two ways into awa._list_jobs, as the extension's owner: with payloads
-- (executable by awa_payload_reader only) and without them (by awa_monitor
-- and awa_admin; no payload filter). awa.list_jobs, which runs as its caller,
-- picks one by what the caller may do, so the right to see payloads is the
-- caller's own privilege, checked by PostgreSQL, never guessed from the
-- session (a guess from session_user and SET ROLE leaked payloads to code a
-- monitor owned, run by autovacuum as a superuser session: found in review).
-- The one without payloads is the other with those columns emptied. It
-- reads the claim cursors before the snapshot and holds the ring tables as
-- awa.get_job does.
CREATE FUNCTION awa._list_jobs_payloads(p_queue text, p_state text, p_kind text, p_tag text, p_args jsonb,
                                        p_after timestamptz, p_before_at timestamptz, p_before bigint,
                                        p_max_rows int, p_metadata jsonb)
RETURNS SETOF awa.job_listing
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    cursors jsonb;
    listed  awa.job_listing[];
    release boolean := true;
BEGIN
    PERFORM awa._flush_enqueues();
    -- The claim cursors before the snapshot (awa._list_jobs): only for
    -- 'available', one read per lane of the queue (of every queue); not under
    -- REPEATABLE READ, whose snapshot is older than this read.
    IF p_state = 'available' AND current_setting('transaction_isolation') = 'read committed' THEN
        SELECT jsonb_object_agg(c.lane_id::text, c.claim_cursor) INTO cursors FROM awa.lane_cursors(p_queue) c;
    END IF;
    -- Jobs of these states are read outside the rings (deferred rows, DLQ
    -- rows, found first by awa._get_job): the ring tables are not held, so
    -- a prune does not wait for this transaction (nor the claims queued
    -- behind the prune's lock request). A job that left such a state
    -- meanwhile is read in a ring unheld, but it is not in the state asked.
    -- The page is read in a block rolled back as it ends (awa._hold_rings):
    -- the locks of the hold and of the scans go with it, so a session left
    -- idle in transaction after a listing holds no ring slot.
    BEGIN
        IF p_state IS NULL OR p_state NOT IN ('dlq', 'scheduled', 'retryable') THEN
            release := awa._hold_rings();
        END IF;
        listed := ARRAY(SELECT l FROM awa._list_jobs(p_queue, p_state, p_kind, p_tag, p_args, p_after, p_before_at,
                                                     p_before, p_max_rows, p_metadata, coalesce(cursors, '{}')) l);
        -- (not held: the REPEATABLE READ check after the reads, as
        -- awa._hold_rings makes it before them)
        IF p_state IN ('dlq', 'scheduled', 'retryable') THEN
            release := awa._ring_locks_releasable();
        END IF;
        IF release THEN
            RAISE SQLSTATE 'AWARL';
        END IF;
    EXCEPTION WHEN SQLSTATE 'AWARL' THEN
        NULL;  -- the block's locks are released; listed is kept
    END;
    RETURN QUERY SELECT * FROM unnest(listed);
END
$$;

CREATE FUNCTION awa._list_jobs_plain(p_queue text, p_state text, p_kind text, p_tag text,
                                     p_after timestamptz, p_before_at timestamptz, p_before bigint, p_max_rows int)
RETURNS SETOF awa.job_listing
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT l.job_id, l.queue, l.kind, l.state, l.priority, l.attempt, l.max_attempts, l.run_at, l.enqueued_at,
       l.finished_at, l.last_error, NULL::jsonb, NULL::jsonb, l.tags
  FROM awa._list_jobs_payloads(p_queue, p_state, p_kind, p_tag, NULL, p_after, p_before_at, p_before, p_max_rows,
                               NULL) l
$$;

-- Jobs in every state, newest first, filtered; pages by keyset
-- (before_job_id: the last job_id of the page before), never OFFSET.
-- args and metadata only for a caller that is a member of
-- awa_payload_reader, else NULL. Runs as its caller (not SECURITY DEFINER):
-- current_user is the caller, whoever's session it runs in.
CREATE FUNCTION awa.list_jobs(queue text DEFAULT NULL, state text DEFAULT NULL, kind text DEFAULT NULL,
                              tag text DEFAULT NULL, args_contains jsonb DEFAULT NULL,
                              enqueued_after timestamptz DEFAULT NULL, enqueued_before timestamptz DEFAULT NULL,
                              before_job_id bigint DEFAULT NULL, max_rows int DEFAULT 50,
                              metadata_contains jsonb DEFAULT NULL)
RETURNS SETOF awa.job_listing
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    reads_payloads boolean := pg_has_role(current_user, 'awa_payload_reader', 'USAGE');
BEGIN
    IF max_rows IS NULL OR max_rows < 1 OR max_rows > 1000 THEN
        RAISE EXCEPTION 'max_rows must be between 1 and 1000 (got %)', coalesce(max_rows::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Page through more jobs with before_job_id.';
    END IF;
    -- (the state is checked by awa._list_jobs, which the caller may not
    -- call but through the two functions above)
    IF args_contains IS NOT NULL AND jsonb_typeof(args_contains) <> 'object' THEN
        RAISE EXCEPTION 'args_contains must be a JSON object'
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Pass the keys to match, such as ''{"user_id": 42}''.';
    END IF;
    IF metadata_contains IS NOT NULL AND jsonb_typeof(metadata_contains) <> 'object' THEN
        RAISE EXCEPTION 'metadata_contains must be a JSON object'
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Pass the keys to match, such as ''{"tenant": "acme"}''.';
    END IF;
    IF reads_payloads THEN
        RETURN QUERY SELECT * FROM awa._list_jobs_payloads($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);
        RETURN;
    END IF;
    IF args_contains IS NOT NULL OR metadata_contains IS NOT NULL THEN
        RAISE EXCEPTION 'permission denied to filter jobs by args or metadata'
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Filtering by payload reveals it: it needs membership in awa_payload_reader.';
    END IF;
    RETURN QUERY SELECT * FROM awa._list_jobs_plain($1, $2, $3, $4, $6, $7, $8, $9);
END
$$;
