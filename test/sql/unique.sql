--
-- unique: unique jobs. awa.enqueue / awa.enqueue_many opts "unique"
-- (by_args, by_queue, period, states, on_conflict) and "unique_key"; the key's life through
-- claim, complete, retry, snooze, promote_due, cancel, fail, the DLQ and
-- awa.dlq_retry / awa.dlq_purge (awa.job_unique_claims).
-- Queues used here: uq_a, uq_b, uq_never, uq_batch, uq_life, uq_cmany, uq_keep,
-- uq_final, uq_cancel_run, uq_fail, uq_fail2, uq_sched, uq_retry, uq_dlq, uq_skip, uq_skip_never,
-- uq_skip_tx, uq_skip_many, uq_skip_many2, uq_skip_many3, uq_bad.
-- Kinds start with 'uq.' and unique_key values with 'uq-' (keys are global).
--
\set VERBOSITY default

\i test/sql/include/try.sql

\i test/sql/include/footprint.sql


-- Does the job hold a unique key (a row in awa.job_unique_claims)?
CREATE FUNCTION pg_temp.holds(id bigint) RETURNS boolean LANGUAGE sql AS $f$
SELECT EXISTS (SELECT FROM awa.job_unique_claims WHERE job_id = id)
$f$;

-- ---------------------------------------------------------------------------
-- Default scope: kind + args (by_args true), across queues (by_queue false).
-- ---------------------------------------------------------------------------
SELECT awa.enqueue('uq.args', '{"x": 1, "y": 2}', 'uq_a', opts => '{"unique": {}}') AS u1 \gset
SELECT pg_temp.holds(:u1) AS holds_key,
       (SELECT unique_states FROM awa.job_unique_claims WHERE job_id = :u1) AS unique_states,
       (SELECT unique_key IS NOT NULL FROM awa.ready_entries WHERE job_id = :u1) AS ready_row_has_key;
SELECT pg_temp.footprint() AS before \gset
SELECT label, pg_temp.try(call) AS outcome FROM (VALUES
    ('same queue',          $$SELECT awa.enqueue('uq.args', '{"x": 1, "y": 2}', 'uq_a', opts => '{"unique": {}}')$$),
    ('other key order',     $$SELECT awa.enqueue('uq.args', '{"y": 2, "x": 1}', 'uq_a', opts => '{"unique": {}}')$$),
    ('other queue',         $$SELECT awa.enqueue('uq.args', '{"x": 1, "y": 2}', 'uq_b', opts => '{"unique": {}}')$$),
    ('other priority',      $$SELECT awa.enqueue('uq.args', '{"x": 1, "y": 2}', 'uq_a', 4, opts => '{"unique": {}}')$$),
    ('explicit by_args',    $$SELECT awa.enqueue('uq.args', '{"x": 1, "y": 2}', 'uq_a', opts => '{"unique": {"by_args": true}}')$$),
    ('explicit by_queue false', $$SELECT awa.enqueue('uq.args', '{"x": 1, "y": 2}', 'uq_b', opts => '{"unique": {"by_queue": false}}')$$),
    ('with metadata',       $$SELECT awa.enqueue('uq.args', '{"x": 1, "y": 2}', 'uq_a', opts => '{"unique": {}, "metadata": {"m": 1}}')$$),
    ('scheduled duplicate', $$SELECT awa.enqueue('uq.args', '{"x": 1, "y": 2}', 'uq_a', run_at => now() + interval '1 hour', opts => '{"unique": {}}')$$)
) AS t(label, call);
SELECT pg_temp.written(:'before') AS written;
-- A new queue named only by a refused duplicate gets no lane.
SELECT pg_temp.try($$SELECT awa.enqueue('uq.args', '{"x": 1, "y": 2}', 'uq_never', opts => '{"unique": {}}')$$, false) AS outcome;
SELECT count(*) AS uq_never_lanes FROM awa.queue_lanes WHERE queue = 'uq_never';
-- Not duplicates: other args, other kind, or no unique option at all.
SELECT awa.enqueue('uq.args', '{"x": 1, "y": 3}', 'uq_a', opts => '{"unique": {}}') IS NOT NULL AS other_args,
       awa.enqueue('uq.args2', '{"x": 1, "y": 2}', 'uq_a', opts => '{"unique": {}}') IS NOT NULL AS other_kind,
       awa.enqueue('uq.args', '{"x": 1, "y": 2}', 'uq_a') IS NOT NULL AS not_unique,
       awa.enqueue('uq.args', '{"x": 1, "y": 2}', 'uq_a', opts => '{}') IS NOT NULL AS empty_opts;
SELECT pg_temp.written(:'before') AS written;

-- by_args false: the kind alone.
SELECT awa.enqueue('uq.kind', '{"a": 1}', 'uq_a', opts => '{"unique": {"by_args": false}}') IS NOT NULL AS first;
SELECT pg_temp.try($$SELECT awa.enqueue('uq.kind', '{"a": 2}', 'uq_b', opts => '{"unique": {"by_args": false}}')$$, false) AS other_args_other_queue;
SELECT awa.enqueue('uq.kind2', '{"a": 1}', 'uq_a', opts => '{"unique": {"by_args": false}}') IS NOT NULL AS other_kind;

