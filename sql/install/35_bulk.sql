-- ---------------------------------------------------------------------------
-- Acting on many jobs at once: bulk operations by filter
-- (docs/operations-ui.md, "Acting on many jobs").
-- ---------------------------------------------------------------------------

-- One row per bulk operation: its action, its filter (awa.list_jobs's
-- arguments by name) and its progress. A step acts on the next page of
-- matching jobs below next_before and moves next_before past them in the
-- same transaction, so a step that fails or a crash changes nothing and the
-- next step does the same page again.
CREATE TABLE awa.bulk_operations (
    op_id       bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    action      text        NOT NULL CHECK (action IN ('cancel', 'dlq_retry', 'dlq_purge', 'move', 'set_priority', 'retry')),
    filter      jsonb       NOT NULL,
    -- The target of a move (to_queue) or of set_priority (to_priority); NULL
    -- for the other actions.
    to_queue    text,
    to_priority smallint,
    state       text        NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done', 'cancelled')),
    -- The keyset cursor: the jobs left are those below it. Set at the start
    -- past the newest job that matched then, so jobs enqueued later are not
    -- touched.
    next_before bigint      NOT NULL,
    acted       bigint      NOT NULL DEFAULT 0,  -- jobs the action changed
    passed      bigint      NOT NULL DEFAULT 0,  -- matched, but the action found nothing to change
    steps       integer     NOT NULL DEFAULT 0,
    created_by  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at timestamptz,
    CHECK ((action = 'move') = (to_queue IS NOT NULL) AND (action = 'set_priority') = (to_priority IS NOT NULL))
);

-- The filter of a bulk operation, checked as awa.list_jobs checks it (one
-- definition: it calls list_jobs for one row), with what the action allows.
CREATE FUNCTION awa._bulk_filter(action text, queue text, state text, kind text, tag text, args_contains jsonb,
                                 enqueued_after timestamptz, enqueued_before timestamptz, metadata_contains jsonb)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    IF action IS NULL THEN
        RAISE EXCEPTION 'action must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass cancel, retry, dlq_retry, dlq_purge, move or set_priority.';
    END IF;
    IF action NOT IN ('cancel', 'dlq_retry', 'dlq_purge', 'move', 'set_priority', 'retry') THEN
        RAISE EXCEPTION 'unknown bulk action "%"', left(action, 64)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass cancel, retry, dlq_retry, dlq_purge, move or set_priority.';
    END IF;
    IF action IN ('dlq_retry', 'dlq_purge') AND state IS DISTINCT FROM 'dlq' AND state IS NOT NULL THEN
        RAISE EXCEPTION '% acts on dead-lettered jobs, not on state "%"', action, left(state, 64)
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Pass state => ''dlq'', or no state.';
    END IF;
    IF action = 'cancel' AND state IN ('completed', 'failed', 'cancelled', 'dlq') THEN
        RAISE EXCEPTION 'cancel acts on unfinished jobs, not on state "%"', state
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass state available, running, scheduled or retryable, or no state.';
    END IF;
    IF action = 'retry' AND state NOT IN ('failed', 'cancelled') THEN
        RAISE EXCEPTION 'retry acts on failed and cancelled jobs, not on state "%"', left(state, 64)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass state failed or cancelled, or no state (dead letters: dlq_retry).';
    END IF;
    IF action IN ('move', 'set_priority') AND state NOT IN ('available', 'scheduled', 'retryable') THEN
        RAISE EXCEPTION '% acts on waiting jobs, not on state "%"', action, left(state, 64)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass state available, scheduled or retryable, or no state (running and finished jobs are not moved).';
    END IF;
    -- list_jobs's own checks (22023, 42501), on one row.
    PERFORM 1 FROM awa.list_jobs(queue, state, kind, tag, args_contains, enqueued_after, enqueued_before, NULL, 1,
                                 metadata_contains);
    -- The filters given, by name (NULLs left out at the top level only: a
    -- containment such as {"deleted": null} is kept whole).
    RETURN (SELECT coalesce(jsonb_object_agg(f.k, f.v), '{}')
              FROM jsonb_each(jsonb_build_object(
                       'queue', queue, 'state', CASE WHEN action IN ('dlq_retry', 'dlq_purge') THEN 'dlq' ELSE state END,
                       'kind', kind, 'tag', tag, 'args_contains', args_contains, 'enqueued_after', enqueued_after,
                       'enqueued_before', enqueued_before, 'metadata_contains', metadata_contains)) AS f(k, v)
             WHERE f.v <> 'null'::jsonb);
