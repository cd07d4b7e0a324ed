-- 01_tables.sql: the tables, views and sequences of schema awa, their exact
-- columns, the type of every column, nullability, defaults, CHECK constraints,
-- storage parameters, primary keys and the unique identity of awa.queue_lanes
-- (awa--0.6.sql).
BEGIN;
SET LOCAL search_path = public;
SELECT plan(471);

-- Every relation of kind table (regular or partitioned, partitions included)
-- in schema awa, and nothing else.
SELECT tables_are('awa',
    ARRAY['queue_ring_state', 'claim_ring_state', 'lease_ring_state', 'history_ring_state',
          'queue_ring_rotations', 'claim_ring_rotations', 'lease_ring_rotations', 'history_ring_rotations',
          'queue_ring_slots', 'claim_ring_slots', 'lease_ring_slots', 'history_ring_slots',
          'queue_lanes', 'key_weights',
          'ready_entries', 'ready_tombstones',
          'ready_claim_attempt_batches', 'done_entries', 'receipt_completion_batches',
          'lease_claims', 'lease_claim_batches', 'lease_claim_closures',
          'lease_claim_closure_batches',
          'leases',
          'job_history',
          'attempt_state', 'deferred_jobs', 'dlq_entries',
          'queue_meta', 'job_unique_claims', 'periodic_schedules', 'bulk_operations',
                    'superseded_records']::name[]
    || ARRAY(SELECT (f || '_' || s)::name
               FROM unnest(ARRAY['ready_entries', 'ready_tombstones',
                                 'ready_claim_attempt_batches', 'done_entries',
                                 'receipt_completion_batches']) f,
                    generate_series(0, 31) s)
    || ARRAY(SELECT (f || '_' || s)::name
               FROM unnest(ARRAY['lease_claims', 'lease_claim_batches', 'lease_claim_closures',
                                 'lease_claim_closure_batches']) f,
                    generate_series(0, 15) s)
    || ARRAY(SELECT ('leases_' || s)::name FROM generate_series(0, 7) s)
    || ARRAY(SELECT ('job_history_' || s)::name FROM generate_series(0, 7) s),
    'schema awa has exactly the 33 tables and their 240 ring partitions (16 + 16 spare queue slots, 8 + 8 claim slots)');

-- has_table: 33
SELECT has_table('awa', t::name, 'table awa.' || t || ' exists')
  FROM unnest(ARRAY['queue_ring_state', 'claim_ring_state', 'lease_ring_state', 'history_ring_state',
                    'queue_ring_rotations', 'claim_ring_rotations', 'lease_ring_rotations',
                    'history_ring_rotations',
                    'queue_ring_slots', 'claim_ring_slots', 'lease_ring_slots', 'history_ring_slots',
                    'queue_lanes', 'key_weights',
                    'ready_entries', 'ready_tombstones',
                    'ready_claim_attempt_batches', 'done_entries', 'receipt_completion_batches',
                    'lease_claims', 'lease_claim_batches', 'lease_claim_closures',
                    'lease_claim_closure_batches', 'leases', 'job_history',
                    'attempt_state', 'deferred_jobs', 'dlq_entries',
                    'queue_meta', 'job_unique_claims', 'periodic_schedules', 'bulk_operations',
                    'superseded_records']) t;

-- has_pk, every table but the insert-only history ring job_history,
-- queue_lanes (identified by a unique constraint, below), ready_entries and
-- the four batch evidence tables (a unique index per partition, below): 26
SELECT has_pk('awa', t::name, 'table awa.' || t || ' has a primary key')
  FROM unnest(ARRAY['queue_ring_state', 'claim_ring_state', 'lease_ring_state', 'history_ring_state',
                    'queue_ring_rotations', 'claim_ring_rotations', 'lease_ring_rotations',
                    'history_ring_rotations',
                    'queue_ring_slots', 'claim_ring_slots', 'lease_ring_slots', 'history_ring_slots',
                    'key_weights',
                    'ready_tombstones',
                    'done_entries',
                    'lease_claims', 'lease_claim_closures',
                    'leases',
                    'attempt_state', 'deferred_jobs', 'dlq_entries',
                    'queue_meta', 'job_unique_claims', 'periodic_schedules', 'bulk_operations',
                    'superseded_records']) t;

-- awa.job_history has no primary key (a job has one history row; lookups use
-- job_history_job_id_idx), nor has awa.queue_lanes (the lane of jobs without a
-- key has a NULL concurrency_key, which a primary key cannot hold; its
-- identity is the unique constraint queue_lanes_identity, below), nor has
-- awa.ready_entries: each of its partitions has a unique index on (lane_id,
-- lane_seq) instead, 8 bytes per entry smaller than a primary key of the
-- parent, which must hold the partition key ready_slot (04_queue_ring.sql;
-- test/pgtap/03_indexes.sql checks the index on every partition), nor have
-- the claim and completion evidence tables: each partition has a unique
-- index on batch_id, 8 bytes per entry smaller than (batch_id, slot), but
-- ready_claim_attempt_batches, read by lane only, which has none: 7
SELECT hasnt_pk('awa', 'job_history', 'table awa.job_history has no primary key');
SELECT hasnt_pk('awa', 'queue_lanes', 'table awa.queue_lanes has no primary key');
SELECT hasnt_pk('awa', 'ready_entries', 'table awa.ready_entries has no primary key');
SELECT hasnt_pk('awa', 'ready_claim_attempt_batches',
                'table awa.ready_claim_attempt_batches has no primary key (read by lane only)');
SELECT hasnt_pk('awa', t::name, 'table awa.' || t || ' has no primary key (a unique batch_id index per partition)')
  FROM unnest(ARRAY['lease_claim_batches', 'lease_claim_closure_batches']) t;
SELECT hasnt_pk('awa', 'receipt_completion_batches',
                'table awa.receipt_completion_batches has no primary key (a BRIN batch_id index per partition)');

-- col_is_pk, exact key columns in key order: 26
SELECT col_is_pk('awa', t::name, cols::name[], 'primary key of awa.' || t || ' is (' || array_to_string(cols, ', ') || ')')
  FROM (VALUES
    ('queue_ring_state',            ARRAY['singleton']),
    ('claim_ring_state',            ARRAY['singleton']),
    ('lease_ring_state',            ARRAY['singleton']),
    ('history_ring_state',          ARRAY['singleton']),
    ('queue_ring_rotations',        ARRAY['generation']),
    ('claim_ring_rotations',        ARRAY['generation']),
    ('lease_ring_rotations',        ARRAY['generation']),
    ('history_ring_rotations',      ARRAY['generation']),
    ('queue_ring_slots',            ARRAY['slot']),
    ('claim_ring_slots',            ARRAY['slot']),
    ('lease_ring_slots',            ARRAY['slot']),
    ('history_ring_slots',          ARRAY['slot']),
    ('key_weights',                 ARRAY['queue', 'concurrency_key']),
    ('ready_tombstones',            ARRAY['lane_id', 'lane_seq', 'ready_generation', 'ready_slot']),
    ('done_entries',                ARRAY['lane_id', 'lane_seq', 'ready_slot']),
    ('lease_claims',                ARRAY['job_id', 'run_lease', 'claim_slot']),
    ('lease_claim_closures',        ARRAY['job_id', 'run_lease', 'claim_slot']),
    ('leases',                      ARRAY['lane_id', 'lane_seq', 'lease_slot']),
    ('attempt_state',               ARRAY['job_id', 'run_lease']),
    ('deferred_jobs',               ARRAY['job_id']),
    ('dlq_entries',                 ARRAY['job_id']),
    ('queue_meta',                  ARRAY['queue']),
    ('job_unique_claims',           ARRAY['unique_key']),
    ('periodic_schedules',          ARRAY['name']),
    ('bulk_operations',             ARRAY['op_id']),
    ('superseded_records',          ARRAY['job_id', 'run_lease'])
  ) AS pk(t, cols);