-- by_queue true: kind + args + queue.
SELECT awa.enqueue('uq.queue', '{"a": 1}', 'uq_a', opts => '{"unique": {"by_queue": true}}') IS NOT NULL AS in_a,
       awa.enqueue('uq.queue', '{"a": 1}', 'uq_b', opts => '{"unique": {"by_queue": true}}') IS NOT NULL AS in_b;
SELECT pg_temp.try($$SELECT awa.enqueue('uq.queue', '{"a": 1}', 'uq_a', opts => '{"unique": {"by_queue": true}}')$$, false) AS again_in_a,
       pg_temp.try($$SELECT awa.enqueue('uq.queue', '{"a": 1}', 'uq_b', opts => '{"unique": {"by_queue": true}}')$$, false) AS again_in_b;
-- by_queue true, by_args false: kind + queue.
SELECT awa.enqueue('uq.kq', '{"a": 1}', 'uq_a', opts => '{"unique": {"by_queue": true, "by_args": false}}') IS NOT NULL AS in_a,
       awa.enqueue('uq.kq', '{"a": 2}', 'uq_b', opts => '{"unique": {"by_queue": true, "by_args": false}}') IS NOT NULL AS in_b;
SELECT pg_temp.try($$SELECT awa.enqueue('uq.kq', '{"a": 3}', 'uq_a', opts => '{"unique": {"by_queue": true, "by_args": false}}')$$, false) AS other_args_in_a;

-- unique_key: the whole identity, whatever the kind, args and queue.
SELECT awa.enqueue('uq.key', '{"a": 1}', 'uq_a', opts => '{"unique_key": "uq-key-1"}') AS k1 \gset
SELECT pg_temp.footprint() AS before_key \gset
SELECT pg_temp.try($$SELECT awa.enqueue('uq.other', '{"b": 2}', 'uq_b', 1, opts => '{"unique_key": "uq-key-1"}')$$) AS other_everything;
SELECT pg_temp.written(:'before_key') AS written;
SELECT awa.enqueue('uq.key', '{"a": 1}', 'uq_a', opts => '{"unique_key": "uq-key-2"}') IS NOT NULL AS other_key,
       awa.enqueue('uq.key', '{"a": 1}', 'uq_a', opts => '{"unique_key": "UQ-KEY-1"}') IS NOT NULL AS key_is_case_sensitive;
-- The key is not kept in the job's payload.
SELECT payload FROM awa.ready_entries WHERE job_id = :k1;

-- period: one key per period bucket.
SELECT awa.enqueue('uq.period', '{}', 'uq_a', opts => '{"unique": {"period": "100 years"}}') IS NOT NULL AS first;
SELECT pg_temp.try($$SELECT awa.enqueue('uq.period', '{}', 'uq_a', opts => '{"unique": {"period": "100 years"}}')$$, false) AS same_bucket;
SELECT awa.enqueue('uq.kp1', '{}', 'uq_a', opts => '{"unique_key": "uq-key-p", "unique": {"period": "100 years"}}') IS NOT NULL AS first_with_key;
SELECT pg_temp.try($$SELECT awa.enqueue('uq.kp2', '{}', 'uq_b', opts => '{"unique_key": "uq-key-p", "unique": {"period": "100 years"}}')$$, false) AS same_key_same_bucket;
-- A period too long for 64-bit microseconds is one bucket, not a wrapped
-- period (this one wrapped to 1 ms: a new bucket every millisecond).
SELECT awa.enqueue('uq.long', '{}', 'uq_a', opts => '{"unique": {"period": "7116800 months -1526290447384 microseconds"}}') IS NOT NULL AS first;
SELECT pg_sleep(0.05);
SELECT pg_temp.try($$SELECT awa.enqueue('uq.long', '{}', 'uq_a', opts => '{"unique": {"period": "7116800 months -1526290447384 microseconds"}}')$$, false) AS same_bucket;
-- ISO 8601 periods are accepted too, and name the same bucket as the SQL form.
SELECT awa.enqueue('uq.iso', '{}', 'uq_a', opts => '{"unique": {"period": "P100Y"}}') IS NOT NULL AS iso_first;
SELECT pg_temp.try($$SELECT awa.enqueue('uq.iso', '{}', 'uq_a', opts => '{"unique": {"period": "100 years"}}')$$, false) AS iso_same_bucket;
SELECT awa.enqueue('uq.short', '{}', 'uq_a', opts => '{"unique": {"period": "20 milliseconds"}}') IS NOT NULL AS first;
SELECT pg_sleep(0.05);
SELECT awa.enqueue('uq.short', '{}', 'uq_a', opts => '{"unique": {"period": "20 milliseconds"}}') IS NOT NULL AS next_bucket;

