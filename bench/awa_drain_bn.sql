-- awa worker loop, claim batch :B (pgbench -D B=10): claim (own transaction), then
-- complete_many for the claimed jobs (own transaction); skipped when the claim was empty.
-- An empty claim is followed by a 1 ms pause, as a real worker backs off (same rule for every system).
SELECT count(*) AS n, coalesce(array_agg(job_id), '{}') AS j, coalesce(array_agg(run_lease), '{}') AS l, coalesce(array_agg(receipt_id), '{}') AS r FROM awa.claim('bench', :B) \gset
\if :n > 0
SELECT count(*) FROM awa.complete_many(:j, :l, :r);
\else
\sleep 1 ms
\endif
