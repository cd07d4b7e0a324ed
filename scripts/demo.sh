#!/usr/bin/env bash
# demo.sh: on a fresh Debian 12 machine, as root: installs what awa needs,
# builds and installs it, starts a PostgreSQL 15 cluster kept inside the
# checkout (.demo/, port 5440, awa preloaded), creates the extension, sends a
# demo job through enqueue, claim and complete, and leaves the server running.
# Safe to run again: it reuses the cluster and the running server.
# AWA_DEMO_PORT=5441 ./scripts/demo.sh: another port (on every run: the port is
# written into the cluster's postgresql.conf each time, so a rerun with another
# port moves an existing demo cluster there).
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

case $port in
	'' | *[!0-9]*) echo "AWA_DEMO_PORT must be a port number, not '$port'" >&2; exit 2 ;;
esac
if [ "$port" -lt 1024 ] || [ "$port" -gt 65535 ]; then
	echo "AWA_DEMO_PORT must be between 1024 and 65535, not $port" >&2
	exit 2
fi

mkdir -p "$demo"
chown postgres "$demo"
if [ ! -f "$demo/data/PG_VERSION" ]; then
	echo "== creating a PostgreSQL 15 cluster in $demo/data"
	as_postgres initdb -D "$demo/data" -A trust -U postgres >/dev/null
	cat >>"$demo/data/postgresql.conf" <<CONF
listen_addresses = 'localhost'
unix_socket_directories = '$demo'
shared_preload_libraries = 'awa'
CONF
fi
# The port of this run (AWA_DEMO_PORT or 5440), written on every run: a cluster
# created on another port, or left behind by a run whose port was busy, moves.
for f in "$demo/data/postgresql.conf" "$demo/data/postgresql.auto.conf"; do
	if [ -f "$f" ]; then sed -i -E '/^[[:space:]]*port[[:space:]]*=/d' "$f"; fi
done
echo "port = $port" >>"$demo/data/postgresql.conf"

# Is something other than this demo's server listening on the port: a TCP
# listener on localhost, or a server's socket in the demo's socket directory?
# (The running demo server holds its own port: line 4 of postmaster.pid.)
port_in_use() {
	local p=$1 host
	for host in 127.0.0.1 ::1; do
		if timeout 2 bash -c "exec 3<>/dev/tcp/$host/$p" 2>/dev/null; then return 0; fi
	done
	# A live server's socket in the demo's socket directory (its lock file names its pid).
	local lock="$demo/.s.PGSQL.$p.lock" pid
	if [ -e "$lock" ]; then
		pid=$(head -n 1 "$lock")
		[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && return 0
	fi
	return 1
}
running_port=""
if as_postgres pg_ctl -D "$demo/data" status >/dev/null 2>&1; then
	running_port=$(sed -n 4p "$demo/data/postmaster.pid")
fi
if [ "$running_port" != "$port" ] && port_in_use "$port"; then
	cat >&2 <<MSG
== port $port is already in use on localhost (another PostgreSQL, or another program, listens there).
   The demo server cannot start on it. Choose a free port with AWA_DEMO_PORT, e.g.:
       AWA_DEMO_PORT=$((port + 1)) ./scripts/demo.sh
   (then use that port in DATABASE_URL; see docs/getting-started.md)
MSG
	exit 1
fi

# pg_ctl says only "could not start server": show the server's own words.
start_failed() {
	echo "== the server did not start on port $port; the last lines of $demo/server.log:" >&2
	tail -n 15 "$demo/server.log" >&2
	echo "   (if it says the address is already in use, choose another port: AWA_DEMO_PORT=<port> ./scripts/demo.sh)" >&2
	exit 1
}
if [ -z "$running_port" ]; then
	echo "== starting the server on port $port"
	as_postgres pg_ctl -D "$demo/data" -l "$demo/server.log" -w start >/dev/null || start_failed
else
	echo "== restarting the server on port $port (loads the freshly installed awa)"
	as_postgres pg_ctl -D "$demo/data" -l "$demo/server.log" -w restart >/dev/null || start_failed
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
== done. The server keeps running on port $port. Connect with:
   runuser -u postgres -- psql -h $demo -p $port -d postgres
   (or: psql "host=localhost port=$port user=postgres dbname=postgres")
   The example workers and producers (docs/getting-started.md):
   export DATABASE_URL="postgresql://postgres@/postgres?host=$demo&port=$port"
   The web UI (docs/operations-ui.md), read-only, on http://127.0.0.1:8080/:
   ./scripts/ui.sh          (it finds this server; AWA_UI_ADMIN_PASSWORD='a long secret' enables actions)
   Stop it with: runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D $demo/data stop
MSG
