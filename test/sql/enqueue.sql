--
-- enqueue: awa.enqueue(kind, args, queue, priority, run_at, max_attempts, opts)
-- Queues used here: default, enq_explicit, enq_named, enq_time, enq_future_only,
-- enq_rollback, enq_rollback_new, enq_mb.
--
\set VERBOSITY default

\i test/sql/include/try.sql
\i test/sql/include/ready_runs.sql

\i test/sql/include/footprint.sql

SELECT clock_timestamp() AS t0 \gset

-- ---------------------------------------------------------------------------
-- Defaults: queue 'default', priority 2, args '{}', max_attempts 25, due now.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('enq.default') AS id1 \gset
SELECT job_id = :id1 AS same_id, queue, priority, kind, args, max_attempts, run_lease, attempt,
       lane_seq, ready_generation, ready_slot, payload, unique_key, attempted_at,
       run_at = created_at AS run_at_is_created_at,
       created_at BETWEEN :'t0' AND now() AS created_in_window
  FROM awa.ready_entries WHERE job_id = :id1;
-- Lane position 1, in the current queue slot, enqueued into the generation
-- that holds it (origin_generation NULL: its own; no prune carried it).
SELECT queue, priority, lane_seq, ready_generation, ready_slot, origin_generation IS NULL AS origin_is_own
  FROM awa.ready_entries WHERE queue = 'default';
SELECT queue, priority, enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'default';
SELECT count(*) AS deferred FROM awa.deferred_jobs WHERE job_id = :id1;

-- The defaults are written once, in src/core (awa._job_defaults()); the
-- parameter defaults of enqueue, enqueue_many and schedule_periodic state
-- them and must agree.
SELECT d.priority, d.max_attempts,
       (SELECT (priority, max_attempts) = (d.priority, d.max_attempts) FROM awa.ready_entries WHERE job_id = :id1)
           AS job_got_them,
       pg_get_function_arg_default('awa.enqueue(text, jsonb, text, int, timestamptz, int, jsonb)'::regprocedure, 4)
           = d.priority::text AS enqueue_priority,
       pg_get_function_arg_default('awa.enqueue(text, jsonb, text, int, timestamptz, int, jsonb)'::regprocedure, 6)
           = d.max_attempts::text AS enqueue_max_attempts,
       pg_get_function_arg_default('awa.enqueue_many(text[], jsonb[], text, int[], timestamptz[], int, jsonb[])'::regprocedure, 6)
           = d.max_attempts::text AS enqueue_many_max_attempts,
       pg_get_function_arg_default('awa.schedule_periodic(text, text, text, jsonb, text, int, text, jsonb)'::regprocedure, 6)
           = d.priority::text AS schedule_periodic_priority
  FROM awa._job_defaults() d;

-- A second call gets the next id and the next lane_seq of the same lane.
SELECT awa.enqueue('enq.default', '{"n": 2}') = :id1 + 1 AS next_id;
SELECT lane_seq, kind, args FROM awa.ready_entries WHERE queue = 'default' ORDER BY lane_seq;
SELECT queue, priority, enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'default';

-- ---------------------------------------------------------------------------
-- Explicit arguments, positional and named; metadata and tags in opts.
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('enq.explicit', '{"order": 42, "nested": {"a": [1, 2]}}', 'enq_explicit', 1, NULL, 3,
                   '{"metadata": {"tenant": "acme"}, "tags": ["billing", "eu"]}') AS id2 \gset
SELECT job_id = :id2 AS same_id, queue, priority, kind, args, max_attempts, lane_seq, payload
  FROM awa.ready_entries WHERE job_id = :id2;

SELECT awa.enqueue(kind => 'enq.named', queue => 'enq_named', priority => 4, max_attempts => 1000,
                   args => '{"x": true}', opts => '{"tags": []}') AS id3 \gset
SELECT job_id = :id3 AS same_id, queue, priority, kind, args, max_attempts, payload
  FROM awa.ready_entries WHERE job_id = :id3;

-- opts NULL and opts '{}' both mean "no options": nothing is stored.
SELECT awa.enqueue('enq.named', queue => 'enq_named', priority => 4, opts => NULL) AS id4 \gset
SELECT awa.enqueue('enq.named', queue => 'enq_named', priority => 4, opts => '{}') AS id5 \gset
-- metadata alone, and exactly 20 tags, are accepted.
SELECT awa.enqueue('enq.named', queue => 'enq_named', priority => 4,
                   opts => '{"metadata": {}}') AS id6 \gset
