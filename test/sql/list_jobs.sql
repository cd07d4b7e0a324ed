--
-- list_jobs: awa.list_jobs finds jobs in every state, newest first, by
-- queue, state, kind, tag, args or metadata containment and enqueue time;
-- pages by keyset (before_job_id); args and metadata only for members of
-- awa_payload_reader; bad input gets 22023 (42501 for a payload filter
-- without the right to read payloads) and changes nothing.
-- Queues used here: lj_a, lj_b, lj_dlq.
--
\set VERBOSITY default

\i test/sql/include/try.sql

-- A job of every state.
SELECT awa.configure_queue('lj_dlq', dlq_enabled => true);
SELECT awa.enqueue('lj.done', '{"n": 1}', 'lj_a', opts => '{"tags": ["lj-t1"], "metadata": {"tenant": "lj-acme"}}') AS done \gset
SELECT awa.enqueue('lj.fail', '{"n": 2}', 'lj_a', max_attempts => 1) AS failed \gset
SELECT awa.enqueue('lj.cancel', '{"n": 3}', 'lj_a') AS cancelled \gset
SELECT awa.enqueue('lj.retry', '{"n": 4}', 'lj_a', max_attempts => 5) AS retryable \gset
SELECT awa.enqueue('lj.dlq', '{"n": 5}', 'lj_dlq') AS dlq \gset
SELECT awa.enqueue('lj.run', '{"n": 6}', 'lj_b', opts => '{"tags": ["lj-t1", "lj-t2"]}') AS running \gset
SELECT awa.enqueue('lj.later', '{"n": 7}', 'lj_b', run_at => now() + interval '1 day') AS scheduled \gset
SELECT awa.enqueue('lj.avail', '{"n": 8, "html": "<script>alert(1)</script>"}', 'lj_b',
                   opts => '{"metadata": {"tenant": "lj-zeta"}}') AS available \gset
SELECT awa.cancel(:cancelled) AS cancel;
SELECT awa.complete(c.job_id, c.run_lease, c.receipt_id) AS complete FROM awa.claim('lj_a', 1) c;
SELECT awa.fail(c.job_id, c.run_lease, c.receipt_id, 'boom') AS fail FROM awa.claim('lj_a', 1) c;
SELECT awa.retry(c.job_id, c.run_lease, c.receipt_id, 'try later', 3600) AS retry FROM awa.claim('lj_a', 1) c;
SELECT awa.fail(c.job_id, c.run_lease, c.receipt_id, 'to the DLQ') AS dlq FROM awa.claim('lj_dlq', 1) c;
SELECT count(*) AS claimed FROM awa.claim('lj_b', 1);

-- Every job, newest first, each in the state awa.get_job gives it.
SELECT job_id - :done AS n, queue, kind, state, priority, attempt, max_attempts, last_error,
       finished_at IS NOT NULL AS finished, enqueued_at IS NOT NULL AS enqueued, args, metadata, tags
  FROM awa.list_jobs() WHERE queue LIKE 'lj\_%';
SELECT count(*) AS agree_with_get_job
  FROM awa.list_jobs() l WHERE l.queue LIKE 'lj\_%' AND l.state = awa.get_job(l.job_id) ->> 'state';

-- Each state, alone.
SELECT s AS state, (SELECT string_agg(l.kind, ',') FROM awa.list_jobs(state => s) l WHERE l.queue LIKE 'lj\_%') AS kinds
  FROM unnest(awa._job_states()) s;

-- Filters: queue, kind, tag, args, metadata, enqueue time, and together.
SELECT string_agg(kind, ',') AS queue_b FROM awa.list_jobs(queue => 'lj_b');
SELECT string_agg(kind, ',') AS kind_fail FROM awa.list_jobs(kind => 'lj.fail');
SELECT string_agg(kind, ',') AS tag_t1 FROM awa.list_jobs(tag => 'lj-t1');
SELECT string_agg(kind, ',') AS tag_t2 FROM awa.list_jobs(tag => 'lj-t2');
SELECT string_agg(kind, ',') AS args_n5 FROM awa.list_jobs(args_contains => '{"n": 5}');
SELECT string_agg(kind, ',') AS metadata_acme FROM awa.list_jobs(metadata_contains => '{"tenant": "lj-acme"}');
SELECT string_agg(kind, ',') AS b_available FROM awa.list_jobs(queue => 'lj_b', state => 'available');
SELECT count(*) AS none_after FROM awa.list_jobs(enqueued_after => now() + interval '1 hour');
SELECT count(*) AS none_before FROM awa.list_jobs(enqueued_before => now() - interval '1 hour');
SELECT count(*) AS all_in_range FROM awa.list_jobs(enqueued_after => now() - interval '1 hour',
                                                  enqueued_before => now() + interval '1 hour')
 WHERE queue LIKE 'lj\_%';