-- columns_are, exact column sets: 33
SELECT columns_are('awa', t::name, cols::name[], 'awa.' || t || ' has exactly its columns')
  FROM (VALUES
    ('queue_ring_state', ARRAY['singleton', 'slot_count', 'width']),
    ('claim_ring_state', ARRAY['singleton', 'slot_count', 'width']),
    ('lease_ring_state', ARRAY['singleton', 'slot_count', 'width']),
    ('history_ring_state', ARRAY['singleton', 'slot_count', 'width']),
    ('queue_ring_rotations', ARRAY['generation', 'slot', 'rotated_at']),
    ('claim_ring_rotations', ARRAY['generation', 'slot', 'rotated_at']),
    ('lease_ring_rotations', ARRAY['generation', 'slot', 'rotated_at']),
    ('history_ring_rotations', ARRAY['generation', 'slot', 'rotated_at']),
    ('queue_ring_slots', ARRAY['slot']),
    ('claim_ring_slots', ARRAY['slot']),
    ('lease_ring_slots', ARRAY['slot']),
    ('history_ring_slots', ARRAY['slot']),
    ('queue_lanes', ARRAY['lane_id', 'enqueue_cursor', 'claim_cursor', 'enqueue_logged', 'cursor_run',
                          'priority', 'queue', 'created_at', 'concurrency_key']),
    ('key_weights', ARRAY['queue', 'concurrency_key', 'weight']),
    ('ready_entries', ARRAY['ready_slot', 'priority', 'attempt', 'max_attempts', 'ready_generation', 'lane_id',
                            'lane_seq', 'job_id', 'run_at', 'created_at', 'queue', 'kind', 'args', 'run_lease',
                            'attempted_at', 'unique_key', 'unique_states', 'payload', 'origin_generation']),
    ('ready_tombstones', ARRAY['ready_slot', 'priority', 'ready_generation', 'lane_id', 'queue', 'lane_seq',
                               'job_id', 'tombstoned_at']),
    ('ready_claim_attempt_batches', ARRAY['ready_slot', 'priority', 'claim_slot', 'ready_generation',
                                          'batch_id', 'lane_id', 'queue', 'claim_generation', 'first_lane_seq',
                                          'next_lane_seq', 'claimed_count', 'lane_ranges', 'claimed_at']),
    ('done_entries', ARRAY['ready_slot', 'priority', 'ready_generation', 'lane_id', 'queue', 'lane_seq',
                           'job_id', 'run_lease', 'attempt', 'kind', 'state', 'finalized_at', 'args',
                           'max_attempts', 'run_at', 'created_at', 'unique_key', 'payload']),
    ('receipt_completion_batches', ARRAY['ready_slot', 'claim_slot', 'priority', 'ready_generation', 'batch_id',
                                         'lane_id', 'first_lane_seq', 'queue', 'completed_count', 'run_leases', 'lane_seqs',
                                         'completed_at']),
    ('lease_claims', ARRAY['claim_slot', 'job_id', 'run_lease', 'receipt_id', 'ready_slot', 'ready_generation',
                           'queue', 'priority', 'attempt', 'max_attempts', 'lane_seq', 'claimed_at',
                           'materialized_at', 'closed_at', 'deadline_at']),
    ('lease_claim_batches', ARRAY['claim_slot', 'ready_slot', 'priority', 'claim_generation', 'batch_id',
                                  'ready_generation', 'lane_id', 'first_lane_seq', 'queue', 'claimed_count',
                                  'first_job_id', 'job_ids', 'run_leases', 'lane_seqs', 'attempts', 'max_attempts',
                                  'deadline_at', 'claimed_at']),
    ('lease_claim_closures', ARRAY['claim_slot', 'job_id', 'run_lease', 'outcome', 'closed_at']),
    ('lease_claim_closure_batches', ARRAY['claim_slot', 'ready_slot', 'batch_id', 'ready_generation', 'outcome',
                                          'closed_count', 'claim_indexes', 'closed_at']),
    ('leases', ARRAY['lease_slot', 'ready_slot', 'priority', 'lease_generation', 'ready_generation', 'lane_id',
                     'queue', 'lane_seq', 'job_id', 'run_lease', 'state', 'attempt', 'max_attempts',
                     'heartbeat_at', 'deadline_at', 'attempted_at', 'callback_id', 'callback_timeout_at']),
    ('job_history', ARRAY['history_slot', 'job_id', 'queue', 'priority', 'kind', 'args', 'state', 'attempt',
                          'max_attempts', 'run_lease', 'run_at', 'created_at', 'attempted_at', 'finalized_at',
                          'unique_key', 'payload']),
    ('attempt_state', ARRAY['job_id', 'run_lease', 'heartbeat_at', 'progress', 'updated_at']),
    ('deferred_jobs', ARRAY['job_id', 'queue', 'priority', 'kind', 'args', 'state', 'run_at', 'run_lease',
                            'attempt', 'max_attempts', 'created_at', 'finalized_at', 'unique_key',
                            'unique_states', 'payload']),
    ('dlq_entries', ARRAY['job_id', 'queue', 'priority', 'kind', 'args', 'run_lease', 'original_run_lease',
                          'attempt', 'max_attempts', 'run_at', 'created_at', 'unique_key', 'unique_states',
                          'payload', 'dlq_reason', 'dlq_at']),
    ('queue_meta', ARRAY['queue', 'paused', 'paused_at', 'dlq_enabled', 'aging_interval', 'default_deadline',
                         'max_running', 'rate_count', 'rate_period', 'rate_burst', 'rate_set_at', 'fairness',
                         'key_max_running', 'key_rate_count', 'key_rate_period', 'key_rate_burst',
                         'key_rate_set_at', 'updated_at']),
    ('job_unique_claims', ARRAY['unique_key', 'job_id', 'unique_states', 'claimed_at']),
    ('periodic_schedules', ARRAY['name', 'schedule', 'timezone', 'kind', 'args', 'queue', 'priority', 'opts',
                                 'next_run_at', 'last_run_at', 'last_job_id', 'last_error', 'created_at', 'updated_at']),
    ('bulk_operations', ARRAY['op_id', 'action', 'filter', 'to_queue', 'to_priority', 'state', 'next_before', 'acted', 'passed', 'steps',
                              'created_by', 'created_at', 'updated_at', 'finished_at']),
    ('superseded_records', ARRAY['job_id', 'run_lease', 'retried_at'])
  ) AS c(t, cols);

