-- 04_functions.sql: every function of schema awa. Exact signatures (argument
-- types, names, defaults), return types, language, SECURITY DEFINER (30 of the
-- 33 public API functions; never await_durable, cursor_value, periodic_next or
-- an awa._* building block), volatility, strictness (only cursor_value, the
-- internal ring arithmetic _slot_of, _oldest_live_generation, _prune_target
-- and the internal tick arithmetic _periodic_latest are STRICT: NULL arguments
-- of the API must reach the code that raises 22004), row estimates, the pinned search path
-- (every SQL and PL/pgSQL function has SET search_path = pg_catalog, pg_temp;
-- the C functions pin theirs internally and have no SET clause), no JIT
-- (every SQL and PL/pgSQL function has SET jit = off; the C functions' statements
-- are planned without JIT by awa's planner hook, test/t/013_no_jit.pl) and the C
-- symbol of every C function.
BEGIN;
SET LOCAL search_path = public;
SELECT plan(907);

CREATE TEMP TABLE api (fn name, args name[], returns text, arguments text, result text, lang name,
                       definer boolean, volatility text, strict boolean, est_rows real, symbol text)
    ON COMMIT DROP;
INSERT INTO api VALUES
    -- Producer API (C)
    ('enqueue',
     ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'jsonb'],
     'bigint',
     'kind text, args jsonb DEFAULT ''{}''::jsonb, queue text DEFAULT ''default''::text, '
     'priority integer DEFAULT 2, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, '
     'max_attempts integer DEFAULT 25, opts jsonb DEFAULT ''{}''::jsonb',
     'bigint',
     'c', true, 'volatile', false, 0, 'awa_enqueue'),
    ('enqueue_many',
     ARRAY['text[]', 'jsonb[]', 'text', 'integer[]', 'timestamp with time zone[]', 'integer', 'jsonb[]'],
     'setof bigint',
     'kinds text[], args jsonb[], queue text DEFAULT ''default''::text, '
     'priorities integer[] DEFAULT NULL::integer[], '
     'run_at timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], max_attempts integer DEFAULT 25, '
     'opts jsonb[] DEFAULT NULL::jsonb[]',
     'SETOF bigint',
     'c', true, 'volatile', false, 100, 'awa_enqueue_many'),
    -- Worker API (C)
    ('claim',
     ARRAY['text', 'integer', 'interval', 'interval', 'boolean'],
     'setof record',
     'queue text, max_jobs integer DEFAULT 1, deadline interval DEFAULT NULL::interval, wait interval DEFAULT NULL::interval, async_commit boolean DEFAULT NULL::boolean',
     'TABLE(job_id bigint, run_lease bigint, receipt_id bigint, kind text, args jsonb, queue text, '
     'priority integer, attempt integer, max_attempts integer, deadline_at timestamp with time zone, '
     'created_at timestamp with time zone, metadata jsonb)',
     'c', true, 'volatile', false, 10, 'awa_claim'),
    ('complete',
     ARRAY['bigint', 'bigint', 'bigint'],
     'boolean',
     'job_id bigint, run_lease bigint, receipt_id bigint',
     'boolean',
     'c', true, 'volatile', false, 0, 'awa_complete'),
    ('complete_many',
     ARRAY['bigint[]', 'bigint[]', 'bigint[]'],
     'setof record',
     'job_ids bigint[], run_leases bigint[], receipt_ids bigint[]',
     'TABLE(job_id bigint, accepted boolean)',
     'c', true, 'volatile', false, 10, 'awa_complete_many'),
    ('await_durable',
     ARRAY[]::name[],
     'pg_lsn',
     '',
     'pg_lsn',
     'c', false, 'volatile', false, 0, 'awa_await_durable'),
    ('heartbeat',
     ARRAY['bigint', 'bigint', 'bigint', 'jsonb'],
     'text',
     'job_id bigint, run_lease bigint, receipt_id bigint, progress jsonb DEFAULT NULL::jsonb',
     'text',
     'c', true, 'volatile', false, 0, 'awa_heartbeat'),
    ('heartbeat_many',
     ARRAY['bigint[]', 'bigint[]', 'bigint[]', 'jsonb[]'],
     'setof record',
     'job_ids bigint[], run_leases bigint[], receipt_ids bigint[], progress jsonb[] DEFAULT NULL::jsonb[]',
     'TABLE(job_id bigint, run_lease bigint, status text)',
     'c', true, 'volatile', false, 10, 'awa_heartbeat_many'),
    ('retry',
     ARRAY['bigint', 'bigint', 'bigint', 'text', 'interval'],
     'text',
     'job_id bigint, run_lease bigint, receipt_id bigint, error text, delay interval DEFAULT NULL::interval',
     'text',
     'c', true, 'volatile', false, 0, 'awa_retry'),
    ('snooze',
     ARRAY['bigint', 'bigint', 'bigint', 'interval'],
     'text',
     'job_id bigint, run_lease bigint, receipt_id bigint, delay interval',
     'text',
     'c', true, 'volatile', false, 0, 'awa_snooze'),
    ('fail',
     ARRAY['bigint', 'bigint', 'bigint', 'text'],
     'text',
     'job_id bigint, run_lease bigint, receipt_id bigint, error text',
     'text',
     'c', true, 'volatile', false, 0, 'awa_fail'),
    -- Admin API
    ('cancel',
     ARRAY['bigint'],
     'text',
     'job_id bigint',
     'text',
     'plpgsql', true, 'volatile', false, 0, NULL),
    ('get_job',
     ARRAY['bigint'],
     'jsonb',
     'job_id bigint',
     'jsonb',
     'plpgsql', true, 'volatile', false, 0, NULL),
    ('promote_due',
     ARRAY['integer'],
     'integer',
     'max_jobs integer DEFAULT 4096',
     'integer',
     'c', true, 'volatile', false, 0, 'awa_promote_due'),
    ('queue_counts',
     ARRAY['text'],
     'setof record',
     'queue text DEFAULT NULL::text',
     'TABLE(queue text, available bigint, scheduled bigint, retryable bigint, running bigint, '
     'completed bigint, failed bigint, cancelled bigint, dlq bigint)',
     'c', true, 'volatile', false, 10, 'awa_queue_counts'),
    ('queue_counts_exact',
     ARRAY['text'],
     'setof record',
     'queue text DEFAULT NULL::text',
     'TABLE(queue text, available bigint, scheduled bigint, retryable bigint, running bigint, '
     'completed bigint, failed bigint, cancelled bigint, dlq bigint)',
     'sql', true, 'volatile', false, 1000, NULL),
    ('rebuild_counters',
     ARRAY[]::name[],
     'boolean',
     '',
     'boolean',
     'c', true, 'volatile', false, 0, 'awa_rebuild_counters'),
    ('configure_queue',
     ARRAY['text', 'boolean', 'interval', 'interval'],
     'void',
     'queue text, dlq_enabled boolean DEFAULT NULL::boolean, aging_interval interval DEFAULT NULL::interval, '
     'default_deadline interval DEFAULT NULL::interval',
     'void',
     'plpgsql', true, 'volatile', false, 0, NULL),
    ('pause_queue',
     ARRAY['text'],
     'void',
     'queue text',
     'void',
     'plpgsql', true, 'volatile', false, 0, NULL),
    ('resume_queue',
     ARRAY['text'],
     'void',
     'queue text',
     'void',
     'plpgsql', true, 'volatile', false, 0, NULL),
    ('dlq_retry',
     ARRAY['bigint[]'],
     'integer',
     'job_ids bigint[]',
     'integer',
     'plpgsql', true, 'volatile', false, 0, NULL),
    ('dlq_purge',
     ARRAY['bigint[]'],
     'integer',
     'job_ids bigint[]',
     'integer',
     'plpgsql', true, 'volatile', false, 0, NULL),
    -- Maintenance API (awa_admin)
    ('run_maintenance',
     ARRAY['text'],
     'setof record',
     'task text DEFAULT ''all''::text',
     'TABLE(task text, outcome text, detail jsonb)',
     'sql', true, 'volatile', false, 1000, NULL),
    ('storage_status',
     ARRAY[]::name[],
     'setof record',
     '',
     'TABLE(ring text, slot_count integer, current_slot integer, generation bigint, oldest_live_slot integer, '
     'oldest_live_generation bigint, last_rotated_at timestamp with time zone, last_rotate text, '
     'last_rotate_at timestamp with time zone, last_prune text, last_prune_at timestamp with time zone, '
     'prune_backoff_level integer, dead_tuples jsonb)',
     'plpgsql', true, 'volatile', false, 1000, NULL),
    ('maintenance_status',
     ARRAY[]::name[],
     'setof record',
     '',
     'TABLE(task text, last_outcome text, last_run_at timestamp with time zone, runs bigint, errors bigint, '
     'prune_backoff_level integer, prune_ticks_skipped integer, worker_pid integer)',
     'c', true, 'volatile', false, 1000, 'awa_maintenance_status'),
    -- Metrics surface (awa_monitor, awa_admin)
    ('queue_metrics',
     ARRAY[]::name[],
     'setof record',
     '',
     'TABLE(queue text, available bigint, scheduled bigint, retryable bigint, running bigint, '
     'completed bigint, failed bigint, cancelled bigint, dlq bigint, '
     'oldest_available_at timestamp with time zone, oldest_available_age_seconds double precision, '
     'waiting_claims bigint, paused boolean)',
     'sql', true, 'volatile', false, 1000, NULL),
    ('job_event_totals',
     ARRAY[]::name[],
     'setof record',
     '',
     'TABLE(queue text, enqueued bigint, claimed bigint, completed bigint, retried bigint, snoozed bigint, '
     'failed bigint, rescued bigint)',
     'c', true, 'volatile', false, 10, 'awa_job_event_totals'),
    ('waiting_claims',
     ARRAY[]::name[],
     'setof record',
     '',
     'TABLE(pid integer, queue text, waiting_since timestamp with time zone)',
     'c', true, 'volatile', false, 10, 'awa_waiting_claims'),
    ('periodic_status',
     ARRAY[]::name[],
     'setof record',
     '',
     'TABLE(name text, schedule text, timezone text, kind text, queue text, '
     'next_run_at timestamp with time zone, last_run_at timestamp with time zone, last_job_id bigint, '
     'last_error text)',
     'sql', true, 'stable', false, 1000, NULL),
    -- Periodic jobs API (awa_admin). periodic_next computes only, as its
    -- caller.
    ('schedule_periodic',
     ARRAY['text', 'text', 'text', 'jsonb', 'text', 'integer', 'text', 'jsonb'],
     'timestamp with time zone',
     'name text, schedule text, kind text, args jsonb DEFAULT ''{}''::jsonb, queue text DEFAULT ''default''::text, '
     'priority integer DEFAULT 2, timezone text DEFAULT ''UTC''::text, opts jsonb DEFAULT ''{}''::jsonb',
     'timestamp with time zone',
     'plpgsql', true, 'volatile', false, 0, NULL),
    ('unschedule_periodic',
     ARRAY['text'],
     'boolean',
     'name text',
     'boolean',
     'plpgsql', true, 'volatile', false, 0, NULL),
    ('periodic_next',
     ARRAY['text', 'text', 'timestamp with time zone'],
     'timestamp with time zone',
     'schedule text, timezone text DEFAULT ''UTC''::text, after timestamp with time zone DEFAULT now()',
     'timestamp with time zone',
     'c', false, 'stable', false, 0, 'awa_periodic_next'),
    -- The lane cursor reader behind awa.lanes: runs as the caller, who needs
    -- SELECT on the sequence.
    ('cursor_value',
     ARRAY['regclass'],
     'bigint',
     'seq regclass',
     'bigint',
     'c', false, 'stable', true, 0, 'awa_cursor_value'),
    -- Internal building blocks (C)
    ('_attempt',
     ARRAY['bigint', 'bigint', 'bigint', 'text'],
     'setof record',
     'job_id bigint, run_lease bigint, receipt_id bigint, outcome text',
     'TABLE(status text, closed_outcome text, queue text, priority integer, ready_slot integer, '
     'ready_generation bigint, lane_seq bigint, attempt integer, max_attempts integer, '
     'claimed_at timestamp with time zone)',
     'c', false, 'volatile', false, 1000, 'awa_internal_attempt'),
    ('_tombstone',
     ARRAY['text', 'integer', 'bigint', 'integer', 'bigint', 'bigint'],
     'text',
     'queue text, priority integer, lane_seq bigint, ready_slot integer, ready_generation bigint, job_id bigint',
     'text',
     'c', false, 'volatile', false, 0, 'awa_internal_tombstone'),
    ('_promote_jobs',
     ARRAY['bigint[]'],
     'integer',
     'job_ids bigint[]',
     'integer',
     'c', false, 'volatile', false, 0, 'awa_internal_promote_jobs'),
    ('_count_move',
     ARRAY['text', 'text', 'text', 'bigint'],
     'void',
     'queue text, from_state text, to_state text, n bigint DEFAULT 1',
     'void',
     'c', false, 'volatile', false, 0, 'awa_internal_count_move'),
    ('_backoff',
     ARRAY['integer'],
     'interval',
     'attempt integer',
     'interval',
     'c', false, 'volatile', false, 0, 'awa_internal_backoff'),
    ('_queue_meta_changed',
     ARRAY['text'],
     'void',
     'queue text',
     'void',
     'c', false, 'volatile', false, 0, 'awa_internal_queue_meta_changed'),
    ('_check_job',
     ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'jsonb'],
     'void',
     'kind text, args jsonb, queue text, priority integer, run_at timestamp with time zone, '
     'max_attempts integer, opts jsonb',
     'void',
     'c', false, 'stable', false, 0, 'awa_internal_check_job'),
    ('_job_defaults',
     ARRAY[]::name[],
     'record',
     'OUT priority integer, OUT max_attempts integer',
     'record',
     'c', false, 'immutable', false, 0, 'awa_internal_job_defaults'),
    -- Internal building blocks of maintenance (C)
    ('_receipt',
     ARRAY['bigint', 'integer', 'integer'],
     'bigint',
     'batch_id bigint, index integer, slot integer',
     'bigint',
     'c', false, 'immutable', false, 0, 'awa_internal_receipt'),
    ('_slot_of',
     ARRAY['bigint', 'integer'],
     'integer',
     'generation bigint, slot_count integer',
     'integer',
     'c', false, 'immutable', true, 0, 'awa_internal_slot_of'),
    ('_oldest_live_generation',
     ARRAY['bigint', 'integer'],
     'bigint',
     'current bigint, slot_count integer',
     'bigint',
     'c', false, 'immutable', true, 0, 'awa_internal_oldest_live_generation'),
    ('_prune_target',
     ARRAY['bigint', 'integer'],
     'bigint',
     'current bigint, slot_count integer',
     'bigint',
     'c', false, 'immutable', true, 0, 'awa_internal_prune_target'),
    ('_task_names',
     ARRAY[]::name[],
     'text[]',
     '',
     'text[]',
     'c', false, 'immutable', false, 0, 'awa_internal_task_names'),
    ('_outcome_names',
     ARRAY[]::name[],
     'text[]',
     '',
     'text[]',
     'c', false, 'immutable', false, 0, 'awa_internal_outcome_names'),
    ('_rotation_begin',
     ARRAY[]::name[],
     'void',
     '',
     'void',
     'c', false, 'volatile', false, 0, 'awa_internal_rotation_begin'),
    ('_enqueue_generation_in_use',
     ARRAY['bigint'],
     'boolean',
     'generation bigint',
     'boolean',
     'c', false, 'volatile', false, 0, 'awa_internal_enqueue_generation_in_use'),
    ('_note_outcome',
     ARRAY['text', 'text'],
     'void',
     'task text, outcome text',
     'void',
     'c', false, 'volatile', false, 0, 'awa_internal_note_outcome'),
    ('_ensure_counters',
     ARRAY[]::name[],
     'text',
     '',
     'text',
     'c', false, 'volatile', false, 0, 'awa_internal_ensure_counters'),
    ('_wake_launcher',
     ARRAY[]::name[],
     'void',
     '',
     'void',
     'c', false, 'volatile', false, 0, 'awa_internal_wake_launcher'),
    ('_advance_cursors',
     ARRAY[]::name[],
     'integer',
     '',
     'integer',
     'c', false, 'volatile', false, 0, 'awa_internal_advance_cursors'),
    ('_rescue_attempt',
     ARRAY['bigint', 'bigint', 'bigint', 'timestamp with time zone'],
     'text',
     'job_id bigint, run_lease bigint, receipt_id bigint, stale_before timestamp with time zone',
     'text',
     'c', false, 'volatile', false, 0, 'awa_internal_rescue_attempt'),
    ('_periodic_latest',
     ARRAY['text', 'text', 'timestamp with time zone', 'timestamp with time zone'],
     'timestamp with time zone',
     'schedule text, timezone text, from_tick timestamp with time zone, until timestamp with time zone',
     'timestamp with time zone',
     'c', false, 'stable', true, 0, 'awa_internal_periodic_latest'),
    -- Internal building blocks (SQL, PL/pgSQL)
    ('_queue_counts_scan',
     ARRAY['text'],
     'setof record',
     'p_queue text',
     'TABLE(queue text, available bigint, scheduled bigint, retryable bigint, running bigint, '
     'completed bigint, failed bigint, cancelled bigint, dlq bigint)',
     'sql', false, 'stable', false, 1000, NULL),
    ('_require_queue',
     ARRAY['text'],
     'void',
     'queue text',
     'void',
     'c', false, 'volatile', false, 0, 'awa_internal_require_queue'),
    ('_job_document',
     ARRAY['bigint', 'text', 'integer', 'text', 'jsonb', 'text', 'integer', 'integer', 'bigint',
           'timestamp with time zone', 'timestamp with time zone', 'jsonb', 'timestamp with time zone',
           'timestamp with time zone', 'jsonb', 'jsonb'],
     'jsonb',
     'job_id bigint, queue text, priority integer, kind text, args jsonb, state text, attempt integer, '
     'max_attempts integer, run_lease bigint, run_at timestamp with time zone, '
     'created_at timestamp with time zone, payload jsonb, attempted_at timestamp with time zone, '
     'finalized_at timestamp with time zone, progress jsonb, extra jsonb DEFAULT ''{}''::jsonb',
     'jsonb',
     'sql', false, 'stable', false, 0, NULL),
    ('_oldest_available_at',
     ARRAY['text'],
     'timestamp with time zone',
     'p_queue text',
     'timestamp with time zone',
     'plpgsql', false, 'stable', false, 0, NULL),
    ('_periodic_job_opts',
     ARRAY['text', 'jsonb', 'timestamp with time zone'],
     'jsonb',
     'name text, opts jsonb, tick timestamp with time zone',
     'jsonb',
     'sql', false, 'immutable', false, 0, NULL),
    -- Internal building blocks of maintenance (SQL, PL/pgSQL)
    ('_slot_children',
     ARRAY['text', 'integer'],
     'text[]',
     'ring text, slot integer',
     'text[]',
     'sql', false, 'immutable', false, 0, NULL),
    ('_ring_position',
     ARRAY['text'],
     'record',
     'ring text, OUT generation bigint, OUT slot integer, OUT slot_count integer',
     'record',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_slot_is_empty',
     ARRAY['text', 'integer'],
     'boolean',
     'ring text, slot integer',
     'boolean',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_slot_has_no_blocks',
     ARRAY['text', 'integer'],
     'boolean',
     'ring text, slot integer',
     'boolean',
     'sql', false, 'volatile', false, 0, NULL),
    ('_queue_slot_blocker',
     ARRAY['integer', 'bigint'],
     'text',
     'slot integer, generation bigint',
     'text',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_carry_queue_slot',
     ARRAY['integer', 'bigint'],
     'jsonb',
     'slot integer, generation bigint',
     'jsonb',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_claim_slot_blocker',
     ARRAY['integer'],
     'text',
     'slot integer',
     'text',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_carry_claim_slot',
     ARRAY['integer'],
     'jsonb',
     'slot integer',
     'jsonb',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_lock_slot',
     ARRAY['text', 'integer'],
     'boolean',
     'ring text, slot integer',
     'boolean',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_try_ring_lock',
     ARRAY[]::name[],
     'boolean',
     '',
     'boolean',
     'sql', false, 'volatile', false, 0, NULL),
    ('_rotate',
     ARRAY['text'],
     'record',
     'ring text, OUT outcome text, OUT detail jsonb',
     'record',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_prune',
     ARRAY['text'],
     'record',
     'ring text, OUT outcome text, OUT detail jsonb',
     'record',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_rescue',
     ARRAY[]::name[],
     'record',
     'OUT outcome text, OUT detail jsonb',
     'record',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_promote',
     ARRAY[]::name[],
     'record',
     'OUT outcome text, OUT detail jsonb',
     'record',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_dlq_retention',
     ARRAY[]::name[],
     'record',
     'OUT outcome text, OUT detail jsonb',
     'record',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_history_retention',
     ARRAY[]::name[],
     'interval',
     '',
     'interval',
     'sql', false, 'stable', false, 0, NULL),
    ('_forget_finished',
     ARRAY['text'],
     'jsonb',
     'source text',
     'jsonb',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_keep_history',
     ARRAY['integer'],
     'bigint',
     'slot integer',
     'bigint',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_history',
     ARRAY[]::name[],
     'record',
     'OUT outcome text, OUT detail jsonb',
     'record',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_get_job',
     ARRAY['bigint'],
     'jsonb',
     'job_id bigint',
     'jsonb',
     'plpgsql', false, 'stable', false, 0, NULL),
    ('_hold_rings',
     ARRAY[]::name[],
     'void',
     '',
     'void',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_slot_live_rows',
     ARRAY['integer'],
     'bigint',
     'slot integer',
     'bigint',
     'plpgsql', false, 'stable', false, 0, NULL),
    ('_queue_prune_target',
     ARRAY[]::name[],
     'record',
     'OUT generation bigint, OUT slot integer, OUT kept integer[]',
     'record',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_queue_live_generations',
     ARRAY[]::name[],
     'bigint[]',
     '',
     'bigint[]',
     'sql', false, 'stable', false, 0, NULL),
    ('_periodic',
     ARRAY[]::name[],
     'record',
     'OUT outcome text, OUT detail jsonb',
     'record',
     'plpgsql', false, 'volatile', false, 0, NULL),
    ('_run_maintenance',
     ARRAY['text'],
     'setof record',
     'requested text',
     'TABLE(step text, outcome text, detail jsonb)',
     'plpgsql', false, 'volatile', false, 1000, NULL);