-- ---------------------------------------------------------------------------
-- Batches: one duplicate (inside the batch, or of an existing job) and the
-- whole batch writes nothing.
-- ---------------------------------------------------------------------------
SELECT pg_temp.footprint() AS before_batch \gset
SELECT label, pg_temp.try(call, false) AS outcome FROM (VALUES
    ('in-batch by args', $$SELECT awa.enqueue_many(ARRAY['uq.b1', 'uq.b2', 'uq.b1'],
                               ARRAY['{"n": 1}', '{}', '{"n": 1}']::jsonb[], 'uq_batch', NULL, NULL, 25,
                               ARRAY['{"unique": {}}', '{"unique": {}}', '{"unique": {}}']::jsonb[])$$),
    ('in-batch by key', $$SELECT awa.enqueue_many(ARRAY['uq.b3', 'uq.b4'], NULL, 'uq_batch', NULL, NULL, 25,
                               ARRAY['{"unique_key": "uq-batch"}', '{"unique_key": "uq-batch"}']::jsonb[])$$),
    ('in-batch with period', $$SELECT awa.enqueue_many(ARRAY['uq.b5', 'uq.b5'], NULL, 'uq_batch', NULL, NULL, 25,
                               ARRAY['{"unique": {"period": "1 millisecond"}}', '{"unique": {"period": "1 millisecond"}}']::jsonb[])$$),
    ('in-batch, one scheduled', $$SELECT awa.enqueue_many(ARRAY['uq.b6', 'uq.b6'], NULL, 'uq_batch', NULL,
                               ARRAY[now() + interval '1 hour', NULL], 25,
                               ARRAY['{"unique": {}}', '{"unique": {}}']::jsonb[])$$),
    ('vs existing', $$SELECT awa.enqueue_many(ARRAY['uq.b7', 'uq.args'],
                               ARRAY['{}', '{"x": 1, "y": 2}']::jsonb[], 'uq_batch', NULL, NULL, 25,
                               ARRAY['{"unique": {}}', '{"unique": {}}']::jsonb[])$$),
    ('vs existing key', $$SELECT awa.enqueue_many(ARRAY['uq.b8', 'uq.b9'], NULL, 'uq_batch', NULL, NULL, 25,
                               ARRAY[NULL, '{"unique_key": "uq-key-1"}']::jsonb[])$$)
) AS t(label, call);
SELECT pg_temp.written(:'before_batch') AS written;
SELECT count(*) AS uq_batch_lanes FROM awa.queue_lanes WHERE queue = 'uq_batch';
-- The same batches without the duplicate go in.
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['uq.b1', 'uq.b2', 'uq.b1'],
           ARRAY['{"n": 1}', '{}', '{"n": 2}']::jsonb[], 'uq_batch', NULL, NULL, 25,
           ARRAY['{"unique": {}}', '{"unique": {}}', '{"unique": {}}']::jsonb[]);
SELECT count(*) AS jobs FROM awa.enqueue_many(ARRAY['uq.b3', 'uq.b4', 'uq.b4'], NULL, 'uq_batch', NULL, NULL, 25,
           ARRAY['{"unique_key": "uq-batch"}', NULL, '{}']::jsonb[]);
SELECT pg_temp.written(:'before_batch') AS written;
SELECT kind, args, unique_key IS NOT NULL AS has_key, pg_temp.holds(job_id) AS holds_key
  FROM awa.ready_entries WHERE queue = 'uq_batch' ORDER BY lane_seq;

-- ---------------------------------------------------------------------------
-- The key's life: held while available, scheduled, retryable or running;
-- released at completed, failed, cancelled, dlq unless states include them.
-- ---------------------------------------------------------------------------
CREATE FUNCTION pg_temp.dup(kind text, q text DEFAULT 'uq_life') RETURNS text LANGUAGE sql AS $f$
SELECT pg_temp.try(format($$SELECT awa.enqueue(%L, '{}', %L, opts => '{"unique": {}}')$$, kind, q), false)
$f$;

-- Running, then completed: released.
SELECT awa.enqueue('uq.l.complete', '{}', 'uq_life', opts => '{"unique": {}}') AS lc \gset
SELECT pg_temp.dup('uq.l.complete') AS while_available;
SELECT job_id = :lc AS is_lc, run_lease AS lc_l, receipt_id AS lc_r FROM awa.claim('uq_life') \gset
SELECT :'is_lc' AS is_lc, pg_temp.dup('uq.l.complete') AS while_running, pg_temp.holds(:lc) AS holds_key;
SELECT awa.complete(:lc, :lc_l, :lc_r) AS completed;
SELECT pg_temp.holds(:lc) AS holds_key;
SELECT pg_temp.dup('uq.l.complete') AS after_complete;
-- (that enqueue succeeded: its job now holds the key)
SELECT count(*) AS holders FROM awa.job_unique_claims u JOIN awa.ready_entries e USING (job_id)
 WHERE e.kind = 'uq.l.complete';