-- col_type_is, every column of every table (partitions inherit them): 272
SELECT col_type_is('awa', t::name, c::name, ty, 'awa.' || t || '.' || c || ' is ' || ty)
  FROM (VALUES
    ('queue_ring_state', 'singleton', 'boolean'),
    ('queue_ring_state', 'slot_count', 'integer'),
    ('queue_ring_state', 'width', 'integer'),
    ('claim_ring_state', 'singleton', 'boolean'),
    ('claim_ring_state', 'slot_count', 'integer'),
    ('claim_ring_state', 'width', 'integer'),
    ('lease_ring_state', 'singleton', 'boolean'),
    ('lease_ring_state', 'slot_count', 'integer'),
    ('lease_ring_state', 'width', 'integer'),
    ('history_ring_state', 'singleton', 'boolean'),
    ('history_ring_state', 'slot_count', 'integer'),
    ('history_ring_state', 'width', 'integer'),
    ('queue_ring_rotations', 'generation', 'bigint'),
    ('queue_ring_rotations', 'slot', 'smallint'),
    ('queue_ring_rotations', 'rotated_at', 'timestamp with time zone'),
    ('claim_ring_rotations', 'generation', 'bigint'),
    ('claim_ring_rotations', 'slot', 'smallint'),
    ('claim_ring_rotations', 'rotated_at', 'timestamp with time zone'),
    ('lease_ring_rotations', 'generation', 'bigint'),
    ('lease_ring_rotations', 'slot', 'smallint'),
    ('lease_ring_rotations', 'rotated_at', 'timestamp with time zone'),
    ('history_ring_rotations', 'generation', 'bigint'),
    ('history_ring_rotations', 'slot', 'smallint'),
    ('history_ring_rotations', 'rotated_at', 'timestamp with time zone'),
    ('queue_ring_slots', 'slot', 'smallint'),
    ('claim_ring_slots', 'slot', 'smallint'),
    ('lease_ring_slots', 'slot', 'smallint'),
    ('history_ring_slots', 'slot', 'smallint'),
    ('queue_lanes', 'lane_id', 'bigint'),
    ('queue_lanes', 'enqueue_cursor', 'bigint'),
    ('queue_lanes', 'claim_cursor', 'bigint'),
    ('queue_lanes', 'enqueue_logged', 'bigint'),
    ('queue_lanes', 'cursor_run', 'bigint'),
    ('queue_lanes', 'priority', 'smallint'),
    ('queue_lanes', 'queue', 'text'),
    ('queue_lanes', 'created_at', 'timestamp with time zone'),
    ('queue_lanes', 'concurrency_key', 'text'),
    ('key_weights', 'queue', 'text'),
    ('key_weights', 'concurrency_key', 'text'),
    ('key_weights', 'weight', 'integer'),
    ('ready_entries', 'ready_slot', 'smallint'),
    ('ready_entries', 'ready_generation', 'bigint'),
    ('ready_entries', 'lane_id', 'bigint'),
    ('ready_entries', 'queue', 'text'),
    ('ready_entries', 'priority', 'smallint'),
    ('ready_entries', 'lane_seq', 'bigint'),
    ('ready_entries', 'job_id', 'bigint'),
    ('ready_entries', 'run_lease', 'bigint'),
    ('ready_entries', 'attempt', 'smallint'),
    ('ready_entries', 'max_attempts', 'smallint'),
    ('ready_entries', 'kind', 'text'),
    ('ready_entries', 'args', 'jsonb'),
    ('ready_entries', 'run_at', 'timestamp with time zone'),
    ('ready_entries', 'created_at', 'timestamp with time zone'),
    ('ready_entries', 'attempted_at', 'timestamp with time zone'),
    ('ready_entries', 'unique_key', 'bytea'),
    ('ready_entries', 'unique_states', 'smallint'),
    ('ready_entries', 'payload', 'jsonb'),
    ('ready_entries', 'origin_generation', 'bigint'),
    ('ready_tombstones', 'ready_slot', 'smallint'),
    ('ready_tombstones', 'ready_generation', 'bigint'),
    ('ready_tombstones', 'lane_id', 'bigint'),
    ('ready_tombstones', 'queue', 'text'),
    ('ready_tombstones', 'priority', 'smallint'),
    ('ready_tombstones', 'lane_seq', 'bigint'),
    ('ready_tombstones', 'job_id', 'bigint'),
    ('ready_tombstones', 'tombstoned_at', 'timestamp with time zone'),
    ('ready_claim_attempt_batches', 'ready_slot', 'smallint'),
    ('ready_claim_attempt_batches', 'ready_generation', 'bigint'),
    ('ready_claim_attempt_batches', 'batch_id', 'bigint'),
    ('ready_claim_attempt_batches', 'lane_id', 'bigint'),
    ('ready_claim_attempt_batches', 'queue', 'text'),
    ('ready_claim_attempt_batches', 'priority', 'smallint'),
    ('ready_claim_attempt_batches', 'claim_slot', 'smallint'),
    ('ready_claim_attempt_batches', 'claim_generation', 'bigint'),
    ('ready_claim_attempt_batches', 'first_lane_seq', 'bigint'),
    ('ready_claim_attempt_batches', 'next_lane_seq', 'bigint'),
    ('ready_claim_attempt_batches', 'claimed_count', 'integer'),
    ('ready_claim_attempt_batches', 'lane_ranges', 'int8multirange'),
    ('ready_claim_attempt_batches', 'claimed_at', 'timestamp with time zone'),
    ('done_entries', 'ready_slot', 'smallint'),
    ('done_entries', 'ready_generation', 'bigint'),
    ('done_entries', 'lane_id', 'bigint'),
    ('done_entries', 'queue', 'text'),
    ('done_entries', 'priority', 'smallint'),
    ('done_entries', 'lane_seq', 'bigint'),
    ('done_entries', 'job_id', 'bigint'),
    ('done_entries', 'run_lease', 'bigint'),
    ('done_entries', 'attempt', 'smallint'),
    ('done_entries', 'kind', 'text'),
    ('done_entries', 'state', 'text'),
    ('done_entries', 'finalized_at', 'timestamp with time zone'),
    ('done_entries', 'args', 'jsonb'),
    ('done_entries', 'max_attempts', 'smallint'),
    ('done_entries', 'run_at', 'timestamp with time zone'),
    ('done_entries', 'created_at', 'timestamp with time zone'),
    ('done_entries', 'unique_key', 'bytea'),
    ('done_entries', 'payload', 'jsonb'),
    ('receipt_completion_batches', 'ready_slot', 'smallint'),
    ('receipt_completion_batches', 'ready_generation', 'bigint'),
    ('receipt_completion_batches', 'batch_id', 'bigint'),
    ('receipt_completion_batches', 'claim_slot', 'smallint'),
    ('receipt_completion_batches', 'lane_id', 'bigint'),
    ('receipt_completion_batches', 'queue', 'text'),
    ('receipt_completion_batches', 'priority', 'smallint'),
    ('receipt_completion_batches', 'completed_count', 'integer'),
    ('receipt_completion_batches', 'run_leases', 'bigint[]'),
    ('receipt_completion_batches', 'lane_seqs', 'bigint[]'),
    ('receipt_completion_batches', 'first_lane_seq', 'bigint'),
    ('receipt_completion_batches', 'completed_at', 'timestamp with time zone'),
    ('lease_claims', 'claim_slot', 'smallint'),
    ('lease_claims', 'job_id', 'bigint'),
    ('lease_claims', 'run_lease', 'bigint'),
    ('lease_claims', 'receipt_id', 'bigint'),
    ('lease_claims', 'ready_slot', 'smallint'),
    ('lease_claims', 'ready_generation', 'bigint'),
    ('lease_claims', 'queue', 'text'),
    ('lease_claims', 'priority', 'smallint'),
    ('lease_claims', 'attempt', 'smallint'),
    ('lease_claims', 'max_attempts', 'smallint'),
    ('lease_claims', 'lane_seq', 'bigint'),
    ('lease_claims', 'claimed_at', 'timestamp with time zone'),
    ('lease_claims', 'materialized_at', 'timestamp with time zone'),
    ('lease_claims', 'closed_at', 'timestamp with time zone'),
    ('lease_claims', 'deadline_at', 'timestamp with time zone'),
    ('lease_claim_batches', 'claim_slot', 'smallint'),
    ('lease_claim_batches', 'claim_generation', 'bigint'),
    ('lease_claim_batches', 'batch_id', 'bigint'),
    ('lease_claim_batches', 'ready_slot', 'smallint'),
    ('lease_claim_batches', 'ready_generation', 'bigint'),
    ('lease_claim_batches', 'lane_id', 'bigint'),
    ('lease_claim_batches', 'queue', 'text'),
    ('lease_claim_batches', 'priority', 'smallint'),
    ('lease_claim_batches', 'claimed_count', 'integer'),
    ('lease_claim_batches', 'first_job_id', 'bigint'),
    ('lease_claim_batches', 'job_ids', 'bigint[]'),
    ('lease_claim_batches', 'run_leases', 'bigint[]'),
    ('lease_claim_batches', 'lane_seqs', 'bigint[]'),
    ('lease_claim_batches', 'first_lane_seq', 'bigint'),
    ('lease_claim_batches', 'attempts', 'smallint[]'),
    ('lease_claim_batches', 'max_attempts', 'smallint[]'),
    ('lease_claim_batches', 'deadline_at', 'timestamp with time zone'),
    ('lease_claim_batches', 'claimed_at', 'timestamp with time zone'),
    ('lease_claim_closures', 'claim_slot', 'smallint'),
    ('lease_claim_closures', 'job_id', 'bigint'),
    ('lease_claim_closures', 'run_lease', 'bigint'),
    ('lease_claim_closures', 'outcome', 'text'),
    ('lease_claim_closures', 'closed_at', 'timestamp with time zone'),
    ('lease_claim_closure_batches', 'claim_slot', 'smallint'),
    ('lease_claim_closure_batches', 'batch_id', 'bigint'),
    ('lease_claim_closure_batches', 'ready_slot', 'smallint'),
    ('lease_claim_closure_batches', 'ready_generation', 'bigint'),
    ('lease_claim_closure_batches', 'outcome', 'text'),
    ('lease_claim_closure_batches', 'closed_count', 'integer'),
    ('lease_claim_closure_batches', 'claim_indexes', 'integer[]'),
    ('lease_claim_closure_batches', 'closed_at', 'timestamp with time zone'),
    ('leases', 'lease_slot', 'smallint'),
    ('leases', 'lease_generation', 'bigint'),
    ('leases', 'ready_slot', 'smallint'),
    ('leases', 'ready_generation', 'bigint'),
    ('leases', 'lane_id', 'bigint'),
    ('leases', 'queue', 'text'),
    ('leases', 'priority', 'smallint'),
    ('leases', 'lane_seq', 'bigint'),
    ('leases', 'job_id', 'bigint'),
    ('leases', 'run_lease', 'bigint'),
    ('leases', 'state', 'text'),
    ('leases', 'attempt', 'smallint'),
    ('leases', 'max_attempts', 'smallint'),
    ('leases', 'heartbeat_at', 'timestamp with time zone'),
    ('leases', 'deadline_at', 'timestamp with time zone'),
    ('leases', 'attempted_at', 'timestamp with time zone'),
    ('leases', 'callback_id', 'uuid'),
    ('leases', 'callback_timeout_at', 'timestamp with time zone'),
    ('job_history', 'history_slot', 'smallint'),
    ('job_history', 'job_id', 'bigint'),
    ('job_history', 'queue', 'text'),
    ('job_history', 'priority', 'smallint'),
    ('job_history', 'kind', 'text'),
    ('job_history', 'args', 'jsonb'),
    ('job_history', 'state', 'text'),
    ('job_history', 'attempt', 'smallint'),
    ('job_history', 'max_attempts', 'smallint'),
    ('job_history', 'run_lease', 'bigint'),
    ('job_history', 'run_at', 'timestamp with time zone'),
    ('job_history', 'created_at', 'timestamp with time zone'),
    ('job_history', 'attempted_at', 'timestamp with time zone'),
    ('job_history', 'finalized_at', 'timestamp with time zone'),
    ('job_history', 'unique_key', 'bytea'),
    ('job_history', 'payload', 'jsonb'),
    ('attempt_state', 'job_id', 'bigint'),
    ('attempt_state', 'run_lease', 'bigint'),
    ('attempt_state', 'heartbeat_at', 'timestamp with time zone'),
    ('attempt_state', 'progress', 'jsonb'),
    ('attempt_state', 'updated_at', 'timestamp with time zone'),
    ('deferred_jobs', 'job_id', 'bigint'),
    ('deferred_jobs', 'queue', 'text'),
    ('deferred_jobs', 'priority', 'smallint'),
    ('deferred_jobs', 'kind', 'text'),
    ('deferred_jobs', 'args', 'jsonb'),
    ('deferred_jobs', 'state', 'text'),
    ('deferred_jobs', 'run_at', 'timestamp with time zone'),
    ('deferred_jobs', 'run_lease', 'bigint'),
    ('deferred_jobs', 'attempt', 'smallint'),
    ('deferred_jobs', 'max_attempts', 'smallint'),
    ('deferred_jobs', 'created_at', 'timestamp with time zone'),
    ('deferred_jobs', 'finalized_at', 'timestamp with time zone'),
    ('deferred_jobs', 'unique_key', 'bytea'),
    ('deferred_jobs', 'unique_states', 'smallint'),
    ('deferred_jobs', 'payload', 'jsonb'),
    ('dlq_entries', 'job_id', 'bigint'),
    ('dlq_entries', 'queue', 'text'),
    ('dlq_entries', 'priority', 'smallint'),
    ('dlq_entries', 'kind', 'text'),
    ('dlq_entries', 'args', 'jsonb'),
    ('dlq_entries', 'run_lease', 'bigint'),
    ('dlq_entries', 'original_run_lease', 'bigint'),
    ('dlq_entries', 'attempt', 'smallint'),
    ('dlq_entries', 'max_attempts', 'smallint'),
    ('dlq_entries', 'run_at', 'timestamp with time zone'),
    ('dlq_entries', 'created_at', 'timestamp with time zone'),
    ('dlq_entries', 'unique_key', 'bytea'),
    ('dlq_entries', 'unique_states', 'smallint'),
    ('dlq_entries', 'payload', 'jsonb'),
    ('dlq_entries', 'dlq_reason', 'text'),
    ('dlq_entries', 'dlq_at', 'timestamp with time zone'),
    ('queue_meta', 'queue', 'text'),
    ('queue_meta', 'paused', 'boolean'),
    ('queue_meta', 'paused_at', 'timestamp with time zone'),
    ('queue_meta', 'dlq_enabled', 'boolean'),
    ('queue_meta', 'aging_interval', 'interval'),
    ('queue_meta', 'default_deadline', 'interval'),
    ('queue_meta', 'max_running', 'integer'),
    ('queue_meta', 'rate_count', 'integer'),
    ('queue_meta', 'rate_period', 'interval'),
    ('queue_meta', 'rate_burst', 'integer'),
    ('queue_meta', 'rate_set_at', 'timestamp with time zone'),
    ('queue_meta', 'fairness', 'text'),
    ('queue_meta', 'key_max_running', 'integer'),
    ('queue_meta', 'key_rate_count', 'integer'),
    ('queue_meta', 'key_rate_period', 'interval'),
    ('queue_meta', 'key_rate_burst', 'integer'),
    ('queue_meta', 'key_rate_set_at', 'timestamp with time zone'),
    ('queue_meta', 'updated_at', 'timestamp with time zone'),
    ('job_unique_claims', 'unique_key', 'bytea'),
    ('job_unique_claims', 'job_id', 'bigint'),
    ('job_unique_claims', 'unique_states', 'smallint'),
    ('job_unique_claims', 'claimed_at', 'timestamp with time zone'),
    ('periodic_schedules', 'name', 'text'),
    ('periodic_schedules', 'schedule', 'text'),
    ('periodic_schedules', 'timezone', 'text'),
    ('periodic_schedules', 'kind', 'text'),
    ('periodic_schedules', 'args', 'jsonb'),
    ('periodic_schedules', 'queue', 'text'),
    ('periodic_schedules', 'priority', 'smallint'),
    ('periodic_schedules', 'opts', 'jsonb'),
    ('periodic_schedules', 'next_run_at', 'timestamp with time zone'),
    ('periodic_schedules', 'last_run_at', 'timestamp with time zone'),
    ('periodic_schedules', 'last_job_id', 'bigint'),
    ('periodic_schedules', 'last_error', 'text'),
    ('periodic_schedules', 'created_at', 'timestamp with time zone'),
    ('periodic_schedules', 'updated_at', 'timestamp with time zone'),
    ('bulk_operations', 'op_id', 'bigint'),
    ('bulk_operations', 'action', 'text'),
    ('bulk_operations', 'filter', 'jsonb'),
    ('bulk_operations', 'to_queue', 'text'),
    ('bulk_operations', 'to_priority', 'smallint'),
    ('bulk_operations', 'state', 'text'),
    ('bulk_operations', 'next_before', 'bigint'),
    ('bulk_operations', 'acted', 'bigint'),
    ('bulk_operations', 'passed', 'bigint'),
    ('bulk_operations', 'steps', 'integer'),
    ('bulk_operations', 'created_by', 'text'),
    ('bulk_operations', 'created_at', 'timestamp with time zone'),
    ('bulk_operations', 'updated_at', 'timestamp with time zone'),
    ('bulk_operations', 'finished_at', 'timestamp with time zone'),
    ('superseded_records', 'job_id', 'bigint'),
    ('superseded_records', 'run_lease', 'bigint'),
    ('superseded_records', 'retried_at', 'timestamp with time zone')
  ) AS ct(t, c, ty);

