-- 05_privileges.sql: roles and who may do what. EXECUTE is revoked from PUBLIC;
-- awa_producer may enqueue; awa_worker may claim and end attempts (complete,
-- heartbeat, retry, snooze, fail) and run the casts from numbers to
-- awa.duration; both may wait for durability (await_durable); awa_admin may call every public function and
-- read (only read) every table and the views lanes, dlq and periodic_jobs;
-- awa_monitor may call the metrics surface and list_jobs (queue_metrics, job_event_totals,
-- waiting_claims, periodic_status, storage_status, maintenance_status) and
-- nothing else, and reads no table. Nobody may execute the awa._* building
-- blocks, and nobody but the owner writes tables.
BEGIN;
SET LOCAL search_path = public;
SELECT plan(899);

-- Roles: 5 + 5 + 2
SELECT has_role(r::name, 'role ' || r || ' exists')
  FROM unnest(ARRAY['awa_producer', 'awa_worker', 'awa_admin', 'awa_monitor', 'awa_payload_reader']) r;
SELECT ok(NOT rolcanlogin AND NOT rolsuper AND NOT rolcreaterole AND NOT rolcreatedb AND NOT rolbypassrls,
          'role ' || rolname || ' is NOLOGIN with no special attributes')
  FROM pg_catalog.pg_roles
 WHERE rolname IN ('awa_producer', 'awa_worker', 'awa_admin', 'awa_monitor', 'awa_payload_reader')
 ORDER BY rolname;
-- awa_payload_reader (who sees args and metadata in awa.list_jobs): awa_admin
-- is its one member, and it is a member of nothing.
SELECT is(ARRAY(SELECT m.rolname::text FROM pg_catalog.pg_auth_members a
                  JOIN pg_catalog.pg_roles r ON r.oid = a.roleid JOIN pg_catalog.pg_roles m ON m.oid = a.member
                 WHERE r.rolname = 'awa_payload_reader'),
          ARRAY['awa_admin'], 'awa_admin is the one member of awa_payload_reader');
SELECT is((SELECT count(*)::int FROM pg_catalog.pg_auth_members a JOIN pg_catalog.pg_roles m ON m.oid = a.member
            WHERE m.rolname = 'awa_payload_reader'),
          0, 'awa_payload_reader is a member of no role');

-- Who may execute what: one row per function (P = awa_producer, W =
-- awa_worker, A = awa_admin, M = awa_monitor). PUBLIC executes nothing, and no
-- role may execute an awa._* building block (the SECURITY DEFINER API calls
-- them as the extension owner).
CREATE TEMP TABLE grants (fn name, args name[], producer boolean, worker boolean, admin boolean, monitor boolean)
    ON COMMIT DROP;