SELECT awa.enqueue('enq.named', queue => 'enq_named', priority => 4,
                   opts => (SELECT jsonb_build_object('tags', jsonb_agg('t' || i ORDER BY i))
                              FROM generate_series(1, 20) i)) AS id7 \gset
SELECT job_id - :id3 AS job, lane_seq, payload IS NULL AS no_payload,
       jsonb_array_length(payload -> 'tags') AS tags, payload -> 'metadata' AS metadata
  FROM awa.ready_entries WHERE queue = 'enq_named' ORDER BY lane_seq;
SELECT queue, priority, enqueue_cursor, claim_cursor FROM awa.lanes
 WHERE queue IN ('enq_explicit', 'enq_named') ORDER BY queue, priority;

-- Boundaries: priority 1 and 4, max_attempts 1 and 1000, 200-character names
-- (characters, not bytes: 200 two-byte characters are accepted).
SELECT awa.enqueue(repeat('k', 200), queue => repeat('q', 200), priority => 1, max_attempts => 1) IS NOT NULL AS ok;
SELECT awa.enqueue(repeat('é', 200), queue => 'enq_mb') IS NOT NULL AS ok;
SELECT length(kind), octet_length(kind), length(queue), priority, max_attempts
  FROM awa.ready_entries WHERE queue IN (repeat('q', 200), 'enq_mb') ORDER BY queue;

-- The claim hands out the metadata stored with the job, '{}' without it.
SELECT job_id = :id2 AS same_id, kind, args, priority, max_attempts, metadata
  FROM awa.claim('enq_explicit');
SELECT job_id - :id3 AS job, metadata FROM awa.claim('enq_named', 10);

-- ---------------------------------------------------------------------------
-- run_at: in the future -> deferred_jobs (state 'scheduled'), not claimable;
-- in the past (or now) -> ready at once.
-- ---------------------------------------------------------------------------
SELECT now() + interval '1 hour' AS future_at, now() - interval '1 day' AS past_at \gset
SELECT awa.enqueue('enq.future', '{"f": 1}', 'enq_time', 3, :'future_at', 7,
                   '{"metadata": {"when": "later"}}') AS fut \gset
SELECT job_id = :fut AS same_id, queue, priority, kind, args, state, run_at = :'future_at' AS run_at_kept,
       run_lease, attempt, max_attempts, created_at BETWEEN :'t0' AND now() AS created_in_window,
       finalized_at, payload
  FROM awa.deferred_jobs WHERE job_id = :fut;
SELECT count(*) AS ready_rows FROM awa.ready_entries WHERE job_id = :fut;
-- A deferred job creates its lane (empty: its cursors do not move until promotion).
SELECT count(*) AS lanes FROM awa.queue_lanes WHERE queue = 'enq_time';
SELECT count(*) AS claimed FROM awa.claim('enq_time', 10);

SELECT awa.enqueue('enq.past', '{"p": 1}', 'enq_time', 3, :'past_at') AS past \gset
SELECT awa.enqueue('enq.minus_infinity', '{}', 'enq_time', 3, '-infinity') AS minf \gset
SELECT awa.enqueue('enq.infinity', '{}', 'enq_time', 3, 'infinity') AS inf \gset
SELECT job_id = :past AS is_past, kind, lane_seq,
       CASE WHEN job_id = :past THEN run_at = :'past_at' ELSE run_at = '-infinity' END AS run_at_kept,
       run_at < created_at AS run_at_before_created
  FROM awa.ready_entries WHERE queue = 'enq_time' ORDER BY lane_seq;
SELECT job_id = :fut AS is_future, job_id = :inf AS is_infinity, state,
       run_at = CASE WHEN job_id = :inf THEN 'infinity' ELSE :'future_at'::timestamptz END AS run_at_kept
  FROM awa.deferred_jobs WHERE queue = 'enq_time' ORDER BY job_id;
-- Only the due jobs are claimed, in enqueue order; the future ones stay put.
SELECT job_id = :past AS is_past, job_id = :minf AS is_minus_infinity, kind, priority, run_lease, attempt
  FROM awa.claim('enq_time', 10);
SELECT count(*) AS claimed FROM awa.claim('enq_time', 10);
SELECT count(*) AS still_deferred FROM awa.deferred_jobs WHERE queue = 'enq_time';