-- Nullability: exactly these columns of the 33 tables may be NULL (all others NOT NULL): 1
SELECT results_eq(
    $$SELECT c.relname::text COLLATE "default", a.attname::text COLLATE "default"
        FROM pg_catalog.pg_attribute a
        JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
       WHERE c.relnamespace = 'awa'::regnamespace
         AND c.relkind IN ('r', 'p') AND NOT c.relispartition
         AND a.attnum > 0 AND NOT a.attisdropped AND NOT a.attnotnull
       ORDER BY 1, 2$$,
    $$VALUES ('attempt_state', 'heartbeat_at'), ('attempt_state', 'progress'), ('bulk_operations', 'finished_at'),
             ('bulk_operations', 'to_priority'), ('bulk_operations', 'to_queue'),
             ('deferred_jobs', 'finalized_at'), ('deferred_jobs', 'payload'),
             ('deferred_jobs', 'unique_key'), ('deferred_jobs', 'unique_states'),
             ('dlq_entries', 'payload'), ('dlq_entries', 'unique_key'), ('dlq_entries', 'unique_states'),
             ('done_entries', 'args'), ('done_entries', 'created_at'), ('done_entries', 'max_attempts'),
             ('done_entries', 'payload'), ('done_entries', 'run_at'), ('done_entries', 'unique_key'),
             ('job_history', 'attempted_at'), ('job_history', 'payload'), ('job_history', 'unique_key'),
             ('lease_claim_batches', 'job_ids'), ('lease_claim_batches', 'lane_seqs'),
             ('lease_claims', 'closed_at'), ('lease_claims', 'deadline_at'), ('lease_claims', 'materialized_at'),
             ('leases', 'callback_id'), ('leases', 'callback_timeout_at'), ('leases', 'deadline_at'),
             ('leases', 'heartbeat_at'),
             ('periodic_schedules', 'last_error'), ('periodic_schedules', 'last_job_id'),
             ('periodic_schedules', 'last_run_at'),
             ('queue_lanes', 'concurrency_key'),
             ('queue_meta', 'default_deadline'), ('queue_meta', 'key_max_running'),
             ('queue_meta', 'key_rate_burst'), ('queue_meta', 'key_rate_count'), ('queue_meta', 'key_rate_period'),
             ('queue_meta', 'key_rate_set_at'), ('queue_meta', 'max_running'), ('queue_meta', 'paused_at'),
             ('queue_meta', 'rate_burst'), ('queue_meta', 'rate_count'), ('queue_meta', 'rate_period'),
             ('queue_meta', 'rate_set_at'),
             ('ready_claim_attempt_batches', 'lane_ranges'),
             ('ready_entries', 'attempted_at'), ('ready_entries', 'origin_generation'), ('ready_entries', 'payload'),
             ('ready_entries', 'unique_key'), ('ready_entries', 'unique_states'),
             ('receipt_completion_batches', 'lane_seqs')$$,
    'exactly the optional columns are nullable; every other column is NOT NULL');