END
$$;

-- The target of a bulk action: to_queue for move, to_priority for
-- set_priority, neither for the others (22023, or 22004 for a bad value as
-- awa.move_jobs and awa.set_priority raise it).
CREATE FUNCTION awa._bulk_target(action text, to_queue text, to_priority int)
RETURNS void
LANGUAGE plpgsql VOLATILE  -- raises: never evaluated ahead of time
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    IF action = 'move' THEN
        IF to_queue IS NULL THEN
            RAISE EXCEPTION 'move needs to_queue' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Pass to_queue => the queue to move the jobs to.';
        END IF;
        PERFORM awa._require_queue(to_queue);
    ELSIF to_queue IS NOT NULL THEN
        RAISE EXCEPTION '% takes no to_queue', action USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Only move takes to_queue; leave it out.';
    END IF;
    IF action = 'set_priority' THEN
        IF to_priority IS NULL THEN
            RAISE EXCEPTION 'set_priority needs to_priority' USING ERRCODE = 'invalid_parameter_value',
                HINT = 'Pass to_priority => 1 (the most urgent) to 4 (the least).';
        END IF;
        PERFORM awa._require_priority(to_priority, 'to_priority');
    ELSIF to_priority IS NOT NULL THEN
        RAISE EXCEPTION '% takes no to_priority', action USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Only set_priority takes to_priority; leave it out (a move keeps each job''s priority).';
    END IF;
END
$$;

-- The states a bulk action acts on (cancel: the unfinished ones; move and
-- set_priority: the waiting ones; retry: the failed and cancelled ones).
CREATE FUNCTION awa._bulk_acts_on(action text, state text)
RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT CASE WHEN action = 'cancel' THEN state IN ('available', 'running', 'scheduled', 'retryable')
            WHEN action IN ('move', 'set_priority') THEN state IN ('available', 'scheduled', 'retryable')
            WHEN action = 'retry' THEN state IN ('failed', 'cancelled')
            ELSE state = 'dlq' END
$$;

