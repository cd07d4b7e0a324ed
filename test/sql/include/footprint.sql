-- footprint.sql: shared by the pg_regress files (included with \i test/sql/include/footprint.sql from the tree root).
-- footprint(): row counts of every table an awa call can write, and the number
-- of relations in schema awa (a new lane makes none). written(before): what changed since `before`,
-- only the keys that moved, as {key: difference}.
CREATE FUNCTION pg_temp.footprint() RETURNS jsonb LANGUAGE sql AS $f$
SELECT jsonb_build_object(
    'attempt_batches', (SELECT count(*) FROM awa.ready_claim_attempt_batches),
    'attempt_state', (SELECT count(*) FROM awa.attempt_state),
    'claim_batches', (SELECT count(*) FROM awa.lease_claim_batches),
    'closure_batches', (SELECT count(*) FROM awa.lease_claim_closure_batches),
    'closures', (SELECT count(*) FROM awa.lease_claim_closures),
    'completion_batches', (SELECT count(*) FROM awa.receipt_completion_batches),
    'deferred', (SELECT count(*) FROM awa.deferred_jobs),
    'dlq', (SELECT count(*) FROM awa.dlq_entries),
    'done', (SELECT count(*) FROM awa.done_entries),
    'history', (SELECT count(*) FROM awa.job_history),
    'lanes', (SELECT count(*) FROM awa.queue_lanes),
    'lease_claims', (SELECT count(*) FROM awa.lease_claims),
    'leases', (SELECT count(*) FROM awa.leases),
    'ready', (SELECT count(*) FROM awa.ready_entries),
    'relations', (SELECT count(*) FROM pg_class WHERE relnamespace = 'awa'::regnamespace),
    'tombstones', (SELECT count(*) FROM awa.ready_tombstones),
    'unique_claims', (SELECT count(*) FROM awa.job_unique_claims))
$f$;
CREATE FUNCTION pg_temp.written(before jsonb) RETURNS jsonb LANGUAGE sql AS $f$
SELECT coalesce(jsonb_object_agg(n.key, n.value::int - (before ->> n.key)::int ORDER BY n.key)
                    FILTER (WHERE n.value::int <> (before ->> n.key)::int), '{}')
  FROM jsonb_each_text(pg_temp.footprint()) n
$f$;