-- Completed via complete_many: released too.
SELECT awa.enqueue('uq.l.cmany', '{}', 'uq_cmany', opts => '{"unique": {}}') AS lm \gset
SELECT job_id AS lm_j, run_lease AS lm_l, receipt_id AS lm_r FROM awa.claim('uq_cmany') \gset
SELECT accepted FROM awa.complete_many(ARRAY[:lm_j]::bigint[], ARRAY[:lm_l]::bigint[], ARRAY[:lm_r]::bigint[]);
SELECT pg_temp.holds(:lm) AS holds_key, pg_temp.dup('uq.l.cmany', 'uq_cmany') AS after_complete_many;

-- states with completed: kept after completion.
SELECT awa.enqueue('uq.l.keep', '{}', 'uq_keep',
                   opts => '{"unique": {"states": ["available", "scheduled", "retryable", "running", "completed"]}}') AS lk \gset
SELECT (SELECT unique_states FROM awa.job_unique_claims WHERE job_id = :lk) AS unique_states;
SELECT job_id = :lk AS is_lk, run_lease AS lk_l, receipt_id AS lk_r FROM awa.claim('uq_keep') \gset
SELECT :'is_lk' AS is_lk, awa.complete(:lk, :lk_l, :lk_r) AS completed;
SELECT pg_temp.holds(:lk) AS holds_key, awa.get_job(:lk) ->> 'state' AS state;
SELECT pg_temp.footprint() AS before_kept \gset
SELECT pg_temp.try($$SELECT awa.enqueue('uq.l.keep', '{}', 'uq_keep',
                   opts => '{"unique": {"states": ["available", "scheduled", "retryable", "running", "completed"]}}')$$) AS after_complete;
-- The key identity does not depend on the states: a default-states job is
-- blocked by it too.
SELECT pg_temp.dup('uq.l.keep', 'uq_keep') AS default_states;
SELECT pg_temp.written(:'before_kept') AS written;

-- Cancel while available, while scheduled, while running: released.
SELECT awa.enqueue('uq.l.cancel_a', '{}', 'uq_final', opts => '{"unique": {}}') AS ca \gset
SELECT awa.enqueue('uq.l.cancel_s', '{}', 'uq_final', run_at => now() + interval '1 hour', opts => '{"unique": {}}') AS cs \gset
SELECT pg_temp.dup('uq.l.cancel_a', 'uq_final') AS available, pg_temp.dup('uq.l.cancel_s', 'uq_final') AS scheduled;
SELECT awa.cancel(:ca) AS cancel_available, awa.cancel(:cs) AS cancel_scheduled;
SELECT pg_temp.holds(:ca) AS ca_holds, pg_temp.holds(:cs) AS cs_holds;
SELECT pg_temp.dup('uq.l.cancel_a', 'uq_final') AS after_cancel_available,
       pg_temp.dup('uq.l.cancel_s', 'uq_final') AS after_cancel_scheduled;

SELECT awa.enqueue('uq.l.cancel_r', '{}', 'uq_cancel_run', opts => '{"unique": {}}') AS cr \gset
SELECT run_lease AS cr_l, receipt_id AS cr_r FROM awa.claim('uq_cancel_run') \gset
SELECT awa.cancel(:cr) AS cancel_running, pg_temp.holds(:cr) AS holds_key;
SELECT pg_temp.dup('uq.l.cancel_r', 'uq_cancel_run') AS after_cancel_running;
SELECT awa.complete(:cr, :cr_l, :cr_r) AS worker_complete_accepted;

-- states with cancelled: kept after cancel.
SELECT awa.enqueue('uq.l.cancel_keep', '{}', 'uq_final',
                   opts => '{"unique": {"states": ["cancelled", "running", "retryable", "scheduled", "available"]}}') AS ck \gset
SELECT awa.cancel(:ck) AS cancelled, pg_temp.holds(:ck) AS holds_key, pg_temp.dup('uq.l.cancel_keep', 'uq_final') AS after_cancel;

-- Fail (DLQ off): released; with failed in states: kept.
SELECT awa.enqueue('uq.l.fail', '{}', 'uq_fail', opts => '{"unique": {}}') AS lf \gset
SELECT run_lease AS lf_l, receipt_id AS lf_r FROM awa.claim('uq_fail') \gset
SELECT awa.fail(:lf, :lf_l, :lf_r, 'broken') AS outcome, pg_temp.holds(:lf) AS holds_key;
SELECT pg_temp.dup('uq.l.fail', 'uq_fail') AS after_fail;
SELECT awa.enqueue('uq.l.fail_keep', '{}', 'uq_fail2', max_attempts => 1,
                   opts => '{"unique": {"states": ["available", "scheduled", "retryable", "running", "failed"]}}') AS lfk \gset
SELECT run_lease AS lfk_l, receipt_id AS lfk_r FROM awa.claim('uq_fail2') \gset
SELECT awa.retry(:lfk, :lfk_l, :lfk_r, 'exhausted') AS outcome, pg_temp.holds(:lfk) AS holds_key;
SELECT pg_temp.dup('uq.l.fail_keep', 'uq_fail2') AS after_exhausted;

