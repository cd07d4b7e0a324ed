-- try.sql: shared by the pg_regress files (included with \i test/sql/include/try.sql from the tree root, where pg_regress runs psql).
-- Runs a statement; returns 'ok' or 'SQLSTATE: message | HINT: hint'. With
-- show_hint false only the presence of a hint is shown.
CREATE FUNCTION pg_temp.try(sql text, show_hint boolean DEFAULT true) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    state text;
    message text;
    hint text;
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
    RETURN state || ': ' || message
           || CASE WHEN coalesce(hint, '') = '' THEN ' | (no hint)'
                   WHEN show_hint THEN ' | HINT: ' || hint
                   ELSE ' | HINT: (present)' END;
END
$f$;