-- Exactly these functions in schema awa: 1
SELECT functions_are('awa', ARRAY(SELECT fn FROM api),
                     'schema awa has exactly the 33 public functions and the 53 awa._* building blocks');
-- ... and one overload each: 1
SELECT is((SELECT count(*)::int FROM pg_catalog.pg_proc WHERE pronamespace = 'awa'::regnamespace), 86,
          'no function is overloaded');

-- Per function, 10 checks: 86 x 10 = 860
SELECT has_function('awa', fn, args, 'awa.' || fn || '(' || array_to_string(args, ', ') || ') exists')
  FROM api ORDER BY fn;
SELECT function_returns('awa', fn, args, returns, 'awa.' || fn || ' returns ' || returns)
  FROM api ORDER BY fn;
SELECT CASE WHEN definer
            THEN is_definer('awa', fn, args, 'awa.' || fn || ' is SECURITY DEFINER')
            ELSE isnt_definer('awa', fn, args, 'awa.' || fn || ' is not SECURITY DEFINER (runs as its caller)')
       END
  FROM api ORDER BY fn;
SELECT volatility_is('awa', fn, args, volatility, 'awa.' || fn || ' is ' || upper(volatility))
  FROM api ORDER BY fn;
SELECT function_lang_is('awa', fn, args, lang, 'awa.' || fn || ' is LANGUAGE ' || lang)
  FROM api ORDER BY fn;