-- Scheduled (future run_at) blocks; retry and snooze keep the key; so does
-- promotion back to available.
SELECT awa.enqueue('uq.l.sched', '{}', 'uq_sched', run_at => now() + interval '1 hour', opts => '{"unique": {}}') AS ls \gset
SELECT awa.get_job(:ls) ->> 'state' AS state, pg_temp.dup('uq.l.sched', 'uq_sched') AS while_scheduled;
SELECT awa.enqueue('uq.l.retry', '{}', 'uq_retry', opts => '{"unique": {}}') AS lr \gset
SELECT run_lease AS lr_l, receipt_id AS lr_r FROM awa.claim('uq_retry') \gset
SELECT awa.retry(:lr, :lr_l, :lr_r, 'again', '0') AS outcome;
SELECT awa.get_job(:lr) ->> 'state' AS state, pg_temp.holds(:lr) AS holds_key,
       pg_temp.dup('uq.l.retry', 'uq_retry') AS while_retryable;
SELECT awa.promote_due() >= 1 AS promoted;
SELECT awa.get_job(:lr) ->> 'state' AS state, pg_temp.holds(:lr) AS holds_key,
       pg_temp.dup('uq.l.retry', 'uq_retry') AS after_promotion;
SELECT run_lease AS lr_l2, receipt_id AS lr_r2 FROM awa.claim('uq_retry') \gset
SELECT awa.snooze(:lr, :lr_l2, :lr_r2, '1 hour') AS outcome;
SELECT awa.get_job(:lr) ->> 'state' AS state, pg_temp.holds(:lr) AS holds_key,
       pg_temp.dup('uq.l.retry', 'uq_retry') AS while_snoozed;

-- A rolled-back enqueue takes no key.
BEGIN;
SELECT awa.enqueue('uq.l.tx', '{}', 'uq_life', opts => '{"unique_key": "uq-tx"}') IS NOT NULL AS enqueued_inside;
SELECT pg_temp.try($$SELECT awa.enqueue('uq.l.tx2', '{}', 'uq_life', opts => '{"unique_key": "uq-tx"}')$$, false) AS dup_inside;
ROLLBACK;
SELECT awa.enqueue('uq.l.tx', '{}', 'uq_life', opts => '{"unique_key": "uq-tx"}') IS NOT NULL AS after_rollback;

-- ---------------------------------------------------------------------------
-- DLQ: released at dlq (default states), kept with dlq in states; purge
-- releases it; dlq_retry takes it again, and when another job holds it
-- raises 23505 and nothing moves.
-- ---------------------------------------------------------------------------
SELECT awa.configure_queue('uq_dlq', dlq_enabled => true);
SELECT awa.enqueue('uq.d', '{}', 'uq_dlq', opts => '{"unique_key": "uq-dlq"}') AS d1 \gset
SELECT awa.enqueue('uq.d3', '{}', 'uq_dlq') AS d3 \gset
CREATE TEMP TABLE uq_dlq_claims AS SELECT job_id, run_lease, receipt_id FROM awa.claim('uq_dlq', 2);
SELECT job_id = :d1 AS is_d1, awa.fail(job_id, run_lease, receipt_id, 'dead') AS outcome, pg_temp.holds(job_id) AS holds_key
  FROM uq_dlq_claims ORDER BY job_id;
-- Another job takes the key.
SELECT awa.enqueue('uq.d', '{}', 'uq_dlq', opts => '{"unique_key": "uq-dlq"}') AS d2 \gset
SELECT pg_temp.holds(:d2) AS d2_holds;
-- dlq_retry of d3 (no key) and d1 (key taken): 23505, neither moves.
SELECT pg_temp.footprint() AS before_dlq_retry \gset
SELECT pg_temp.try(format('SELECT awa.dlq_retry(ARRAY[%s, %s]::bigint[])', :d3, :d1)) AS dlq_retry;
SELECT pg_temp.written(:'before_dlq_retry') AS written;
SELECT awa.get_job(:d1) ->> 'state' AS d1_state, awa.get_job(:d3) ->> 'state' AS d3_state,
       awa.get_job(:d2) ->> 'state' AS d2_state,
       (SELECT count(*) FROM awa.dlq WHERE job_id IN (:d1, :d3)) AS in_dlq;
SELECT * FROM awa.queue_counts('uq_dlq');
SELECT * FROM awa.queue_counts_exact('uq_dlq');
-- Once the other job completes, dlq_retry succeeds and takes the key back.
SELECT job_id = :d2 AS is_d2, run_lease AS d2_l, receipt_id AS d2_r FROM awa.claim('uq_dlq') \gset
SELECT :'is_d2' AS is_d2, awa.complete(:d2, :d2_l, :d2_r) AS completed;
SELECT awa.dlq_retry(ARRAY[:d1, :d3]::bigint[]) AS retried, pg_temp.holds(:d1) AS d1_holds;
SELECT pg_temp.try($$SELECT awa.enqueue('uq.d', '{}', 'uq_dlq', opts => '{"unique_key": "uq-dlq"}')$$, false) AS dup_after_retry;
SELECT * FROM awa.queue_counts('uq_dlq');
SELECT * FROM awa.queue_counts_exact('uq_dlq');