SELECT count(*) AS unknown_queue FROM awa.list_jobs(queue => 'lj_none');
SELECT count(*) AS unknown_tag FROM awa.list_jobs(tag => 'nope');

-- Keyset pages of 3: every job once, in order, none skipped.
CREATE TEMP TABLE pages (page int, job_id bigint);
DO $$
DECLARE
    last bigint := NULL;
    p int := 0;
    n int;
BEGIN
    LOOP
        p := p + 1;
        INSERT INTO pages SELECT p, l.job_id FROM awa.list_jobs(before_job_id => last, max_rows => 3) l
                                             WHERE l.queue LIKE 'lj\_%';
        GET DIAGNOSTICS n = ROW_COUNT;
        EXIT WHEN n = 0 OR p > 10;
        SELECT min(job_id) INTO last FROM pages WHERE page = p;
    END LOOP;
END
$$;
SELECT page, count(*) AS jobs FROM pages GROUP BY page ORDER BY page;
SELECT count(*) AS listed, count(DISTINCT job_id) AS distinct_jobs,
       bool_and(job_id = expected) AS in_order
  FROM (SELECT job_id, row_number() OVER (ORDER BY page, job_id DESC) AS pos FROM pages) p
  JOIN (SELECT id AS expected, row_number() OVER (ORDER BY id DESC) AS pos
          FROM generate_series(:done::bigint, :available::bigint) id) e USING (pos);
SELECT count(*) AS past_the_first FROM awa.list_jobs(before_job_id => :done) WHERE queue LIKE 'lj\_%';

-- A job has a ready row per promotion: 40 jobs retried twice (three ready
-- rows each) beside 60 scheduled and 20 available jobs. Pages of 50 list
-- every one of the 120 once (the 20 available and 6 retried ones were
-- skipped when a chunk of ready rows held fewer jobs than rows: found in
-- review).
SELECT count(*) FROM (SELECT awa.enqueue('lj.s', '{}', 'ljk_keyset', 2, now() + interval '1 day') FROM generate_series(1, 60)) x;
SELECT count(*) FROM (SELECT awa.enqueue('lj.a', '{}', 'ljk_keyset', 2) FROM generate_series(1, 20)) x;
SELECT count(*) FROM (SELECT awa.enqueue('lj.r', '{}', 'ljk_keyset', 1) FROM generate_series(1, 40)) x;
SELECT count(*) AS retried FROM awa.claim('ljk_keyset', 40) c, LATERAL awa.retry(c.job_id, c.run_lease, c.receipt_id, 'x', 0) r;
SELECT awa.promote_due(1000) > 0 AS promoted;
SELECT count(*) AS retried FROM awa.claim('ljk_keyset', 40) c, LATERAL awa.retry(c.job_id, c.run_lease, c.receipt_id, 'x', 0) r;
SELECT awa.promote_due(1000) > 0 AS promoted;
CREATE TEMP TABLE kpages (page int, job_id bigint);
DO $$
DECLARE
    last bigint := NULL;
    p int := 0;
    n int;
BEGIN
    LOOP
        p := p + 1;
        INSERT INTO kpages SELECT p, l.job_id FROM awa.list_jobs(queue => 'ljk_keyset', before_job_id => last, max_rows => 50) l;
        GET DIAGNOSTICS n = ROW_COUNT;
        EXIT WHEN n = 0 OR p > 10;
        SELECT min(job_id) INTO last FROM kpages WHERE page = p;
    END LOOP;
END
$$;
SELECT count(*) AS listed, count(DISTINCT job_id) AS distinct_jobs FROM kpages;

-- A finished job whose queue-ring slot was pruned is listed from the
-- history ring, still completed.
SELECT count(*) FROM (SELECT awa.run_maintenance('rotate_queue') FROM generate_series(1, 15)) r;
SELECT task, outcome FROM awa.run_maintenance('prune_queue');
SELECT count(*) AS in_history FROM awa.job_history WHERE job_id = :done;
SELECT job_id - :done AS n, kind, state, tags FROM awa.list_jobs(state => 'completed') WHERE queue LIKE 'lj\_%';

