-- P (pressure phases) worker for pgmq: pgmq_worker.sql, plus each message's pickup latency (claim
-- time minus enqueued_at) written into bench_pickup by the completion's own statement.
SELECT coalesce(array_agg(msg_id), '{}') AS ids, count(*) AS n, coalesce(array_agg(extract(epoch FROM clock_timestamp() - enqueued_at) * 1000), '{}') AS lats, extract(epoch FROM clock_timestamp()) AS ct FROM pgmq.read('jobs', 30, :B) \gset
\if :n > 0
\sleep :work_ms ms
INSERT INTO bench_pickup SELECT :ct::float8, extract(epoch FROM clock_timestamp()), unnest(:lats::float8[]) FROM (SELECT count(*) FROM pgmq.delete('jobs', :ids::bigint[])) d;
\else
\sleep :idle_ms ms
\endif
