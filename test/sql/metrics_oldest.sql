-- metrics_oldest: the oldest available job of awa.queue_metrics, kept per lane
-- in shared memory (src/pg/counters.hpp, docs/monitoring.md): exact after each
-- event that changes a lane's head, and kept without a walk where the event
-- knows the new head (awa._lane_heads shows what is kept: a lane head is
-- "unknown" until awa.queue_metrics walks it, "empty", or "known").
SET client_min_messages = warning;
SELECT date_trunc('second', now()) AS o0 \gset
SELECT set_config('mo.o0', :'o0', false) \g /dev/null

-- What is kept for lane 2 of a queue, as an age before o0.
CREATE FUNCTION pg_temp.kept(q text, p int DEFAULT 2) RETURNS text LANGUAGE sql AS $$
    SELECT h.state || coalesce(' ' || (current_setting('mo.o0')::timestamptz - h.run_at)::text, '')
      FROM awa._lane_heads(q) h WHERE h.priority = p $$;
-- What queue_metrics reports, as an age before o0, and whether it equals the
-- SQL walk (awa._oldest_available_at, computed afresh).
CREATE FUNCTION pg_temp.oldest(q text) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce((current_setting('mo.o0')::timestamptz - m.oldest_available_at)::text, 'none')
           || CASE WHEN m.oldest_available_at IS NOT DISTINCT FROM awa._oldest_available_at(q) THEN '' ELSE ' (walk differs)' END
      FROM awa.queue_metrics() m WHERE m.queue = q $$;

-- Enqueue: three jobs of lane 2, due 3 h, 2 h and 1 h ago. A queue new to
-- shared memory is unknown until queue_metrics walks it once; then kept.
SELECT awa.enqueue('mo', '{}', 'mo_a', 2, :'o0'::timestamptz - interval '3 hours') AS a3 \gset
SELECT awa.enqueue('mo', '{}', 'mo_a', 2, :'o0'::timestamptz - interval '2 hours') AS a2 \gset
SELECT awa.enqueue('mo', '{}', 'mo_a', 2, :'o0'::timestamptz - interval '1 hour') AS a1 \gset
SELECT pg_temp.kept('mo_a') AS kept_before;
SELECT pg_temp.oldest('mo_a') AS oldest;
SELECT pg_temp.kept('mo_a') AS kept_after, pg_temp.kept('mo_a', 1) AS lane_1;

-- A claim of the head learns the next head from the rows it reads: kept,
-- no walk needed.
SELECT count(*) AS claimed FROM awa.claim('mo_a', 1);
SELECT pg_temp.kept('mo_a') AS kept;
SELECT pg_temp.oldest('mo_a') AS oldest;

-- A claim that rolls back changes nothing. Inside its transaction the
-- claimed job is not available to that transaction (as in the SQL walk);
-- other sessions see it available until the claim commits.
BEGIN;
SELECT count(*) AS claimed FROM awa.claim('mo_a', 1);
SELECT pg_temp.oldest('mo_a') AS oldest_in_claim;
ROLLBACK;
SELECT pg_temp.kept('mo_a') AS kept;
SELECT pg_temp.oldest('mo_a') AS oldest;

-- A cancel of a job behind the head keeps the head; a cancel of the head
-- makes it unknown, and queue_metrics walks it once.
SELECT awa.enqueue('mo', '{}', 'mo_a', 2, :'o0'::timestamptz - interval '30 minutes') AS a0 \gset
SELECT awa.cancel(:a1) AS cancelled_behind;
SELECT pg_temp.kept('mo_a') AS kept;
SELECT awa.cancel(:a2) AS cancelled_head;
SELECT pg_temp.kept('mo_a') AS kept;
SELECT pg_temp.oldest('mo_a') AS oldest;
SELECT pg_temp.kept('mo_a') AS kept;

-- An enqueue into a lane known empty is kept: an older job in lane 4 is the
-- queue's oldest.
SELECT awa.enqueue('mo', '{}', 'mo_a', 4, :'o0'::timestamptz - interval '4 hours') \g /dev/null
SELECT pg_temp.kept('mo_a', 4) AS lane_4;
SELECT pg_temp.oldest('mo_a') AS oldest;

-- Claiming the last job of a lane leaves it known empty.
SELECT count(*) AS claimed FROM awa.claim('mo_a', 10);
SELECT count(*) AS claimed FROM awa.claim('mo_a', 10);
SELECT pg_temp.kept('mo_a') AS lane_2, pg_temp.kept('mo_a', 4) AS lane_4;
SELECT available, oldest_available_at, oldest_available_age_seconds FROM awa.queue_metrics() WHERE queue = 'mo_a';