-- A queue that only has future jobs has a lane but nothing to claim.
SELECT awa.enqueue('enq.future', queue => 'enq_future_only', run_at => now() + interval '1 minute') IS NOT NULL AS ok;
SELECT count(*) AS claimed FROM awa.claim('enq_future_only');
SELECT count(*) AS lanes FROM awa.queue_lanes WHERE queue = 'enq_future_only';

-- ---------------------------------------------------------------------------
-- A rolled-back enqueue leaves nothing behind.
-- ---------------------------------------------------------------------------
-- On a new queue: not even its lane.
BEGIN;
SELECT awa.enqueue('enq.rollback', queue => 'enq_rollback_new') AS rb1 \gset
-- Until its transaction commits, a due job waits in the producer's memory: no
-- ready row, no lane, no lane position (docs/architecture.md §2).
SELECT (SELECT count(*) FROM awa.ready_entries WHERE job_id = :rb1) AS ready_inside,
       (SELECT count(*) FROM awa.queue_lanes WHERE queue = 'enq_rollback_new') AS lanes_inside;
ROLLBACK;
SELECT (SELECT count(*) FROM awa.ready_entries WHERE job_id = :rb1) AS ready,
       (SELECT count(*) FROM awa.ready_tombstones WHERE queue = 'enq_rollback_new') AS tombstones,
       (SELECT count(*) FROM awa.queue_lanes WHERE queue = 'enq_rollback_new') AS lanes,
       (SELECT count(*) FROM awa.claim('enq_rollback_new')) AS claimed;

-- One that wrote its job early (it read it back) created the lane then; the
-- lane's row is committed as it is inserted (no other producer waits for
-- this transaction), so it stays, empty, with the rolled-back position as a
-- gap that the next producer's job follows and claims pass.
BEGIN;
SELECT awa.enqueue('enq.rollback', queue => 'enq_rollback_early') AS rb3 \gset
SELECT awa.get_job(:rb3) ->> 'state' AS written_early;
ROLLBACK;
SELECT (SELECT count(*) FROM awa.queue_lanes WHERE queue = 'enq_rollback_early') AS lanes,
       (SELECT enqueue_cursor FROM awa.lanes WHERE queue = 'enq_rollback_early') AS enqueue_cursor,
       (SELECT count(*) FROM awa.claim('enq_rollback_early')) AS claimed;
SELECT awa.enqueue('enq.after', queue => 'enq_rollback_early') IS NOT NULL AS enqueued;
SELECT kind, (SELECT enqueue_cursor FROM awa.lanes WHERE queue = 'enq_rollback_early') AS enqueue_cursor
  FROM awa.claim('enq_rollback_early');

-- At most 16 lanes per transaction are committed at insert; the rest are
-- inserted in the transaction and roll back with it (a rolled-back bulk load
-- into thousands of new queues or keys leaves 16 rows, not thousands).
BEGIN;
SELECT count(awa.enqueue('enq.cap', queue => 'enq_cap_' || g)) AS enqueued FROM generate_series(1, 20) g;
SELECT awa._flush_enqueues() AS written_early;
ROLLBACK;
SELECT count(*) AS lanes_left FROM awa.queue_lanes WHERE queue LIKE 'enq\_cap\_%';

-- A transaction that holds ShareUpdateExclusiveLock on awa.queue_lanes itself
-- (ANALYZE of it) still has its new lane committed at insert, and keeps the
-- lock: the creator gives back only its own acquisition.
BEGIN;
ANALYZE awa.queue_lanes;
SELECT awa.enqueue('enq.sue', queue => 'enq_sue') IS NOT NULL AS enqueued, awa._flush_enqueues() AS written_early;
SELECT count(*) AS sue_held FROM pg_locks
 WHERE pid = pg_backend_pid() AND relation = 'awa.queue_lanes'::regclass AND mode = 'ShareUpdateExclusiveLock';
ROLLBACK;
SELECT count(*) AS lanes_left FROM awa.queue_lanes WHERE queue = 'enq_sue';

