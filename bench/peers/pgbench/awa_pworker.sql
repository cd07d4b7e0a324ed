-- P (pressure phases) worker for awa: awa_worker.sql, plus each job's pickup latency (claim time
-- minus created_at, the enqueue call's clock time) written into bench_pickup by the completion's
-- own statement. Between the two the worker sleeps work_ms (P_WORK_MS), the batch's work.
\if :awa_init = 0
SELECT set_config('awa.async_claim_commit', :async, false);
\set awa_init 1
\endif
WITH c AS (SELECT * FROM awa.claim('default', :B, NULL, make_interval(secs => :wait_ms / 1000.0))) SELECT count(*) AS n, coalesce(array_agg(job_id), '{}') AS j, coalesce(array_agg(run_lease), '{}') AS l, coalesce(array_agg(receipt_id), '{}') AS r, coalesce(array_agg(extract(epoch FROM clock_timestamp() - created_at) * 1000), '{}') AS lats, extract(epoch FROM clock_timestamp()) AS ct FROM c \gset
\if :n > 0
\sleep :work_ms ms
INSERT INTO bench_pickup SELECT :ct::float8, extract(epoch FROM clock_timestamp()), unnest(:lats::float8[]) FROM (SELECT count(*) FROM awa.complete_many(:j::bigint[], :l::bigint[], :r::bigint[])) d;
\elif :wait_ms = 0
\sleep :idle_ms ms
\endif
