-- One row per dead-lettered job.
CREATE VIEW awa.dlq AS
SELECT d.job_id, d.queue, d.kind, d.args, d.attempt, coalesce(d.payload -> 'errors', '[]'::jsonb) AS errors,
       d.dlq_at, d.dlq_reason, d.priority, d.max_attempts, d.run_lease, d.created_at
  FROM awa.dlq_entries d;

-- Moves dead-lettered jobs back to available with fresh attempts. Their
-- run_lease continues from the last attempt (never reused). A unique key
-- another job took meanwhile raises 23505 and nothing moves.
CREATE FUNCTION awa.dlq_retry(job_ids bigint[])
RETURNS int
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    moved bigint[];
    q     record;
BEGIN
    IF job_ids IS NULL THEN
        RAISE EXCEPTION 'job_ids must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass the job ids to retry, as listed by awa.dlq.';
    END IF;
    WITH gone AS (
        DELETE FROM awa.dlq_entries d WHERE d.job_id = ANY (job_ids) RETURNING d.*
    ), parked AS (
        INSERT INTO awa.deferred_jobs (job_id, queue, priority, kind, args, state, run_at, run_lease, attempt,
                                       max_attempts, created_at, unique_key, unique_states, payload)
        SELECT g.job_id, g.queue, g.priority, g.kind, g.args, 'scheduled', clock_timestamp(), g.run_lease, 0,
               g.max_attempts, g.created_at, g.unique_key, g.unique_states, nullif(g.payload - 'progress', '{}')
          FROM gone g
        RETURNING queue, job_id
    )
    SELECT array_agg(p.job_id) INTO moved FROM parked p;
    IF moved IS NULL THEN
        RETURN 0;
    END IF;
    FOR q IN SELECT j.queue, count(*) AS n FROM awa.deferred_jobs j WHERE j.job_id = ANY (moved) GROUP BY j.queue LOOP
        PERFORM awa._count_move(q.queue, 'dlq', 'scheduled', q.n);
    END LOOP;
    RETURN awa._promote_jobs(moved);
END
$$;

-- Deletes dead-lettered jobs for good.
CREATE FUNCTION awa.dlq_purge(job_ids bigint[])
RETURNS int
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    q     record;
    total int := 0;
BEGIN
    IF job_ids IS NULL THEN
        RAISE EXCEPTION 'job_ids must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass the job ids to purge, as listed by awa.dlq.';
    END IF;
    FOR q IN
        WITH gone AS (DELETE FROM awa.dlq_entries d WHERE d.job_id = ANY (job_ids) RETURNING d.queue, d.job_id),
             freed AS (DELETE FROM awa.job_unique_claims u USING gone g WHERE u.job_id = g.job_id)
        SELECT g.queue, count(*) AS n FROM gone g GROUP BY g.queue
    LOOP
        PERFORM awa._count_move(q.queue, 'dlq', NULL, q.n);
        total := total + q.n;
    END LOOP;
    RETURN total;
END
$$;

