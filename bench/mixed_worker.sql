-- bench/mixed.sh worker loop (pgbench -M prepared -D B=10): one claim of up to :B jobs from
-- queue mix, then every claimed job is ended as its job_id decides:
--   job_id % 100 <  5                 fail    (the queue has dlq_enabled: -> dlq)
--   job_id % 100 < 15, attempt 1      retry with delay 0 (claimable again once promoted)
--   otherwise (incl. the 2nd attempt)  complete, all of them in one complete_many call
-- The claim runs as its own implicit transaction (asynchronous claim commit, the default);
-- the batch's attempts are then all ended in one transaction (complete_many plus the fail/retry
-- calls), as a worker that reports a batch in one round trip does.
-- An empty claim is followed by a 1 ms pause, as in bench/awa_drain_bn.sql.
WITH c AS (
    SELECT job_id AS j, run_lease AS l, receipt_id AS r,
           (job_id % 100 < 5 OR (job_id % 100 < 15 AND attempt = 1)) AS x
      FROM awa.claim('mix', :B))
SELECT count(*) AS n, count(*) FILTER (WHERE x) AS nx,
       coalesce(array_agg(j) FILTER (WHERE NOT x), '{}') AS cj,
       coalesce(array_agg(l) FILTER (WHERE NOT x), '{}') AS cl,
       coalesce(array_agg(r) FILTER (WHERE NOT x), '{}') AS cr,
       coalesce(array_agg(j) FILTER (WHERE x), '{}') AS xj,
       coalesce(array_agg(l) FILTER (WHERE x), '{}') AS xl,
       coalesce(array_agg(r) FILTER (WHERE x), '{}') AS xr
  FROM c \gset
\if :n > 0
SELECT (SELECT count(*) FROM awa.complete_many(:cj, :cl, :cr)) AS completed,
       (SELECT count(*)
          FROM unnest(:xj::bigint[], :xl::bigint[], :xr::bigint[]) AS t(j, l, r),
               LATERAL (SELECT CASE WHEN t.j % 100 < 5 THEN awa.fail(t.j, t.l, t.r, 'permanent failure')
                                    ELSE awa.retry(t.j, t.l, t.r, 'transient failure', interval '0') END)
                       AS o(outcome)) AS ended_otherwise;
\else
\sleep 1 ms
\endif
