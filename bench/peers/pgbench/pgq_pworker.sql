-- P (pressure phases) worker for PgQ: pgq_worker.sql, plus each event's pickup latency (claim time
-- minus ev_time, the insert_event transaction's start; the ticker's delay is part of it) written
-- into bench_pickup by the finish_batch statement.
\set qn :client_id % :nq + 1
SELECT b.bid AS bid, CASE WHEN b.bid > 0 THEN (SELECT coalesce(array_agg(extract(epoch FROM clock_timestamp() - ev_time) * 1000), '{}') FROM pgq.get_batch_events(b.bid)) ELSE '{}' END AS lats, extract(epoch FROM clock_timestamp()) AS ct FROM (SELECT coalesce(pgq.next_batch(('q' || :qn)::text, 'c'), 0) AS bid) b \gset
\if :bid > 0
\sleep :work_ms ms
INSERT INTO bench_pickup SELECT :ct::float8, extract(epoch FROM clock_timestamp()), unnest(:lats::float8[]) FROM (SELECT pgq.finish_batch(:bid)) d;
\else
\sleep :idle_ms ms
\endif
