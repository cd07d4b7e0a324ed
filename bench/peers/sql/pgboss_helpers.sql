-- Helpers for the pg-boss peer (bench/peers/pgboss/driver.js): a database whose schema `pgboss` was
-- made by pg-boss itself (boss.start()), all jobs in queue 'default' (pg-boss 10 keeps each queue in
-- its own partition of pgboss.job). Loaded by run.sh after common_helpers.sql.

-- enqueued = jobs in the queue's partition, done = those completed, remaining = the rest (created,
-- retry, active). One scan of the partition: pg-boss has no counters (the 1 s monitor pays a parallel
-- scan of ~0.1 s for 200,000 jobs, inside the run's CPU figure). Completed jobs stay in the partition until pg-boss's
-- maintenance archives them (archiveCompletedAfterSeconds, default 12 hours: never within a run).
CREATE OR REPLACE FUNCTION public.bench_counts(OUT enqueued bigint, OUT done bigint, OUT remaining bigint)
LANGUAGE sql AS $$
  SELECT count(*), count(*) FILTER (WHERE state = 'completed'), count(*) FILTER (WHERE state < 'completed')
    FROM pgboss.job WHERE name = 'default'
$$;

-- bench_dead(): the columns of common_helpers.sql's, over the pgboss schema's tables only.
CREATE OR REPLACE FUNCTION public.bench_dead(OUT dead_total bigint, OUT top3 text, OUT autovac bigint, OUT db_mb bigint)
LANGUAGE sql AS $$
  SELECT coalesce(sum(n_dead_tup), 0)::bigint,
         coalesce((SELECT string_agg(relname || '=' || n_dead_tup, ' ' ORDER BY n_dead_tup DESC)
                     FROM (SELECT relname, n_dead_tup FROM pg_stat_user_tables
                            WHERE schemaname = 'pgboss' AND n_dead_tup > 0
                            ORDER BY n_dead_tup DESC LIMIT 3) t), '-'),
         coalesce(sum(autovacuum_count), 0)::bigint,
         pg_database_size(current_database()) / (1024 * 1024)
    FROM pg_stat_user_tables
   WHERE schemaname = 'pgboss'
$$;

-- bench_sample_running(secs, every_ms): L's binding concurrency cell. Counts the queue's active
-- jobs every every_ms ms for secs seconds (each count its own snapshot) and returns the largest
-- count seen, the number of samples and the mean. The cell's queue has the singleton policy, so
-- the count uses pg-boss's partial unique index on its active jobs (..._i2) instead of a scan.
CREATE OR REPLACE FUNCTION public.bench_sample_running(secs float8, every_ms int,
  OUT max_running bigint, OUT samples bigint, OUT mean_running float8)
LANGUAGE plpgsql AS $$
DECLARE
  t0 timestamptz := clock_timestamp();
  r bigint;
  tot bigint := 0;
BEGIN
  max_running := 0;
  samples := 0;
  WHILE clock_timestamp() < t0 + make_interval(secs => secs) LOOP
    SELECT count(*) INTO r FROM pgboss.job WHERE name = 'default' AND state = 'active' AND policy = 'singleton';
    max_running := greatest(max_running, r);
    samples := samples + 1;
    tot := tot + r;
    PERFORM pg_sleep(every_ms / 1000.0);
  END LOOP;
  mean_running := tot::float8 / nullif(samples, 0);
END $$;