-- dlq in states: kept while dead-lettered, released by dlq_purge.
SELECT awa.enqueue('uq.dk', '{}', 'uq_dlq', opts => '{"unique": {"states": ["available", "scheduled", "retryable", "running", "dlq"]}}') AS dk \gset
-- (d1 and d3 are first in line: claim and complete them)
SELECT job_id IN (:d1, :d3) AS retried_job, awa.complete(job_id, run_lease, receipt_id) AS completed
  FROM awa.claim('uq_dlq', 2) ORDER BY job_id;
SELECT job_id = :dk AS is_dk, run_lease AS dk_l, receipt_id AS dk_r FROM awa.claim('uq_dlq') \gset
SELECT :'is_dk' AS is_dk, awa.fail(:dk, :dk_l, :dk_r, 'dead') AS outcome, pg_temp.holds(:dk) AS holds_key;
SELECT pg_temp.dup('uq.dk', 'uq_dlq') AS while_in_dlq;
SELECT awa.dlq_purge(ARRAY[:dk]::bigint[]) AS purged, pg_temp.holds(:dk) AS holds_key;
SELECT pg_temp.dup('uq.dk', 'uq_dlq') AS after_purge;

-- ---------------------------------------------------------------------------
-- on_conflict "skip": a duplicate returns the holder's job_id, raises nothing
-- and writes nothing; the caller's transaction goes on. "error" (the default)
-- is the 23505 above.
-- ---------------------------------------------------------------------------
-- queue_counts of one queue as text, to compare before and after.
CREATE FUNCTION pg_temp.counts(q text) RETURNS text LANGUAGE sql AS $f$
SELECT row(c.*)::text FROM awa.queue_counts(q) c
$f$;
CREATE TEMP TABLE uq_orders (id int);
SELECT awa.enqueue('uq.skip', '{"o": 1}', 'uq_skip', opts => '{"unique": {}}') AS sk \gset
SELECT awa.enqueue('uq.skip.s', '{}', 'uq_skip', run_at => now() + interval '1 hour',
                   opts => '{"unique_key": "uq-skip-s"}') AS sks \gset
SELECT pg_temp.footprint() AS before_skip \gset
SELECT pg_temp.counts('uq_skip') AS counts_before_skip \gset
BEGIN;
INSERT INTO uq_orders VALUES (1);
-- The holder was enqueued with the default on_conflict: on_conflict is not
-- part of the key. Same queue, another queue, a new queue (no lane is made),
-- scheduled, with metadata: each returns the holder's id.
SELECT awa.enqueue('uq.skip', '{"o": 1}', 'uq_skip', opts => '{"unique": {"on_conflict": "skip"}}') = :sk AS same_queue,
       awa.enqueue('uq.skip', '{"o": 1}', 'uq_skip_never', 1, opts => '{"unique": {"on_conflict": "skip"}}') = :sk AS new_queue,
       awa.enqueue('uq.skip', '{"o": 1}', 'uq_skip', run_at => now() + interval '1 day',
                   opts => '{"unique": {"on_conflict": "skip"}, "metadata": {"m": 2}}') = :sk AS scheduled_duplicate,
       awa.enqueue('uq.other', '{}', 'uq_skip', opts => '{"unique_key": "uq-skip-s", "unique": {"on_conflict": "skip"}}') = :sks AS scheduled_holder;
INSERT INTO uq_orders VALUES (2);
-- The skip drew a job id of its own, used up like a 23505's.
SELECT currval('awa.job_id_seq') > :sk AS drew_an_id;
INSERT INTO uq_orders VALUES (3);
COMMIT;
SELECT array_agg(id ORDER BY id) AS orders FROM uq_orders;
SELECT pg_temp.written(:'before_skip') AS written,
       pg_temp.counts('uq_skip') = :'counts_before_skip' AS counts_unchanged,
       (SELECT count(*) FROM awa.queue_lanes WHERE queue = 'uq_skip_never') AS uq_skip_never_lanes,
       awa.get_job(:sk) -> 'metadata' AS holder_metadata;
-- A holder enqueued earlier in the same transaction (by another call).
BEGIN;
SELECT awa.enqueue('uq.skip.tx', '{}', 'uq_skip_tx', opts => '{"unique": {"on_conflict": "skip"}}') AS sktx \gset
SELECT awa.enqueue('uq.skip.tx', '{}', 'uq_skip_tx', opts => '{"unique": {"on_conflict": "skip"}}') = :sktx AS same_transaction_holder,
       (SELECT count(*) FROM awa.job_unique_claims WHERE job_id = :sktx) AS keys_held;
