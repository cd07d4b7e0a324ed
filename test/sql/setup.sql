--
-- setup: the objects CREATE EXTENSION awa leaves behind (pg_regress creates
-- the extension with --load-extension=awa before this file runs).
--
SELECT extname, extversion, extnamespace::regnamespace AS schema
  FROM pg_extension WHERE extname = 'awa';

-- The SQL API: five C functions, all SECURITY DEFINER, none executable by PUBLIC.
SELECT p.oid::regprocedure AS function, l.lanname, p.prosecdef, p.provolatile, p.proretset
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.pronamespace = 'awa'::regnamespace
 ORDER BY p.proname;
SELECT count(*) AS public_execute_grants
  FROM pg_proc p, aclexplode(p.proacl) a
 WHERE p.pronamespace = 'awa'::regnamespace AND a.grantee = 0;

-- Ring families: every parent is LIST-partitioned, with one child per slot,
-- named <parent>_<slot> and holding exactly FOR VALUES IN (<slot>).
SELECT parent.relname AS parent,
       pt.partstrat,
       count(*) AS partitions,
       min(substring(child.relname FROM '_(\d+)$')::int) AS min_slot,
       max(substring(child.relname FROM '_(\d+)$')::int) AS max_slot,
       count(*) FILTER (WHERE child.relname <> parent.relname || '_' || substring(child.relname FROM '_(\d+)$')
                           OR pg_get_expr(child.relpartbound, child.oid)
                              <> format('FOR VALUES IN (''%s'')', substring(child.relname FROM '_(\d+)$')))
           AS misnamed_or_misbound
  FROM pg_inherits i
  JOIN pg_class parent ON parent.oid = i.inhparent
  JOIN pg_class child ON child.oid = i.inhrelid
  JOIN pg_partitioned_table pt ON pt.partrelid = parent.oid
 WHERE parent.relnamespace = 'awa'::regnamespace AND parent.relkind = 'p' AND child.relkind = 'r'
 GROUP BY parent.relname, pt.partstrat
 ORDER BY partitions DESC, parent.relname;

-- Partitions per ring family (queue 5 x 16, claim 4 x 8, lease 1 x 8).
SELECT family, count(*) AS partitions, count(DISTINCT slot) AS slots
  FROM (SELECT CASE
                 WHEN parent.relname IN ('ready_entries', 'ready_tombstones',
                                         'ready_claim_attempt_batches', 'done_entries',
                                         'receipt_completion_batches') THEN 'queue'
                 WHEN parent.relname IN ('lease_claims', 'lease_claim_batches', 'lease_claim_closures',
                                         'lease_claim_closure_batches') THEN 'claim'
                 WHEN parent.relname = 'leases' THEN 'lease'
                 ELSE 'other:' || parent.relname
               END AS family,
               substring(child.relname FROM '_(\d+)$')::int AS slot
          FROM pg_inherits i
          JOIN pg_class parent ON parent.oid = i.inhparent
          JOIN pg_class child ON child.oid = i.inhrelid
         WHERE parent.relnamespace = 'awa'::regnamespace AND parent.relkind = 'p' AND child.relkind = 'r') f
 GROUP BY family
 ORDER BY family;

-- Ring configuration and slot tables agree with the partitions.
SELECT 'queue' AS ring, (SELECT slot_count FROM awa.queue_ring_state) AS slot_count,
       (SELECT count(*) FROM awa.queue_ring_slots) AS slots,
       (SELECT array_agg(slot ORDER BY slot) = array(SELECT generate_series(0, 15)::smallint)
          FROM awa.queue_ring_slots) AS slots_0_to_n
UNION ALL
SELECT 'claim', (SELECT slot_count FROM awa.claim_ring_state),
       (SELECT count(*) FROM awa.claim_ring_slots),
       (SELECT array_agg(slot ORDER BY slot) = array(SELECT generate_series(0, 7)::smallint)
          FROM awa.claim_ring_slots)
UNION ALL
SELECT 'lease', (SELECT slot_count FROM awa.lease_ring_state),
       (SELECT count(*) FROM awa.lease_ring_slots),
       (SELECT array_agg(slot ORDER BY slot) = array(SELECT generate_series(0, 7)::smallint)
          FROM awa.lease_ring_slots);