-- On an existing lane: no row and no lane_seq taken (positions
-- are taken at commit): the next job gets the next one, no gap.
SELECT awa.enqueue('enq.kept', queue => 'enq_rollback') AS kept1 \gset
BEGIN;
SELECT awa.enqueue('enq.rollback', queue => 'enq_rollback') AS rb2 \gset
ROLLBACK;
BEGIN;
SELECT awa.enqueue('enq.rollback', queue => 'enq_rollback', run_at => now() + interval '1 day') AS rb3 \gset
ROLLBACK;
SELECT awa.enqueue('enq.kept', queue => 'enq_rollback') AS kept2 \gset
SELECT (SELECT count(*) FROM awa.ready_entries WHERE job_id IN (:rb2, :rb3)) AS ready,
       (SELECT count(*) FROM awa.deferred_jobs WHERE job_id IN (:rb2, :rb3)) AS deferred;
SELECT job_id = :kept1 AS first, job_id = :kept2 AS second, lane_seq
  FROM awa.ready_entries WHERE queue = 'enq_rollback' ORDER BY lane_seq;
SELECT first_lane_seq, next_lane_seq FROM pg_temp.ready_runs WHERE queue = 'enq_rollback' ORDER BY 1;
SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'enq_rollback';
SELECT job_id = :kept1 AS first, job_id = :kept2 AS second FROM awa.claim('enq_rollback');
SELECT job_id = :kept1 AS first, job_id = :kept2 AS second FROM awa.claim('enq_rollback');
SELECT count(*) AS claimed FROM awa.claim('enq_rollback');

-- A transaction that reads its own job back (get_job, cancel, claim,
-- queue_counts_exact, run_maintenance) writes it then, and holds its lane
-- position until it ends: rolled back, that position is a gap that claims
-- prove dead, and the next job gets the one after.
SELECT awa.enqueue('enq.kept', queue => 'enq_rollback_read') AS kept3 \gset
BEGIN;
SELECT awa.enqueue('enq.rollback', queue => 'enq_rollback_read') AS rb4 \gset
SELECT awa.get_job(:rb4)->>'state' AS read_back;
SELECT count(*) AS ready_inside FROM awa.ready_entries WHERE job_id = :rb4;
ROLLBACK;
SELECT awa.enqueue('enq.kept', queue => 'enq_rollback_read') AS kept4 \gset
SELECT job_id = :kept3 AS first, job_id = :kept4 AS second, lane_seq
  FROM awa.ready_entries WHERE queue = 'enq_rollback_read' ORDER BY lane_seq;
SELECT count(*) AS claimed FROM awa.claim('enq_rollback_read', 10);

-- A job enqueued before a savepoint and written inside it (read back there)
-- survives the savepoint's rollback: it is written again at commit. (The
-- first version lost it.) Jobs of the rolled-back savepoint are gone.
BEGIN;
SELECT awa.enqueue('enq.outer', queue => 'enq_savepoint') AS sp_outer \gset
SAVEPOINT s1;
SELECT awa.enqueue('enq.inner', queue => 'enq_savepoint') AS sp_inner \gset
SELECT awa.get_job(:sp_outer)->>'state' AS outer_read_back, awa.get_job(:sp_inner)->>'state' AS inner_read_back;
ROLLBACK TO SAVEPOINT s1;
SELECT count(*) AS ready_after_rollback_to FROM awa.ready_entries WHERE queue = 'enq_savepoint';
SAVEPOINT s2;
SELECT awa.enqueue('enq.inner2', queue => 'enq_savepoint') AS sp_inner2 \gset
SELECT awa.get_job(:sp_outer)->>'state' AS outer_again;
RELEASE SAVEPOINT s2;
COMMIT;
SELECT kind, job_id = :sp_outer AS is_outer, job_id = :sp_inner2 AS is_inner2
  FROM awa.claim('enq_savepoint', 10) ORDER BY job_id;
SELECT awa.get_job(:sp_inner) AS inner_job;

-- Many enqueue calls of one transaction into one lane: one run of consecutive
-- lane positions, reserved together at commit.
BEGIN;
SELECT count(awa.enqueue('enq.many_calls', queue => 'enq_calls')) AS enqueued FROM generate_series(1, 50);
COMMIT;
SELECT count(*) AS ready, (SELECT count(*) FROM pg_temp.ready_runs WHERE queue = 'enq_calls') AS runs
  FROM awa.ready_entries WHERE queue = 'enq_calls';

-- ---------------------------------------------------------------------------
-- Invalid input: the SQLSTATE, message and hint, and nothing written.
-- ---------------------------------------------------------------------------
-- Shown once as a plain error (message and HINT with VERBOSITY default).
SELECT awa.enqueue(NULL);
SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '{"unique": true}');