INSERT INTO grants VALUES
    ('enqueue', ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'jsonb'],
     true, false, true, false),
    ('enqueue_many', ARRAY['text[]', 'jsonb[]', 'text', 'integer[]', 'timestamp with time zone[]', 'integer',
                           'jsonb[]'],
     true, false, true, false),
    ('claim', ARRAY['text', 'integer', 'awa.duration', 'awa.duration', 'boolean'], false, true, true, false),
    ('complete', ARRAY['bigint', 'bigint', 'bigint'], false, true, true, false),
    ('complete_many', ARRAY['bigint[]', 'bigint[]', 'bigint[]'], false, true, true, false),
    ('heartbeat', ARRAY['bigint', 'bigint', 'bigint', 'jsonb'], false, true, true, false),
    ('heartbeat_many', ARRAY['bigint[]', 'bigint[]', 'bigint[]', 'jsonb[]'], false, true, true, false),
    ('retry', ARRAY['bigint', 'bigint', 'bigint', 'text', 'awa.duration'], false, true, true, false),
    ('snooze', ARRAY['bigint', 'bigint', 'bigint', 'awa.duration'], false, true, true, false),
    ('fail', ARRAY['bigint', 'bigint', 'bigint', 'text'], false, true, true, false),
    ('await_durable', ARRAY[]::name[], true, true, true, false),
    ('cancel', ARRAY['bigint'], false, false, true, false),
    ('get_job', ARRAY['bigint'], false, false, true, false),
    ('bulk_count', ARRAY['text', 'text', 'text', 'text', 'text', 'jsonb', 'timestamp with time zone',
                         'timestamp with time zone', 'jsonb', 'text', 'integer'], false, false, true, false),
    ('bulk_start', ARRAY['text', 'text', 'text', 'text', 'text', 'jsonb', 'timestamp with time zone',
                         'timestamp with time zone', 'jsonb', 'text', 'integer'], false, false, true, false),
    ('bulk_step', ARRAY['bigint', 'integer'], false, false, true, false),
    ('bulk_cancel', ARRAY['bigint'], false, false, true, false),
    ('move_jobs', ARRAY['bigint[]', 'text'], false, false, true, false),
    ('set_priority', ARRAY['bigint[]', 'integer'], false, false, true, false),
    ('retry_jobs', ARRAY['bigint[]'], false, false, true, false),
    ('list_jobs', ARRAY['text', 'text', 'text', 'text', 'jsonb', 'timestamp with time zone', 'timestamp with time zone',
                        'bigint', 'integer', 'jsonb'], false, false, true, true),
    ('promote_due', ARRAY['integer'], false, false, true, false),
    ('queue_counts', ARRAY['text'], false, false, true, false),
    ('queue_counts_exact', ARRAY['text'], false, false, true, false),
    ('rebuild_counters', ARRAY[]::name[], false, false, true, false),
    ('configure_queue', ARRAY['text', 'boolean', 'awa.duration', 'awa.duration', 'integer', 'text', 'integer', 'text',
                              'integer', 'text', 'integer'],
     false, false, true, false),
    ('set_key_weight', ARRAY['text', 'text', 'integer'], false, false, true, false),
    ('pause_queue', ARRAY['text'], false, false, true, false),
    ('resume_queue', ARRAY['text'], false, false, true, false),
    ('dlq_retry', ARRAY['bigint[]'], false, false, true, false),
    ('dlq_purge', ARRAY['bigint[]'], false, false, true, false),
    ('run_maintenance', ARRAY['text'], false, false, true, false),
    ('storage_status', ARRAY[]::name[], false, false, true, true),
    ('maintenance_status', ARRAY[]::name[], false, false, true, true),
    ('lane_cursors', ARRAY['text'], false, false, true, false),
    ('queue_metrics', ARRAY[]::name[], false, false, true, true),
    ('key_metrics', ARRAY['text', 'integer'], false, false, true, true),
    ('job_event_totals', ARRAY[]::name[], false, false, true, true),
    ('waiting_claims', ARRAY[]::name[], false, false, true, true),
    ('periodic_status', ARRAY[]::name[], false, false, true, true),
    ('schedule_periodic', ARRAY['text', 'text', 'text', 'jsonb', 'text', 'integer', 'text', 'jsonb'],
     false, false, true, false),
    ('unschedule_periodic', ARRAY['text'], false, false, true, false),
    ('periodic_next', ARRAY['text', 'text', 'timestamp with time zone'], false, false, true, false),
    ('_attempt', ARRAY['bigint', 'bigint', 'bigint', 'text'], false, false, false, false),
    ('_tombstone', ARRAY['text', 'integer', 'bigint', 'integer', 'bigint', 'bigint', 'bigint'],
     false, false, false, false),
    ('_reserve_lane_positions', ARRAY['text', 'integer', 'bigint'], false, false, false, false),
    ('_requeue_jobs', ARRAY['awa.deferred_jobs[]'], false, false, false, false),
    ('_unpark_queue', ARRAY['text'], false, false, false, false),
    ('_count_move', ARRAY['text', 'text', 'text', 'bigint'], false, false, false, false),
    ('_backoff', ARRAY['integer'], false, false, false, false),
    ('_queue_meta_changed', ARRAY['text', 'boolean'], false, false, false, false),
    ('_parse_rate', ARRAY['text', 'text'], false, false, false, false),
    ('_key_counter_name', ARRAY['text', 'text'], false, false, false, false),
    ('_key_running_scan', ARRAY['text', 'text', 'boolean'], false, false, false, false),
    ('_key_limit_stats', ARRAY['text', 'text'], false, false, false, false),
    ('_key_metrics', ARRAY['text', 'integer'], false, false, false, false),
    ('_key_weight_changed', ARRAY['text', 'text', 'integer'], false, false, false, false),
    ('_check_job', ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'jsonb'],
     false, false, false, false),
    ('_job_defaults', ARRAY[]::name[], false, false, false, false),
    ('_oldest_available_at', ARRAY['text'], false, false, false, false),
    ('_lane_heads', ARRAY['text'], false, false, false, false),
    ('_oldest_unknown_queues', ARRAY[]::name[], false, false, false, false),
    ('_periodic_job_opts', ARRAY['text', 'jsonb', 'timestamp with time zone'], false, false, false, false),
    ('_periodic_latest', ARRAY['text', 'text', 'timestamp with time zone', 'timestamp with time zone'],
     false, false, false, false),
    ('_periodic', ARRAY[]::name[], false, false, false, false),
    ('_queue_counts_scan', ARRAY['text'], false, false, false, false),
    ('_require_queue', ARRAY['text'], false, false, false, false),
    ('_job_document', ARRAY['bigint', 'text', 'integer', 'text', 'jsonb', 'text', 'integer', 'integer', 'bigint',
                            'timestamp with time zone', 'timestamp with time zone', 'jsonb',
                            'timestamp with time zone', 'timestamp with time zone', 'jsonb', 'jsonb'],
     false, false, false, false),
    ('_receipt', ARRAY['bigint', 'integer', 'integer'], false, false, false, false),
    ('_slot_of', ARRAY['bigint', 'integer'], false, false, false, false),
    ('_oldest_live_generation', ARRAY['bigint', 'integer'], false, false, false, false),
    ('_prune_target', ARRAY['bigint', 'integer'], false, false, false, false),
    ('_first_closure_batch_id', ARRAY['bigint'], false, false, false, false),
    ('_last_closure_batch_id', ARRAY['bigint'], false, false, false, false),
    ('_claim_batch_of_closure', ARRAY['bigint'], false, false, false, false),
    ('_lane_positions', ARRAY['bigint', 'integer', 'bigint[]'], false, false, false, false),
    ('_claim_job_ids', ARRAY['bigint', 'integer', 'bigint[]'], false, false, false, false),
    ('_summarize_receipts', ARRAY[]::name[], false, false, false, false),
    ('_task_names', ARRAY[]::name[], false, false, false, false),
    ('_outcome_names', ARRAY[]::name[], false, false, false, false),
    ('_get_job', ARRAY['bigint'], false, false, false, false),
    ('_get_jobs', ARRAY['bigint[]'], false, false, false, false),
    ('_hold_rings', ARRAY['boolean'], false, false, false, false),
    ('_note_ring_truncation', ARRAY[]::name[], false, false, false, false),
    ('_ring_locks_releasable', ARRAY[]::name[], false, false, false, false),
    ('_queue_counts_held', ARRAY['text'], false, false, false, false),
    ('_list_jobs', ARRAY['text', 'text', 'text', 'text', 'jsonb', 'timestamp with time zone', 'timestamp with time zone',
                         'bigint', 'integer', 'jsonb', 'jsonb'], false, false, false, false),
    ('_job_states', ARRAY[]::name[], false, false, false, false),
    ('_list_jobs_merge', ARRAY['bigint[]', 'bigint[]', 'integer'], false, false, false, false),
    ('_bulk_filter', ARRAY['text', 'text', 'text', 'text', 'text', 'jsonb', 'timestamp with time zone',
                           'timestamp with time zone', 'jsonb'], false, false, false, false),
    ('_bulk_page', ARRAY['jsonb', 'bigint', 'integer'], false, false, false, false),
    ('_bulk_acts_on', ARRAY['text', 'text'], false, false, false, false),
    ('_bulk_target', ARRAY['text', 'text', 'integer'], false, false, false, false),
    ('_relocate', ARRAY['bigint[]', 'text', 'integer'], false, false, false, false),
    ('_require_priority', ARRAY['integer', 'text'], false, false, false, false),
    ('_ensure_lane', ARRAY['text', 'integer', 'text'], false, false, false, false),
    ('_reclaim_idle_lanes', ARRAY['integer', 'integer'], false, false, false, false),
    ('_reclaim_lanes', ARRAY[]::name[], false, false, false, false),
    ('_count_transfer', ARRAY['text', 'text', 'text', 'text', 'bigint'], false, false, false, false),
    -- (awa_admin through its membership of awa_payload_reader)
    ('_list_jobs_payloads', ARRAY['text', 'text', 'text', 'text', 'jsonb', 'timestamp with time zone',
                                  'timestamp with time zone', 'bigint', 'integer', 'jsonb'], false, false, true, false),
    ('_list_jobs_plain', ARRAY['text', 'text', 'text', 'text', 'timestamp with time zone', 'timestamp with time zone',
                               'bigint', 'integer'], false, false, true, true),
    ('_slot_live_rows', ARRAY['integer'], false, false, false, false),
    ('_queue_prune_target', ARRAY[]::name[], false, false, false, false),
    ('_queue_live_generations', ARRAY[]::name[], false, false, false, false),
    ('_rotation_begin', ARRAY[]::name[], false, false, false, false),
    ('_enqueue_generation_in_use', ARRAY['bigint'], false, false, false, false),
    ('_queue_generation_entered', ARRAY['bigint'], false, false, false, false),
    ('_queue_generation_may_hold_enqueues', ARRAY['bigint'], false, false, false, false),
    ('_queue_generation_may_hold_claims', ARRAY['bigint'], false, false, false, false),
    ('_note_outcome', ARRAY['text', 'text'], false, false, false, false),
    ('_ensure_counters', ARRAY[]::name[], false, false, false, false),
    ('_free_key_entries', ARRAY[]::name[], false, false, false, false),
    ('_flush_enqueues', ARRAY[]::name[], false, false, false, false),
    ('_wake_launcher', ARRAY[]::name[], false, false, false, false),
    ('_advance_cursors', ARRAY[]::name[], false, false, false, false),
    ('_rescue_attempt', ARRAY['bigint', 'bigint', 'bigint', 'timestamp with time zone'], false, false, false, false),
    ('_slot_children', ARRAY['text', 'integer'], false, false, false, false),
    ('_ring_position', ARRAY['text'], false, false, false, false),
    ('_slot_is_empty', ARRAY['text', 'integer'], false, false, false, false),
    ('_slot_has_no_blocks', ARRAY['text', 'integer'], false, false, false, false),
    ('_queue_slot_blocker', ARRAY['integer', 'bigint'], false, false, false, false),
    ('_carry_queue_slot', ARRAY['integer', 'bigint'], false, false, false, false),
    ('_claim_slot_blocker', ARRAY['integer'], false, false, false, false),
    ('_carry_claim_slot', ARRAY['integer'], false, false, false, false),
    ('_lock_slot', ARRAY['text', 'integer'], false, false, false, false),
    ('_try_ring_lock', ARRAY[]::name[], false, false, false, false),
    ('_rotate', ARRAY['text'], false, false, false, false),
    ('_prune', ARRAY['text'], false, false, false, false),
    ('_prune_slot', ARRAY['text'], false, false, false, false),
    ('_ring_slot_cap', ARRAY['text'], false, false, false, false),
    ('_ring_held_slots', ARRAY['text'], false, false, false, false),
    ('_ring_slots_in_use', ARRAY['text'], false, false, false, false),
    ('_ring_prune_target', ARRAY['text'], false, false, false, false),
    ('_rescue', ARRAY[]::name[], false, false, false, false),
    ('_promote', ARRAY[]::name[], false, false, false, false),
    ('_dlq_retention', ARRAY[]::name[], false, false, false, false),
    ('_history_retention', ARRAY[]::name[], false, false, false, false),
    ('_forget_finished', ARRAY['text'], false, false, false, false),
    ('_keep_history', ARRAY['integer'], false, false, false, false),
    ('_history', ARRAY[]::name[], false, false, false, false),
    ('_run_maintenance', ARRAY['text'], false, false, false, false),
    -- awa.duration: the casts from numbers run as the caller, so the roles
    -- that call a function taking a duration may execute them; its input and
    -- output need no privilege (PostgreSQL does not check one).
    ('duration_from_int2', ARRAY['smallint'], false, true, true, false),
    ('duration_from_int4', ARRAY['integer'], false, true, true, false),
    ('duration_from_int8', ARRAY['bigint'], false, true, true, false),
    ('duration_from_float4', ARRAY['real'], false, true, true, false),
    ('duration_from_float8', ARRAY['double precision'], false, true, true, false),
    ('duration_from_numeric', ARRAY['numeric'], false, true, true, false),
    ('_duration_in', ARRAY['cstring', 'oid', 'integer'], false, false, false, false),
    ('_duration_out', ARRAY['awa.duration'], false, false, false, false),
    ('_duration_recv', ARRAY['internal', 'oid', 'integer'], false, false, false, false),
    ('_duration_send', ARRAY['awa.duration'], false, false, false, false);