-- The next page of a filter (a bulk operation's, as stored) below `before`.
CREATE FUNCTION awa._bulk_page(filter jsonb, before bigint, max_rows int)
RETURNS SETOF awa.job_listing
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT * FROM awa.list_jobs(filter ->> 'queue', filter ->> 'state', filter ->> 'kind', filter ->> 'tag',
                            filter -> 'args_contains', (filter ->> 'enqueued_after')::timestamptz,
                            (filter ->> 'enqueued_before')::timestamptz, before, max_rows,
                            filter -> 'metadata_contains')
$$;

-- A dry run: how many jobs match the filter now (and so how many a bulk
-- operation started now would consider). Reads them all, a page at a time.
CREATE FUNCTION awa.bulk_count(action text, queue text DEFAULT NULL, state text DEFAULT NULL, kind text DEFAULT NULL,
                               tag text DEFAULT NULL, args_contains jsonb DEFAULT NULL,
                               enqueued_after timestamptz DEFAULT NULL, enqueued_before timestamptz DEFAULT NULL,
                               metadata_contains jsonb DEFAULT NULL, to_queue text DEFAULT NULL,
                               to_priority int DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    f       jsonb := awa._bulk_filter(action, queue, state, kind, tag, args_contains, enqueued_after,
                                      enqueued_before, metadata_contains);
    before  bigint := NULL;
    total   bigint := 0;
    n       int;
    acts    int;
    lowest  bigint;
BEGIN
    PERFORM awa._bulk_target(action, to_queue, to_priority);
    -- This transaction's enqueues are written before the block (a write
    -- inside it would be rolled back with it, and made again later).
    PERFORM awa._flush_enqueues();
    -- Counted in a block rolled back as it ends: the locks of its scans go
    -- with it, so a session left idle in transaction after a dry run holds
    -- no ring slot (test/t/034); under REPEATABLE READ only when no prune
    -- truncated a slot after the snapshot (else 40001; kept without the
    -- preload or on a standby: awa._ring_locks_releasable).
    BEGIN
        LOOP
            -- (a move counts the jobs not yet in to_queue; set_priority those
            -- not yet at to_priority)
            SELECT count(*), min(p.job_id),
                   count(*) FILTER (WHERE awa._bulk_acts_on(action, p.state)
                                      AND (bulk_count.to_queue IS NULL OR p.queue <> bulk_count.to_queue)
                                      AND (bulk_count.to_priority IS NULL OR p.priority <> bulk_count.to_priority))
              INTO n, lowest, acts FROM awa._bulk_page(f, before, 1000) p;
            total := total + acts;
            EXIT WHEN n < 1000;
            before := lowest;
        END LOOP;
        IF awa._ring_locks_releasable() THEN
            RAISE SQLSTATE 'AWARL';
        END IF;
    EXCEPTION WHEN SQLSTATE 'AWARL' THEN
        NULL;  -- the block's locks are released; total is kept
    END;
    RETURN total;
END
$$;

-- Starts a bulk operation: returns its op_id. Nothing is changed until a
-- step runs (awa.bulk_step, repeated by the caller until the state is not
-- 'running'; each step its own transaction).
CREATE FUNCTION awa.bulk_start(action text, queue text DEFAULT NULL, state text DEFAULT NULL, kind text DEFAULT NULL,
                               tag text DEFAULT NULL, args_contains jsonb DEFAULT NULL,
                               enqueued_after timestamptz DEFAULT NULL, enqueued_before timestamptz DEFAULT NULL,
                               metadata_contains jsonb DEFAULT NULL, to_queue text DEFAULT NULL,
                               to_priority int DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    f      jsonb := awa._bulk_filter(action, queue, state, kind, tag, args_contains, enqueued_after,
                                     enqueued_before, metadata_contains);
    newest bigint;
    id     bigint;
BEGIN
    PERFORM awa._bulk_target(action, to_queue, to_priority);
    SELECT p.job_id INTO newest FROM awa._bulk_page(f, NULL, 1) p;
    INSERT INTO awa.bulk_operations (action, filter, to_queue, to_priority, next_before, created_by)
    VALUES (action, f, bulk_start.to_queue, bulk_start.to_priority, coalesce(newest + 1, 0),
            CASE current_setting('role') WHEN 'none' THEN session_user::text ELSE current_setting('role') END)
    RETURNING op_id INTO id;
    RETURN id;
END
$$;

-- One step of a running bulk operation: acts on up to max_jobs matching jobs
-- (the next page below its cursor) and moves its cursor past them, in the
-- caller's transaction; returns the operation's row after the step. Steps of
-- one operation run one at a time (its row is locked for the step). A job that
-- no longer matches when its page is read is not touched.
CREATE FUNCTION awa.bulk_step(op_id bigint, max_jobs int DEFAULT 500)
RETURNS awa.bulk_operations
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    op     awa.bulk_operations;
    ids    bigint[];   -- the page, newest first
    todo   bigint[];   -- its jobs in a state the action acts on
    did    bigint := 0;
    n      int;
    id     bigint;
BEGIN
    IF op_id IS NULL THEN
        RAISE EXCEPTION 'op_id must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass the op_id awa.bulk_start returned.';
    END IF;
    IF max_jobs IS NULL OR max_jobs < 1 OR max_jobs > 1000 THEN
        RAISE EXCEPTION 'max_jobs must be between 1 and 1000 (got %)', coalesce(max_jobs::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value', HINT = 'A step is one short transaction: run more steps.';
    END IF;
    SELECT * INTO op FROM awa.bulk_operations b WHERE b.op_id = bulk_step.op_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no bulk operation %', op_id USING ERRCODE = 'invalid_parameter_value',
            HINT = 'See awa.bulk_operations for the operations.';
    END IF;
    IF op.state <> 'running' THEN
        RETURN op;
    END IF;
    SELECT array_agg(p.job_id ORDER BY p.job_id DESC),
           coalesce(array_agg(p.job_id ORDER BY p.job_id DESC) FILTER (WHERE awa._bulk_acts_on(op.action, p.state)), '{}')
      INTO ids, todo FROM awa._bulk_page(op.filter, op.next_before, max_jobs) p;
    IF cardinality(todo) > 0 THEN
        IF op.action = 'cancel' THEN
            -- In job_id order, as awa._relocate locks: a cancel step and a
            -- move of the same jobs never wait for each other in a cycle.
            FOREACH id IN ARRAY (SELECT array_agg(t ORDER BY t) FROM unnest(todo) t) LOOP
                -- (a running job's cancel is requested: its attempt ends
                -- it; the job is cancelled at that end)
                IF awa.cancel(id) IN ('cancelled', 'cancel_requested') THEN
                    did := did + 1;
                END IF;
            END LOOP;
        ELSIF op.action IN ('dlq_retry', 'retry') THEN
            BEGIN
                did := CASE op.action WHEN 'retry' THEN awa.retry_jobs(todo) ELSE awa.dlq_retry(todo) END;
            EXCEPTION WHEN unique_violation THEN
                -- A job whose unique key another job took meanwhile: the
                -- page's other jobs one by one; that one stays where it is
                -- (passed), the operation goes on.
                did := 0;
                FOREACH id IN ARRAY todo LOOP
                    BEGIN
                        did := did + CASE op.action WHEN 'retry' THEN awa.retry_jobs(ARRAY[id])
                                                    ELSE awa.dlq_retry(ARRAY[id]) END;
                    EXCEPTION WHEN unique_violation THEN
                        NULL;
                    END;
                END LOOP;
            END;
        ELSIF op.action = 'move' THEN
            did := awa._relocate(todo, op.to_queue, NULL);
        ELSIF op.action = 'set_priority' THEN
            did := awa._relocate(todo, NULL, op.to_priority);
        ELSE
            did := awa.dlq_purge(todo);
        END IF;
    END IF;
    UPDATE awa.bulk_operations b
       SET next_before = coalesce(ids[cardinality(ids)], b.next_before),
           acted = b.acted + did,
           passed = b.passed + cardinality(todo) - did,
           steps = b.steps + 1,
           updated_at = clock_timestamp(),
           state = CASE WHEN coalesce(cardinality(ids), 0) < max_jobs THEN 'done' ELSE b.state END,
           finished_at = CASE WHEN coalesce(cardinality(ids), 0) < max_jobs THEN clock_timestamp() END
     WHERE b.op_id = bulk_step.op_id
    RETURNING * INTO op;
    RETURN op;
END
$$;

-- Stops a bulk operation: no step acts after this commits (a step running
-- now finishes first: it holds the row). Returns false when it had ended.
CREATE FUNCTION awa.bulk_cancel(op_id bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    n int;
BEGIN
    IF op_id IS NULL THEN
        RAISE EXCEPTION 'op_id must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass the op_id awa.bulk_start returned.';
    END IF;
    UPDATE awa.bulk_operations b SET state = 'cancelled', updated_at = clock_timestamp(), finished_at = clock_timestamp()
     WHERE b.op_id = bulk_cancel.op_id AND b.state = 'running';
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 AND NOT EXISTS (SELECT FROM awa.bulk_operations b WHERE b.op_id = bulk_cancel.op_id) THEN
        RAISE EXCEPTION 'no bulk operation %', op_id USING ERRCODE = 'invalid_parameter_value',
            HINT = 'See awa.bulk_operations for the operations.';
    END IF;
    RETURN n = 1;
END
$$;
