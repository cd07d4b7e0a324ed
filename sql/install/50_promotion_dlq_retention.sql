-- Promotion: up to awa.promote_max_batches batches of awa.promote_batch_size.
CREATE FUNCTION awa._promote(OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    batch int := current_setting('awa.promote_batch_size')::int;
    total bigint := 0;
    n int;
BEGIN
    FOR i IN 1 .. current_setting('awa.promote_max_batches')::int LOOP
        n := awa.promote_due(batch);
        total := total + n;
        EXIT WHEN n < batch;
    END LOOP;
    outcome := CASE WHEN total = 0 THEN 'nothing_due' ELSE 'promoted' END;
    detail := jsonb_build_object('jobs', total);
END
$$;

-- DLQ retention: dead letters older than awa.dlq_retention are deleted, at
-- most awa.cleanup_batch_size per call.
CREATE FUNCTION awa._dlq_retention(OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    ids bigint[];
    n int;
BEGIN
    SELECT array_agg(job_id) INTO ids
      FROM (SELECT d.job_id FROM awa.dlq_entries d
             WHERE d.dlq_at < clock_timestamp() - current_setting('awa.dlq_retention')::interval
             ORDER BY d.dlq_at LIMIT current_setting('awa.cleanup_batch_size')::int
               FOR UPDATE SKIP LOCKED) x;
    IF ids IS NULL THEN
        outcome := 'nothing_due';
        detail := '{}';
        RETURN;
    END IF;
    n := awa.dlq_purge(ids);
    outcome := 'purged';
    detail := jsonb_build_object('jobs', n);
END
$$;

