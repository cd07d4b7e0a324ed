-- awa worker with a server-side wait and claims committed asynchronously
-- (awa.async_claim_commit = on, awa's default; W4 delay_asyncclaim when AWA_WAIT_MS is set).
-- Differs from awa_worker_wait.sql only in that setting; see there.
\if :awa_init = 0
SET awa.async_claim_commit = on;
\set awa_init 1
\endif
WITH c AS (SELECT * FROM awa.claim('default', :B, NULL, make_interval(secs => :wait_ms / 1000.0))) SELECT count(*) AS n, coalesce(array_agg(job_id), '{}') AS j, coalesce(array_agg(run_lease), '{}') AS l, coalesce(array_agg(receipt_id), '{}') AS r FROM c \gset
\if :n > 0
SELECT count(*) FROM awa.complete_many(:j::bigint[], :l::bigint[], :r::bigint[]);
\endif
