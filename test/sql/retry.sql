--
-- retry: awa.retry_jobs(job_ids) makes failed and cancelled jobs available
-- again, keeping their job_id and errors: attempt 0, run_at now, run_lease one
-- above their record's, unique key taken again (23505 if another job holds
-- it). Their record stays in its ring slot, marked in awa.superseded_records,
-- and every reader passes over it: get_job, cancel, list_jobs, the exact
-- count, the history copy and the history step. Counts equal
-- queue_counts_exact after each step. Queues used here: rt_*.
--
\set VERBOSITY default
SET client_min_messages = warning;

\i test/sql/include/try.sql

\i test/sql/include/footprint.sql

\i test/sql/include/counts.sql
CREATE FUNCTION pg_temp.job(id bigint) RETURNS text LANGUAGE sql AS $f$
SELECT format('%s %s lease %s attempt %s/%s errors %s', j ->> 'queue', j ->> 'state', j ->> 'run_lease',
              j ->> 'attempt', j ->> 'max_attempts', jsonb_array_length(j -> 'errors'))
  FROM awa.get_job(id) j
$f$;
CREATE FUNCTION pg_temp.superseded(id bigint) RETURNS text LANGUAGE sql AS $f$
SELECT coalesce(string_agg(s.run_lease::text, ',' ORDER BY s.run_lease), '-')
  FROM awa.superseded_records s WHERE s.job_id = id
$f$;

-- ---------------------------------------------------------------------------
-- Failed: the done row stays, marked; a new ready row with run_lease + 1.
-- The unique key (default states: let go when the job failed) is taken again.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('rt.f', '{"n": 1}', 'rt_a', max_attempts => 3, opts => '{"unique_key": "rt-f"}') AS f \gset
SELECT awa.fail(c.job_id, c.run_lease, c.receipt_id, 'boom') AS failed FROM awa.claim('rt_a', 1) c;
SELECT pg_temp.job(:f) AS failed_job, (SELECT count(*) FROM awa.job_unique_claims WHERE job_id = :f) AS key_held;
SELECT pg_temp.footprint() AS before_retry \gset
SELECT awa.retry_jobs(ARRAY[:f, :f, -1, NULL]) AS retried;
SELECT pg_temp.written(:'before_retry') AS written, pg_temp.superseded(:f) AS superseded;
SELECT pg_temp.job(:f) AS retried_job;
SELECT unique_states FROM awa.job_unique_claims WHERE job_id = :f;
SELECT * FROM pg_temp.counts('rt_a');
SELECT queue, state FROM awa.list_jobs(queue => 'rt_a');
-- Available now: a second retry changes nothing. Claimed, it is attempt 1
-- again with run lease 3; completed, it is listed as completed.
SELECT awa.retry_jobs(ARRAY[:f]) AS again;
SELECT kind, run_lease, attempt, max_attempts FROM awa.claim('rt_a', 1);
SELECT pg_temp.job(:f) AS running;
SELECT awa.cancel(:f) AS cancel_running;
SELECT pg_temp.job(:f) AS cancelled_after_retry;
SELECT * FROM pg_temp.counts('rt_a');
-- Cancelled: retried once more (its second record marked too).
SELECT awa.retry_jobs(ARRAY[:f]) AS retried_again, pg_temp.superseded(:f) AS superseded;
SELECT count(*) AS completed, max(run_lease) AS run_lease
  FROM (SELECT awa.complete(c.job_id, c.run_lease, c.receipt_id), c.run_lease FROM awa.claim('rt_a', 1) c) x;
SELECT pg_temp.job(:f) AS completed_job;
SELECT state, count(*) FROM awa.list_jobs(queue => 'rt_a', state => 'completed') GROUP BY 1;
SELECT count(*) AS listed_failed FROM awa.list_jobs(queue => 'rt_a', state => 'failed');
SELECT * FROM pg_temp.counts('rt_a');

