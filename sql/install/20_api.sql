-- ---------------------------------------------------------------------------
-- SQL API. The hot path (enqueue, claim, complete, heartbeat, promotion,
-- counts) is C++. SECURITY DEFINER: callers need only EXECUTE. The C code runs
-- every statement under a pinned search path (pg_catalog only), so no name in
-- what it runs can resolve to a caller's object (src/pg/spi_plans.hpp); the
-- SQL and PL/pgSQL functions pin theirs with a SET clause.
--
-- No statement awa runs is JIT-compiled (docs/architecture.md §9): the C
-- code's statements are planned with JIT off by awa's planner hook (no SET
-- clause on the hot C functions: a GUC save and restore per call); every SQL
-- and PL/pgSQL function has SET jit = off. None of those is on a hot path, and
-- their queries are small: compiling one (planner estimates over unanalysed
-- ring children can ask for it) costs 100-250 ms for a query of a millisecond,
-- and a prune would hold its slot lock meanwhile.
-- ---------------------------------------------------------------------------
-- A job that does not set them gets priority 2 and max_attempts 25: the
-- constants of src/core/validate.hpp, which SQL reads as awa._job_defaults().
-- The parameter defaults below (and schedule_periodic's priority) state them
-- as literals, so that \df and the docs show them; test/sql/enqueue.sql checks
-- each against the function. (A default calling the function would be
-- evaluated by the caller, so a role without EXECUTE on it would be refused
-- that function instead of enqueue.)
CREATE FUNCTION awa._job_defaults(OUT priority int, OUT max_attempts int)
RETURNS record
AS 'MODULE_PATHNAME', 'awa_internal_job_defaults'
LANGUAGE C IMMUTABLE;

CREATE FUNCTION awa.enqueue(
    kind         text,
    args         jsonb       DEFAULT '{}',
    queue        text        DEFAULT 'default',
    priority     int         DEFAULT 2,
    run_at       timestamptz DEFAULT NULL,
    max_attempts int         DEFAULT 25,
    opts         jsonb       DEFAULT '{}')
RETURNS bigint
AS 'MODULE_PATHNAME', 'awa_enqueue'
LANGUAGE C VOLATILE SECURITY DEFINER;

CREATE FUNCTION awa.enqueue_many(
    kinds        text[],
    args         jsonb[],
    queue        text          DEFAULT 'default',
    priorities   int[]         DEFAULT NULL,
    run_at       timestamptz[] DEFAULT NULL,
    max_attempts int           DEFAULT 25,
    opts         jsonb[]       DEFAULT NULL)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'awa_enqueue_many'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 100;

-- deadline and wait are awa.duration: an interval or a number of seconds
-- (14_duration.sql).
-- deadline NULL: the queue's default_deadline, else 5 minutes.
-- wait NULL or 0: look once; else sleep until a job is available or wait has
-- passed (woken by commits, never polling; docs/sql-reference.md).
-- async_commit NULL: awa.async_claim_commit decides.
-- The worker calls' rows are named composite types, not OUT parameters: at
-- every executor start PostgreSQL rebuilds an OUT-parameter function's row
-- descriptor from its pg_proc arrays (build_function_result_tupdesc_t, about
-- 9,700 instructions per call, 4 % of a batch-1 job's claim and completion),
-- while a named type's comes from the type cache (docs/architecture.md §9).
CREATE TYPE awa.claimed_job AS (
    job_id       bigint,
    run_lease    bigint,
    receipt_id   bigint,
    kind         text,
    args         jsonb,
    queue        text,
    priority     int,
    attempt      int,
    max_attempts int,
    deadline_at  timestamptz,
    created_at   timestamptz,
    metadata     jsonb);

CREATE TYPE awa.completion AS (job_id bigint, accepted boolean);

CREATE FUNCTION awa.claim(
    queue        text,
    max_jobs     int          DEFAULT 1,
    deadline     awa.duration DEFAULT NULL,
    wait         awa.duration DEFAULT NULL,
    async_commit boolean      DEFAULT NULL)
RETURNS SETOF awa.claimed_job
AS 'MODULE_PATHNAME', 'awa_claim'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 10;

CREATE FUNCTION awa.complete(job_id bigint, run_lease bigint, receipt_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'awa_complete'
LANGUAGE C VOLATILE SECURITY DEFINER;

CREATE FUNCTION awa.complete_many(job_ids bigint[], run_leases bigint[], receipt_ids bigint[])
RETURNS SETOF awa.completion
AS 'MODULE_PATHNAME', 'awa_complete_many'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 10;

CREATE FUNCTION awa.heartbeat(job_id bigint, run_lease bigint, receipt_id bigint, progress jsonb DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'awa_heartbeat'
LANGUAGE C VOLATILE SECURITY DEFINER;

CREATE FUNCTION awa.heartbeat_many(job_ids bigint[], run_leases bigint[], receipt_ids bigint[],
                                   progress jsonb[] DEFAULT NULL)
RETURNS TABLE (job_id bigint, run_lease bigint, status text)
AS 'MODULE_PATHNAME', 'awa_heartbeat_many'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 10;

-- Waits until every commit that returned before the call is flushed to disk
-- (and confirmed by the synchronous standbys, if any); returns that LSN.
-- For a worker after an asynchronous claim, before a side effect it cannot
-- undo (docs/sql-reference.md).
CREATE FUNCTION awa.await_durable()
RETURNS pg_lsn
AS 'MODULE_PATHNAME', 'awa_await_durable'
LANGUAGE C VOLATILE;

CREATE FUNCTION awa.promote_due(max_jobs int DEFAULT 4096)
RETURNS int
AS 'MODULE_PATHNAME', 'awa_promote_due'
LANGUAGE C VOLATILE SECURITY DEFINER;

CREATE FUNCTION awa.queue_counts(queue text DEFAULT NULL)
RETURNS TABLE (queue text, available bigint, scheduled bigint, retryable bigint, running bigint,
               completed bigint, failed bigint, cancelled bigint, dlq bigint)
AS 'MODULE_PATHNAME', 'awa_queue_counts'
LANGUAGE C VOLATILE SECURITY DEFINER ROWS 10;

-- Recounts every queue of this database with one exact pass (the counters
-- are rebuilt like this after a restart on first use); true when they are
-- trusted afterwards.
CREATE FUNCTION awa.rebuild_counters()
RETURNS boolean
AS 'MODULE_PATHNAME', 'awa_rebuild_counters'
LANGUAGE C VOLATILE SECURITY DEFINER;

-- Every lane of a queue (every lane of the database when NULL) with its two
-- cursors, each read under its page's share lock: the cursors are rewritten
-- in place (03_lanes.sql), so a plain SELECT of awa.queue_lanes may see one
-- half-written.
CREATE FUNCTION awa.lane_cursors(p_queue text DEFAULT NULL,
                                 OUT queue text, OUT priority smallint, OUT lane_id bigint,
                                 OUT enqueue_cursor bigint, OUT claim_cursor bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'awa_lane_cursors'
LANGUAGE C STABLE SECURITY DEFINER;

-- Read-only view of every lane and its two cursors.
CREATE VIEW awa.lanes AS
SELECT l.queue, l.priority, l.lane_id, l.enqueue_cursor, l.claim_cursor
FROM awa.lane_cursors() l;

-- ---------------------------------------------------------------------------
