-- 05_privileges.sql: roles and who may do what. EXECUTE is revoked from PUBLIC;
-- awa_producer may enqueue, awa_worker may claim and complete, awa_admin may do
-- all of it and read (only read) every table. Nobody but the owner writes tables.
BEGIN;
SET LOCAL search_path = public;
SELECT plan(53);

-- Roles: 3 + 3
SELECT has_role(r::name, 'role ' || r || ' exists')
  FROM unnest(ARRAY['awa_producer', 'awa_worker', 'awa_admin']) r;
SELECT ok(NOT rolcanlogin AND NOT rolsuper AND NOT rolcreaterole AND NOT rolcreatedb AND NOT rolbypassrls,
          'role ' || rolname || ' is NOLOGIN with no special attributes')
  FROM pg_catalog.pg_roles
 WHERE rolname IN ('awa_producer', 'awa_worker', 'awa_admin')
 ORDER BY rolname;

-- EXECUTE per function and role (PUBLIC included): 6 x 4 = 24
SELECT function_privs_are('awa', fn::name, args::name[], role::name, privs::name[],
                          role || ' ' || CASE WHEN cardinality(privs) = 0 THEN 'may not' ELSE 'may' END
                          || ' execute awa.' || fn)
  FROM (VALUES
    ('enqueue', ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'jsonb'],
     'awa_producer', ARRAY['EXECUTE']),
    ('enqueue', ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'jsonb'],
     'awa_worker', ARRAY[]::text[]),
    ('enqueue', ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'jsonb'],
     'awa_admin', ARRAY['EXECUTE']),
    ('enqueue', ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'jsonb'],
     'public', ARRAY[]::text[]),
    ('enqueue_many', ARRAY['text[]', 'jsonb[]', 'text', 'integer[]', 'timestamp with time zone[]', 'integer'],
     'awa_producer', ARRAY['EXECUTE']),
    ('enqueue_many', ARRAY['text[]', 'jsonb[]', 'text', 'integer[]', 'timestamp with time zone[]', 'integer'],
     'awa_worker', ARRAY[]::text[]),
    ('enqueue_many', ARRAY['text[]', 'jsonb[]', 'text', 'integer[]', 'timestamp with time zone[]', 'integer'],
     'awa_admin', ARRAY['EXECUTE']),
    ('enqueue_many', ARRAY['text[]', 'jsonb[]', 'text', 'integer[]', 'timestamp with time zone[]', 'integer'],
     'public', ARRAY[]::text[]),
    ('claim', ARRAY['text', 'integer', 'interval'], 'awa_producer', ARRAY[]::text[]),
    ('claim', ARRAY['text', 'integer', 'interval'], 'awa_worker', ARRAY['EXECUTE']),
    ('claim', ARRAY['text', 'integer', 'interval'], 'awa_admin', ARRAY['EXECUTE']),
    ('claim', ARRAY['text', 'integer', 'interval'], 'public', ARRAY[]::text[]),
    ('complete', ARRAY['bigint', 'bigint', 'bigint'], 'awa_producer', ARRAY[]::text[]),
    ('complete', ARRAY['bigint', 'bigint', 'bigint'], 'awa_worker', ARRAY['EXECUTE']),
    ('complete', ARRAY['bigint', 'bigint', 'bigint'], 'awa_admin', ARRAY['EXECUTE']),
    ('complete', ARRAY['bigint', 'bigint', 'bigint'], 'public', ARRAY[]::text[]),
    ('complete_many', ARRAY['bigint[]', 'bigint[]', 'bigint[]'], 'awa_producer', ARRAY[]::text[]),
    ('complete_many', ARRAY['bigint[]', 'bigint[]', 'bigint[]'], 'awa_worker', ARRAY['EXECUTE']),
    ('complete_many', ARRAY['bigint[]', 'bigint[]', 'bigint[]'], 'awa_admin', ARRAY['EXECUTE']),
    ('complete_many', ARRAY['bigint[]', 'bigint[]', 'bigint[]'], 'public', ARRAY[]::text[]),
    ('cursor_value', ARRAY['regclass'], 'awa_producer', ARRAY[]::text[]),
    ('cursor_value', ARRAY['regclass'], 'awa_worker', ARRAY[]::text[]),
    ('cursor_value', ARRAY['regclass'], 'awa_admin', ARRAY['EXECUTE']),
    ('cursor_value', ARRAY['regclass'], 'public', ARRAY[]::text[])
  ) AS g(fn, args, role, privs);

