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
-- is seen in exactly one state. Candidates come from the tables that can hold
-- a job of the state asked for, each read backward along a job_id index with
-- the filters its columns answer; a chunk of the newest candidates is
-- resolved by awa._get_job (the one definition of a job's state) and checked
-- again whole, and the next chunk follows while the page is not full.
-- Where a state is not a column (the queue ring), rows that cannot be in it
-- are passed over without resolving them: for 'available', a ready row at or
-- below its lane's claim cursor (p_cursors, read before this snapshot: a row
-- it passed was spent before the snapshot) or covered by a claim batch (a
-- probe of the index the claim walk uses); for 'completed', a ready row at or
-- above its lane's claim frontier (the end of the lane's newest claim batch
-- this snapshot sees: no claim covers it), or of a job with a deferred, DLQ,
-- failed or cancelled row (index probes by job_id), or of a running job. Running jobs come from the open
-- claim batches of the claim ring, gathered once (docs/operations-ui.md,
-- "Finding jobs", has what each page costs).
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
AS $$
DECLARE
    chunk    constant int := greatest(p_max_rows * 2, 64);
    from_ready    boolean := p_state IS NULL OR p_state IN ('available', 'completed');
    from_deferred boolean := p_state IS NULL OR p_state IN ('scheduled', 'retryable');
    from_dlq      boolean := p_state IS NULL OR p_state = 'dlq';
    from_history  boolean := p_state IS NULL OR p_state = 'completed';
    from_history_unsuccessful boolean := coalesce(p_state IN ('failed', 'cancelled'), false);
    from_done     boolean := p_state IS NULL OR p_state IN ('completed', 'failed', 'cancelled');
    from_running  boolean := coalesce(p_state = 'running', false);
    available_only boolean := coalesce(p_state = 'available', false);
    claimed_only  boolean := coalesce(p_state = 'completed', false);
    frontiers jsonb;
    running_ids bigint[];
    running_set jsonb := '{}';
    below    bigint := coalesce(p_before, 9223372036854775807);
    ids      bigint[];
    id       bigint;
    doc      jsonb;
    r        awa.job_listing;
    n_found  int := 0;
