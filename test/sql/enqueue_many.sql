--
-- enqueue_many: awa.enqueue_many(kinds, args, queue, priorities, run_at, max_attempts, opts)
-- Queues used here: em_one, em_three, em_big, em_mixed, em_defaults, em_time,
-- em_split, em_empty, em_bad.
--
\set VERBOSITY default

\i test/sql/include/try.sql
\i test/sql/include/ready_runs.sql

\i test/sql/include/footprint.sql

-- ---------------------------------------------------------------------------
-- One job.
-- ---------------------------------------------------------------------------
SELECT id AS one FROM awa.enqueue_many(ARRAY['em.one'], ARRAY['{"a": 1}'::jsonb], 'em_one') AS id \gset
SELECT job_id = :one AS same_id, queue, priority, kind, args, max_attempts, lane_seq, run_lease, attempt,
       payload, run_at = created_at AS due_at_enqueue, created_at <= now() AS created_in_past
  FROM awa.ready_entries WHERE queue = 'em_one';
SELECT first_lane_seq, next_lane_seq FROM pg_temp.ready_runs WHERE queue = 'em_one';
SELECT priority, enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'em_one';

-- ---------------------------------------------------------------------------
-- Three jobs: ids in input order, one run of consecutive lane positions.
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE em_three AS
SELECT t.id, t.ord
  FROM awa.enqueue_many(ARRAY['em.a', 'em.b', 'em.c'],
                        ARRAY['{"n": 1}', '{"n": 2}', '{"n": 3}']::jsonb[],
                        'em_three', ARRAY[3, 3, 3], NULL, 5) WITH ORDINALITY AS t(id, ord);
SELECT min(id) AS three_first FROM em_three \gset
SELECT t.ord, t.id - :three_first AS id_offset, r.kind, r.args, r.priority, r.lane_seq, r.max_attempts
  FROM em_three t JOIN awa.ready_entries r ON r.job_id = t.id ORDER BY t.ord;
SELECT first_lane_seq, next_lane_seq FROM pg_temp.ready_runs WHERE queue = 'em_three';
SELECT job_id - :three_first AS id_offset, kind, args, priority, attempt, max_attempts
  FROM awa.claim('em_three', 3);

-- ---------------------------------------------------------------------------
-- 10000 jobs: ids returned in input order; a full drain by one claim of
-- max_jobs 10000 returns them in that order.
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE em_big AS
SELECT t.id, t.ord
  FROM awa.enqueue_many(array(SELECT 'em.big.' || i FROM generate_series(1, 10000) i), NULL, 'em_big')
       WITH ORDINALITY AS t(id, ord);
SELECT min(id) AS big_first FROM em_big \gset
SELECT count(*) AS jobs, count(DISTINCT id) AS distinct_ids, max(ord) AS last_ord,
       bool_and(id = :big_first + ord - 1) AS ids_in_input_order
  FROM em_big;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE r.kind = 'em.big.' || t.ord AND r.lane_seq = t.ord
                          AND r.args = '{}' AND r.priority = 2 AND r.max_attempts = 25) AS rows_as_input
  FROM em_big t JOIN awa.ready_entries r ON r.job_id = t.id;
SELECT first_lane_seq, next_lane_seq FROM pg_temp.ready_runs WHERE queue = 'em_big';
SELECT priority, enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'em_big';

CREATE TEMP TABLE em_big_claimed AS
SELECT c.job_id, c.kind, c.run_lease, c.attempt, c.ord
  FROM awa.claim('em_big', 10000) WITH ORDINALITY AS c(job_id, run_lease, receipt_id, kind, args, queue,
                                                       priority, attempt, max_attempts, deadline_at,
                                                       created_at, metadata, ord);
SELECT count(*) AS claimed, count(DISTINCT job_id) AS distinct_jobs,
       bool_and(job_id = :big_first + ord - 1) AS claimed_in_input_order,
       bool_and(kind = 'em.big.' || ord) AS kinds_in_order,
       bool_and(run_lease = 1 AND attempt = 1) AS first_attempts
  FROM em_big_claimed;
SELECT count(*) AS claimed_again FROM awa.claim('em_big', 10000);

-- ---------------------------------------------------------------------------
-- Mixed priorities: each job goes to the lane of its priority; ids stay in
-- input order; lane_seqs follow input order within each lane.
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE em_mixed AS
SELECT t.id, t.ord
  FROM awa.enqueue_many(ARRAY['m1', 'm2', 'm3', 'm4', 'm5', 'm6'], NULL, 'em_mixed',
                        ARRAY[3, 1, 2, 1, 4, 3]) WITH ORDINALITY AS t(id, ord);