SELECT CASE WHEN strict
            THEN is_strict('awa', fn, args, 'awa.' || fn || ' is STRICT')
            ELSE isnt_strict('awa', fn, args, 'awa.' || fn || ' is not STRICT (NULL arguments are validated)')
       END
  FROM api ORDER BY fn;
SELECT is(pg_catalog.pg_get_function_arguments(p.oid), a.arguments,
          'awa.' || a.fn || ' argument names and defaults')
  FROM api a
  JOIN pg_catalog.pg_proc p ON p.pronamespace = 'awa'::regnamespace AND p.proname = a.fn
 ORDER BY a.fn;
SELECT is(pg_catalog.pg_get_function_result(p.oid), a.result, 'awa.' || a.fn || ' result ' || a.result)
  FROM api a
  JOIN pg_catalog.pg_proc p ON p.pronamespace = 'awa'::regnamespace AND p.proname = a.fn
 ORDER BY a.fn;
SELECT is(p.proconfig,
          CASE WHEN a.lang = 'c' THEN NULL
               ELSE ARRAY['search_path=pg_catalog, pg_temp', 'jit=off'] END,
          'awa.' || a.fn || CASE WHEN a.lang = 'c' THEN ' (C) has no SET clause'
                                 ELSE ' has SET search_path = pg_catalog, pg_temp, jit = off' END)
  FROM api a
  JOIN pg_catalog.pg_proc p ON p.pronamespace = 'awa'::regnamespace AND p.proname = a.fn
 ORDER BY a.fn;