SELECT pg_temp.footprint() AS before \gset
SELECT call, pg_temp.try(call) AS outcome FROM (VALUES
    ($$SELECT awa.enqueue(NULL, queue => 'enq_bad')$$),
    ($$SELECT awa.enqueue(NULL::text, NULL, NULL, NULL, NULL, NULL, NULL)$$),
    ($$SELECT awa.enqueue('', queue => 'enq_bad')$$),
    ($$SELECT awa.enqueue(repeat('k', 201), queue => 'enq_bad')$$),
    ($$SELECT awa.enqueue(repeat('é', 201), queue => 'enq_bad')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => NULL)$$),
    ($$SELECT awa.enqueue('enq.bad', queue => '')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => repeat('q', 201))$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', priority => 0)$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', priority => 5)$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', priority => -1)$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', priority => NULL)$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', max_attempts => 0)$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', max_attempts => 1001)$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', max_attempts => NULL)$$),
    ($$SELECT awa.enqueue('enq.bad', '[]', 'enq_bad')$$),
    ($$SELECT awa.enqueue('enq.bad', '1', 'enq_bad')$$),
    ($$SELECT awa.enqueue('enq.bad', '"text"', 'enq_bad')$$),
    ($$SELECT awa.enqueue('enq.bad', 'null'::jsonb, 'enq_bad')$$),
    ($$SELECT awa.enqueue('enq.bad', NULL, 'enq_bad')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '[]')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '"metadata"')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => 'null'::jsonb)$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '{"priority": 1}')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '{"metadata": {}, "extra": 1}')$$),
    -- The key is named, cut to at most 64 bytes on a character boundary (65 bytes
    -- would split an é).
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => jsonb_build_object('a' || repeat('é', 40), 1))$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '{"unique": true}')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '{"metadata": []}')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '{"metadata": "m"}')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '{"metadata": null}')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '{"tags": "billing"}')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '{"tags": {"a": "b"}}')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '{"tags": [1]}')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '{"tags": ["ok", null]}')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '{"tags": [""]}')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', opts => '{"tags": [["nested"]]}')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad',
                          opts => (SELECT jsonb_build_object('tags', jsonb_agg('t' || i))
                                     FROM generate_series(1, 21) i))$$),
    -- future run_at does not bypass validation
    ($$SELECT awa.enqueue('enq.bad', '[]', 'enq_bad', run_at => now() + interval '1 day')$$),
    ($$SELECT awa.enqueue('enq.bad', queue => 'enq_bad', priority => 9, run_at => now() + interval '1 day')$$)
) AS t(call);
SELECT pg_temp.footprint() = :'before'::jsonb AS nothing_written,
       (SELECT count(*) FROM awa.queue_lanes WHERE queue = 'enq_bad') AS enq_bad_lanes;

-- A lane is a row of awa.queue_lanes, not a relation: schema awa holds no
-- per-lane object (it held two sequences per lane before).
SELECT count(*) AS lane_relations
  FROM pg_class c
 WHERE c.relnamespace = 'awa'::regnamespace AND c.relname LIKE 'lane\_%';

-- A scheduled job's lane, like a due job's, is made when its transaction
-- commits (so a new queue's first producer holds up no other); rolled back,
-- there is no lane at all.
BEGIN;
SELECT awa.enqueue('enq.later', queue => 'enq_sched_lane', run_at => now() + interval '1 hour') IS NOT NULL AS ok;
SELECT count(*) AS lanes_inside FROM awa.queue_lanes WHERE queue = 'enq_sched_lane';
ROLLBACK;
SELECT count(*) AS lanes_after_rollback FROM awa.queue_lanes WHERE queue = 'enq_sched_lane';
BEGIN;
SELECT awa.enqueue('enq.later', queue => 'enq_sched_lane', run_at => now() + interval '1 hour') IS NOT NULL AS ok;
SAVEPOINT s;
SELECT awa.enqueue('enq.later', queue => 'enq_sched_lane', priority => 4, run_at => now() + interval '1 hour') IS NOT NULL AS ok;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT priority, (SELECT count(*) FROM awa.deferred_jobs d WHERE d.queue = l.queue) AS deferred
  FROM awa.queue_lanes l WHERE queue = 'enq_sched_lane' ORDER BY priority;