ROLLBACK;
-- "error", explicit, is the default: 23505, nothing written.
SELECT pg_temp.try($$SELECT awa.enqueue('uq.skip', '{"o": 1}', 'uq_skip', opts => '{"unique": {"on_conflict": "error"}}')$$, false) AS explicit_error;
SELECT pg_temp.written(:'before_skip') AS written;
-- A key no job holds: skip enqueues a new job, which holds the key.
SELECT awa.enqueue('uq.skip', '{"o": 2}', 'uq_skip', opts => '{"unique": {"on_conflict": "skip"}}') AS sk2 \gset
-- The skips above took no lane position: it follows the holder's without a hole.
SELECT :sk2 > :sk AS new_id, pg_temp.holds(:sk2) AS holds_key, awa.get_job(:sk2) ->> 'state' AS state,
       (SELECT lane_seq FROM awa.ready_entries WHERE job_id = :sk2) -
       (SELECT lane_seq FROM awa.ready_entries WHERE job_id = :sk) AS lane_seq_step;
-- ... and blocks a default ("error") duplicate like any unique job.
SELECT pg_temp.try($$SELECT awa.enqueue('uq.skip', '{"o": 2}', 'uq_skip', opts => '{"unique": {}}')$$, false) AS dup_of_skip_job;
-- The holder left the key's states (completed): skip enqueues a new job.
SELECT job_id = :sk AS is_sk, run_lease AS sk_l, receipt_id AS sk_r FROM awa.claim('uq_skip') \gset
SELECT :'is_sk' AS is_sk, awa.complete(:sk, :sk_l, :sk_r) AS completed, pg_temp.holds(:sk) AS sk_holds;
SELECT awa.enqueue('uq.skip', '{"o": 1}', 'uq_skip', opts => '{"unique": {"on_conflict": "skip"}}') AS sk3 \gset
SELECT :sk3 > :sk2 AS new_id, pg_temp.holds(:sk3) AS holds_key, awa.get_job(:sk3) ->> 'state' AS state;
-- A holder in a final state its states list (completed): that job's id.
SELECT awa.enqueue('uq.l.keep', '{}', 'uq_keep', opts => '{"unique": {"on_conflict": "skip"}}') = :lk AS completed_holder;

-- enqueue_many: one id per element, in input order; a skipped element gets
-- the holder's id: an earlier element of the same call (elements 1 and 2),
-- or an existing job (element 3). Only the new jobs are written.
SELECT pg_temp.footprint() AS before_skip_many \gset
SELECT array_agg(id ORDER BY n) AS ids FROM awa.enqueue_many(
           ARRAY['uq.m', 'uq.m', 'uq.skip', 'uq.m2', 'uq.m3', 'uq.m3'],
           ARRAY['{"n": 1}', '{"n": 1}', '{"o": 1}', '{}', '{}', '{}']::jsonb[], 'uq_skip_many', NULL,
           ARRAY[NULL, NULL, NULL, NULL, now() + interval '1 hour', NULL]::timestamptz[], 25,
           ARRAY['{"unique": {"on_conflict": "skip"}}', '{"unique": {"on_conflict": "skip"}}',
                 '{"unique": {"on_conflict": "skip"}}', NULL,
                 '{"unique": {}}', '{"unique": {"on_conflict": "skip"}}']::jsonb[]) WITH ORDINALITY AS t(id, n) \gset
SELECT x[1] = x[2] AS in_call_duplicate, x[3] = :sk3 AS existing_holder,
       x[1] <> x[4] AND x[4] <> x[5] AND x[1] <> x[5] AS three_new, x[5] = x[6] AS scheduled_in_call_holder,
       x[1] < x[4] AND x[4] < x[5] AS new_ids_in_input_order
  FROM (SELECT :'ids'::bigint[] AS x) t;
SELECT pg_temp.written(:'before_skip_many') AS written;
SELECT kind, args, pg_temp.holds(job_id) AS holds_key FROM awa.ready_entries WHERE queue = 'uq_skip_many' ORDER BY lane_seq;
SELECT kind, state, pg_temp.holds(job_id) AS holds_key FROM awa.deferred_jobs WHERE queue = 'uq_skip_many';
SELECT available, scheduled FROM awa.queue_counts('uq_skip_many');
-- on_conflict is per element: a default element after a skip element of
-- the same key raises 23505, and the whole call writes nothing.
SELECT pg_temp.footprint() AS before_skip_many2 \gset
SELECT pg_temp.try($$SELECT awa.enqueue_many(ARRAY['uq.m4', 'uq.m4'], NULL, 'uq_skip_many2', NULL, NULL, 25,
                       ARRAY['{"unique": {"on_conflict": "skip"}}', '{"unique": {}}']::jsonb[])$$, false) AS skip_then_error;
SELECT pg_temp.written(:'before_skip_many2') AS written;
-- Every element skipped: the call writes nothing at all (no lane for a new queue).
SELECT array_agg(id = :sk3) AS all_holder FROM awa.enqueue_many(ARRAY['uq.skip', 'uq.skip'],
           ARRAY['{"o": 1}', '{"o": 1}']::jsonb[], 'uq_skip_many3', NULL, NULL, 25,
           ARRAY['{"unique": {"on_conflict": "skip"}}', '{"unique": {"on_conflict": "skip"}}']::jsonb[]) AS id;
SELECT pg_temp.written(:'before_skip_many2') AS written;