-- The ACLs name no other grantee (no role besides the owner and these): 1
SELECT is(
    ARRAY(SELECT DISTINCT coalesce(r.rolname, 'PUBLIC')::text
            FROM pg_catalog.pg_proc p, aclexplode(p.proacl) a
            LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
           WHERE p.pronamespace = 'awa'::regnamespace AND a.grantee <> p.proowner
           ORDER BY 1),
    ARRAY['awa_admin', 'awa_producer', 'awa_worker'],
    'EXECUTE on awa functions is granted to the three awa roles only');
-- Every API function has an explicit ACL (a NULL ACL would mean PUBLIC EXECUTE): 1
SELECT is((SELECT count(*)::int FROM pg_catalog.pg_proc
            WHERE pronamespace = 'awa'::regnamespace AND proacl IS NULL),
          0, 'no awa function has the default (PUBLIC EXECUTE) ACL');

-- Schema usage: 4
SELECT schema_privs_are('awa', r::name, ARRAY['USAGE']::name[], r || ' has USAGE on schema awa')
  FROM unnest(ARRAY['awa_producer', 'awa_worker', 'awa_admin']) r;
SELECT schema_privs_are('awa', 'public', ARRAY[]::name[], 'PUBLIC has no privilege on schema awa');

-- Tables (partitions included) and the view: 8
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
  FROM unnest(ARRAY['awa_producer', 'awa_worker', 'awa_admin', 'public']) r;
SELECT is(
    ARRAY(SELECT c.relname::text FROM pg_catalog.pg_class c
           WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind IN ('r', 'p', 'v')
             AND pg_catalog.has_table_privilege(r, c.oid, 'SELECT')
           ORDER BY c.relname COLLATE "C"),
    ARRAY[]::text[],
    r || ' may not read any awa table or view')
  FROM unnest(ARRAY['awa_producer', 'awa_worker', 'public']) r;

-- Sequences: nobody but the owner may use them directly: 4
SELECT is(
    ARRAY(SELECT c.relname::text FROM pg_catalog.pg_class c
           WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind = 'S'
             AND pg_catalog.has_sequence_privilege(r, c.oid, 'USAGE, SELECT, UPDATE')
           ORDER BY c.relname COLLATE "C"),
    ARRAY[]::text[],
    r || ' has no privilege on any awa sequence')
  FROM unnest(ARRAY['awa_producer', 'awa_worker', 'awa_admin', 'public']) r;

-- Behaviour matches the catalog: calls without EXECUTE fail with 42501: 5
CREATE ROLE awa_pgtap_nobody NOLOGIN;
CREATE ROLE awa_pgtap_producer NOLOGIN IN ROLE awa_producer;
CREATE ROLE awa_pgtap_worker NOLOGIN IN ROLE awa_worker;
SET LOCAL ROLE awa_pgtap_nobody;
SELECT throws_ok($$SELECT awa.enqueue('k')$$, '42501', NULL, 'a role without grants may not enqueue');
SELECT throws_ok($$SELECT * FROM awa.claim('q')$$, '42501', NULL, 'a role without grants may not claim');
RESET ROLE;
SET LOCAL ROLE awa_pgtap_producer;
SELECT throws_ok($$SELECT * FROM awa.claim('q')$$, '42501', NULL, 'a producer may not claim');
SELECT throws_ok($$SELECT awa.complete(1, 1, 1)$$, '42501', NULL, 'a producer may not complete');
RESET ROLE;
SET LOCAL ROLE awa_pgtap_worker;
SELECT throws_ok($$SELECT awa.enqueue('k')$$, '42501', NULL, 'a worker may not enqueue');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
