-- ---------------------------------------------------------------------------
-- Retrying finished unsuccessful jobs (failed, cancelled): awa.retry_jobs;
-- the bulk action retry (35_bulk.sql) calls it (docs/lifecycle.md, "Retrying
-- a failed or cancelled job").
-- ---------------------------------------------------------------------------

-- Makes the listed failed and cancelled jobs available again, as
-- awa.dlq_retry does for dead letters; returns how many. Other ids (every
-- other state, unknown, NULL, repeated) are ignored. A job keeps its job_id
-- and its error history; it starts over at attempt 0, run_at now, with
-- run_lease one above its record's (every incarnation has a higher
-- run_lease, so (job_id, run_lease) names one record); its unique key is
-- taken again (23505, nothing retried, if another job holds it).
--
-- The job's failed or cancelled record is a ring row (a done row, or a row
-- of the history ring) and stays where it is until its slot is reclaimed: a
-- row of awa.superseded_records marks it, and every reader passes over it
-- (awa._get_job, awa.cancel, the exact count, the history copy, the release
-- of finished jobs). Its primary key makes one of two concurrent retries of
-- a job the winner (the other waits for it, then finds the record taken, or,
-- after a rollback, takes it). The ring tables are held first (as
-- awa.get_job holds them): a prune cannot move a record between the look-up
-- and the mark, and a prune in progress is waited for.
CREATE FUNCTION awa.retry_jobs(job_ids bigint[])
RETURNS int
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    ids    bigint[];
    todo   bigint[] := '{}';  -- ids failed or cancelled now
    id     bigint;
    rec    record;
    states smallint;
    n      int;
    parked awa.deferred_jobs[] := '{}';
BEGIN
    IF job_ids IS NULL THEN
        RAISE EXCEPTION 'job_ids must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass the job ids to retry, as listed by awa.list_jobs(state => ''failed'').';
    END IF;
    SELECT coalesce(array_agg(DISTINCT u.id ORDER BY u.id), '{}') INTO ids
      FROM unnest(job_ids) AS u(id) WHERE u.id IS NOT NULL;
    IF cardinality(ids) = 0 THEN
        RETURN 0;
    END IF;
    PERFORM awa._flush_enqueues();
    PERFORM awa._hold_rings();
    -- The ones failed or cancelled now (the one definition of a job's state),
    -- resolved together, 500 at a time (awa._get_jobs works on a chunk: its
    -- cost per call is per chunk, not per id), gathered by one statement:
    -- appending each chunk to the array (todo := todo || ARRAY(...)) copied
    -- the whole array every chunk, quadratic in the ids (13.6 s of a
    -- 1,000,000-id call, 0.1 s at 100,000; found by adversarial testing).
    todo := ARRAY(SELECT g.job_id
                    FROM generate_series(0, (cardinality(ids) - 1) / 500) AS c(chunk),
                         LATERAL awa._get_jobs(ids[c.chunk * 500 + 1 : c.chunk * 500 + 500]) g
                   WHERE g.doc ->> 'state' IN ('failed', 'cancelled') ORDER BY g.job_id);
    FOREACH id IN ARRAY todo LOOP
        -- Its record: the one failed or cancelled record no retry superseded
        -- (an older one was superseded when its incarnation was retried), in
        -- the history ring or in the queue ring (a narrow done row has its
        -- body in its ready row).
        SELECT h.queue, h.priority, h.kind, h.args, h.state, h.run_lease, h.max_attempts, h.created_at,
               h.unique_key, h.payload, NULL::smallint AS unique_states
          INTO rec
          FROM awa.job_history h
         WHERE h.job_id = id AND h.state IN ('failed', 'cancelled')
           AND NOT EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = h.job_id AND sup.run_lease = h.run_lease)
         ORDER BY h.run_lease DESC LIMIT 1;
        IF NOT FOUND THEN
            SELECT d.queue, d.priority, coalesce(r.kind, d.kind) AS kind, coalesce(r.args, d.args) AS args, d.state,
                   d.run_lease, coalesce(r.max_attempts, d.max_attempts) AS max_attempts,
                   coalesce(r.created_at, d.created_at) AS created_at, coalesce(r.unique_key, d.unique_key) AS unique_key,
                   coalesce(d.payload, r.payload) AS payload, r.unique_states
              INTO rec
              FROM awa.done_entries d
              LEFT JOIN awa.ready_entries r
                ON r.lane_id = d.lane_id AND r.lane_seq = d.lane_seq AND r.ready_slot = d.ready_slot
             WHERE d.job_id = id AND d.state IN ('failed', 'cancelled')
               AND NOT EXISTS (SELECT FROM awa.superseded_records sup WHERE sup.job_id = d.job_id AND sup.run_lease = d.run_lease)
             ORDER BY d.run_lease DESC LIMIT 1;
            CONTINUE WHEN NOT FOUND;
        END IF;
        INSERT INTO awa.superseded_records (job_id, run_lease, retried_at)
        VALUES (id, rec.run_lease, clock_timestamp())
        ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS n = ROW_COUNT;
        CONTINUE WHEN n = 0;  -- another retry took it
        -- The unique key's states: the claim's if the job still holds its
        -- key (its states include the state it ended in), else its ready
        -- row's; a record of the history ring or of a job cancelled while
        -- deferred keeps no states, and then the key is taken with the
        -- default ones (available, scheduled, retryable, running).
        states := NULL;
        IF rec.unique_key IS NOT NULL THEN
            SELECT u.unique_states INTO states FROM awa.job_unique_claims u
             WHERE u.unique_key = rec.unique_key AND u.job_id = id;
            states := coalesce(states, rec.unique_states, 15);
        END IF;
        PERFORM awa._count_move(rec.queue, rec.state, 'scheduled');
        parked := parked || ROW(id, rec.queue, rec.priority, rec.kind, rec.args, 'scheduled', clock_timestamp(),
                                rec.run_lease + 1, 0, coalesce(rec.max_attempts, 25),
                                coalesce(rec.created_at, clock_timestamp()), NULL, rec.unique_key, states,
                                nullif(rec.payload - 'progress', '{}'))::awa.deferred_jobs;
    END LOOP;
    IF cardinality(parked) = 0 THEN
        RETURN 0;
    END IF;
    -- Appended to their lanes now, through the enqueue path (unique keys
    -- taken again there: 23505 if another job holds one).
    RETURN awa._requeue_jobs(parked);
END
$$;