-- Bad input: 22023 with a hint (42501 for a payload filter without the
-- right to read payloads, below).
SELECT pg_temp.try($$SELECT * FROM awa.list_jobs(state => 'done')$$);
SELECT pg_temp.try($$SELECT * FROM awa.list_jobs(state => repeat('x', 1000))$$);
SELECT pg_temp.try($$SELECT * FROM awa.list_jobs(max_rows => 0)$$);
SELECT pg_temp.try($$SELECT * FROM awa.list_jobs(max_rows => 1001)$$);
SELECT pg_temp.try($$SELECT * FROM awa.list_jobs(max_rows => NULL)$$);
SELECT pg_temp.try($$SELECT * FROM awa.list_jobs(args_contains => '[1]')$$);
SELECT pg_temp.try($$SELECT * FROM awa.list_jobs(metadata_contains => '"acme"')$$);
SELECT count(*) AS max_rows_1000 FROM awa.list_jobs(max_rows => 1000) WHERE queue LIKE 'lj\_%';

-- Roles: a monitor lists jobs without args or metadata, and may not filter
-- by them; a member of awa_payload_reader sees them.
CREATE ROLE lj_monitor IN ROLE awa_monitor;
CREATE ROLE lj_reader IN ROLE awa_monitor, awa_payload_reader;
SET ROLE lj_monitor;
SELECT kind, state, args, metadata, tags FROM awa.list_jobs(queue => 'lj_b');
SELECT pg_temp.try($$SELECT * FROM awa.list_jobs(args_contains => '{"n": 5}')$$);
SELECT pg_temp.try($$SELECT * FROM awa.list_jobs(metadata_contains => '{"tenant": "acme"}')$$);
SELECT pg_temp.try($$SELECT awa.get_job(1)$$);
RESET ROLE;
-- A SECURITY DEFINER function a monitor owns, called by a superuser: it runs
-- as the monitor, which may not see payloads (they were shown, judged by the
-- session's user: found in review, through autovacuum running a monitor's
-- index function).
CREATE SCHEMA lj_mon AUTHORIZATION lj_monitor;
SET ROLE lj_monitor;
CREATE FUNCTION lj_mon.peek() RETURNS SETOF jsonb LANGUAGE sql SECURITY DEFINER
    AS $f$ SELECT args FROM awa.list_jobs(queue => 'lj_b') $f$;
RESET ROLE;
SELECT count(*) AS rows, count(p) AS args_seen FROM lj_mon.peek() p;
DROP SCHEMA lj_mon CASCADE;
SET ROLE lj_reader;
SELECT kind, args, metadata FROM awa.list_jobs(queue => 'lj_b', args_contains => '{"n": 8}');
RESET ROLE;
DROP ROLE lj_monitor, lj_reader;

-- Each source read on its own (issue 22 §1). A queue's jobs in every state
-- but dlq, in pages of 2 by queue: the DLQ holds only another queue's job,
-- so it is not read; the queue ring is read only in the slots that hold a row
-- of the queue's lanes. Every job once, newest first, in the state awa.get_job
-- gives it; completed jobs still in the queue ring come from its completion
-- batches.
SELECT awa.enqueue('ljq.done', '{"n": 1}', 'ljq_all') AS q_first \gset
SELECT awa.enqueue('ljq.done', '{"n": 2}', 'ljq_all') AS q_done2 \gset
SELECT count(*) FROM (SELECT awa.enqueue('ljq.fail', '{}', 'ljq_all', max_attempts => 1) FROM generate_series(1, 2)) x;
SELECT count(*) FROM (SELECT awa.enqueue('ljq.retry', '{}', 'ljq_all', max_attempts => 5) FROM generate_series(1, 2)) x;
SELECT count(*) FROM (SELECT awa.enqueue('ljq.run', '{}', 'ljq_all') FROM generate_series(1, 2)) x;
SELECT count(*) FROM (SELECT awa.enqueue('ljq.later', '{}', 'ljq_all', run_at => now() + interval '1 day') FROM generate_series(1, 2)) x;
SELECT count(*) FROM (SELECT awa.enqueue('ljq.cancel', '{}', 'ljq_all') FROM generate_series(1, 2)) x;
SELECT count(*) FROM (SELECT awa.enqueue('ljq.avail', '{}', 'ljq_all') FROM generate_series(1, 3)) x;
SELECT count(awa.cancel(job_id)) AS cancelled FROM awa.list_jobs(queue => 'ljq_all', kind => 'ljq.cancel');
SELECT count(awa.complete(c.job_id, c.run_lease, c.receipt_id)) AS completed FROM awa.claim('ljq_all', 2) c;
SELECT count(awa.fail(c.job_id, c.run_lease, c.receipt_id, 'boom')) AS failed FROM awa.claim('ljq_all', 2) c;
SELECT count(awa.retry(c.job_id, c.run_lease, c.receipt_id, 'later', 3600)) AS retried FROM awa.claim('ljq_all', 2) c;
SELECT count(*) AS claimed FROM awa.claim('ljq_all', 2);
SELECT count(*) AS completed_in_history FROM awa.job_history WHERE queue = 'ljq_all';
SELECT string_agg((job_id - :q_first) || ':' || kind, ',') AS completed_in_ring
  FROM awa.list_jobs(queue => 'ljq_all', state => 'completed');
