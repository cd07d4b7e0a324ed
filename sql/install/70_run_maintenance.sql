-- Runs one maintenance step (or every step: 'all'; every ring's: 'rotate',
-- 'prune') now, in the caller's transaction, and reports each outcome.
-- (PL/pgSQL cannot name an argument and a result column alike, so the body is
-- awa._run_maintenance.)
CREATE FUNCTION awa._run_maintenance(requested text)
RETURNS TABLE (step text, outcome text, detail jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    tasks text[];
    t text;
    step_outcome text;
    step_detail jsonb;
BEGIN
    -- This transaction's own enqueues go in first, into the generation they
    -- would have had (a transaction that rotated cannot enqueue).
    PERFORM awa._flush_enqueues();
    IF requested IS NULL THEN
        RAISE EXCEPTION 'task must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'Pass a task name, or ''all''.';
    END IF;
    tasks := CASE requested
               WHEN 'all' THEN awa._task_names()
               WHEN 'rotate' THEN ARRAY['rotate_queue', 'rotate_claim', 'rotate_lease']
               WHEN 'prune' THEN ARRAY['prune_queue', 'prune_claim', 'prune_lease']
               ELSE ARRAY[requested]
             END;
    IF NOT tasks <@ awa._task_names() THEN
        RAISE EXCEPTION 'unknown maintenance task "%"', requested USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Tasks are all, rotate, prune, ' || array_to_string(awa._task_names(), ', ') || '.';
    END IF;
    IF pg_is_in_recovery() THEN
        RAISE EXCEPTION 'awa maintenance cannot run during recovery' USING ERRCODE = 'read_only_sql_transaction',
            HINT = 'Run it on the primary; a standby starts maintenance once promoted.';
    END IF;
    -- Every step proves what it may do with snapshots taken after its locks
    -- (a prune proves its slot dead, then copies and carries what is live,
    -- then truncates). Under a transaction snapshot, older than those locks,
    -- a claim or a completion that committed in between is not seen and the
    -- TRUNCATE destroys it (found by adversarial testing: a claimed job became
    -- unknown and its worker could not end it). The maintenance worker runs
    -- its steps under READ COMMITTED whatever the database's default.
    IF current_setting('transaction_isolation') IN ('repeatable read', 'serializable') THEN
        RAISE EXCEPTION 'awa maintenance cannot run under % isolation', upper(current_setting('transaction_isolation'))
            USING ERRCODE = 'invalid_transaction_state',
                  HINT = 'Run awa.run_maintenance in a READ COMMITTED transaction '
                         '(BEGIN ISOLATION LEVEL READ COMMITTED, or SET default_transaction_isolation).';
    END IF;
    FOREACH t IN ARRAY tasks LOOP
        IF t = 'counters' THEN
            -- Idle keys' entries first: a database that had found none is
            -- rebuilt at once.
            step_detail := awa._free_key_entries();
            step_outcome := awa._ensure_counters();
        ELSIF t = 'promote' THEN
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._promote() x;
        ELSIF t = 'rescue' THEN
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._rescue() x;
        ELSIF t = 'dlq_retention' THEN
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._dlq_retention() x;
        ELSIF t = 'history' THEN
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._history() x;
        ELSIF t = 'reclaim_lanes' THEN
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._reclaim_lanes() x;
        ELSIF t = 'periodic' THEN
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._periodic() x;
        ELSIF t LIKE 'prune_%' THEN
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._prune(substr(t, 7)) x;
        ELSE
            SELECT x.outcome, x.detail INTO step_outcome, step_detail FROM awa._rotate(substr(t, 8)) x;
        END IF;
        PERFORM awa._note_outcome(t, step_outcome);
        step := t;
        outcome := step_outcome;
        detail := step_detail;
        RETURN NEXT;
    END LOOP;
END
$$;

CREATE FUNCTION awa.run_maintenance(task text DEFAULT 'all')
RETURNS TABLE (task text, outcome text, detail jsonb)
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$ SELECT r.step, r.outcome, r.detail FROM awa._run_maintenance(task) r $$;