-- ---------------------------------------------------------------------------
-- Invalid unique options: 22023 with a hint; nothing written.
-- ---------------------------------------------------------------------------
SELECT pg_temp.footprint() AS before_bad \gset
SELECT opts, pg_temp.try(format($$SELECT awa.enqueue('uq.bad', '{}', 'uq_bad', opts => %L)$$, opts)) AS outcome
  FROM (VALUES
    ('{"unique": true}'),
    ('{"unique": null}'),
    ('{"unique": []}'),
    ('{"unique": {"by_args": true, "extra": 1}}'),
    ('{"unique": {"states": ["available", "scheduled", "retryable"]}}'),
    ('{"unique": {"states": []}}'),
    ('{"unique": {"states": ["available", "scheduled", "retryable", "running", "finished"]}}'),
    ('{"unique": {"states": ["available", "scheduled", "retryable", "Running"]}}'),
    ('{"unique": {"states": ["available", "scheduled", "retryable", "running", 5]}}'),
    ('{"unique": {"states": "available"}}'),
    ('{"unique": {"by_args": "true"}}'),
    ('{"unique": {"by_args": 1}}'),
    ('{"unique": {"by_args": null}}'),
    ('{"unique": {"by_queue": "false"}}'),
    ('{"unique": {"period": 3600}}'),
    ('{"unique": {"period": null}}'),
    ('{"unique": {"period": "0 seconds"}}'),
    ('{"unique": {"period": "-1 hour"}}'),
    ('{"unique_key": ""}'),
    ('{"unique_key": 42}'),
    ('{"unique_key": null}'),
    ('{"unique_key": "uq-x", "unique": {"by_args": false}}'),
    ('{"unique_key": "uq-x", "unique": {"by_args": true}}'),
    ('{"unique_key": "uq-x", "unique": {"by_queue": true}}'),
    ('{"unique": {"on_conflict": "ignore"}}'),
    ('{"unique": {"on_conflict": "SKIP"}}'),
    ('{"unique": {"on_conflict": ""}}'),
    ('{"unique": {"on_conflict": null}}'),
    ('{"unique": {"on_conflict": true}}'),
    ('{"on_conflict": "skip"}'),
    ('{"unique_key": "uq-x", "on_conflict": "skip"}')
) AS t(opts);
-- A period that is not an interval at all: 22023 with a hint, like the other
-- invalid periods.
SELECT split_part(pg_temp.try($$SELECT awa.enqueue('uq.bad', '{}', 'uq_bad', opts => '{"unique": {"period": "garbage"}}')$$, false), ':', 1) AS sqlstate,
       pg_temp.try($$SELECT awa.enqueue('uq.bad', '{}', 'uq_bad', opts => '{"unique": {"period": "garbage"}}')$$, false) LIKE '%| HINT: (present)' AS has_hint;
-- In a batch, the element is named.
SELECT pg_temp.try($$SELECT awa.enqueue_many(ARRAY['uq.bad', 'uq.bad'], NULL, 'uq_bad', NULL, NULL, 25,
                       ARRAY['{"unique": {}}', '{"unique": {"states": ["running"]}}']::jsonb[])$$, false) AS batch;
SELECT pg_temp.try($$SELECT awa.enqueue_many(ARRAY['uq.bad', 'uq.bad'], NULL, 'uq_bad', NULL, NULL, 25,
                       ARRAY['{"unique": {"on_conflict": "skip"}}', '{"unique": {"on_conflict": "replace"}}']::jsonb[])$$) AS batch_on_conflict;
SELECT pg_temp.written(:'before_bad') AS written;
-- Valid: every state listed, in any order, repeated.
SELECT awa.enqueue('uq.ok1', '{}', 'uq_bad', opts => '{"unique": {"states": ["dlq", "cancelled", "failed", "completed", "running", "retryable", "scheduled", "available"]}}') IS NOT NULL AS all_states,
       awa.enqueue('uq.ok2', '{}', 'uq_bad', opts => '{"unique": {"states": ["running", "running", "available", "scheduled", "retryable"]}}') IS NOT NULL AS repeated,
       awa.enqueue('uq.ok3', '{}', 'uq_bad', opts => '{"unique_key": "uq-ok3", "unique": {"states": ["available", "scheduled", "retryable", "running", "completed"], "period": "1 day"}}') IS NOT NULL AS key_with_states_period,
       awa.enqueue('uq.ok4', '{}', 'uq_bad', opts => '{"unique_key": "uq-ok4", "unique": {"on_conflict": "skip", "period": "1 day", "states": ["running", "available", "scheduled", "retryable", "failed"]}}') IS NOT NULL AS key_with_everything;
SELECT e.kind, u.unique_states FROM awa.job_unique_claims u JOIN awa.ready_entries e USING (job_id)
 WHERE e.queue = 'uq_bad' ORDER BY e.kind;

-- Every queue of this file: counters equal the exact pass.
SELECT c.queue, row(c.*)::text = row(e.*)::text AS counters_exact
  FROM awa.queue_counts() c JOIN awa.queue_counts_exact() e USING (queue)
 WHERE c.queue LIKE 'uq\_%'
 ORDER BY c.queue;