SELECT min(id) AS mixed_first FROM em_mixed \gset
SELECT t.ord, t.id - :mixed_first AS id_offset, r.kind, r.priority, r.lane_seq
  FROM em_mixed t JOIN awa.ready_entries r ON r.job_id = t.id ORDER BY t.ord;
SELECT priority, enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'em_mixed' ORDER BY priority;
SELECT priority, first_lane_seq, next_lane_seq FROM pg_temp.ready_runs
 WHERE queue = 'em_mixed' ORDER BY priority;
-- Claims drain the most urgent lane first, one lane per claim.
SELECT kind, priority FROM awa.claim('em_mixed', 10);
SELECT kind, priority FROM awa.claim('em_mixed', 10);
SELECT kind, priority FROM awa.claim('em_mixed', 10);
SELECT kind, priority FROM awa.claim('em_mixed', 10);
SELECT count(*) AS claimed FROM awa.claim('em_mixed', 10);

-- args NULL means '{}' for every job; priorities NULL means 2 for every job.
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['d1', 'd2'], NULL, 'em_defaults', NULL, NULL);
SELECT kind, args, priority, max_attempts, lane_seq FROM awa.ready_entries
 WHERE queue = 'em_defaults' ORDER BY lane_seq;

-- ---------------------------------------------------------------------------
-- run_at: future elements go to deferred_jobs with their priority; NULL and
-- past elements are due now. Deferred jobs create their (empty) lanes.
-- ---------------------------------------------------------------------------
SELECT now() + interval '1 hour' AS later, now() + interval '2 days' AS much_later,
       now() - interval '1 hour' AS earlier \gset
CREATE TEMP TABLE em_time AS
SELECT t.id, t.ord
  FROM awa.enqueue_many(ARRAY['t1', 't2', 't3', 't4'],
                        ARRAY['{"i": 1}', '{"i": 2}', '{"i": 3}', '{"i": 4}']::jsonb[],
                        'em_time', ARRAY[1, 2, 1, 3],
                        ARRAY[NULL, :'later', :'earlier', :'much_later']::timestamptz[], 9)
       WITH ORDINALITY AS t(id, ord);
SELECT min(id) AS time_first FROM em_time \gset
SELECT bool_and(id = :time_first + ord - 1) AS ids_in_input_order, count(*) AS jobs FROM em_time;
SELECT job_id - :time_first AS id_offset, kind, args, priority, lane_seq, max_attempts,
       CASE kind WHEN 't1' THEN run_at = created_at ELSE run_at = :'earlier' END AS run_at_kept
  FROM awa.ready_entries WHERE queue = 'em_time' ORDER BY lane_seq;
SELECT job_id - :time_first AS id_offset, kind, args, priority, state, max_attempts,
       CASE kind WHEN 't2' THEN run_at = :'later' ELSE run_at = :'much_later' END AS run_at_kept,
       payload
  FROM awa.deferred_jobs WHERE queue = 'em_time' ORDER BY job_id;
SELECT priority, enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'em_time' ORDER BY priority;
SELECT job_id - :time_first AS id_offset, kind FROM awa.claim('em_time', 10);
SELECT count(*) AS claimed FROM awa.claim('em_time', 10);

-- A deferred job between two due jobs of one lane leaves no hole in the lane.
SELECT count(*) AS jobs
  FROM awa.enqueue_many(ARRAY['s1', 's2', 's3'], NULL, 'em_split', NULL,
                        ARRAY[NULL, :'later', NULL]::timestamptz[]);
SELECT kind, lane_seq FROM awa.ready_entries WHERE queue = 'em_split' ORDER BY lane_seq;
SELECT first_lane_seq, next_lane_seq FROM pg_temp.ready_runs WHERE queue = 'em_split';
SELECT kind FROM awa.deferred_jobs WHERE queue = 'em_split';
SELECT kind FROM awa.claim('em_split', 10);

-- ---------------------------------------------------------------------------
-- Empty input: no rows, nothing written, no lane.
-- ---------------------------------------------------------------------------
SELECT pg_temp.footprint() AS before_empty \gset
SELECT count(*) AS ids FROM awa.enqueue_many('{}', NULL, 'em_empty');
SELECT count(*) AS ids FROM awa.enqueue_many(ARRAY[]::text[], ARRAY[]::jsonb[], 'em_empty',
                                             ARRAY[]::int[], ARRAY[]::timestamptz[]);