-- The matrix covers every function of awa: 1
SELECT is(
    ARRAY(SELECT p.proname::text FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'awa'::regnamespace
          EXCEPT SELECT fn::text FROM grants),
    ARRAY[]::text[],
    'the privilege matrix names every awa function');

-- EXECUTE per function and role (PUBLIC included): 118 x 5 = 590
SELECT function_privs_are('awa', g.fn, g.args, r.role::name,
                          CASE WHEN r.may THEN ARRAY['EXECUTE'] ELSE ARRAY[]::name[] END,
                          r.role || ' ' || CASE WHEN r.may THEN 'may' ELSE 'may not' END
                          || ' execute awa.' || g.fn)
  FROM grants g,
       LATERAL (VALUES (1, 'awa_producer', g.producer), (2, 'awa_worker', g.worker), (3, 'awa_admin', g.admin),
                       (4, 'awa_monitor', g.monitor), (5, 'public', false)) AS r(ord, role, may)
 ORDER BY g.fn, r.ord;

-- The same matrix read per role from the whole schema, so that a function
-- added later with a grant cannot slip past: 5
SELECT is(
    ARRAY(SELECT p.proname::text FROM pg_catalog.pg_proc p
           WHERE p.pronamespace = 'awa'::regnamespace
             AND pg_catalog.has_function_privilege(r.role, p.oid, 'EXECUTE')
           ORDER BY p.proname COLLATE "C"),
    r.fns,
    r.role || ' may execute exactly ' || CASE WHEN cardinality(r.fns) = 0 THEN 'nothing in awa'
                                              ELSE array_to_string(r.fns, ', ') END)
  FROM (VALUES
    ('awa_producer', ARRAY['await_durable', 'enqueue', 'enqueue_many']),
    ('awa_worker', ARRAY['await_durable', 'claim', 'complete', 'complete_many', 'duration_from_float4',
                         'duration_from_float8', 'duration_from_int2', 'duration_from_int4', 'duration_from_int8',
                         'duration_from_numeric', 'fail', 'heartbeat', 'heartbeat_many', 'retry', 'snooze']),
    ('awa_admin', ARRAY['_list_jobs_payloads', '_list_jobs_plain', 'await_durable', 'bulk_cancel', 'bulk_count', 'bulk_start', 'bulk_step', 'cancel', 'claim',
                        'complete', 'complete_many', 'configure_queue',
                        'dlq_purge', 'dlq_retry', 'duration_from_float4', 'duration_from_float8',
                        'duration_from_int2', 'duration_from_int4', 'duration_from_int8', 'duration_from_numeric',
                        'enqueue', 'enqueue_many', 'fail', 'get_job', 'heartbeat',
                        'heartbeat_many', 'job_event_totals', 'key_metrics', 'lane_cursors', 'list_jobs',
                        'maintenance_status', 'move_jobs',
                        'pause_queue', 'periodic_next',
                        'periodic_status', 'promote_due', 'queue_counts', 'queue_counts_exact', 'queue_metrics',
                        'rebuild_counters', 'resume_queue', 'retry', 'retry_jobs', 'run_maintenance', 'schedule_periodic',
                        'set_key_weight', 'set_priority', 'snooze', 'storage_status', 'unschedule_periodic', 'waiting_claims']),
    ('awa_monitor', ARRAY['_list_jobs_plain', 'job_event_totals', 'key_metrics', 'list_jobs', 'maintenance_status', 'periodic_status',
                          'queue_metrics', 'storage_status', 'waiting_claims']),
    ('public', ARRAY[]::text[])
  ) AS r(role, fns);