-- Defaults: exactly these columns of the 33 tables have a default, and these
-- are the defaults (configure_queue's fallbacks match queue_meta's): 1
SELECT results_eq(
    $$SELECT c.relname::text COLLATE "default", a.attname::text COLLATE "default",
             pg_catalog.pg_get_expr(d.adbin, d.adrelid) COLLATE "default"
        FROM pg_catalog.pg_attrdef d
        JOIN pg_catalog.pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
        JOIN pg_catalog.pg_class c ON c.oid = d.adrelid
       WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
       ORDER BY c.relname COLLATE "C", a.attname COLLATE "C"$$,
    $$VALUES ('bulk_operations', 'acted', '0'), ('bulk_operations', 'created_at', 'clock_timestamp()'),
             ('bulk_operations', 'passed', '0'), ('bulk_operations', 'state', '''running''::text'),
             ('bulk_operations', 'steps', '0'), ('bulk_operations', 'updated_at', 'clock_timestamp()'),
             ('claim_ring_rotations', 'rotated_at', 'now()'),
             ('claim_ring_state', 'singleton', 'true'),
             ('deferred_jobs', 'attempt', '0'), ('deferred_jobs', 'run_lease', '0'),
             ('history_ring_rotations', 'rotated_at', 'now()'),
             ('history_ring_state', 'singleton', 'true'),
             -- the missing values of the evidence rows' trailing columns
             -- (12_ring_partitions.sql; awa writes every column)
             ('lease_claim_batches', 'attempts', '''{1}''::smallint[]'),
             ('lease_claim_batches', 'claimed_count', '1'),
             ('lease_claim_batches', 'max_attempts', '''{25}''::smallint[]'),
             ('lease_claim_batches', 'run_leases', '''{1}''::bigint[]'),
             ('lease_claim_closure_batches', 'claim_indexes', '''{0}''::integer[]'),
             ('lease_claim_closure_batches', 'closed_count', '1'),
             ('lease_claim_closure_batches', 'outcome', '''completed''::text'),
             ('lease_ring_rotations', 'rotated_at', 'now()'),
             ('lease_ring_state', 'singleton', 'true'),
             ('periodic_schedules', 'created_at', 'now()'), ('periodic_schedules', 'updated_at', 'now()'),
             ('queue_lanes', 'claim_cursor', '0'), ('queue_lanes', 'created_at', 'now()'),
             ('queue_lanes', 'cursor_run', '0'),
             ('queue_lanes', 'enqueue_cursor', '0'), ('queue_lanes', 'enqueue_logged', '0'),
             ('queue_meta', 'aging_interval', '''00:01:00''::interval'),
             ('queue_meta', 'dlq_enabled', 'false'), ('queue_meta', 'fairness', '''none''::text'),
             ('queue_meta', 'paused', 'false'),
             ('queue_meta', 'updated_at', 'now()'),
             ('queue_ring_rotations', 'rotated_at', 'now()'),
             ('queue_ring_state', 'singleton', 'true'),
             ('ready_claim_attempt_batches', 'claimed_count', '1'),
             ('ready_entries', 'attempt', '0'), ('ready_entries', 'run_lease', '0'),
             ('receipt_completion_batches', 'completed_count', '1'),
             ('receipt_completion_batches', 'run_leases', '''{1}''::bigint[]')$$,
    'exactly these columns have defaults, and these are the defaults');

-- CHECK and UNIQUE constraints of the 33 tables, exactly (no foreign keys, no
-- exclusion constraints; partitions inherit their parent's): 1
SELECT results_eq(
    $$SELECT c.relname::text COLLATE "default", k.contype::text COLLATE "default",
             pg_catalog.pg_get_constraintdef(k.oid) COLLATE "default"
        FROM pg_catalog.pg_constraint k
        JOIN pg_catalog.pg_class c ON c.oid = k.conrelid
       WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
         AND k.contype <> 'p'
       ORDER BY c.relname COLLATE "C", pg_catalog.pg_get_constraintdef(k.oid) COLLATE "C"$$,
    $$VALUES ('bulk_operations', 'c',
              'CHECK ((((action = ''move''::text) = (to_queue IS NOT NULL)) AND '
              '((action = ''set_priority''::text) = (to_priority IS NOT NULL))))'),
             ('bulk_operations', 'c',
              'CHECK ((action = ANY (ARRAY[''cancel''::text, ''dlq_retry''::text, ''dlq_purge''::text, ''move''::text, '
              '''set_priority''::text, ''retry''::text])))'),
             ('bulk_operations', 'c',
              'CHECK ((state = ANY (ARRAY[''running''::text, ''done''::text, ''cancelled''::text])))'),
             ('claim_ring_rotations', 'c', 'CHECK ((generation >= 0))'),
             ('claim_ring_rotations', 'c', 'CHECK ((slot >= 0))'),
             ('claim_ring_state', 'c', 'CHECK (((slot_count >= 2) AND (slot_count <= 16)))'),
             ('claim_ring_state', 'c', 'CHECK (((width >= 2) AND (width <= slot_count)))'),
             ('claim_ring_state', 'c', 'CHECK (singleton)'),
             ('deferred_jobs', 'c', 'CHECK (((priority >= 1) AND (priority <= 4)))'),
             ('deferred_jobs', 'c', 'CHECK ((state = ANY (ARRAY[''scheduled''::text, ''retryable''::text, ''available''::text])))'),
             ('done_entries', 'c',
              'CHECK ((state = ANY (ARRAY[''completed''::text, ''failed''::text, ''cancelled''::text])))'),
             ('history_ring_rotations', 'c', 'CHECK ((generation >= 0))'),
             ('history_ring_rotations', 'c', 'CHECK ((slot >= 0))'),
             ('history_ring_state', 'c', 'CHECK (((slot_count >= 4) AND (slot_count <= 64)))'),
             ('history_ring_state', 'c', 'CHECK (((width >= 4) AND (width <= slot_count)))'),
             ('history_ring_state', 'c', 'CHECK (singleton)'),
             ('key_weights', 'c', 'CHECK (((length(queue) >= 1) AND (length(queue) <= 200)))'),
             ('key_weights', 'c',
              'CHECK (((octet_length(concurrency_key) >= 1) AND (octet_length(concurrency_key) <= 255)))'),
             ('key_weights', 'c', 'CHECK (((weight >= 1) AND (weight <= 10000)))'),
             ('lease_claim_closures', 'c',
              'CHECK ((outcome = ANY (ARRAY[''completed''::text, ''retryable''::text, ''scheduled''::text, '
              '''failed''::text, ''dlq''::text, ''cancelled''::text, ''rescued''::text, '
              '''deadline_expired''::text])))'),
             ('lease_ring_rotations', 'c', 'CHECK ((generation >= 0))'),
             ('lease_ring_rotations', 'c', 'CHECK ((slot >= 0))'),
             ('lease_ring_state', 'c', 'CHECK (((slot_count >= 2) AND (slot_count <= 64)))'),
             ('lease_ring_state', 'c', 'CHECK (((width >= 2) AND (width <= slot_count)))'),
             ('lease_ring_state', 'c', 'CHECK (singleton)'),
             ('leases', 'c', 'CHECK ((state = ANY (ARRAY[''running''::text, ''waiting_external''::text])))'),
             ('periodic_schedules', 'c', 'CHECK (((length(name) >= 1) AND (length(name) <= 200)))'),
             ('queue_lanes', 'c', 'CHECK (((length(queue) >= 1) AND (length(queue) <= 200)))'),
             ('queue_lanes', 'c',
              'CHECK (((octet_length(concurrency_key) >= 1) AND (octet_length(concurrency_key) <= 255)))'),
             ('queue_lanes', 'c', 'CHECK (((priority >= 1) AND (priority <= 4)))'),
             ('queue_lanes', 'u', 'UNIQUE (lane_id)'),
             ('queue_lanes', 'u', 'UNIQUE NULLS NOT DISTINCT (queue, priority, concurrency_key)'),
             ('queue_meta', 'c', 'CHECK (((length(queue) >= 1) AND (length(queue) <= 200)))'),
             ('queue_meta', 'c', 'CHECK ((aging_interval >= ''00:00:00''::interval))'),
             ('queue_meta', 'c', 'CHECK ((default_deadline > ''00:00:00''::interval))'),
             ('queue_meta', 'c', 'CHECK ((fairness = ANY (ARRAY[''none''::text, ''key''::text])))'),
             ('queue_meta', 'c', 'CHECK ((key_max_running > 0))'),
             ('queue_meta', 'c', 'CHECK ((key_rate_burst > 0))'),
             ('queue_meta', 'c', 'CHECK ((key_rate_count > 0))'),
             ('queue_meta', 'c', 'CHECK ((key_rate_period > ''00:00:00''::interval))'),
             ('queue_meta', 'c', 'CHECK ((max_running > 0))'),
             ('queue_meta', 'c', 'CHECK ((rate_burst > 0))'),
             ('queue_meta', 'c', 'CHECK ((rate_count > 0))'),
             ('queue_meta', 'c', 'CHECK ((rate_period > ''00:00:00''::interval))'),
             ('queue_ring_rotations', 'c', 'CHECK ((generation >= 0))'),
             ('queue_ring_rotations', 'c', 'CHECK ((slot >= 0))'),
             ('queue_ring_state', 'c', 'CHECK (((slot_count >= 4) AND (slot_count <= 64)))'),
             ('queue_ring_state', 'c', 'CHECK (((width >= 4) AND (width <= slot_count)))'),
             ('queue_ring_state', 'c', 'CHECK (singleton)')$$,
    'exactly these CHECK and UNIQUE constraints, and no foreign key');