-- ---------------------------------------------------------------------------
-- Cancelled while available, while running, while scheduled (a done row of
-- its own, lane_seq = -job_id), and failed by an exhausted retry: each is
-- retried; each can be cancelled, moved and claimed again afterwards.
-- ---------------------------------------------------------------------------
SELECT min(id) AS c0 FROM awa.enqueue_many(ARRAY['rt.ca', 'rt.cr'], NULL, 'rt_c') AS id \gset
SELECT awa.enqueue('rt.cs', '{}', 'rt_c', run_at => now() + interval '1 day') AS cs \gset
SELECT awa.enqueue('rt.x', '{}', 'rt_x', max_attempts => 1) AS x \gset
SELECT awa.cancel(:c0) AS cancel_available;
SELECT count(*) AS claimed FROM awa.claim('rt_c', 2);
SELECT awa.cancel(:c0 + 1) AS cancel_running, awa.cancel(:cs) AS cancel_scheduled;
SELECT job_id, run_lease, receipt_id FROM awa.claim('rt_x', 1) \gset x_
SELECT awa.retry(:x_job_id, :x_run_lease, :x_receipt_id, 'last one') AS exhausted;
SELECT n, pg_temp.job(id) AS finished FROM (VALUES ('available', :c0), ('running', :c0 + 1), ('scheduled', :cs),
                                                    ('exhausted', :x)) t(n, id);
SELECT * FROM pg_temp.counts('rt_c');
SELECT awa.retry_jobs(ARRAY[:c0, :c0 + 1, :cs, :x]) AS retried;
SELECT n, pg_temp.job(id) AS retried, pg_temp.superseded(id) AS superseded
  FROM (VALUES ('available', :c0), ('running', :c0 + 1), ('scheduled', :cs), ('exhausted', :x)) t(n, id);
SELECT * FROM pg_temp.counts('rt_c');
-- The job cancelled while scheduled: cancel finds it available (its own
-- done row is marked), and a move moves it.
SELECT awa.move_jobs(ARRAY[:cs], 'rt_c2') AS moved, awa.cancel(:cs) AS cancel;
SELECT pg_temp.job(:cs) AS cancelled_again, pg_temp.superseded(:cs) AS superseded;
SELECT * FROM pg_temp.counts('rt_c');
SELECT * FROM pg_temp.counts('rt_c2');
SELECT kind, run_lease, attempt FROM awa.claim('rt_c', 10) ORDER BY kind;
SELECT kind, run_lease, attempt, max_attempts FROM awa.claim('rt_x', 10);
SELECT * FROM pg_temp.counts('rt_c');
SELECT * FROM pg_temp.counts('rt_x');

-- ---------------------------------------------------------------------------
-- Other states are left alone: available, running, scheduled, completed,
-- dead-lettered, unknown.
-- ---------------------------------------------------------------------------
SELECT awa.configure_queue('rt_d', dlq_enabled => true);
SELECT awa.enqueue('rt.d', '{}', 'rt_d') AS d \gset
SELECT awa.fail(c.job_id, c.run_lease, c.receipt_id, 'dead') AS dead FROM awa.claim('rt_d', 1) c;
SELECT awa.enqueue('rt.o', '{}', 'rt_d') AS o \gset
SELECT awa.enqueue('rt.s', '{}', 'rt_d', run_at => now() + interval '1 day') AS s \gset
SELECT awa.retry_jobs(ARRAY[:d, :o, :s, :c0, :f, 0]) AS none_retried;
SELECT count(*) AS superseded_rows FROM awa.superseded_records WHERE job_id IN (:d, :o, :s);

-- ---------------------------------------------------------------------------
-- A unique key another job took meanwhile: 23505, nothing retried. A
-- rollback takes a retry back whole.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('rt.u', '{}', 'rt_u', max_attempts => 1, opts => '{"unique_key": "rt-u"}') AS u \gset
SELECT awa.enqueue('rt.v', '{}', 'rt_u', max_attempts => 1) AS v \gset
SELECT count(*) AS failed FROM awa.claim('rt_u', 2) c, LATERAL awa.fail(c.job_id, c.run_lease, c.receipt_id, 'x') f;
SELECT awa.enqueue('rt.u', '{}', 'rt_u_other', opts => '{"unique_key": "rt-u"}') IS NOT NULL AS key_taken;
SELECT pg_temp.footprint() AS before_refused \gset
SELECT pg_temp.try(format('SELECT awa.retry_jobs(ARRAY[%s, %s])', :u, :v), false) AS refused;
SELECT pg_temp.written(:'before_refused') AS written, pg_temp.superseded(:u) AS superseded_u,
       pg_temp.superseded(:v) AS superseded_v;
BEGIN;
SELECT awa.retry_jobs(ARRAY[:v]) AS retried_in_tx, pg_temp.job(:v) AS inside;
SELECT * FROM pg_temp.counts('rt_u');
ROLLBACK;
SELECT pg_temp.job(:v) AS after_rollback, pg_temp.superseded(:v) AS superseded;
SELECT * FROM pg_temp.counts('rt_u');

