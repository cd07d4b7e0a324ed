-- 03_indexes.sql: the indexes the hot paths need (exact columns, order and
-- definition), the exact index set of every table, and that every partitioned
-- index is attached on every ring partition.
BEGIN;
SET LOCAL search_path = public;
SELECT plan(113);

-- Hot-path indexes with their exact key columns: 10
SELECT has_index('awa', 'queue_lanes', 'queue_lanes_identity',
                 ARRAY['queue', 'priority', 'concurrency_key']::name[],
                 'queue_lanes has its identity index (queue, priority, concurrency_key) (enqueues find a lane by it, '
                 'and read it dirty for a lane whose creator has not committed)');
SELECT has_index('awa', 'ready_entries_0', 'ready_entries_0_lane_seq_key',
                 ARRAY['lane_id', 'lane_seq']::name[],
                 'ready_entries_0 has its lane position index (lane_id, lane_seq) (also the claim walk''s routing probe)');
SELECT has_index('awa', 'ready_entries', 'ready_entries_job_id_idx', ARRAY['job_id', 'lane_id']::name[],
                 'ready_entries has its job_id index, with lane_id as its second key (a listing by queue '
                 'checks the lane inside the index pages)');
SELECT has_index('awa', 'ready_claim_attempt_batches', 'ready_claim_attempt_batches_lane_next_idx',
                 ARRAY['lane_id', 'next_lane_seq']::name[],
                 'ready_claim_attempt_batches has its (lane_id, next_lane_seq) index');
SELECT has_index('awa', 'lease_claim_batches_0', 'lease_claim_batches_0_batch_id_key',
                 ARRAY['batch_id']::name[],
                 'lease_claim_batches_0 has its batch_id index (a completion finds its claim with one probe)');
SELECT has_index('awa', 'deferred_jobs', 'deferred_jobs_due_idx',
                 ARRAY['run_at', 'priority', 'job_id']::name[],
                 'deferred_jobs has its due index (run_at, priority, job_id) (promotion walks it in order)');
SELECT has_index('awa', 'dlq_entries', 'dlq_entries_queue_idx', ARRAY['queue', 'dlq_at']::name[],
                 'dlq_entries has its (queue, dlq_at) index');
SELECT has_index('awa', 'job_unique_claims', 'job_unique_claims_job_id_idx', ARRAY['job_id']::name[],
                 'job_unique_claims has its job_id index (keys are released by job)');
SELECT has_index('awa', 'job_history', 'job_history_job_id_idx', ARRAY['job_id']::name[],
                 'job_history has its job_id index (get_job and cancel look a finished job up by id)');
SELECT has_index('awa', 'periodic_schedules', 'periodic_schedules_due_idx', ARRAY['next_run_at']::name[],
                 'periodic_schedules has its due index (next_run_at) (the periodic step walks it in order)');

-- The probed primary keys are the primary-key indexes (configure_queue,
-- pause_queue and resume_queue name queue_meta_pkey in ON CONFLICT ON
-- CONSTRAINT; unique keys are taken by inserting into job_unique_claims;
-- schedule_periodic, unschedule_periodic and the periodic step find a
-- schedule by name; set_key_weight names key_weights_pkey in ON CONFLICT ON
-- CONSTRAINT): 6
SELECT index_is_unique('awa', 'ready_entries_0', 'ready_entries_0_lane_seq_key',
                       'ready_entries_0_lane_seq_key is unique: a lane position once per slot');
SELECT index_is_unique('awa', 'lease_claim_batches_0', 'lease_claim_batches_0_batch_id_key',
                       'lease_claim_batches_0_batch_id_key is unique: a claim batch once per slot');
SELECT index_is_primary('awa', 'queue_meta', 'queue_meta_pkey',
                        'queue_meta_pkey is the primary key of queue_meta');
SELECT index_is_primary('awa', 'key_weights', 'key_weights_pkey',
                        'key_weights_pkey is the primary key of key_weights');
SELECT index_is_primary('awa', 'job_unique_claims', 'job_unique_claims_pkey',
                        'job_unique_claims_pkey is the primary key of job_unique_claims');
SELECT index_is_primary('awa', 'periodic_schedules', 'periodic_schedules_pkey',
                        'periodic_schedules_pkey is the primary key of periodic_schedules');

