-- awa worker loop, claim batch 1: claim (own transaction), then complete (own transaction).
-- The aggregate always returns one row, so \gset never fails on an empty queue.
-- An empty claim is followed by a 1 ms pause, as a real worker backs off (same rule for every system).
SELECT count(*) AS n, coalesce(max(job_id), 0) AS j, coalesce(max(run_lease), 0) AS l, coalesce(max(receipt_id), 0) AS r FROM awa.claim('bench', 1) \gset
\if :n > 0
SELECT awa.complete(:j, :l, :r);
\else
\sleep 1 ms
\endif
