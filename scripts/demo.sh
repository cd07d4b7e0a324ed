#!/usr/bin/env bash
# demo.sh: on a fresh Debian 12 machine, as root: installs what awa needs,
# builds and installs it, starts a PostgreSQL 15 cluster kept inside the
# checkout (.demo/, port 5440, awa preloaded), creates the extension, sends a
# demo job through enqueue, claim and complete, and leaves the server running.
# Safe to run again: it reuses the cluster and the running server.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
port=${AWA_DEMO_PORT:-5440}
demo=$repo/.demo
export PATH=/usr/lib/postgresql/15/bin:$PATH

"$repo/scripts/install-deps.sh"
echo "== building and installing awa"
make -C "$repo" -s -j2
make -C "$repo" -s install

as_postgres() { runuser -u postgres -- env PATH="$PATH" "$@"; }

mkdir -p "$demo"
chown postgres "$demo"
if [ ! -f "$demo/data/PG_VERSION" ]; then
	echo "== creating a PostgreSQL 15 cluster in $demo/data"
	as_postgres initdb -D "$demo/data" -A trust -U postgres >/dev/null
	cat >>"$demo/data/postgresql.conf" <<CONF
port = $port
listen_addresses = 'localhost'
unix_socket_directories = '$demo'
shared_preload_libraries = 'awa'
CONF
fi
if ! as_postgres pg_ctl -D "$demo/data" status >/dev/null 2>&1; then
	echo "== starting the server on port $port"
	as_postgres pg_ctl -D "$demo/data" -l "$demo/server.log" -w start >/dev/null
else
	echo "== restarting the server on port $port (loads the freshly installed awa)"
	as_postgres pg_ctl -D "$demo/data" -l "$demo/server.log" -w restart >/dev/null
fi

psql_demo() { as_postgres psql -h "$demo" -p "$port" -d postgres -v ON_ERROR_STOP=1 -X "$@"; }

# The extension's install script changes between development builds while its
# version stays 0.6: when the demo database holds an older build, drop and
# create it again (the demo database holds only demo jobs).
script_sum=$(md5sum "$repo/awa--0.6.sql" | cut -d' ' -f1)
installed=$(psql_demo -qAtc "SELECT count(*) FROM pg_extension WHERE extname = 'awa'")
if [ "$installed" = 1 ] && [ "$(cat "$demo/awa-script.md5" 2>/dev/null)" != "$script_sum" ]; then
	echo "== the demo database has another build of awa 0.6: dropping it"
	psql_demo -qc "DROP EXTENSION IF EXISTS awa CASCADE"
fi
echo "== CREATE EXTENSION awa"
psql_demo -qc "CREATE EXTENSION IF NOT EXISTS awa"
if [ "$installed" != 1 ] || [ "$(cat "$demo/awa-script.md5" 2>/dev/null)" != "$script_sum" ]; then
	echo "$script_sum" > "$demo/awa-script.md5"   # the build just created
fi

echo "== a demo job: enqueue, claim, complete"
psql_demo <<'SQL'
\pset footer off
SELECT awa.enqueue('send_welcome_email', '{"user_id": 42}', queue => 'demo') AS enqueued_job_id \gset
\echo enqueued job :enqueued_job_id on queue "demo"
SELECT job_id, run_lease, receipt_id, kind, args, attempt
  FROM awa.claim('demo', max_jobs => 1) \gset
\echo claimed job :job_id (kind :kind, args :args, attempt :attempt, run_lease :run_lease, receipt :receipt_id)
SELECT awa.complete(:job_id, :run_lease, :receipt_id) AS completed \gset
\echo completed: :completed
SELECT awa.complete(:job_id, :run_lease, :receipt_id) AS again \gset
\echo completing the same attempt again is refused: :again
SELECT queue, priority, enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'demo';
-- A failing job: retried with backoff, then visible with its error history.
SELECT awa.enqueue('charge_card', '{"order": 7}', queue => 'demo', max_attempts => 3) AS failing_job \gset
SELECT job_id, run_lease, receipt_id FROM awa.claim('demo') \gset
SELECT awa.retry(:job_id, :run_lease, :receipt_id, 'card processor timed out') AS retry_outcome \gset
\echo retried job :failing_job: :retry_outcome
SELECT awa.get_job(:failing_job) ->> 'state' AS state, awa.get_job(:failing_job) -> 'errors' AS errors;
SELECT * FROM awa.queue_counts('demo');
SQL

echo "== the maintenance worker (promotes due jobs, rescues, rotates and prunes the rings)"
for _ in $(seq 1 50); do
	[ "$(psql_demo -qAtc "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'awa maintenance worker' AND datname = current_database()")" = 1 ] && break
	sleep 0.2
done
psql_demo <<'SQL'
\pset footer off
SELECT pid, backend_type FROM pg_stat_activity WHERE backend_type LIKE 'awa maintenance%' ORDER BY 2;
SELECT ring, current_slot, generation, last_rotate, last_prune FROM awa.storage_status();
SQL

cat <<MSG
== done. The server keeps running. Connect with:
   runuser -u postgres -- psql -h $demo -p $port -d postgres
   (or: psql "host=localhost port=$port user=postgres dbname=postgres")
   Stop it with: runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D $demo/data stop
MSG
