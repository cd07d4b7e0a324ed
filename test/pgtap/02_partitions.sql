-- 02_partitions.sql: the rings. Every ring family is a LIST-partitioned parent
-- with exactly one partition <family>_<slot> per slot (queue ring 16 + 16
-- spare, claim ring 8 + 8 spare, lease ring 8, history ring 8), each holding
-- exactly its slot value,
-- and nothing more.
-- The ring configuration rows agree with the partitions.
BEGIN;
SET LOCAL search_path = public;
SELECT plan(324);

CREATE TEMP TABLE ring_family (family name, slot_column name, slots int) ON COMMIT DROP;
INSERT INTO ring_family VALUES
    ('ready_entries',               'ready_slot', 32),
    ('ready_tombstones',            'ready_slot', 32),
    ('ready_claim_attempt_batches', 'ready_slot', 32),
    ('done_entries',                'ready_slot', 32),
    ('receipt_completion_batches',  'ready_slot', 32),
    ('lease_claims',                'claim_slot', 16),
    ('lease_claim_batches',         'claim_slot', 16),
    ('lease_claim_closures',        'claim_slot', 16),
    ('lease_claim_closure_batches', 'claim_slot', 16),
    ('leases',                      'lease_slot', 8),
    ('job_history',                 'history_slot', 8);

-- Each family parent is partitioned: 11
SELECT is_partitioned('awa', family, 'awa.' || family || ' is partitioned')
  FROM ring_family ORDER BY family;

-- ... by LIST on its slot column: 11
SELECT is(pg_catalog.pg_get_partkeydef(('awa.' || family)::regclass),
          'LIST (' || slot_column || ')',
          'awa.' || family || ' is partitioned by LIST (' || slot_column || ')')
  FROM ring_family ORDER BY family;

-- Every child of every family: 5 x 32 + 4 x 16 + 8 + 8 = 240
SELECT is_partition_of('awa', (family || '_' || s)::name, 'awa', family,
                       'awa.' || family || '_' || s || ' is a partition of awa.' || family)
  FROM ring_family, generate_series(0, slots - 1) s
 ORDER BY family, s;

-- No extra partitions: 11
SELECT partitions_are('awa', family,
                      ARRAY(SELECT ('awa.' || family || '_' || s)::name FROM generate_series(0, slots - 1) s),
                      'awa.' || family || ' has exactly ' || slots || ' partitions')
  FROM ring_family ORDER BY family;