SELECT pg_temp.footprint() = :'before_empty'::jsonb AS nothing_written,
       (SELECT count(*) FROM awa.queue_lanes WHERE queue = 'em_empty') AS lanes;

-- ---------------------------------------------------------------------------
-- Invalid input: SQLSTATE, message and hint; nothing written.
-- ---------------------------------------------------------------------------
SELECT * FROM awa.enqueue_many(ARRAY['ok', NULL], NULL, 'em_bad');

SELECT pg_temp.footprint() AS before \gset
-- kinds has no default, so "Omit the argument to use its default." would be wrong
-- advice; only the presence of a hint is checked here.
SELECT pg_temp.try($$SELECT awa.enqueue_many(NULL, NULL, 'em_bad')$$, false) AS outcome;
SELECT call, pg_temp.try(call) AS outcome FROM (VALUES
    ($$SELECT awa.enqueue_many(ARRAY[NULL]::text[], NULL, 'em_bad')$$),
    ($$SELECT awa.enqueue_many(ARRAY['ok', 'ok', NULL], NULL, 'em_bad')$$),
    ($$SELECT awa.enqueue_many(ARRAY['ok', ''], NULL, 'em_bad')$$),
    ($$SELECT awa.enqueue_many(ARRAY['ok', repeat('k', 201)], NULL, 'em_bad')$$),
    ($$SELECT awa.enqueue_many(ARRAY[['a', 'b'], ['c', 'd']], NULL, 'em_bad')$$),
    ($$SELECT awa.enqueue_many(ARRAY['a'], ARRAY[['{}']]::jsonb[], 'em_bad')$$),
    ($$SELECT awa.enqueue_many(ARRAY['a'], NULL, 'em_bad', ARRAY[[1]])$$),
    ($$SELECT awa.enqueue_many(ARRAY['a'], NULL, 'em_bad', NULL, ARRAY[[now()]])$$),
    ($$SELECT awa.enqueue_many(ARRAY['a', 'b'], ARRAY['{}']::jsonb[], 'em_bad')$$),
    ($$SELECT awa.enqueue_many(ARRAY['a'], ARRAY['{}', '{}']::jsonb[], 'em_bad')$$),
    ($$SELECT awa.enqueue_many(ARRAY['a'], '{}', 'em_bad')$$),
    ($$SELECT awa.enqueue_many(ARRAY['a', 'b'], NULL, 'em_bad', ARRAY[1])$$),
    ($$SELECT awa.enqueue_many(ARRAY['a', 'b'], NULL, 'em_bad', ARRAY[1, 2, 3])$$),
    ($$SELECT awa.enqueue_many(ARRAY['a', 'b'], NULL, 'em_bad', NULL, ARRAY[now()])$$),
    ($$SELECT awa.enqueue_many(ARRAY['a', 'b'], NULL, 'em_bad', NULL, '{}')$$),
    ($$SELECT awa.enqueue_many(ARRAY['a', 'b'], NULL, 'em_bad', ARRAY[1, 0])$$),
    ($$SELECT awa.enqueue_many(ARRAY['a', 'b'], NULL, 'em_bad', ARRAY[5, 1])$$),
    ($$SELECT awa.enqueue_many(ARRAY['a', 'b'], NULL, 'em_bad', ARRAY[1, NULL])$$),
    ($$SELECT awa.enqueue_many(ARRAY['a', 'b'], ARRAY['{}', '[]']::jsonb[], 'em_bad')$$),
    ($$SELECT awa.enqueue_many(ARRAY['a', 'b'], ARRAY['{}', '3']::jsonb[], 'em_bad')$$),
    ($$SELECT awa.enqueue_many(ARRAY['a', 'b'], ARRAY['{}', 'null']::jsonb[], 'em_bad')$$),
    ($$SELECT awa.enqueue_many(ARRAY['a', 'b'], ARRAY['{}', NULL]::jsonb[], 'em_bad')$$),
    ($$SELECT awa.enqueue_many(ARRAY['a'], NULL, NULL)$$),
    ($$SELECT awa.enqueue_many(ARRAY['a'], NULL, '')$$),
    ($$SELECT awa.enqueue_many(ARRAY['a'], NULL, repeat('q', 201))$$),
    ($$SELECT awa.enqueue_many(ARRAY['a'], NULL, 'em_bad', max_attempts => NULL)$$),
    ($$SELECT awa.enqueue_many(ARRAY['a'], NULL, 'em_bad', max_attempts => 0)$$),
    ($$SELECT awa.enqueue_many(ARRAY['a'], NULL, 'em_bad', max_attempts => 1001)$$),
    -- a bad element after good ones, and bad deferred elements, write nothing either
    ($$SELECT awa.enqueue_many(array(SELECT 'ok' || i FROM generate_series(1, 100) i) || ARRAY[NULL],
                               NULL, 'em_bad')$$),
    ($$SELECT awa.enqueue_many(ARRAY['a', 'b'], ARRAY['{}', '[]']::jsonb[], 'em_bad', NULL,
                               ARRAY[NULL, now() + interval '1 day']::timestamptz[])$$)
) AS t(call);
SELECT pg_temp.footprint() = :'before'::jsonb AS nothing_written,
       (SELECT count(*) FROM awa.queue_lanes WHERE queue = 'em_bad') AS em_bad_lanes;