-- Storage parameters: the plain tables updated in place keep free space for
-- HOT updates, each completion receipts' BRIN index has page ranges of 8
-- pages, the ring partitions are not autovacuumed (12_ring_partitions.sql;
-- 02_partitions.sql checks each of them and its TOAST table), and no other
-- relation of awa sets any: 2
SELECT results_eq(
    $$SELECT c.relname::text COLLATE "default", c.reloptions::text COLLATE "default"
        FROM pg_catalog.pg_class c
       WHERE c.relnamespace = 'awa'::regnamespace AND c.reloptions IS NOT NULL
         AND c.relname !~ '^receipt_completion_batches_[0-9]+_batch_id_idx$'
         AND NOT (c.relispartition AND c.reloptions = '{autovacuum_enabled=false}')
       ORDER BY c.relname COLLATE "C"$$,
    $$VALUES ('attempt_state', '{fillfactor=80}'), ('job_unique_claims', '{fillfactor=80}'),
             ('queue_meta', '{fillfactor=70}')$$,
    'attempt_state and job_unique_claims have fillfactor 80, queue_meta 70, nothing else sets storage parameters');
SELECT is((SELECT count(*)::int FROM pg_catalog.pg_class c
            WHERE c.relnamespace = 'awa'::regnamespace
              AND c.relname ~ '^receipt_completion_batches_[0-9]+_batch_id_idx$'
              AND c.reloptions = '{pages_per_range=8}'),
          (SELECT count(*)::int FROM pg_catalog.pg_inherits h
            WHERE h.inhparent = 'awa.receipt_completion_batches'::regclass),
          'every completion receipts'' BRIN index has page ranges of 8 pages');