-- ---------------------------------------------------------------------------
-- Across the rings. A failed job retried, then its queue-ring slot pruned:
-- its marked record is not copied to the history ring, and its mark goes
-- with the slot. A failed job whose slot was pruned first (its record in the
-- history ring) is retried from there; when the history step reclaims that
-- record, the counts and the job's unique key stay.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('rt.w1', '{}', 'rt_w', max_attempts => 1) AS w1 \gset
SELECT awa.enqueue('rt.w2', '{}', 'rt_w', max_attempts => 1, opts => '{"unique_key": "rt-w2"}') AS w2 \gset
SELECT count(*) AS failed FROM awa.claim('rt_w', 2) c, LATERAL awa.fail(c.job_id, c.run_lease, c.receipt_id, 'x') f;
SELECT awa.retry_jobs(ARRAY[:w1]) AS retried_w1;
CREATE PROCEDURE pg_temp.rounds(n int) LANGUAGE plpgsql AS $$
BEGIN
    FOR round IN 1 .. n LOOP
        PERFORM awa.enqueue_many(ARRAY['rt.busy', 'rt.busy'], NULL, 'rt_busy');
        PERFORM awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('rt_busy', 3) c;
        COMMIT;
        PERFORM * FROM awa.run_maintenance('rotate');
        PERFORM * FROM awa.run_maintenance('prune');
        COMMIT;
    END LOOP;
END
$$;
CALL pg_temp.rounds(20);
SELECT n, pg_temp.job(id) AS after_prune, pg_temp.superseded(id) AS superseded,
       (SELECT string_agg(h.state, ',') FROM awa.job_history h WHERE h.job_id = id) AS history,
       (SELECT count(*) FROM awa.done_entries e WHERE e.job_id = id) AS done_rows
  FROM (VALUES ('w1', :w1), ('w2', :w2)) t(n, id);
SELECT * FROM pg_temp.counts('rt_w');
SELECT awa.retry_jobs(ARRAY[:w2]) AS retried_w2_from_history;
SELECT pg_temp.job(:w2) AS w2, pg_temp.superseded(:w2) AS superseded,
       (SELECT count(*) FROM awa.job_unique_claims WHERE job_id = :w2) AS key_held;
SELECT * FROM pg_temp.counts('rt_w');
-- The history step reclaims the slot holding w2's failed record.
SELECT set_config('rt.w2', :'w2', false) IS NOT NULL AS noted;
SET awa.history_retention = '1s';
DO $$
BEGIN
    FOR i IN 1 .. 40 LOOP
        PERFORM * FROM awa.run_maintenance('history');
        EXIT WHEN NOT EXISTS (SELECT FROM awa.job_history h WHERE h.job_id = current_setting('rt.w2')::bigint);
        PERFORM pg_sleep(0.2);
    END LOOP;
END
$$;
RESET awa.history_retention;
SELECT pg_temp.job(:w2) AS w2, pg_temp.superseded(:w2) AS superseded,
       (SELECT count(*) FROM awa.job_history h WHERE h.job_id = :w2) AS history_rows,
       (SELECT count(*) FROM awa.job_unique_claims WHERE job_id = :w2) AS key_held;
SELECT * FROM pg_temp.counts('rt_w');
-- (w1's row and w2's new one are in different ring generations; a claim takes from one)
CREATE TEMP TABLE rt_w_claims AS SELECT kind, run_lease, attempt FROM awa.claim('rt_w', 10);
INSERT INTO rt_w_claims SELECT kind, run_lease, attempt FROM awa.claim('rt_w', 10);
INSERT INTO rt_w_claims SELECT kind, run_lease, attempt FROM awa.claim('rt_w', 10);
SELECT * FROM rt_w_claims ORDER BY kind;
SELECT * FROM pg_temp.counts('rt_w');

-- ---------------------------------------------------------------------------
-- Bad input and roles.
-- ---------------------------------------------------------------------------
SELECT pg_temp.try($$SELECT awa.retry_jobs(NULL)$$);
SELECT awa.retry_jobs('{}') AS empty;
CREATE ROLE rt_monitor IN ROLE awa_monitor;
SET ROLE rt_monitor;
SELECT pg_temp.try($$SELECT awa.retry_jobs(ARRAY[1])$$);
RESET ROLE;
DROP ROLE rt_monitor;
