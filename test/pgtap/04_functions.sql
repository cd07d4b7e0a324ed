-- 04_functions.sql: the SQL API. Exact signatures (argument types, names,
-- defaults), return types, SECURITY DEFINER, VOLATILE, LANGUAGE C, not STRICT
-- (NULL arguments must reach the C code, which raises 22004), and the C symbol.
BEGIN;
SET LOCAL search_path = public;
SELECT plan(53);

CREATE TEMP TABLE api (fn name, args name[], returns text, arguments text, result text, symbol text)
    ON COMMIT DROP;
INSERT INTO api VALUES
    ('enqueue',
     ARRAY['text', 'jsonb', 'text', 'integer', 'timestamp with time zone', 'integer', 'jsonb'],
     'bigint',
     'kind text, args jsonb DEFAULT ''{}''::jsonb, queue text DEFAULT ''default''::text, '
     'priority integer DEFAULT 2, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, '
     'max_attempts integer DEFAULT 25, opts jsonb DEFAULT ''{}''::jsonb',
     'bigint',
     'awa_enqueue'),
    ('enqueue_many',
     ARRAY['text[]', 'jsonb[]', 'text', 'integer[]', 'timestamp with time zone[]', 'integer'],
     'setof bigint',
     'kinds text[], args jsonb[], queue text DEFAULT ''default''::text, '
     'priorities integer[] DEFAULT NULL::integer[], '
     'run_at timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], max_attempts integer DEFAULT 25',
     'SETOF bigint',
     'awa_enqueue_many'),
    ('claim',
     ARRAY['text', 'integer', 'interval'],
     'setof record',
     'queue text, max_jobs integer DEFAULT 1, deadline interval DEFAULT ''00:05:00''::interval',
     'TABLE(job_id bigint, run_lease bigint, receipt_id bigint, kind text, args jsonb, queue text, '
     'priority integer, attempt integer, max_attempts integer, deadline_at timestamp with time zone, '
     'created_at timestamp with time zone, metadata jsonb)',
     'awa_claim'),
    ('complete',
     ARRAY['bigint', 'bigint', 'bigint'],
     'boolean',
     'job_id bigint, run_lease bigint, receipt_id bigint',
     'boolean',
     'awa_complete'),
    ('complete_many',
     ARRAY['bigint[]', 'bigint[]', 'bigint[]'],
     'setof record',
     'job_ids bigint[], run_leases bigint[], receipt_ids bigint[]',
     'TABLE(job_id bigint, accepted boolean)',
     'awa_complete_many');

-- Exactly these functions in schema awa (the five API functions and the
-- cursor reader behind awa.lanes): 1
SELECT functions_are('awa', ARRAY['enqueue', 'enqueue_many', 'claim', 'complete', 'complete_many',
                                  'cursor_value']::name[],
                     'schema awa has exactly the five API functions and cursor_value');
-- ... and one overload each: 1
SELECT is((SELECT count(*)::int FROM pg_catalog.pg_proc WHERE pronamespace = 'awa'::regnamespace), 6,
          'no function is overloaded');

-- awa.cursor_value(regclass): 6
SELECT has_function('awa', 'cursor_value', ARRAY['regclass'], 'awa.cursor_value(regclass) exists');
SELECT function_returns('awa', 'cursor_value', ARRAY['regclass'], 'bigint', 'awa.cursor_value returns bigint');
SELECT isnt_definer('awa', 'cursor_value', ARRAY['regclass'],
                    'awa.cursor_value runs as the caller (who needs SELECT on the sequence)');
SELECT is_strict('awa', 'cursor_value', ARRAY['regclass'], 'awa.cursor_value is STRICT');
SELECT function_lang_is('awa', 'cursor_value', ARRAY['regclass'], 'c', 'awa.cursor_value is LANGUAGE C');
SELECT volatility_is('awa', 'cursor_value', ARRAY['regclass'], 'stable', 'awa.cursor_value is STABLE');

-- Per function, 9 checks: 45
SELECT has_function('awa', fn, args, 'awa.' || fn || '(' || array_to_string(args, ', ') || ') exists')
  FROM api ORDER BY fn;
SELECT function_returns('awa', fn, args, returns, 'awa.' || fn || ' returns ' || returns)
  FROM api ORDER BY fn;
SELECT is_definer('awa', fn, args, 'awa.' || fn || ' is SECURITY DEFINER')
  FROM api ORDER BY fn;
SELECT volatility_is('awa', fn, args, 'volatile', 'awa.' || fn || ' is VOLATILE')
  FROM api ORDER BY fn;
SELECT function_lang_is('awa', fn, args, 'c', 'awa.' || fn || ' is LANGUAGE C')
  FROM api ORDER BY fn;
SELECT isnt_strict('awa', fn, args, 'awa.' || fn || ' is not STRICT (NULL arguments are validated)')
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
SELECT is(p.probin || ':' || p.prosrc, '$libdir/awa:' || a.symbol,
          'awa.' || a.fn || ' is ' || a.symbol || ' in $libdir/awa')
  FROM api a
  JOIN pg_catalog.pg_proc p ON p.pronamespace = 'awa'::regnamespace AND p.proname = a.fn
 ORDER BY a.fn;

SELECT * FROM finish();
ROLLBACK;