BEGIN
    IF p_state IS NOT NULL AND NOT p_state = ANY (awa._job_states()) THEN
        RAISE EXCEPTION 'unknown job state "%"', left(p_state, 64)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass one of ' || array_to_string(awa._job_states(), ', ') || ', or NULL for every state.';
    END IF;
    IF claimed_only THEN
        -- One probe per lane of the queue (of every queue without one).
        SELECT jsonb_object_agg(l.lane_id::text, coalesce(
                   (SELECT max(b.next_lane_seq) FROM awa.ready_claim_attempt_batches b WHERE b.lane_id = l.lane_id), 0))
          INTO frontiers
          FROM awa.queue_lanes l WHERE p_queue IS NULL OR l.queue = p_queue;
        frontiers := coalesce(frontiers, '{}');
    END IF;
    IF from_running OR claimed_only THEN
        -- The jobs of the open claim batches (claimed more than their
        -- closures closed) that no closure names: the running attempts
        -- (awa._get_job's definition), newest first.
        SELECT array_agg(DISTINCT j.id ORDER BY j.id DESC) INTO running_ids
          FROM awa.lease_claim_batches c, unnest(c.job_ids) WITH ORDINALITY AS j(id, n)
         WHERE (p_queue IS NULL OR c.queue = p_queue) AND j.id < below
           AND c.claimed_count > (SELECT coalesce(sum(x.closed_count), 0) FROM awa.lease_claim_closure_batches x
                                   WHERE x.batch_id BETWEEN awa._first_closure_batch_id(c.batch_id)
                                                        AND awa._last_closure_batch_id(c.batch_id)
                                     AND x.claim_slot = c.claim_slot)
           AND NOT EXISTS (SELECT FROM awa.lease_claim_closure_batches x
                            WHERE x.batch_id BETWEEN awa._first_closure_batch_id(c.batch_id)
                                                 AND awa._last_closure_batch_id(c.batch_id)
                              AND x.claim_slot = c.claim_slot AND (j.n - 1)::int = ANY (x.claim_indexes));
        IF claimed_only THEN
            SELECT coalesce(jsonb_object_agg(j.id::text, true), '{}') INTO running_set FROM unnest(running_ids) j(id);
        END IF;
    END IF;
    LOOP
        SELECT array_agg(c.id ORDER BY c.id DESC) INTO ids FROM (
            SELECT DISTINCT s.id FROM (
                -- (DISTINCT before the LIMIT: a job has a ready row per
                -- promotion; a chunk of rows would hold fewer jobs than the
                -- chunk, and the merge below would pass over the rest)
                (SELECT DISTINCT e.job_id AS id FROM awa.ready_entries e
                  WHERE from_ready AND e.job_id < below
                    AND (NOT available_only OR (e.lane_seq > coalesce((p_cursors ->> e.lane_id::text)::bigint, 0)
                         -- above a cursor that lags, the rows a claim took
                         AND NOT EXISTS (SELECT FROM awa.ready_claim_attempt_batches a
                                          WHERE a.lane_id = e.lane_id AND a.next_lane_seq > e.lane_seq
                                            AND a.first_lane_seq <= e.lane_seq AND a.lane_ranges @> e.lane_seq)))
                    AND (NOT claimed_only OR (e.lane_seq < coalesce((frontiers ->> e.lane_id::text)::bigint, 0)
                         -- a job that is retryable, scheduled, dead-lettered,
                         -- failed or cancelled now was not completed
                         AND NOT EXISTS (SELECT FROM awa.deferred_jobs d WHERE d.job_id = e.job_id)
                         AND NOT EXISTS (SELECT FROM awa.dlq_entries q WHERE q.job_id = e.job_id)
                         AND NOT EXISTS (SELECT FROM awa.done_entries x
                                          WHERE x.job_id = e.job_id AND x.state <> 'completed'
                                            AND NOT EXISTS (SELECT FROM awa.superseded_records sup
                                                             WHERE sup.job_id = x.job_id AND sup.run_lease = x.run_lease))
                         AND NOT running_set ? e.job_id::text))
                    AND (p_queue IS NULL OR e.queue = p_queue) AND (p_kind IS NULL OR e.kind = p_kind)
                    AND (p_args IS NULL OR e.args @> p_args)
                    AND (p_tag IS NULL OR coalesce(e.payload -> 'tags', '[]') ? p_tag)
                    AND (p_metadata IS NULL OR coalesce(e.payload -> 'metadata', '{}') @> p_metadata)
                    AND (p_after IS NULL OR e.created_at >= p_after)
                    AND (p_before_at IS NULL OR e.created_at < p_before_at)
                  ORDER BY e.job_id DESC LIMIT chunk)
                UNION ALL
                (SELECT d.job_id FROM awa.deferred_jobs d
                  WHERE from_deferred AND d.job_id < below
                    AND (p_state IS NULL OR d.state = p_state)
                    AND (p_queue IS NULL OR d.queue = p_queue) AND (p_kind IS NULL OR d.kind = p_kind)
                    AND (p_args IS NULL OR d.args @> p_args)
                    AND (p_tag IS NULL OR coalesce(d.payload -> 'tags', '[]') ? p_tag)
                    AND (p_metadata IS NULL OR coalesce(d.payload -> 'metadata', '{}') @> p_metadata)
                    AND (p_after IS NULL OR d.created_at >= p_after)
                    AND (p_before_at IS NULL OR d.created_at < p_before_at)
                  ORDER BY d.job_id DESC LIMIT chunk)
                UNION ALL
                (SELECT q.job_id FROM awa.dlq_entries q
                  WHERE from_dlq AND q.job_id < below
                    AND (p_queue IS NULL OR q.queue = p_queue) AND (p_kind IS NULL OR q.kind = p_kind)
                    AND (p_args IS NULL OR q.args @> p_args)
                    AND (p_tag IS NULL OR coalesce(q.payload -> 'tags', '[]') ? p_tag)
                    AND (p_metadata IS NULL OR coalesce(q.payload -> 'metadata', '{}') @> p_metadata)
                    AND (p_after IS NULL OR q.created_at >= p_after)
                    AND (p_before_at IS NULL OR q.created_at < p_before_at)
                  ORDER BY q.job_id DESC LIMIT chunk)
                UNION ALL
                (SELECT h.job_id FROM awa.job_history h
                  WHERE from_history AND h.job_id < below
                    AND (p_state IS NULL OR h.state = p_state)
                    AND (p_queue IS NULL OR h.queue = p_queue) AND (p_kind IS NULL OR h.kind = p_kind)
                    AND (p_args IS NULL OR h.args @> p_args)
                    AND (p_tag IS NULL OR coalesce(h.payload -> 'tags', '[]') ? p_tag)
                    AND (p_metadata IS NULL OR coalesce(h.payload -> 'metadata', '{}') @> p_metadata)
                    AND (p_after IS NULL OR h.created_at >= p_after)
                    AND (p_before_at IS NULL OR h.created_at < p_before_at)
                  ORDER BY h.job_id DESC LIMIT chunk)
                UNION ALL
                -- Failed and cancelled ones along their own index (the
                -- history ring holds mostly completed jobs).
                (SELECT h.job_id FROM awa.job_history h
                  WHERE from_history_unsuccessful AND h.state <> 'completed' AND h.job_id < below
                    AND h.state = p_state
                    AND (p_queue IS NULL OR h.queue = p_queue) AND (p_kind IS NULL OR h.kind = p_kind)
                    AND (p_args IS NULL OR h.args @> p_args)
                    AND (p_tag IS NULL OR coalesce(h.payload -> 'tags', '[]') ? p_tag)
                    AND (p_metadata IS NULL OR coalesce(h.payload -> 'metadata', '{}') @> p_metadata)
                    AND (p_after IS NULL OR h.created_at >= p_after)
                    AND (p_before_at IS NULL OR h.created_at < p_before_at)
                  ORDER BY h.job_id DESC LIMIT chunk)
                UNION ALL
                -- Failed and cancelled jobs (and wide completions); narrow
                -- rows keep their body in the ready row (NULL columns here
                -- pass, the whole check below decides).
                (SELECT DISTINCT x.job_id FROM awa.done_entries x
                  WHERE from_done AND x.job_id < below
                    AND (p_state IS NULL OR x.state = p_state)
                    AND (p_queue IS NULL OR x.queue = p_queue) AND (p_kind IS NULL OR x.kind = p_kind)
                    AND (p_args IS NULL OR x.args IS NULL OR x.args @> p_args)
                    AND (p_tag IS NULL OR x.payload IS NULL OR coalesce(x.payload -> 'tags', '[]') ? p_tag)
                    AND (p_metadata IS NULL OR x.payload IS NULL
                         OR coalesce(x.payload -> 'metadata', '{}') @> p_metadata)
                    AND (p_after IS NULL OR x.created_at IS NULL OR x.created_at >= p_after)
                    AND (p_before_at IS NULL OR x.created_at IS NULL OR x.created_at < p_before_at)
                  ORDER BY x.job_id DESC LIMIT chunk)
                UNION ALL
                (SELECT j.id FROM unnest(running_ids) AS j(id)
                  WHERE from_running AND j.id < below ORDER BY j.id DESC LIMIT chunk)
            ) s
            ORDER BY s.id DESC LIMIT chunk
        ) c;
        EXIT WHEN ids IS NULL;
        FOREACH id IN ARRAY ids LOOP
            doc := awa._get_job(id);
            CONTINUE WHEN doc IS NULL
                OR (p_state IS NOT NULL AND doc ->> 'state' <> p_state)
                OR (p_queue IS NOT NULL AND doc ->> 'queue' <> p_queue)
                OR (p_kind IS NOT NULL AND doc ->> 'kind' <> p_kind)
                OR (p_args IS NOT NULL AND NOT (doc -> 'args') @> p_args)
                OR (p_tag IS NOT NULL AND NOT (doc -> 'tags') ? p_tag)
                OR (p_metadata IS NOT NULL AND NOT (doc -> 'metadata') @> p_metadata)
                OR (p_after IS NOT NULL AND (doc ->> 'created_at')::timestamptz < p_after)
                OR (p_before_at IS NOT NULL AND (doc ->> 'created_at')::timestamptz >= p_before_at);
            r.job_id := id;
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
        EXIT WHEN cardinality(ids) < chunk;
        below := ids[cardinality(ids)];
    END LOOP;
END
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
    IF p_state IS NULL OR p_state NOT IN ('dlq', 'scheduled', 'retryable') THEN
        PERFORM awa._hold_rings();
    END IF;
    RETURN QUERY SELECT * FROM awa._list_jobs(p_queue, p_state, p_kind, p_tag, p_args, p_after, p_before_at, p_before,
                                              p_max_rows, p_metadata, coalesce(cursors, '{}'));
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
