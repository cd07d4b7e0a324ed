-- ---------------------------------------------------------------------------
-- Periodic jobs (docs/periodic.md; src/pg/periodic_schedule.hpp)
-- ---------------------------------------------------------------------------
-- The first tick of `schedule` in `timezone` strictly after `after`.
CREATE FUNCTION awa.periodic_next(schedule text, timezone text DEFAULT 'UTC', after timestamptz DEFAULT now())
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'awa_periodic_next'
LANGUAGE C STABLE;

-- The last tick in [from_tick, until] (a schedule skips the ticks it missed to it).
CREATE FUNCTION awa._periodic_latest(schedule text, timezone text, from_tick timestamptz, until timestamptz)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'awa_internal_periodic_latest'
LANGUAGE C STABLE STRICT;

-- Raises what awa.enqueue would raise for these arguments; writes nothing.
CREATE FUNCTION awa._check_job(kind text, args jsonb, queue text, priority int, run_at timestamptz,
                               max_attempts int, opts jsonb)
RETURNS void
AS 'MODULE_PATHNAME', 'awa_internal_check_job'
LANGUAGE C STABLE;

-- The enqueue options of a schedule's tick: its opts' metadata with
-- metadata.periodic = {name, tick}, and its tags.
CREATE FUNCTION awa._periodic_job_opts(name text, opts jsonb, tick timestamptz)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT jsonb_strip_nulls(jsonb_build_object(
           'metadata', coalesce(opts -> 'metadata', '{}'::jsonb)
                       || jsonb_build_object('periodic', jsonb_build_object(
                              'name', name,
                              'tick', to_char(tick AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))),
           'tags', opts -> 'tags'))
$$;

-- Creates the schedule, or replaces the one of that name; returns its next
-- run. A schedule replaced by an identical one keeps its next run, so a
-- deploy that schedules at every start enqueues no tick twice and skips none.
CREATE FUNCTION awa.schedule_periodic(
    name     text,
    schedule text,
    kind     text,
    args     jsonb DEFAULT '{}',
    queue    text  DEFAULT 'default',
    priority int   DEFAULT 2,
    timezone text  DEFAULT 'UTC',
    opts     jsonb DEFAULT '{}')
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    p_name text := name;
    p_schedule text := schedule;
    p_timezone text := timezone;
    next_at timestamptz;
    existing awa.periodic_schedules;
    bad_key text;
BEGIN
    IF p_name IS NULL OR p_schedule IS NULL OR kind IS NULL THEN
        RAISE EXCEPTION '% must not be NULL', CASE WHEN p_name IS NULL THEN 'name' WHEN p_schedule IS NULL THEN 'schedule'
                                                   ELSE 'kind' END
            USING ERRCODE = 'null_value_not_allowed', HINT = 'Pass a name, a schedule and a job kind.';
    END IF;
    IF args IS NULL OR queue IS NULL OR priority IS NULL OR p_timezone IS NULL OR opts IS NULL THEN
        RAISE EXCEPTION '% must not be NULL', CASE WHEN args IS NULL THEN 'args' WHEN queue IS NULL THEN 'queue'
                                                   WHEN priority IS NULL THEN 'priority'
                                                   WHEN p_timezone IS NULL THEN 'timezone' ELSE 'opts' END
            USING ERRCODE = 'null_value_not_allowed', HINT = 'Leave the argument out to get its default.';
    END IF;
    IF length(p_name) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'name must be 1 to 200 characters' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Name the schedule, e.g. ''nightly-report''.';
    END IF;
    IF jsonb_typeof(opts) <> 'object' THEN
        RAISE EXCEPTION 'opts must be a JSON object' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass ''{}'', or keys among backfill, max_attempts, metadata and tags.';
    END IF;
    SELECT k INTO bad_key FROM jsonb_object_keys(opts) k
     WHERE k NOT IN ('backfill', 'max_attempts', 'metadata', 'tags') LIMIT 1;
    IF bad_key IS NOT NULL THEN
        RAISE EXCEPTION 'unknown option "%" in opts', bad_key USING ERRCODE = 'invalid_parameter_value',
            HINT = 'opts accepts backfill (boolean), max_attempts (integer), metadata (object) and tags (array).';
    END IF;
    IF opts ? 'backfill' AND jsonb_typeof(opts -> 'backfill') <> 'boolean' THEN
        RAISE EXCEPTION 'opts.backfill must be a boolean' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass ''{"backfill": true}'' to enqueue every missed tick.';
    END IF;
    IF opts ? 'max_attempts' AND (jsonb_typeof(opts -> 'max_attempts') <> 'number'
                                  OR (opts ->> 'max_attempts') !~ '^[0-9]{1,9}$') THEN
        RAISE EXCEPTION 'opts.max_attempts must be a positive integer' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass ''{"max_attempts": 5}''.';
    END IF;
    IF jsonb_typeof(opts -> 'metadata') = 'object' AND opts -> 'metadata' ? 'periodic' THEN
        RAISE EXCEPTION 'opts.metadata.periodic is set by awa' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Each job gets metadata.periodic = {name, tick}; use another key.';
    END IF;
    -- The schedule and the time zone (22023 with a hint), then the job as
    -- awa.enqueue would check it: a bad schedule writes nothing.
    PERFORM awa.periodic_next(p_schedule, p_timezone, now());
    PERFORM awa._check_job(kind, args, queue, priority, NULL, coalesce((opts ->> 'max_attempts')::int, (awa._job_defaults()).max_attempts),
                           awa._periodic_job_opts(p_name, opts, now()));

    -- Under the row's lock (the worker holds it while it enqueues a tick),
    -- the next run comes after the clock's current second (an `every`
    -- schedule starts on a whole second) and after the last tick enqueued, so
    -- a changed schedule never enqueues a tick again, however long this
    -- transaction has been open.
    SELECT * INTO existing FROM awa.periodic_schedules s WHERE s.name = p_name FOR UPDATE;
    next_at := awa.periodic_next(p_schedule, p_timezone,
                                 greatest(date_trunc('second', clock_timestamp()), existing.last_run_at));
    IF FOUND THEN
        IF existing.schedule = p_schedule AND existing.timezone = p_timezone THEN
            next_at := existing.next_run_at;
        END IF;
        UPDATE awa.periodic_schedules s
           SET schedule = p_schedule, timezone = p_timezone, kind = schedule_periodic.kind,
               args = schedule_periodic.args, queue = schedule_periodic.queue,
               priority = schedule_periodic.priority, opts = schedule_periodic.opts,
               next_run_at = next_at, updated_at = now()
         WHERE s.name = p_name;
    ELSE
        INSERT INTO awa.periodic_schedules (name, schedule, timezone, kind, args, queue, priority, opts, next_run_at)
        VALUES (p_name, p_schedule, p_timezone, kind, args, queue, priority, opts, next_at);
    END IF;
    RETURN next_at;