-- Nobody but the owner holds EXECUTE on an awa._* function, but the two ways
-- of awa.list_jobs (which runs as its caller) into the job store: the one
-- with payloads for awa_payload_reader, the one without for awa_monitor and
-- awa_admin: 1
SELECT is(
    ARRAY(SELECT p.proname || ' ' || coalesce(g.rolname, 'PUBLIC')
            FROM pg_catalog.pg_proc p, aclexplode(p.proacl) a
            LEFT JOIN pg_catalog.pg_roles g ON g.oid = a.grantee
           WHERE p.pronamespace = 'awa'::regnamespace AND p.proname LIKE '\_%' AND a.grantee <> p.proowner
           ORDER BY 1),
    ARRAY['_list_jobs_payloads awa_payload_reader', '_list_jobs_plain awa_admin', '_list_jobs_plain awa_monitor'],
    'the ACL of every awa._* function names its owner only, but _list_jobs_payloads and _list_jobs_plain');

-- The ACLs name no other grantee (no role besides the owner and these): 1
SELECT is(
    ARRAY(SELECT DISTINCT coalesce(r.rolname, 'PUBLIC')::text
            FROM pg_catalog.pg_proc p, aclexplode(p.proacl) a
            LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
           WHERE p.pronamespace = 'awa'::regnamespace AND a.grantee <> p.proowner
           ORDER BY 1),
    ARRAY['awa_admin', 'awa_monitor', 'awa_payload_reader', 'awa_producer', 'awa_worker'],
    'EXECUTE on awa functions is granted to the five awa roles only');
