-- counts.sql: shared by the pg_regress files (included with \i test/sql/include/counts.sql from the tree root).
-- counts(q): queue_counts (the counters) of queue q and whether they equal queue_counts_exact.
CREATE FUNCTION pg_temp.counts(q text)
RETURNS TABLE (available bigint, running bigint, scheduled bigint, retryable bigint, completed bigint,
               failed bigint, cancelled bigint, dlq bigint, matches_exact boolean)
LANGUAGE sql AS $f$
SELECT c.available, c.running, c.scheduled, c.retryable, c.completed, c.failed, c.cancelled, c.dlq,
       c IS NOT DISTINCT FROM e AS matches_exact
  FROM awa.queue_counts(q) c FULL JOIN awa.queue_counts_exact(q) e ON true
$f$;