CREATE TEMP TABLE qpages (page int, job_id bigint, state text);
CREATE FUNCTION pg_temp.qpages(p_queue text, p_max_rows int, p_from int DEFAULT 1, p_pages int DEFAULT 20)
RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
    last bigint := (SELECT min(job_id) FROM qpages);
    n int;
BEGIN
    FOR p IN p_from .. p_from + p_pages - 1 LOOP
        INSERT INTO qpages SELECT p, l.job_id, l.state
          FROM awa.list_jobs(queue => p_queue, before_job_id => last, max_rows => p_max_rows) l;
        GET DIAGNOSTICS n = ROW_COUNT;
        EXIT WHEN n = 0;
        SELECT min(job_id) INTO last FROM qpages WHERE page = p;
    END LOOP;
END
$f$;
SELECT pg_temp.qpages('ljq_all', 2);
SELECT string_agg(state, ',' ORDER BY job_id DESC) AS states, count(*) AS listed, count(DISTINCT job_id) AS distinct_jobs,
       bool_and(state = awa.get_job(job_id) ->> 'state') AS agree_with_get_job,
       max(page) AS pages
  FROM qpages;
SELECT count(*) AS listed_in_order
  FROM (SELECT job_id, row_number() OVER (ORDER BY page, job_id DESC) AS pos FROM qpages) p
  JOIN (SELECT id AS expected, row_number() OVER (ORDER BY id DESC) AS pos
          FROM generate_series(:q_first::bigint, :q_first::bigint + 14) id) e USING (pos)
 WHERE job_id = expected;

