-- awa worker with a server-side wait (run.sh picks it instead of awa_worker.sql when AWA_WAIT_MS
-- is set): claims durable at commit (awa.async_claim_commit = off), like awa_worker.sql, but the
-- claim passes its 4th argument `wait`, so a claim that finds nothing sleeps in the server until
-- work arrives or :wait_ms ms have passed. Needs awa.claim(queue, max_jobs, deadline, wait).
-- No client-side \sleep after an empty claim: the wait already happened in the server.
\if :awa_init = 0
SET awa.async_claim_commit = off;
\set awa_init 1
\endif
-- claim (own implicit transaction); deadline NULL = the queue's default. The aggregate always
-- returns one row, so the gset also works on an empty claim; awa.claim stays in the first 128
-- characters (run.sh's claim_pat).
WITH c AS (SELECT * FROM awa.claim('default', :B, NULL, make_interval(secs => :wait_ms / 1000.0))) SELECT count(*) AS n, coalesce(array_agg(job_id), '{}') AS j, coalesce(array_agg(run_lease), '{}') AS l, coalesce(array_agg(receipt_id), '{}') AS r FROM c \gset
\if :n > 0
-- complete (own transaction): every claimed attempt in one awa.complete_many call
SELECT count(*) FROM awa.complete_many(:j::bigint[], :l::bigint[], :r::bigint[]);
\endif