-- awa.queue_lanes has no primary key: its identity is the unique index of the
-- constraint queue_lanes_identity (NULLS NOT DISTINCT: one lane without a key
-- per queue and priority), which awa's C code opens by name: 1
SELECT index_is_unique('awa', 'queue_lanes', 'queue_lanes_identity',
                       'queue_lanes_identity is a unique index of queue_lanes');

-- Exact definitions of every index of the 33 tables (uniqueness, method,
-- columns, order, predicate, NULLS NOT DISTINCT; ON ONLY = the partitioned
-- parent's index), and of the completion receipts' BRIN index (no B-tree: a
-- completion writes no index WAL): 46
SELECT is(pg_catalog.pg_get_indexdef(('awa.' || i)::regclass), def, 'definition of awa.' || i)
  FROM (VALUES
    ('queue_ring_state_pkey',
     'CREATE UNIQUE INDEX queue_ring_state_pkey ON awa.queue_ring_state USING btree (singleton)'),
    ('claim_ring_state_pkey',
     'CREATE UNIQUE INDEX claim_ring_state_pkey ON awa.claim_ring_state USING btree (singleton)'),
    ('lease_ring_state_pkey',
     'CREATE UNIQUE INDEX lease_ring_state_pkey ON awa.lease_ring_state USING btree (singleton)'),
    ('history_ring_state_pkey',
     'CREATE UNIQUE INDEX history_ring_state_pkey ON awa.history_ring_state USING btree (singleton)'),
    ('queue_ring_rotations_pkey',
     'CREATE UNIQUE INDEX queue_ring_rotations_pkey ON awa.queue_ring_rotations USING btree (generation)'),
    ('queue_ring_rotations_slot_idx',
     'CREATE INDEX queue_ring_rotations_slot_idx ON awa.queue_ring_rotations USING btree (slot, generation)'),
    ('claim_ring_rotations_pkey',
     'CREATE UNIQUE INDEX claim_ring_rotations_pkey ON awa.claim_ring_rotations USING btree (generation)'),
    ('claim_ring_rotations_slot_idx',
     'CREATE INDEX claim_ring_rotations_slot_idx ON awa.claim_ring_rotations USING btree (slot, generation)'),
    ('lease_ring_rotations_pkey',
     'CREATE UNIQUE INDEX lease_ring_rotations_pkey ON awa.lease_ring_rotations USING btree (generation)'),
    ('history_ring_rotations_pkey',
     'CREATE UNIQUE INDEX history_ring_rotations_pkey ON awa.history_ring_rotations USING btree (generation)'),
    ('queue_ring_slots_pkey',
     'CREATE UNIQUE INDEX queue_ring_slots_pkey ON awa.queue_ring_slots USING btree (slot)'),
    ('claim_ring_slots_pkey',
     'CREATE UNIQUE INDEX claim_ring_slots_pkey ON awa.claim_ring_slots USING btree (slot)'),
    ('lease_ring_slots_pkey',
     'CREATE UNIQUE INDEX lease_ring_slots_pkey ON awa.lease_ring_slots USING btree (slot)'),
    ('history_ring_slots_pkey',
     'CREATE UNIQUE INDEX history_ring_slots_pkey ON awa.history_ring_slots USING btree (slot)'),
    ('queue_lanes_identity',
     'CREATE UNIQUE INDEX queue_lanes_identity ON awa.queue_lanes USING btree (queue, priority, concurrency_key) NULLS NOT DISTINCT'),
    ('queue_lanes_lane_id_key',
     'CREATE UNIQUE INDEX queue_lanes_lane_id_key ON awa.queue_lanes USING btree (lane_id)'),
    ('key_weights_pkey',
     'CREATE UNIQUE INDEX key_weights_pkey ON awa.key_weights USING btree (queue, concurrency_key)'),
    ('ready_entries_0_lane_seq_key',
     'CREATE UNIQUE INDEX ready_entries_0_lane_seq_key ON awa.ready_entries_0 USING btree (lane_id, lane_seq)'),
    ('ready_entries_job_id_idx',
     'CREATE INDEX ready_entries_job_id_idx ON ONLY awa.ready_entries USING btree (job_id, lane_id)'),
    ('ready_tombstones_pkey',
     'CREATE UNIQUE INDEX ready_tombstones_pkey ON ONLY awa.ready_tombstones USING btree (lane_id, lane_seq, ready_generation, ready_slot)'),
    ('ready_claim_attempt_batches_lane_next_idx',
     'CREATE INDEX ready_claim_attempt_batches_lane_next_idx ON ONLY awa.ready_claim_attempt_batches USING btree (lane_id, next_lane_seq)'),
    ('done_entries_pkey',
     'CREATE UNIQUE INDEX done_entries_pkey ON ONLY awa.done_entries USING btree (lane_id, lane_seq, ready_slot)'),
    ('done_entries_failed_idx',
     'CREATE INDEX done_entries_failed_idx ON ONLY awa.done_entries USING btree (queue) WHERE (state = ''failed''::text)'),
    ('done_entries_job_id_idx',
     'CREATE INDEX done_entries_job_id_idx ON ONLY awa.done_entries USING btree (job_id)'),
    ('receipt_completion_batches_0_batch_id_idx',
     'CREATE INDEX receipt_completion_batches_0_batch_id_idx ON awa.receipt_completion_batches_0 USING brin (batch_id) WITH (pages_per_range=''8'')'),
    ('lease_claims_pkey',
     'CREATE UNIQUE INDEX lease_claims_pkey ON ONLY awa.lease_claims USING btree (job_id, run_lease, claim_slot)'),
    ('lease_claim_closures_pkey',
     'CREATE UNIQUE INDEX lease_claim_closures_pkey ON ONLY awa.lease_claim_closures USING btree (job_id, run_lease, claim_slot)'),
    ('leases_pkey',
     'CREATE UNIQUE INDEX leases_pkey ON ONLY awa.leases USING btree (lane_id, lane_seq, lease_slot)'),
    ('leases_attempt_idx',
     'CREATE INDEX leases_attempt_idx ON ONLY awa.leases USING btree (job_id, run_lease)'),
    ('job_history_job_id_idx',
     'CREATE INDEX job_history_job_id_idx ON ONLY awa.job_history USING btree (job_id)'),
    ('job_history_unsuccessful_idx',
     'CREATE INDEX job_history_unsuccessful_idx ON ONLY awa.job_history USING btree (job_id) WHERE (state <> ''completed''::text)'),
    ('attempt_state_pkey',
     'CREATE UNIQUE INDEX attempt_state_pkey ON awa.attempt_state USING btree (job_id, run_lease)'),
    ('deferred_jobs_pkey',
     'CREATE UNIQUE INDEX deferred_jobs_pkey ON awa.deferred_jobs USING btree (job_id)'),
    ('deferred_jobs_due_idx',
     'CREATE INDEX deferred_jobs_due_idx ON awa.deferred_jobs USING btree (run_at, priority, job_id) WHERE (state <> ''available''::text)'),
    ('deferred_jobs_parked_idx',
     'CREATE INDEX deferred_jobs_parked_idx ON awa.deferred_jobs USING btree (queue, run_at, priority, job_id) WHERE (state = ''available''::text)'),
    ('deferred_jobs_unique_key_idx',
     'CREATE INDEX deferred_jobs_unique_key_idx ON awa.deferred_jobs USING btree (unique_key) WHERE (unique_key IS NOT NULL)'),
    ('deferred_jobs_queue_idx',
     'CREATE INDEX deferred_jobs_queue_idx ON awa.deferred_jobs USING btree (queue, job_id)'),
    ('dlq_entries_pkey',
     'CREATE UNIQUE INDEX dlq_entries_pkey ON awa.dlq_entries USING btree (job_id)'),
    ('dlq_entries_queue_idx',
     'CREATE INDEX dlq_entries_queue_idx ON awa.dlq_entries USING btree (queue, dlq_at DESC)'),
    ('queue_meta_pkey',
     'CREATE UNIQUE INDEX queue_meta_pkey ON awa.queue_meta USING btree (queue)'),
    ('queue_meta_paused_idx',
     'CREATE INDEX queue_meta_paused_idx ON awa.queue_meta USING btree (queue) WHERE paused'),
    ('job_unique_claims_pkey',
     'CREATE UNIQUE INDEX job_unique_claims_pkey ON awa.job_unique_claims USING btree (unique_key)'),
    ('job_unique_claims_job_id_idx',
     'CREATE INDEX job_unique_claims_job_id_idx ON awa.job_unique_claims USING btree (job_id)'),
    ('periodic_schedules_pkey',
     'CREATE UNIQUE INDEX periodic_schedules_pkey ON awa.periodic_schedules USING btree (name)'),
    ('periodic_schedules_due_idx',
     'CREATE INDEX periodic_schedules_due_idx ON awa.periodic_schedules USING btree (next_run_at)'),
    ('bulk_operations_pkey',
     'CREATE UNIQUE INDEX bulk_operations_pkey ON awa.bulk_operations USING btree (op_id)'),
    ('superseded_records_pkey',
     'CREATE UNIQUE INDEX superseded_records_pkey ON awa.superseded_records USING btree (job_id, run_lease)')
  ) AS d(i, def);

-- Exact index set of every table: 33
SELECT indexes_are('awa', t::name, idx::name[], 'awa.' || t || ' has exactly its indexes')
  FROM (VALUES
    ('queue_ring_state',            ARRAY['queue_ring_state_pkey']),
    ('claim_ring_state',            ARRAY['claim_ring_state_pkey']),
    ('lease_ring_state',            ARRAY['lease_ring_state_pkey']),
    ('history_ring_state',          ARRAY['history_ring_state_pkey']),
    ('queue_ring_rotations',        ARRAY['queue_ring_rotations_pkey', 'queue_ring_rotations_slot_idx']),
    ('claim_ring_rotations',        ARRAY['claim_ring_rotations_pkey', 'claim_ring_rotations_slot_idx']),
    ('lease_ring_rotations',        ARRAY['lease_ring_rotations_pkey']),
    ('history_ring_rotations',      ARRAY['history_ring_rotations_pkey']),
    ('queue_ring_slots',            ARRAY['queue_ring_slots_pkey']),
    ('claim_ring_slots',            ARRAY['claim_ring_slots_pkey']),
    ('lease_ring_slots',            ARRAY['lease_ring_slots_pkey']),
    ('history_ring_slots',          ARRAY['history_ring_slots_pkey']),
    ('queue_lanes',                 ARRAY['queue_lanes_identity', 'queue_lanes_lane_id_key']),
    ('key_weights',                 ARRAY['key_weights_pkey']),
    ('ready_entries',               ARRAY['ready_entries_job_id_idx']),
    ('ready_tombstones',            ARRAY['ready_tombstones_pkey']),
    ('ready_claim_attempt_batches', ARRAY['ready_claim_attempt_batches_lane_next_idx']),
    ('done_entries',                ARRAY['done_entries_pkey', 'done_entries_job_id_idx', 'done_entries_failed_idx']),
    -- (closures of a claim batch: a batch_id range of each partition's
    -- unique index, no claim_batch_id index; completions: each partition's
    -- BRIN index on batch_id; none on the parent)
    ('receipt_completion_batches',  ARRAY[]::text[]),
    ('lease_claims',                ARRAY['lease_claims_pkey']),
    ('lease_claim_batches',         ARRAY[]::text[]),
    ('lease_claim_closures',        ARRAY['lease_claim_closures_pkey']),
    ('lease_claim_closure_batches', ARRAY[]::text[]),
    ('leases',                      ARRAY['leases_pkey', 'leases_attempt_idx']),
    ('job_history',                 ARRAY['job_history_job_id_idx', 'job_history_unsuccessful_idx']),
    ('attempt_state',               ARRAY['attempt_state_pkey']),
    ('deferred_jobs',               ARRAY['deferred_jobs_pkey', 'deferred_jobs_due_idx', 'deferred_jobs_unique_key_idx',
                                          'deferred_jobs_queue_idx', 'deferred_jobs_parked_idx']),
    ('dlq_entries',                 ARRAY['dlq_entries_pkey', 'dlq_entries_queue_idx']),
    ('queue_meta',                  ARRAY['queue_meta_pkey', 'queue_meta_paused_idx']),
    ('job_unique_claims',           ARRAY['job_unique_claims_pkey', 'job_unique_claims_job_id_idx']),
    ('periodic_schedules',          ARRAY['periodic_schedules_pkey', 'periodic_schedules_due_idx']),
    ('bulk_operations',             ARRAY['bulk_operations_pkey']),
    ('superseded_records',          ARRAY['superseded_records_pkey'])
  ) AS x(t, idx);

-- Every index of a ring family has a valid attached index on each of its
-- partitions (claims and completions probe the slot partitions directly): 11
SELECT is(
    (SELECT count(*)::int
       FROM pg_catalog.pg_inherits i
       JOIN pg_catalog.pg_index ci ON ci.indexrelid = i.inhrelid
       JOIN pg_catalog.pg_class ct ON ct.oid = ci.indrelid
      WHERE i.inhparent = ('awa.' || idx)::regclass
        AND ci.indisvalid
        AND ct.relname = ANY (ARRAY(SELECT (family || '_' || s)::name FROM generate_series(0, slots - 1) s))),
    slots,
    'awa.' || idx || ' is attached on all ' || slots || ' partitions of ' || family)
  FROM (VALUES
    ('ready_entries', 'ready_entries_job_id_idx', 32),
    ('ready_tombstones', 'ready_tombstones_pkey', 32),
    ('ready_claim_attempt_batches', 'ready_claim_attempt_batches_lane_next_idx', 32),
    ('done_entries', 'done_entries_pkey', 32),
    ('done_entries', 'done_entries_job_id_idx', 32),
    ('done_entries', 'done_entries_failed_idx', 32),
    ('lease_claims', 'lease_claims_pkey', 16),
    ('lease_claim_closures', 'lease_claim_closures_pkey', 16),
    ('leases', 'leases_pkey', 8),
    ('leases', 'leases_attempt_idx', 8),
    ('job_history', 'job_history_job_id_idx', 8)
  ) AS p(family, idx, slots);

-- Every partition of the claim and closure evidence tables has its own
-- unique index on batch_id, no parent's (05_claim_ring.sql,
-- 12_ring_partitions.sql); every partition of the completion receipts its
-- BRIN index on batch_id (a completion writes no index entry); and the ready
-- side's claim evidence, which nothing reads by batch id, has none: 4
SELECT is(
    (SELECT count(*)::int
       FROM pg_catalog.pg_inherits h
       JOIN pg_catalog.pg_index x ON x.indrelid = h.inhrelid
      WHERE h.inhparent = ('awa.' || family)::regclass
        AND x.indisunique AND x.indisvalid AND x.indnatts = 1
        AND pg_catalog.pg_get_indexdef(x.indexrelid) LIKE '%USING btree (batch_id)'
        AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits p WHERE p.inhrelid = x.indexrelid)),
    slots,
    'each of the ' || slots || ' partitions of ' || family || ' has its unique (batch_id) index')
  FROM (VALUES ('lease_claim_batches', 16), ('lease_claim_closure_batches', 16)) AS f(family, slots);