-- queue_meta enforces its settings' bounds and supplies the defaults of a
-- queue configured by name only: 5
SELECT throws_ok($$INSERT INTO awa.queue_meta (queue) VALUES ('')$$,
                 '23514', NULL, 'queue_meta refuses an empty queue name');
SELECT throws_ok($$INSERT INTO awa.queue_meta (queue, aging_interval) VALUES ('pgtap_meta', interval '-1 second')$$,
                 '23514', NULL, 'queue_meta refuses a negative aging_interval');
SELECT throws_ok($$INSERT INTO awa.queue_meta (queue, default_deadline) VALUES ('pgtap_meta', interval '0')$$,
                 '23514', NULL, 'queue_meta refuses a default_deadline that is not positive');
SELECT lives_ok($$INSERT INTO awa.queue_meta (queue) VALUES ('pgtap_meta')$$,
                'queue_meta takes a queue name alone');
SELECT results_eq(
    $$SELECT paused, paused_at IS NULL, dlq_enabled, aging_interval = interval '60 seconds',
             default_deadline IS NULL, fairness, updated_at = now()
        FROM awa.queue_meta WHERE queue = 'pgtap_meta'$$,
    $$VALUES (false, true, false, true, true, 'none', true)$$,
    'a new queue_meta row is not paused, has no DLQ, ages by 60 s, has no default deadline and no fairness between keys');

-- periodic_schedules bounds a schedule's name, keeps one row per name, and
-- a new schedule has no tick enqueued yet: 5
SELECT throws_ok($$INSERT INTO awa.periodic_schedules (name, schedule, timezone, kind, args, queue, priority, opts,
                                                      next_run_at)
                   VALUES ('', '@hourly', 'UTC', 'k', '{}', 'default', 2, '{}', now())$$,
                 '23514', NULL, 'periodic_schedules refuses an empty name');
SELECT throws_ok($$INSERT INTO awa.periodic_schedules (name, schedule, timezone, kind, args, queue, priority, opts,
                                                      next_run_at)
                   VALUES (repeat('n', 201), '@hourly', 'UTC', 'k', '{}', 'default', 2, '{}', now())$$,
                 '23514', NULL, 'periodic_schedules refuses a name longer than 200 characters');
SELECT lives_ok($$INSERT INTO awa.periodic_schedules (name, schedule, timezone, kind, args, queue, priority, opts,
                                                     next_run_at)
                  VALUES (repeat('n', 200), '@hourly', 'UTC', 'k', '{}', 'default', 2, '{}', now())$$,
                'periodic_schedules takes a 200-character name and the required columns alone');
SELECT throws_ok($$INSERT INTO awa.periodic_schedules (name, schedule, timezone, kind, args, queue, priority, opts,
                                                      next_run_at)
                   VALUES (repeat('n', 200), '@daily', 'UTC', 'k', '{}', 'default', 2, '{}', now())$$,
                 '23505', NULL, 'periodic_schedules admits one schedule per name');
SELECT results_eq(
    $$SELECT last_run_at IS NULL, last_job_id IS NULL, created_at = now(), updated_at = now()
        FROM awa.periodic_schedules WHERE name = repeat('n', 200)$$,
    $$VALUES (true, true, true, true)$$,
    'a new periodic_schedules row has no last tick or job and is created and updated now');

-- queue_lanes.lane_id is unique (the cursors find a moved row by it), and a
-- lane is identified by (queue, priority, concurrency_key), NULLS NOT DISTINCT:
-- one lane of jobs without a key per (queue, priority), beside one lane per
-- key: 1 + 1 + 2
SELECT col_is_unique('awa', 'queue_lanes', ARRAY['lane_id']::name[], 'awa.queue_lanes.lane_id is unique');
SELECT col_is_unique('awa', 'queue_lanes', ARRAY['queue', 'priority', 'concurrency_key']::name[],
                     'awa.queue_lanes (queue, priority, concurrency_key) is unique (queue_lanes_identity)');
