-- ---------------------------------------------------------------------------
-- Roles. Created once per cluster; CREATE EXTENSION in a second database
-- reuses them.
-- ---------------------------------------------------------------------------
DO $roles$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'awa_producer') THEN
        CREATE ROLE awa_producer NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'awa_worker') THEN
        CREATE ROLE awa_worker NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'awa_admin') THEN
        CREATE ROLE awa_admin NOLOGIN;
    END IF;
    -- Reads the metrics surface (docs/monitoring.md) and nothing else.
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'awa_monitor') THEN
        CREATE ROLE awa_monitor NOLOGIN;
    END IF;
    -- Sees jobs' args and metadata in awa.list_jobs (awa_monitor lists jobs
    -- without them: payloads may hold personal data). awa_admin is a member.
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'awa_payload_reader') THEN
        CREATE ROLE awa_payload_reader NOLOGIN;
    END IF;
END
$roles$;
GRANT USAGE ON SCHEMA awa TO awa_producer, awa_worker, awa_admin, awa_monitor;
GRANT awa_payload_reader TO awa_admin;
GRANT SELECT ON ALL TABLES IN SCHEMA awa TO awa_admin;