-- Each child holds exactly its own slot value: 11
SELECT is(
    ARRAY(SELECT c.relname || ' ' || pg_catalog.pg_get_expr(c.relpartbound, c.oid)
            FROM pg_catalog.pg_inherits i
            JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
           WHERE i.inhparent = ('awa.' || family)::regclass
           ORDER BY c.relname COLLATE "C"),
    ARRAY(SELECT family || '_' || s || ' FOR VALUES IN (''' || s || ''')'
            FROM generate_series(0, slots - 1) s
           ORDER BY (family || '_' || s) COLLATE "C"),
    'each partition of awa.' || family || ' holds exactly its slot')
  FROM ring_family ORDER BY family;

-- No default partition, no sub-partitioning: 2
SELECT is(
    (SELECT count(*)::int FROM pg_catalog.pg_partitioned_table p
      JOIN pg_catalog.pg_class c ON c.oid = p.partrelid
     WHERE c.relnamespace = 'awa'::regnamespace AND p.partdefid <> 0),
    0, 'no ring family has a default partition');
SELECT is(
    (SELECT count(*)::int FROM pg_catalog.pg_inherits i
       JOIN pg_catalog.pg_class p ON p.oid = i.inhparent
       JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
      WHERE p.relnamespace = 'awa'::regnamespace AND p.relkind = 'p' AND c.relkind <> 'r'),
    0, 'every ring partition is a plain table');

-- Exactly the 11 families are partitioned: 1
SELECT is(
    ARRAY(SELECT c.relname::text FROM pg_catalog.pg_class c
           WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind = 'p'
           ORDER BY c.relname COLLATE "C"),
    ARRAY(SELECT family::text FROM ring_family ORDER BY family COLLATE "C"),
    'exactly the 11 ring families are partitioned');

-- Control and plain tables are not partitioned: 20
SELECT isnt_partitioned('awa', t::name, 'awa.' || t || ' is not partitioned')
  FROM unnest(ARRAY['queue_ring_state', 'claim_ring_state', 'lease_ring_state', 'history_ring_state',
                    'queue_ring_rotations', 'claim_ring_rotations', 'lease_ring_rotations',
                    'history_ring_rotations',
                    'queue_ring_slots', 'claim_ring_slots', 'lease_ring_slots', 'history_ring_slots',
                    'queue_lanes', 'key_weights', 'attempt_state', 'deferred_jobs', 'dlq_entries',
                    'queue_meta', 'job_unique_claims', 'periodic_schedules']) t;

-- Ring configuration agrees with the partitions: 12
SELECT results_eq('SELECT singleton, slot_count, width FROM awa.queue_ring_state',
                  $$VALUES (true, 32, 16)$$, 'queue ring has 32 slots, 16 in use while none is held');
SELECT results_eq('SELECT singleton, slot_count, width FROM awa.claim_ring_state',
                  $$VALUES (true, 16, 8)$$, 'claim ring has 16 slots, 8 in use while none is held');
SELECT results_eq('SELECT singleton, slot_count, width FROM awa.lease_ring_state',
                  $$VALUES (true, 8, 8)$$, 'lease ring has 8 slots');
SELECT results_eq('SELECT singleton, slot_count, width FROM awa.history_ring_state',
                  $$VALUES (true, 8, 8)$$, 'history ring has 8 slots');
SELECT results_eq('SELECT generation, slot::int FROM awa.queue_ring_rotations ORDER BY generation',
                  $$VALUES (0::bigint, 0)$$, 'queue ring starts at generation 0, slot 0');
SELECT results_eq('SELECT generation, slot::int FROM awa.claim_ring_rotations ORDER BY generation',
                  $$VALUES (0::bigint, 0)$$, 'claim ring starts at generation 0, slot 0');
SELECT results_eq('SELECT generation, slot::int FROM awa.lease_ring_rotations ORDER BY generation',
                  $$VALUES (0::bigint, 0)$$, 'lease ring starts at generation 0, slot 0');
SELECT results_eq('SELECT generation, slot::int FROM awa.history_ring_rotations ORDER BY generation',
                  $$VALUES (0::bigint, 0)$$, 'history ring starts at generation 0, slot 0');
SELECT results_eq('SELECT slot::int FROM awa.queue_ring_slots ORDER BY slot',
                  'SELECT generate_series(0, 31)', 'queue ring slot rows are 0..31');
SELECT results_eq('SELECT slot::int FROM awa.claim_ring_slots ORDER BY slot',
                  'SELECT generate_series(0, 15)', 'claim ring slot rows are 0..15');
SELECT results_eq('SELECT slot::int FROM awa.lease_ring_slots ORDER BY slot',
                  'SELECT generate_series(0, 7)', 'lease ring slot rows are 0..7');
SELECT results_eq('SELECT slot::int FROM awa.history_ring_slots ORDER BY slot',
                  'SELECT generate_series(0, 7)', 'history ring slot rows are 0..7');

-- The ring_state singletons admit only one row and the configured bounds: 3
SELECT throws_ok($$INSERT INTO awa.queue_ring_state (singleton, slot_count, width) VALUES (false, 16, 16)$$,
                 '23514', NULL, 'queue_ring_state admits only singleton = true');
SELECT throws_ok($$INSERT INTO awa.queue_ring_state (slot_count, width) VALUES (16, 16)$$,
                 '23505', NULL, 'queue_ring_state admits only one row');
SELECT throws_ok($$INSERT INTO awa.claim_ring_rotations (generation, slot) VALUES (-1, 0)$$,
                 '23514', NULL, 'ring generations are >= 0');

-- No ring partition is autovacuumed, nor its TOAST table: TRUNCATE reclaims
-- a slot whole (12_ring_partitions.sql; docs/architecture.md, "Ring
-- partitions are not autovacuumed"); every other table of awa is: 2
SELECT is(
    ARRAY(SELECT c.oid::regclass::text FROM pg_catalog.pg_class c
            LEFT JOIN pg_catalog.pg_class t ON t.oid = c.reltoastrelid
           WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind = 'r' AND c.relispartition
             AND NOT (coalesce(c.reloptions, '{}') @> '{autovacuum_enabled=false}'
                      AND (t.oid IS NULL OR coalesce(t.reloptions, '{}') @> '{autovacuum_enabled=false}'))
           ORDER BY 1),
    ARRAY[]::text[],
    'every ring partition and its TOAST table have autovacuum_enabled false');
SELECT is(
    ARRAY(SELECT c.oid::regclass::text FROM pg_catalog.pg_class c
           WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind = 'r' AND NOT c.relispartition
             AND array_to_string(c.reloptions, ',') LIKE '%autovacuum%'
           ORDER BY 1),
    ARRAY[]::text[],
    'no other table of awa has an autovacuum setting');

SELECT * FROM finish();
ROLLBACK;