END
$$;

-- Removes the schedule; false when there was none. Jobs it enqueued stay.
CREATE FUNCTION awa.unschedule_periodic(name text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    IF name IS NULL THEN
        RAISE EXCEPTION 'name must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass the name given to awa.schedule_periodic.';
    END IF;
    DELETE FROM awa.periodic_schedules s WHERE s.name = unschedule_periodic.name;
    RETURN FOUND;
END
$$;

-- For monitoring (awa_monitor): each schedule's timing, without its job's
-- args and options.
CREATE FUNCTION awa.periodic_status()
RETURNS TABLE (name text, schedule text, timezone text, kind text, queue text, next_run_at timestamptz,
               last_run_at timestamptz, last_job_id bigint, last_error text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT s.name, s.schedule, s.timezone, s.kind, s.queue, s.next_run_at, s.last_run_at, s.last_job_id, s.last_error
  FROM awa.periodic_schedules s ORDER BY s.name
$$;

CREATE VIEW awa.periodic_jobs AS
SELECT s.name, s.schedule, s.timezone, s.kind, s.args, s.queue, s.priority, s.opts,
       s.next_run_at, s.last_run_at, s.last_job_id, s.last_error, s.created_at, s.updated_at
  FROM awa.periodic_schedules s;

-- The periodic step: for every schedule due now (rows another session holds
-- are skipped: it is enqueueing them), enqueue the latest due tick (missed
-- ones are skipped) or, with opts.backfill, every due tick (up to 100 per
-- schedule and step; the next step goes on), and move next_run_at past it,
-- in this transaction. Each schedule runs in a subtransaction: one that
-- fails (its queue's lock held too long, a time zone gone from the system)
-- keeps its next_run_at, records the error in last_error (cleared by its
-- next tick) and in a WARNING and the detail, and the others go on. The
-- commit is at least synchronous_commit = on, so a tick reported enqueued
-- survives a crash.
CREATE FUNCTION awa._periodic(OUT outcome text, OUT detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    now_at timestamptz := clock_timestamp();
    s awa.periodic_schedules;
    tick timestamptz;
    job bigint;
    n int;
    enqueued int := 0;
    schedules int := 0;
    failed jsonb := '{}';
    batch int := 100;
    message text;
    state text;
BEGIN
    FOR s IN SELECT * FROM awa.periodic_schedules p WHERE p.next_run_at <= now_at
              ORDER BY p.next_run_at FOR UPDATE SKIP LOCKED LOOP
        schedules := schedules + 1;
        BEGIN
            tick := s.next_run_at;
            IF NOT coalesce((s.opts ->> 'backfill')::boolean, false) THEN
                tick := awa._periodic_latest(s.schedule, s.timezone, tick, now_at);
            END IF;
            n := 0;
            LOOP
                job := awa.enqueue(s.kind, s.args, s.queue, s.priority, NULL,
                                   coalesce((s.opts ->> 'max_attempts')::int, (awa._job_defaults()).max_attempts),
                                   awa._periodic_job_opts(s.name, s.opts, tick));
                n := n + 1;
                UPDATE awa.periodic_schedules p
                   SET last_run_at = tick, last_job_id = job, last_error = NULL,
                       next_run_at = awa.periodic_next(s.schedule, s.timezone, tick)
                 WHERE p.name = s.name
                RETURNING p.next_run_at INTO tick;
                EXIT WHEN tick > now_at OR n >= batch;
            END LOOP;
            enqueued := enqueued + n;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
            failed := failed || jsonb_build_object(s.name, state || ': ' || message);
            UPDATE awa.periodic_schedules p SET last_error = state || ': ' || message WHERE p.name = s.name;
            RAISE WARNING 'awa: periodic job "%" was not enqueued: %', s.name, message
                USING HINT = 'The periodic step tries again at its next run; see awa.periodic_jobs.';
        END;
    END LOOP;
    -- As a synchronous commit would be: at least on (a session at
    -- remote_apply keeps it).
    IF enqueued > 0 AND current_setting('synchronous_commit') IN ('off', 'local', 'remote_write') THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    outcome := CASE WHEN enqueued > 0 THEN 'enqueued' WHEN failed <> '{}' THEN 'failed' ELSE 'nothing_due' END;
    detail := jsonb_build_object('schedules', schedules, 'jobs', enqueued);
    IF failed <> '{}' THEN
        detail := detail || jsonb_build_object('failed', failed);
    END IF;
END
$$;