-- Rotation ledgers start with one entry: generation 0 in slot 0.
SELECT 'queue' AS ring, count(*) AS entries, max(generation) AS generation,
       min(slot) AS slot, bool_and(rotated_at <= now()) AS rotated_in_past
  FROM awa.queue_ring_rotations
UNION ALL
SELECT 'claim', count(*), max(generation), min(slot), bool_and(rotated_at <= now())
  FROM awa.claim_ring_rotations
UNION ALL
SELECT 'lease', count(*), max(generation), min(slot), bool_and(rotated_at <= now())
  FROM awa.lease_ring_rotations;

-- Plain tables, the control table, the view and the global sequences.
SELECT c.relname, c.relkind
  FROM pg_class c
 WHERE c.relnamespace = 'awa'::regnamespace
   AND c.relkind IN ('r', 'v', 'S')
   AND NOT c.relispartition
 ORDER BY c.relkind, c.relname;

-- Everything starts empty: no lanes, no jobs, no claims, no completions.
SELECT (SELECT count(*) FROM awa.queue_lanes) AS lanes,
       (SELECT count(*) FROM awa.lanes) AS lanes_view,
       (SELECT count(*) FROM awa.ready_entries) AS ready,
       (SELECT count(*) FROM awa.deferred_jobs) AS deferred,
       (SELECT count(*) FROM awa.ready_claim_attempt_batches) AS attempt_batches,
       (SELECT count(*) FROM awa.lease_claim_batches) AS claim_batches,
       (SELECT count(*) FROM awa.lease_claim_closure_batches) AS closure_batches,
       (SELECT count(*) FROM awa.receipt_completion_batches) AS completion_batches,
       (SELECT count(*) FROM awa.done_entries) AS done,
       (SELECT count(*) FROM awa.dlq_entries) AS dlq,
       (SELECT count(*) FROM awa.leases) AS leases,
       (SELECT count(*) FROM awa.attempt_state) AS attempt_state;

-- Roles created by the extension, and what each may execute.
SELECT rolname, rolcanlogin, rolsuper, rolinherit
  FROM pg_roles WHERE rolname IN ('awa_producer', 'awa_worker', 'awa_admin')
 ORDER BY rolname;
SELECT r.rolname,
       has_schema_privilege(r.rolname, 'awa', 'USAGE') AS schema_usage,
       has_function_privilege(r.rolname, 'awa.enqueue(text, jsonb, text, int, timestamptz, int, jsonb)', 'EXECUTE') AS enqueue,
       has_function_privilege(r.rolname, 'awa.enqueue_many(text[], jsonb[], text, int[], timestamptz[], int, jsonb[])', 'EXECUTE') AS enqueue_many,
       has_function_privilege(r.rolname, 'awa.claim(text, int, awa.duration, awa.duration, boolean)', 'EXECUTE') AS claim,
       has_function_privilege(r.rolname, 'awa.complete(bigint, bigint, bigint)', 'EXECUTE') AS complete,
       has_function_privilege(r.rolname, 'awa.complete_many(bigint[], bigint[], bigint[])', 'EXECUTE') AS complete_many,
       has_table_privilege(r.rolname, 'awa.lanes', 'SELECT') AS lanes_view,
       has_table_privilege(r.rolname, 'awa.ready_entries', 'SELECT') AS ready_entries
  FROM pg_roles r WHERE r.rolname IN ('awa_producer', 'awa_worker', 'awa_admin')
 ORDER BY r.rolname;

-- The GUCs and their defaults.
SHOW awa.async_claim_commit;
SHOW awa.gap_proof_lock_timeout;
SHOW awa.lane_wait_timeout;
SELECT name, setting, unit, context, vartype
  FROM pg_settings
 WHERE name IN ('awa.async_claim_commit', 'awa.early_lane_release', 'awa.gap_proof_lock_timeout', 'awa.lane_wait_timeout', 'awa.max_lanes', 'awa.queue_slot_count',
                'awa.claim_slot_count', 'awa.lease_slot_count')
 ORDER BY name;