SELECT is(
    (SELECT count(*)::int
       FROM pg_catalog.pg_inherits h
       JOIN pg_catalog.pg_index x ON x.indrelid = h.inhrelid
      WHERE h.inhparent = 'awa.receipt_completion_batches'::regclass
        AND NOT x.indisunique AND x.indisvalid AND x.indnatts = 1
        AND pg_catalog.pg_get_indexdef(x.indexrelid) LIKE '%USING brin (batch_id)%'
        AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits p WHERE p.inhrelid = x.indexrelid)),
    32,
    'each of the 32 partitions of receipt_completion_batches has its BRIN (batch_id) index');
SELECT is(
    (SELECT count(*)::int
       FROM pg_catalog.pg_inherits h
       JOIN pg_catalog.pg_index x ON x.indrelid = h.inhrelid
      WHERE h.inhparent = 'awa.ready_claim_attempt_batches'::regclass
        AND pg_catalog.pg_get_indexdef(x.indexrelid) LIKE '%(batch_id)'),
    0,
    'no partition of ready_claim_attempt_batches has a batch_id index (its readers go by lane)');

-- Every partition of ready_entries has its own unique index on (lane_id,
-- lane_seq), no parent's (04_queue_ring.sql, 12_ring_partitions.sql): 1
SELECT is(
    (SELECT count(*)::int
       FROM pg_catalog.pg_inherits h
       JOIN pg_catalog.pg_index x ON x.indrelid = h.inhrelid
      WHERE h.inhparent = 'awa.ready_entries'::regclass
        AND x.indisunique AND x.indisvalid AND x.indnatts = 2
        AND pg_catalog.pg_get_indexdef(x.indexrelid) LIKE '%USING btree (lane_id, lane_seq)'
        AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits p WHERE p.inhrelid = x.indexrelid)),
    32,
    'each of the 32 partitions of ready_entries has its unique (lane_id, lane_seq) index');

SELECT * FROM finish();
ROLLBACK;