SELECT throws_ok($$INSERT INTO awa.queue_lanes (lane_id, priority, queue)
                   VALUES (-1, 2, 'pgtap_lanes'), (-2, 2, 'pgtap_lanes')$$,
                 '23505', NULL, 'queue_lanes admits one lane without a key per (queue, priority)');
SELECT lives_ok($$INSERT INTO awa.queue_lanes (lane_id, priority, queue, concurrency_key)
                  VALUES (-1, 2, 'pgtap_lanes', NULL), (-2, 2, 'pgtap_lanes', 'a'), (-3, 2, 'pgtap_lanes', 'b')$$,
                'queue_lanes takes the lane without a key and a lane per key at the same (queue, priority)');

-- The views lanes, dlq and periodic_jobs, their columns and column types:
-- 1 + 3 + 3 + (5 + 12 + 14 = 31)
SELECT views_are('awa', ARRAY['lanes', 'dlq', 'periodic_jobs']::name[],
                 'schema awa has exactly the views lanes, dlq and periodic_jobs');
SELECT has_view('awa', v::name, 'view awa.' || v || ' exists')
  FROM unnest(ARRAY['lanes', 'dlq', 'periodic_jobs']) v;
SELECT columns_are('awa', 'lanes', ARRAY['queue', 'priority', 'lane_id', 'enqueue_cursor', 'claim_cursor']::name[],
                   'awa.lanes has exactly its columns');
SELECT columns_are('awa', 'dlq',
                   ARRAY['job_id', 'queue', 'kind', 'args', 'attempt', 'errors', 'dlq_at', 'dlq_reason',
                         'priority', 'max_attempts', 'run_lease', 'created_at']::name[],
                   'awa.dlq has exactly its columns');
SELECT columns_are('awa', 'periodic_jobs',
                   ARRAY['name', 'schedule', 'timezone', 'kind', 'args', 'queue', 'priority', 'opts',
                         'next_run_at', 'last_run_at', 'last_job_id', 'last_error', 'created_at', 'updated_at']::name[],
                   'awa.periodic_jobs has exactly its columns');
SELECT col_type_is('awa', v::name, c::name, ty, 'awa.' || v || '.' || c || ' is ' || ty)
  FROM (VALUES
    ('lanes', 'queue', 'text'),
    ('lanes', 'priority', 'smallint'),
    ('lanes', 'lane_id', 'bigint'),
    ('lanes', 'enqueue_cursor', 'bigint'),
    ('lanes', 'claim_cursor', 'bigint'),
    ('dlq', 'job_id', 'bigint'),
    ('dlq', 'queue', 'text'),
    ('dlq', 'kind', 'text'),
    ('dlq', 'args', 'jsonb'),
    ('dlq', 'attempt', 'smallint'),
    ('dlq', 'errors', 'jsonb'),
    ('dlq', 'dlq_at', 'timestamp with time zone'),
    ('dlq', 'dlq_reason', 'text'),
    ('dlq', 'priority', 'smallint'),
    ('dlq', 'max_attempts', 'smallint'),
    ('dlq', 'run_lease', 'bigint'),
    ('dlq', 'created_at', 'timestamp with time zone'),
    ('periodic_jobs', 'name', 'text'),
    ('periodic_jobs', 'schedule', 'text'),
    ('periodic_jobs', 'timezone', 'text'),
    ('periodic_jobs', 'kind', 'text'),
    ('periodic_jobs', 'args', 'jsonb'),
    ('periodic_jobs', 'queue', 'text'),
    ('periodic_jobs', 'priority', 'smallint'),
    ('periodic_jobs', 'opts', 'jsonb'),
    ('periodic_jobs', 'next_run_at', 'timestamp with time zone'),
    ('periodic_jobs', 'last_run_at', 'timestamp with time zone'),
    ('periodic_jobs', 'last_job_id', 'bigint'),
    ('periodic_jobs', 'last_error', 'text'),
    ('periodic_jobs', 'created_at', 'timestamp with time zone'),
    ('periodic_jobs', 'updated_at', 'timestamp with time zone')
  ) AS vc(v, c, ty);

-- Sequences: the three global identities, the ring epoch and the claim fence
-- (closure batch ids are keyed under their claim batch, no sequence); any
-- other sequence of awa must be a per-lane cursor sequence (none exist
-- before the first enqueue): 5 + 3
SELECT has_sequence('awa', s::name, 'sequence awa.' || s || ' exists')
  FROM unnest(ARRAY['job_id_seq', 'queue_lane_id_seq', 'claim_batch_id_seq',
                    'ring_epoch_seq', 'claim_fence_seq']) s;
SELECT is(
    ARRAY(SELECT c.relname::text FROM pg_catalog.pg_class c
           WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind = 'S'
             AND c.relname !~ '^lane_[0-9]+_(enqueue|claim)_seq$'
           ORDER BY c.relname COLLATE "C"),
    ARRAY['bulk_operations_op_id_seq', 'claim_batch_id_seq', 'claim_fence_seq', 'job_id_seq', 'queue_lane_id_seq',
          'ring_epoch_seq'],
    'awa has no sequences besides the identities, the ring epoch, the claim fence and per-lane cursor sequences');
SELECT is(
    ARRAY(SELECT format_type(s.seqtypid, NULL) FROM pg_catalog.pg_sequence s
           WHERE s.seqrelid IN ('awa.job_id_seq'::regclass, 'awa.queue_lane_id_seq'::regclass,
                                'awa.claim_batch_id_seq'::regclass, 'awa.ring_epoch_seq'::regclass)),
    ARRAY['bigint', 'bigint', 'bigint', 'bigint'],
    'the identity and epoch sequences are bigint');
-- The ring epoch is a seqlock: even = stable. It starts at 1 and may be set to 0.
SELECT is(
    (SELECT ARRAY[s.seqmin, s.seqstart, s.seqincrement]
       FROM pg_catalog.pg_sequence s WHERE s.seqrelid = 'awa.ring_epoch_seq'::regclass),
    ARRAY[0, 1, 1]::bigint[],
    'awa.ring_epoch_seq has MINVALUE 0, START 1, INCREMENT 1');

-- Hot-path tables carry no CHECK constraints (PostgreSQL 15 compiles every CHECK
-- expression per INSERT statement; the C++ code keeps those invariants): 1
SELECT is(
    ARRAY(SELECT c.relname || ': ' || pg_catalog.pg_get_constraintdef(k.oid)
            FROM pg_catalog.pg_constraint k
            JOIN pg_catalog.pg_class c ON c.oid = k.conrelid
           WHERE k.contype = 'c' AND c.relnamespace = 'awa'::regnamespace
             AND c.relname ~ '^(ready_entries|ready_tombstones|ready_claim_attempt_batches|lease_claim_batches|lease_claim_closure_batches|receipt_completion_batches)(_[0-9]+)?$'
           ORDER BY 1),
    ARRAY[]::text[],
    'hot-path tables and their partitions have no CHECK constraints');

SELECT * FROM finish();
ROLLBACK;