SELECT is(p.prorows, a.est_rows,
          'awa.' || a.fn || CASE WHEN p.proretset THEN ' has ROWS ' || a.est_rows
                                 ELSE ' returns one row (no ROWS estimate)' END)
  FROM api a
  JOIN pg_catalog.pg_proc p ON p.pronamespace = 'awa'::regnamespace AND p.proname = a.fn
 ORDER BY a.fn;

-- Per C function, its symbol in $libdir/awa: 42
SELECT is(p.probin || ':' || p.prosrc, '$libdir/awa:' || a.symbol,
          'awa.' || a.fn || ' is ' || a.symbol || ' in $libdir/awa')
  FROM api a
  JOIN pg_catalog.pg_proc p ON p.pronamespace = 'awa'::regnamespace AND p.proname = a.fn
 WHERE a.lang = 'c'
 ORDER BY a.fn;

-- Catalog-wide, so a function added later cannot slip past: every SQL and
-- PL/pgSQL function of awa pins its search path and turns JIT off, and nothing
-- is parallel safe (the API writes; the rest runs inside it): 3
SELECT is(
    ARRAY(SELECT p.proname::text FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang
           WHERE p.pronamespace = 'awa'::regnamespace AND l.lanname <> 'c'
             AND p.proconfig[1] IS DISTINCT FROM 'search_path=pg_catalog, pg_temp'
           ORDER BY 1),
    ARRAY[]::text[],
    'every SQL and PL/pgSQL function of awa has SET search_path = pg_catalog, pg_temp first');
SELECT is(
    ARRAY(SELECT p.proname::text FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang
           WHERE p.pronamespace = 'awa'::regnamespace AND l.lanname <> 'c'
             AND NOT coalesce('jit=off' = ANY (p.proconfig), false)
           ORDER BY 1),
    ARRAY[]::text[],
    'every SQL and PL/pgSQL function of awa has SET jit = off');
SELECT is(
    ARRAY(SELECT p.proname::text FROM pg_catalog.pg_proc p
           WHERE p.pronamespace = 'awa'::regnamespace AND p.proparallel <> 'u'
           ORDER BY 1),
    ARRAY[]::text[],
    'every awa function is PARALLEL UNSAFE');

SELECT * FROM finish();
ROLLBACK;
