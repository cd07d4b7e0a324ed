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
    jobs awa.deferred_jobs[];
    q    record;
BEGIN
    IF job_ids IS NULL THEN
        RAISE EXCEPTION 'job_ids must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass the job ids to retry, as listed by awa.dlq.';
    END IF;
    WITH gone AS (
        DELETE FROM awa.dlq_entries d WHERE d.job_id = ANY (job_ids) RETURNING d.*
    )
    SELECT array_agg(ROW(g.job_id, g.queue, g.priority, g.kind, g.args, 'scheduled', clock_timestamp(), g.run_lease, 0,
                         g.max_attempts, g.created_at, NULL, g.unique_key, g.unique_states,
                         nullif(g.payload - 'progress', '{}'))::awa.deferred_jobs)
      INTO jobs FROM gone g;
    IF jobs IS NULL THEN
        RETURN 0;
    END IF;
    FOR q IN SELECT j.queue, count(*) AS n FROM unnest(jobs) j GROUP BY j.queue LOOP
        PERFORM awa._count_move(q.queue, 'dlq', 'scheduled', q.n);
    END LOOP;
    RETURN awa._requeue_jobs(jobs);
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