-- A prune between two pages: the first page is read from the queue ring,
-- then a prune moves the finished jobs to the history ring and carries the
-- live ones; the next pages (before the first page's last job) list every
-- other job once, in the state get_job gives it, from where it went.
TRUNCATE qpages;
SELECT pg_temp.qpages('ljq_all', 4, 1, 1);
SELECT count(*) FROM (SELECT awa.run_maintenance('rotate_queue') FROM generate_series(1, 15)) r;
SELECT task, outcome FROM awa.run_maintenance('prune_queue');
SELECT count(*) AS finished_in_history FROM awa.job_history WHERE queue = 'ljq_all';
SELECT pg_temp.qpages('ljq_all', 3, 2);
SELECT string_agg(state, ',' ORDER BY job_id DESC) AS states, count(*) AS listed, count(DISTINCT job_id) AS distinct_jobs,
       bool_and(state = awa.get_job(job_id) ->> 'state') AS agree_with_get_job
  FROM qpages;
SELECT string_agg((job_id - :q_first) || ':' || kind, ',') AS completed_from_history
  FROM awa.list_jobs(queue => 'ljq_all', state => 'completed');

-- A chunk of candidates none of which is in the state asked for: the next,
-- larger, chunk follows. The newest 4 of a queue's 7 jobs were cancelled while
-- available (their ready rows are still above the claim cursor); pages of 2
-- of the available ones list the 3 others once.
SELECT awa.enqueue('ljq.avail', '{}', 'ljq_av') AS av_first \gset
SELECT count(*) FROM (SELECT awa.enqueue('ljq.avail', '{}', 'ljq_av') FROM generate_series(1, 2)) x;
SELECT count(*) FROM (SELECT awa.cancel(awa.enqueue('ljq.cancel', '{}', 'ljq_av')) FROM generate_series(1, 4)) x;
TRUNCATE qpages;
DO $$
DECLARE
    last bigint;
    n int;
BEGIN
    FOR p IN 1 .. 5 LOOP
        INSERT INTO qpages SELECT p, l.job_id, l.state
          FROM awa.list_jobs(queue => 'ljq_av', state => 'available', before_job_id => last, max_rows => 2) l;
        GET DIAGNOSTICS n = ROW_COUNT;
        EXIT WHEN n = 0;
        SELECT min(job_id) INTO last FROM qpages WHERE page = p;
    END LOOP;
END
$$;
SELECT page, string_agg((job_id - :av_first)::text, ',' ORDER BY job_id DESC) AS jobs FROM qpages GROUP BY page ORDER BY page;
SELECT string_agg(kind, ',') AS cancelled FROM awa.list_jobs(queue => 'ljq_av', state => 'cancelled');

-- Running jobs come from the open claim batches, less the jobs their
-- closures name: of a batch of 3, the first completed and the second failed,
-- the third is the one running.
SELECT count(*) FROM (SELECT awa.enqueue('ljq.batch', '{}', 'ljq_run', max_attempts => 1) FROM generate_series(1, 3)) x;
CREATE TEMP TABLE ljq_claimed AS SELECT * FROM awa.claim('ljq_run', 3);
SELECT count(awa.complete(c.job_id, c.run_lease, c.receipt_id)) AS completed
  FROM (SELECT * FROM ljq_claimed ORDER BY job_id LIMIT 1) c;
SELECT count(awa.fail(c.job_id, c.run_lease, c.receipt_id, 'x')) AS failed
  FROM (SELECT * FROM ljq_claimed ORDER BY job_id OFFSET 1 LIMIT 1) c;
SELECT string_agg(state, ',') AS states FROM awa.list_jobs(queue => 'ljq_run');
SELECT count(*) AS running, min(job_id) = (SELECT max(job_id) FROM ljq_claimed) AS the_third
  FROM awa.list_jobs(queue => 'ljq_run', state => 'running');

-- A queue's rows under newer rows of other queues in the same slot: the
-- slot's read starts just above the queue's newest job below the page's
-- start, found by a backward probe per lane of the (job_id, lane_id) index
-- (up to 8 lanes); a queue of more lanes (here 12 concurrency keys) is read
-- from the page's start. Either way every job of the queue is listed once,
-- newest first, in pages of 2, whatever lane it is in. ljs_4: 4 lanes
-- (priorities 1 to 4), 8 jobs interleaved with 20 newer and 8 older jobs of
-- ljs_other; ljs_12: 12 lanes, 12 jobs.
SELECT count(*) FROM (SELECT awa.enqueue('ljs.o', '{}', 'ljs_other') FROM generate_series(1, 8)) x;
SELECT count(*) FROM (SELECT awa.enqueue('ljs.a', jsonb_build_object('i', i), 'ljs_4', priority => 1 + i % 4),
                             awa.enqueue('ljs.o', '{}', 'ljs_other')
                        FROM generate_series(1, 8) i) x;
SELECT count(*) FROM (SELECT awa.enqueue('ljs.b', jsonb_build_object('i', i), 'ljs_12',
                                         opts => jsonb_build_object('concurrency_key', 'k' || i))
                        FROM generate_series(1, 12) i) x;
SELECT count(*) FROM (SELECT awa.enqueue('ljs.o', '{}', 'ljs_other') FROM generate_series(1, 20)) x;
SELECT queue, count(*) AS lanes FROM awa.queue_lanes WHERE queue IN ('ljs_4', 'ljs_12') GROUP BY queue ORDER BY queue;
TRUNCATE qpages;
SELECT pg_temp.qpages('ljs_4', 2);
SELECT count(*) AS listed, count(DISTINCT job_id) AS distinct_jobs, max(page) AS pages,
       (SELECT array_agg(job_id ORDER BY page, job_id DESC) FROM qpages)
         = (SELECT array_agg(job_id ORDER BY job_id DESC) FROM awa.list_jobs(max_rows => 500) WHERE queue = 'ljs_4') AS newest_first
  FROM qpages;
TRUNCATE qpages;
SELECT pg_temp.qpages('ljs_12', 2);
SELECT count(*) AS listed, count(DISTINCT job_id) AS distinct_jobs, max(page) AS pages,
       (SELECT array_agg(job_id ORDER BY page, job_id DESC) FROM qpages)
         = (SELECT array_agg(job_id ORDER BY job_id DESC) FROM awa.list_jobs(max_rows => 500) WHERE queue = 'ljs_12') AS newest_first
  FROM qpages;