-- Promotion: a scheduled job, due in a second, promoted into an empty lane,
-- is the head with its own run_at; promoted behind a lane's head, it is not
-- (jobs are taken in claim order: the head is the next one taken).
SELECT awa.enqueue('mo', '{}', 'mo_p', 2, clock_timestamp() + interval '1 second') AS p1 \gset
SELECT awa.get_job(:p1) ->> 'run_at' AS p1_at \gset
SELECT pg_temp.oldest('mo_p') AS oldest_scheduled;
SELECT pg_sleep(1.2);
SELECT awa.promote_due(100) >= 1 AS promoted;
SELECT h.state, h.run_at = :'p1_at'::timestamptz AS exact FROM awa._lane_heads('mo_p') h WHERE h.priority = 2;
SELECT m.oldest_available_at = :'p1_at'::timestamptz AS exact FROM awa.queue_metrics() m WHERE m.queue = 'mo_p';
SELECT awa.enqueue('mo', '{}', 'mo_p', 3, clock_timestamp() + interval '1 second') AS p2 \gset
SELECT awa.get_job(:p2) ->> 'run_at' AS p2_at \gset
SELECT pg_sleep(1.2);
-- A job of lane 3 enqueued now, then the older scheduled one promoted behind it.
SELECT awa.enqueue('mo', '{}', 'mo_p', 3) AS p3 \gset
SELECT awa.get_job(:p3) ->> 'run_at' AS p3_at \gset
SELECT awa.promote_due(100) >= 1 AS promoted;
SELECT h.state, h.run_at = :'p3_at'::timestamptz AS head_is_p3 FROM awa._lane_heads('mo_p') h WHERE h.priority = 3;
SELECT m.oldest_available_at = :'p1_at'::timestamptz AS exact FROM awa.queue_metrics() m WHERE m.queue = 'mo_p';
SELECT count(*) AS claimed FROM awa.claim('mo_p', 1);  -- lane 2's p1
SELECT m.oldest_available_at = :'p3_at'::timestamptz AS exact FROM awa.queue_metrics() m WHERE m.queue = 'mo_p';
SELECT count(*) AS claimed FROM awa.claim('mo_p', 1);  -- p3
SELECT m.oldest_available_at = :'p2_at'::timestamptz AS exact FROM awa.queue_metrics() m WHERE m.queue = 'mo_p';

-- Rescue: an expired attempt is closed and its job retried (scheduled); the
-- job behind it stays the head. Then the retry, made due, is the head again
-- once the other job is claimed.
SELECT awa.enqueue('mo', '{}', 'mo_r', 2, :'o0'::timestamptz - interval '2 hours', max_attempts => 3) \g /dev/null
SELECT awa.enqueue('mo', '{}', 'mo_r', 2, :'o0'::timestamptz - interval '1 hour') \g /dev/null
SELECT count(*) AS claimed FROM awa.claim('mo_r', 1, deadline => '1 millisecond');
SELECT pg_temp.kept('mo_r') AS kept;
SELECT pg_sleep(0.01);
SELECT outcome FROM awa.run_maintenance('rescue');
SELECT available, retryable FROM awa.queue_counts('mo_r');
SELECT pg_temp.oldest('mo_r') AS oldest;

-- Pause: the jobs stay available, and so does the oldest.
SELECT awa.pause_queue('mo_r') \g /dev/null
SELECT paused, pg_temp.oldest('mo_r') AS oldest FROM awa.queue_metrics() WHERE queue = 'mo_r';
SELECT awa.resume_queue('mo_r') \g /dev/null

-- A move recorded only as a count (awa._count_move, as the SQL admin
-- functions record theirs) makes every lane of its queue unknown.
SELECT pg_temp.kept('mo_a', 4) AS before;
BEGIN;
SELECT awa._count_move('mo_a', 'available', 'cancelled', 1) \g /dev/null
SELECT awa._count_move('mo_a', 'cancelled', 'available', 1) \g /dev/null
COMMIT;
SELECT pg_temp.kept('mo_a', 4) AS after;
SELECT pg_temp.oldest('mo_a') AS oldest;

-- awa.queue_metrics releases the ring children its walks lock when it
-- returns, not at the end of the caller's transaction: a monitoring session
-- left idle in its transaction holds no ring slot (docs/maintenance.md,
-- "Held"). A cancel of a lane's head makes that head unknown: the next call
-- walks the lane (it kept the ring children it read locked until the end).
SELECT awa.enqueue('k', queue => 'mo_locks') AS mo_head \gset
SELECT awa.enqueue('k', queue => 'mo_locks') IS NOT NULL AS second;
SELECT count(*) > 0 AS some FROM awa.queue_metrics();
SELECT awa.cancel(:mo_head);
BEGIN;
SELECT available, oldest_available_at IS NOT NULL AS has_oldest FROM awa.queue_metrics() WHERE queue = 'mo_locks';
SELECT count(*) AS ring_children_locked FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
 WHERE l.pid = pg_backend_pid() AND c.relnamespace = 'awa'::regnamespace AND c.relname ~ '_[0-9]+$';
COMMIT;
