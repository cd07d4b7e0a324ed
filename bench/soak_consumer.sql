-- bench/soak.sh consumer loop (pgbench -M prepared -D B=10 -D IDLE_MS=10): one claim of up to
-- :B jobs from queue bench (its own transaction), then complete_many for every claimed job (its
-- own transaction); skipped when the claim was empty. The producer is slower than the consumers,
-- so the queue is mostly empty: an empty claim is followed by an :IDLE_MS ms pause, as a worker
-- polling an idle queue backs off (bench/awa_drain_bn.sql pauses 1 ms because its queue is
-- pre-loaded; here 8 clients re-polling every 1 ms would spend the 2 vCPUs on empty claims).
SELECT count(*) AS n, coalesce(array_agg(job_id), '{}') AS j, coalesce(array_agg(run_lease), '{}') AS l, coalesce(array_agg(receipt_id), '{}') AS r FROM awa.claim('bench', :B) \gset
\if :n > 0
SELECT count(*) FROM awa.complete_many(:j, :l, :r);
\else
\sleep :IDLE_MS ms
\endif