-- Every API function has an explicit ACL (a NULL ACL would mean PUBLIC EXECUTE): 1
SELECT is((SELECT count(*)::int FROM pg_catalog.pg_proc
            WHERE pronamespace = 'awa'::regnamespace AND proacl IS NULL),
          0, 'no awa function has the default (PUBLIC EXECUTE) ACL');

-- Schema usage: 5
SELECT schema_privs_are('awa', r::name, ARRAY['USAGE']::name[], r || ' has USAGE on schema awa')
  FROM unnest(ARRAY['awa_producer', 'awa_worker', 'awa_admin', 'awa_monitor']) r;
SELECT schema_privs_are('awa', 'public', ARRAY[]::name[], 'PUBLIC has no privilege on schema awa');

-- Tables (partitions included) and the views: 1 + 5 + 4
SELECT is(
    ARRAY(SELECT c.relname::text FROM pg_catalog.pg_class c
           WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind IN ('r', 'p', 'v')
             AND NOT pg_catalog.has_table_privilege('awa_admin', c.oid, 'SELECT')
           ORDER BY c.relname COLLATE "C"),
    ARRAY[]::text[],
    'awa_admin may SELECT every awa table, partition and view');
SELECT is(
    ARRAY(SELECT c.relname::text FROM pg_catalog.pg_class c
           WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind IN ('r', 'p', 'v')
             AND pg_catalog.has_table_privilege(r, c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
           ORDER BY c.relname COLLATE "C"),
    ARRAY[]::text[],
    r || ' may not write, truncate, reference or trigger on any awa table')
  FROM unnest(ARRAY['awa_producer', 'awa_worker', 'awa_admin', 'awa_monitor', 'public']) r;
SELECT is(
    ARRAY(SELECT c.relname::text FROM pg_catalog.pg_class c
           WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind IN ('r', 'p', 'v')
             AND pg_catalog.has_table_privilege(r, c.oid, 'SELECT')
           ORDER BY c.relname COLLATE "C"),
    ARRAY[]::text[],
    r || ' may not read any awa table or view')
  FROM unnest(ARRAY['awa_producer', 'awa_worker', 'awa_monitor', 'public']) r;

-- Exactly SELECT for awa_admin on the views and the control tables of the
-- lifecycle, of the keys' weights and of periodic jobs; nothing for awa_monitor
-- and PUBLIC: 7 + 7 + 7
SELECT table_privs_are('awa', t::name, 'awa_admin', ARRAY['SELECT']::name[], 'awa_admin may only SELECT awa.' || t)
  FROM unnest(ARRAY['lanes', 'dlq', 'periodic_jobs', 'queue_meta', 'key_weights', 'job_unique_claims',
                    'periodic_schedules']) t;
SELECT table_privs_are('awa', t::name, 'awa_monitor', ARRAY[]::name[], 'awa_monitor has no privilege on awa.' || t)
  FROM unnest(ARRAY['lanes', 'dlq', 'periodic_jobs', 'queue_meta', 'key_weights', 'job_unique_claims',
                    'periodic_schedules']) t;
SELECT table_privs_are('awa', t::name, 'public', ARRAY[]::name[], 'PUBLIC has no privilege on awa.' || t)
  FROM unnest(ARRAY['lanes', 'dlq', 'periodic_jobs', 'queue_meta', 'key_weights', 'job_unique_claims',
                    'periodic_schedules']) t;
-- No relation's ACL names any grantee besides the owner and awa_admin: 1
SELECT is(
    ARRAY(SELECT DISTINCT coalesce(r.rolname, 'PUBLIC')::text || ' ' || a.privilege_type
            FROM pg_catalog.pg_class c, aclexplode(c.relacl) a
            LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
           WHERE c.relnamespace = 'awa'::regnamespace AND a.grantee <> c.relowner
           ORDER BY 1),
    ARRAY['awa_admin SELECT'],
    'on awa relations only awa_admin holds a privilege, and only SELECT');

-- Sequences: nobody but the owner may use them directly: 5
SELECT is(
    ARRAY(SELECT c.relname::text FROM pg_catalog.pg_class c
           WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind = 'S'
             AND pg_catalog.has_sequence_privilege(r, c.oid, 'USAGE, SELECT, UPDATE')
           ORDER BY c.relname COLLATE "C"),
    ARRAY[]::text[],
    r || ' has no privilege on any awa sequence')
  FROM unnest(ARRAY['awa_producer', 'awa_worker', 'awa_admin', 'awa_monitor', 'public']) r;

-- Behaviour matches the catalog. Calls without EXECUTE or SELECT fail with
-- 42501; granted calls work although the SECURITY DEFINER API calls awa._*
-- functions nobody may execute (unknown ids answer 'stale', 'not_found', 0).
CREATE ROLE awa_pgtap_nobody NOLOGIN;
CREATE ROLE awa_pgtap_producer NOLOGIN IN ROLE awa_producer;
CREATE ROLE awa_pgtap_worker NOLOGIN IN ROLE awa_worker;
CREATE ROLE awa_pgtap_admin NOLOGIN IN ROLE awa_admin;
CREATE ROLE awa_pgtap_monitor NOLOGIN IN ROLE awa_monitor;

-- A role without grants: 5
SET LOCAL ROLE awa_pgtap_nobody;
SELECT throws_ok($$SELECT awa.enqueue('k')$$, '42501', NULL, 'a role without grants may not enqueue');
SELECT throws_ok($$SELECT * FROM awa.claim('q')$$, '42501', NULL, 'a role without grants may not claim');
SELECT throws_ok($$SELECT * FROM awa.queue_counts()$$, '42501', NULL,
                 'a role without grants may not read queue counts');
SELECT throws_ok($$SELECT * FROM awa.dlq$$, '42501', NULL, 'a role without grants may not read awa.dlq');
SELECT throws_ok($$SELECT * FROM awa.queue_metrics()$$, '42501', NULL,
                 'a role without grants may not read queue metrics');
RESET ROLE;

-- awa_producer: 8
SET LOCAL ROLE awa_pgtap_producer;
SELECT throws_ok($$SELECT * FROM awa.claim('q')$$, '42501', NULL, 'a producer may not claim');
SELECT throws_ok($$SELECT awa.complete(1, 1, 1)$$, '42501', NULL, 'a producer may not complete');
SELECT throws_ok($$SELECT awa.heartbeat(1, 1, 1)$$, '42501', NULL, 'a producer may not heartbeat');
SELECT throws_ok($$SELECT awa.retry(1, 1, 1, 'e')$$, '42501', NULL, 'a producer may not retry');
SELECT throws_ok($$SELECT awa.cancel(-1)$$, '42501', NULL, 'a producer may not cancel');
SELECT throws_ok($$SELECT * FROM awa.run_maintenance('promote')$$, '42501', NULL,
                 'a producer may not run maintenance');
SELECT throws_ok($$SELECT awa.schedule_periodic('pgtap_privileges', '@hourly', 'k')$$, '42501', NULL,
                 'a producer may not schedule a periodic job');
SELECT ok(awa.enqueue('k', '{}', 'pgtap_privileges') > 0, 'a producer may enqueue');
RESET ROLE;

-- awa_worker: 16
SET LOCAL ROLE awa_pgtap_worker;
SELECT throws_ok($$SELECT awa.enqueue('k')$$, '42501', NULL, 'a worker may not enqueue');
SELECT throws_ok($$SELECT awa.cancel(-1)$$, '42501', NULL, 'a worker may not cancel');
SELECT throws_ok($$SELECT awa.get_job(-1)$$, '42501', NULL, 'a worker may not read a job');
SELECT throws_ok($$SELECT awa.configure_queue('pgtap_privileges', true)$$, '42501', NULL,
                 'a worker may not configure a queue');
SELECT throws_ok($$SELECT awa.pause_queue('pgtap_privileges')$$, '42501', NULL, 'a worker may not pause a queue');
SELECT throws_ok($$SELECT awa.set_key_weight('pgtap_privileges', 'k', 2)$$, '42501', NULL,
                 'a worker may not set a key''s weight');
SELECT throws_ok($$SELECT awa.promote_due()$$, '42501', NULL, 'a worker may not promote due jobs');
SELECT throws_ok($$SELECT awa.dlq_purge('{-1}')$$, '42501', NULL, 'a worker may not purge the DLQ');
SELECT throws_ok($$SELECT count(*) FROM awa.queue_meta$$, '42501', NULL, 'a worker may not read awa.queue_meta');
SELECT throws_ok($$SELECT * FROM awa.run_maintenance('rescue')$$, '42501', NULL, 'a worker may not run maintenance');
SELECT throws_ok($$SELECT * FROM awa.storage_status()$$, '42501', NULL, 'a worker may not read the storage status');
SELECT throws_ok($$SELECT * FROM awa.maintenance_status()$$, '42501', NULL,
                 'a worker may not read the maintenance status');
SELECT throws_ok($$SELECT * FROM awa.queue_metrics()$$, '42501', NULL, 'a worker may not read queue metrics');
SELECT throws_ok($$SELECT * FROM awa.periodic_status()$$, '42501', NULL,
                 'a worker may not read the periodic status');
SELECT results_eq(
    $$SELECT awa.heartbeat(0, 0, 0), awa.retry(0, 0, 0, 'e'), awa.snooze(0, 0, 0, interval '1 second'),
             awa.fail(0, 0, 0, 'e')$$,
    $$VALUES ('stale', 'stale', 'stale', 'stale')$$,
    'a worker may heartbeat, retry, snooze and fail (an unknown attempt is stale)');
SELECT results_eq(
    $$SELECT job_id, run_lease, status FROM awa.heartbeat_many('{7}', '{1}', '{1}')$$,
    $$VALUES (7::bigint, 1::bigint, 'stale')$$,
    'a worker may heartbeat_many');
RESET ROLE;

-- awa_admin: 14 + 12 + 4
SET LOCAL ROLE awa_pgtap_admin;
SELECT throws_ok($$SELECT awa._backoff(1)$$, '42501', NULL, 'an admin may not execute awa._backoff');
SELECT throws_ok($$SELECT awa._count_move('pgtap_privileges', 'available', NULL)$$, '42501', NULL,
                 'an admin may not execute awa._count_move');
SELECT throws_ok($$SELECT * FROM awa._queue_counts_scan(NULL)$$, '42501', NULL,
                 'an admin may not execute awa._queue_counts_scan');
SELECT throws_ok($$SELECT * FROM awa._run_maintenance('all')$$, '42501', NULL,
                 'an admin may not execute awa._run_maintenance (only through awa.run_maintenance)');
SELECT throws_ok($$SELECT * FROM awa._prune('queue')$$, '42501', NULL, 'an admin may not execute awa._prune');
SELECT throws_ok($$SELECT * FROM awa._history()$$, '42501', NULL,
                 'an admin may not execute awa._history (only through awa.run_maintenance)');
SELECT throws_ok($$SELECT awa._task_names()$$, '42501', NULL, 'an admin may not execute awa._task_names');
SELECT results_eq(
    $$SELECT task, outcome, detail FROM awa.run_maintenance('promote')$$,
    $$VALUES ('promote', 'nothing_due', '{"jobs": 0}'::jsonb)$$,
    'an admin may run a maintenance step (nothing is due)');
SELECT results_eq(
    $$SELECT ring, slot_count, generation FROM awa.storage_status()$$,
    $$VALUES ('queue', 32, 0::bigint), ('claim', 16, 0::bigint), ('lease', 8, 0::bigint)$$,
    'an admin may read the storage status (one row per ring)');
SELECT results_eq(
    $$SELECT task, last_outcome FROM awa.maintenance_status() WHERE runs > 0$$,
    $$VALUES ('promote', 'nothing_due')$$,
    'an admin may read the maintenance status (the step just run)');
SELECT lives_ok($$SELECT awa.configure_queue('pgtap_privileges', true), awa.pause_queue('pgtap_privileges'),
                         awa.resume_queue('pgtap_privileges')$$,
                'an admin may configure, pause and resume a queue');
SELECT results_eq(
    $$SELECT awa.cancel(-1), awa.get_job(-1), awa.dlq_retry('{-1}'), awa.dlq_purge('{-1}')$$,
    $$VALUES ('not_found', NULL::jsonb, 0, 0)$$,
    'an admin may cancel, read jobs, retry and purge dead letters (unknown ids)');
SELECT results_eq(
    $$SELECT queue, available, scheduled, dlq FROM awa.queue_counts_exact('pgtap_privileges')$$,
    $$VALUES ('pgtap_privileges', 1::bigint, 0::bigint, 0::bigint)$$,
    'an admin may count a queue exactly (it sees the producer''s job)');
SELECT lives_ok($$SELECT (SELECT count(*) FROM awa.dlq), (SELECT count(*) FROM awa.lanes),
                         (SELECT count(*) FROM awa.queue_meta), (SELECT count(*) FROM awa.job_unique_claims)$$,
                'an admin may read awa.dlq, awa.lanes, awa.queue_meta and awa.job_unique_claims');
-- ... the periodic jobs and the metrics surface:
SELECT throws_ok($$SELECT * FROM awa._periodic()$$, '42501', NULL,
                 'an admin may not execute awa._periodic (only through awa.run_maintenance)');
SELECT throws_ok($$SELECT awa._check_job('k', '{}', 'pgtap_privileges', 2, NULL, 25, '{}')$$, '42501', NULL,
                 'an admin may not execute awa._check_job');
SELECT throws_ok($$SELECT awa._periodic_job_opts('pgtap_privileges', '{}', now())$$, '42501', NULL,
                 'an admin may not execute awa._periodic_job_opts');
SELECT throws_ok($$SELECT awa._periodic_latest('@hourly', 'UTC', now(), now())$$, '42501', NULL,
                 'an admin may not execute awa._periodic_latest');
SELECT throws_ok($$SELECT awa._oldest_available_at('pgtap_privileges')$$, '42501', NULL,
                 'an admin may not execute awa._oldest_available_at');
SELECT results_eq(
    $$SELECT awa.schedule_periodic('pgtap_privileges', '0 3 * * *', 'k', queue => 'pgtap_privileges')
             = awa.periodic_next('0 3 * * *', 'UTC', date_trunc('second', now()))$$,
    $$VALUES (true)$$,
    'an admin may schedule a periodic job and compute its next run');
SELECT results_eq(
    $$SELECT name, schedule, timezone, kind, args, queue, priority::int, opts, last_run_at, last_job_id
        FROM awa.periodic_jobs$$,
    $$VALUES ('pgtap_privileges', '0 3 * * *', 'UTC', 'k', '{}'::jsonb, 'pgtap_privileges', 2, '{}'::jsonb,
              NULL::timestamptz, NULL::bigint)$$,
    'an admin may read awa.periodic_jobs (the schedule just made)');
SELECT results_eq(
    $$SELECT count(*)::int FROM awa.periodic_schedules$$,
    $$VALUES (1)$$,
    'an admin may read awa.periodic_schedules');
SELECT results_eq(
    $$SELECT awa.schedule_periodic('pgtap_privileges_once', '@hourly', 'k') IS NOT NULL,
             awa.unschedule_periodic('pgtap_privileges_once'), awa.unschedule_periodic('pgtap_privileges_once')$$,
    $$VALUES (true, true, false)$$,
    'an admin may unschedule a periodic job (a second time finds none)');
SELECT results_eq(
    $$SELECT task, outcome, detail FROM awa.run_maintenance('periodic')$$,
    $$VALUES ('periodic', 'nothing_due', '{"jobs": 0, "schedules": 0}'::jsonb)$$,
    'an admin may run the periodic step (the schedule is not due)');
SELECT results_eq(
    $$SELECT queue, available, waiting_claims, paused, oldest_available_at IS NOT NULL
        FROM awa.queue_metrics() WHERE queue = 'pgtap_privileges'$$,
    $$VALUES ('pgtap_privileges', 1::bigint, 0::bigint, false, true)$$,
    'an admin may read queue metrics (the producer''s job is available)');
SELECT lives_ok($$SELECT (SELECT count(*) FROM awa.job_event_totals()), (SELECT count(*) FROM awa.waiting_claims()),
                         (SELECT count(*) FROM awa.periodic_status())$$,
                'an admin may read the job event totals, the waiting claims and the periodic status');
-- ... and the keys' weights:
SELECT throws_ok($$SELECT awa._key_weight_changed('pgtap_privileges', 'k', 2)$$, '42501', NULL,
                 'an admin may not execute awa._key_weight_changed (only through awa.set_key_weight)');
SELECT lives_ok($$SELECT awa.set_key_weight('pgtap_privileges', 'k', 2)$$, 'an admin may set a key''s weight');
SELECT results_eq(
    $$SELECT queue, concurrency_key, weight FROM awa.key_weights$$,
    $$VALUES ('pgtap_privileges', 'k', 2)$$,
    'an admin may read awa.key_weights (the weight just set)');
RESET ROLE;

-- awa_monitor reads the metrics surface and nothing else: 14 + 6
SET LOCAL ROLE awa_pgtap_monitor;
SELECT throws_ok($$SELECT awa.enqueue('k')$$, '42501', NULL, 'a monitor may not enqueue');
SELECT throws_ok($$SELECT * FROM awa.claim('q')$$, '42501', NULL, 'a monitor may not claim');
SELECT throws_ok($$SELECT * FROM awa.queue_counts()$$, '42501', NULL,
                 'a monitor may not call awa.queue_counts (awa.queue_metrics has its counts)');
SELECT throws_ok($$SELECT awa.get_job(-1)$$, '42501', NULL, 'a monitor may not read a job');
SELECT throws_ok($$SELECT * FROM awa.run_maintenance('periodic')$$, '42501', NULL,
                 'a monitor may not run maintenance');
SELECT throws_ok($$SELECT awa.schedule_periodic('pgtap_monitor', '@hourly', 'k')$$, '42501', NULL,
                 'a monitor may not schedule a periodic job');
SELECT throws_ok($$SELECT awa.unschedule_periodic('pgtap_privileges')$$, '42501', NULL,
                 'a monitor may not unschedule a periodic job');
SELECT throws_ok($$SELECT awa.periodic_next('@hourly')$$, '42501', NULL, 'a monitor may not call awa.periodic_next');
SELECT throws_ok($$SELECT * FROM awa.periodic_jobs$$, '42501', NULL,
                 'a monitor may not read awa.periodic_jobs (its args and options)');
SELECT throws_ok($$SELECT * FROM awa.periodic_schedules$$, '42501', NULL,
                 'a monitor may not read awa.periodic_schedules');
SELECT throws_ok($$SELECT count(*) FROM awa.queue_meta$$, '42501', NULL, 'a monitor may not read awa.queue_meta');
SELECT throws_ok($$SELECT awa.set_key_weight('pgtap_privileges', 'k', 2)$$, '42501', NULL,
                 'a monitor may not set a key''s weight');
SELECT throws_ok($$SELECT count(*) FROM awa.key_weights$$, '42501', NULL, 'a monitor may not read awa.key_weights');
SELECT throws_ok($$SELECT awa._oldest_available_at('pgtap_privileges')$$, '42501', NULL,
                 'a monitor may not execute awa._oldest_available_at');
SELECT results_eq(
    $$SELECT queue, available, scheduled, dlq, waiting_claims, paused, oldest_available_at IS NOT NULL
        FROM awa.queue_metrics() WHERE queue = 'pgtap_privileges'$$,
    $$VALUES ('pgtap_privileges', 1::bigint, 0::bigint, 0::bigint, 0::bigint, false, true)$$,
    'a monitor may read queue metrics (the producer''s job is available)');
SELECT lives_ok($$SELECT count(*) FROM awa.job_event_totals()$$, 'a monitor may read the job event totals');
SELECT results_eq($$SELECT queue, state, args IS NULL, metadata IS NULL FROM awa.list_jobs(queue => 'pgtap_privileges')$$,
                  $$VALUES ('pgtap_privileges', 'available', true, true)$$,
                  'a monitor may list jobs, without their args and metadata');
SELECT throws_ok($$SELECT count(*) FROM awa.list_jobs(args_contains => '{"a": 1}')$$, '42501', NULL,
                 'a monitor may not filter jobs by args (it would reveal them)');
SELECT throws_ok($$SELECT count(*) FROM awa.list_jobs(metadata_contains => '{"a": 1}')$$, '42501', NULL,
                 'a monitor may not filter jobs by metadata');
SELECT results_eq($$SELECT count(*)::int FROM awa.waiting_claims()$$, $$VALUES (0)$$,
                  'a monitor may read the waiting claims (none waits)');
SELECT results_eq(
    $$SELECT name, schedule, timezone, kind, queue, last_run_at, last_job_id FROM awa.periodic_status()$$,
    $$VALUES ('pgtap_privileges', '0 3 * * *', 'UTC', 'k', 'pgtap_privileges', NULL::timestamptz, NULL::bigint)$$,
    'a monitor may read the periodic status (the admin''s schedule, without args or options)');
SELECT results_eq(
    $$SELECT ring, slot_count, generation FROM awa.storage_status()$$,
    $$VALUES ('queue', 32, 0::bigint), ('claim', 16, 0::bigint), ('lease', 8, 0::bigint)$$,
    'a monitor may read the storage status');
SELECT results_eq(
    $$SELECT task, last_outcome FROM awa.maintenance_status() WHERE runs > 0 ORDER BY task$$,
    $$VALUES ('periodic', 'nothing_due'), ('promote', 'nothing_due')$$,
    'a monitor may read the maintenance status (the steps the admin ran)');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