-- Scheduled jobs of two lanes, interleaved (priorities 2, 3, 2): both lanes
-- exist and every job is a deferred row of its lane.
SELECT count(*) AS enqueued
  FROM awa.enqueue_many(ARRAY['a', 'b', 'c'], NULL, 'em_sched_lanes', ARRAY[2, 3, 2],
                        array_fill(now() + interval '1 day', ARRAY[3]));
SELECT priority, count(*) AS deferred FROM awa.deferred_jobs WHERE queue = 'em_sched_lanes' GROUP BY 1 ORDER BY 1;
SELECT priority FROM awa.queue_lanes WHERE queue = 'em_sched_lanes' ORDER BY 1;

-- A call of more than one chunk (enqueue_many goes through its jobs 10,000 at
-- a time, so a call holds one chunk's memory): every element is checked before
-- anything is written, ids come back in input order, the lane gets them in
-- input order (consecutive lane positions), and unique keys meet across chunks.
SELECT pg_temp.footprint() AS before_chunks \gset
SELECT pg_temp.try($$SELECT count(*) FROM awa.enqueue_many(array_append(array_fill('c'::text, ARRAY[24999]), ''),
                                                            NULL, 'em_chunks')$$) AS last_element_bad;
SELECT pg_temp.footprint() = :'before_chunks'::jsonb AS nothing_written;
SELECT count(*) AS jobs, bool_and(t.id > coalesce(t.previous, 0)) AS ids_in_input_order
  FROM (SELECT id, lag(id) OVER (ORDER BY n) AS previous
          FROM awa.enqueue_many(array_fill('c'::text, ARRAY[25000]), NULL, 'em_chunks') WITH ORDINALITY AS x(id, n)) t;
SELECT count(*) AS ready, max(lane_seq) - min(lane_seq) + 1 AS lane_span,
       bool_and(e.job_id > coalesce(e.previous, 0)) AS lane_in_input_order
  FROM (SELECT job_id, lane_seq, lag(job_id) OVER (ORDER BY lane_seq) AS previous
          FROM awa.ready_entries WHERE queue = 'em_chunks') e;
SELECT count(*) AS runs FROM pg_temp.ready_runs WHERE queue = 'em_chunks';
-- Elements 1 and 20,001 share a unique key: 'error' fails the whole call (and
-- writes no job), 'skip' gives element 20,001 the id of element 1.
SELECT pg_temp.footprint() AS before_unique_chunks \gset
SELECT pg_temp.try($$SELECT count(*) FROM awa.enqueue_many(array_fill('u'::text, ARRAY[25000]), NULL, 'em_chunks_u',
    opts => (SELECT array_agg(CASE WHEN g IN (1, 20001) THEN '{"unique_key": "chunks-error"}'::jsonb END ORDER BY g)
               FROM generate_series(1, 25000) g))$$, false) AS duplicate_across_chunks;
-- The first chunks were written early (10,000 pending jobs), which created the
-- lane; its row is committed as it is inserted, so only the lane is left.
SELECT pg_temp.written(:'before_unique_chunks') AS written;
SELECT (array_agg(id ORDER BY n))[1] = (array_agg(id ORDER BY n))[20001] AS same_id, count(DISTINCT id) AS distinct_ids
  FROM awa.enqueue_many(array_fill('u'::text, ARRAY[25000]), NULL, 'em_chunks_u',
    opts => (SELECT array_agg(CASE WHEN g IN (1, 20001)
                                   THEN '{"unique_key": "chunks-skip", "unique": {"on_conflict": "skip"}}'::jsonb END
                              ORDER BY g)
               FROM generate_series(1, 25000) g)) WITH ORDINALITY AS x(id, n);
SELECT count(*) AS ready FROM awa.ready_entries WHERE queue = 'em_chunks_u';
