-- P (pressure phases) worker for skip: skip_worker.sql, plus each job's pickup latency (claim time
-- minus created_at, the enqueue transaction's start) kept from the claim and written into
-- bench_pickup by the completion's own statement (no extra round trip or transaction). Between the
-- two the worker sleeps work_ms (P_WORK_MS), the batch's work.
WITH c AS (UPDATE jobs SET state = 'running', attempt = attempt + 1, locked_at = now(), locked_by = :client_id WHERE id IN (SELECT id FROM jobs WHERE queue = 'default' AND state = 'ready' AND run_at <= now() ORDER BY priority, run_at, id FOR UPDATE SKIP LOCKED LIMIT :B) RETURNING id, payload, created_at) SELECT coalesce(array_agg(id), '{}') AS ids, count(*) AS n, coalesce(array_agg(extract(epoch FROM clock_timestamp() - created_at) * 1000), '{}') AS lats, extract(epoch FROM clock_timestamp()) AS ct FROM c \gset
\if :n > 0
\sleep :work_ms ms
WITH d AS (DELETE FROM jobs WHERE id = ANY(:ids::bigint[])) INSERT INTO bench_pickup SELECT :ct::float8, extract(epoch FROM clock_timestamp()), unnest(:lats::float8[]);
\else
\sleep :idle_ms ms
\endif
