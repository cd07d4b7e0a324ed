# shellcheck shell=bash
# bench/scratch_server.sh: sourced by bench/queue_counts.sh and bench/mixed.sh.
# A throwaway PostgreSQL 15 server configured exactly as bench/run.sh configures its own
# (initdb --no-sync, awa preloaded, shared_buffers = 1GB, fsync = on, synchronous_commit = on,
# checkpoint_timeout = 30min, max_wal_size = 8GB, autovacuum = on), listening only on a Unix
# socket in $WORKDIR. Stopped, and its data directory removed, when the calling script exits
# (kept with KEEP=1 or after a failure).
#
# The caller sets PORT (default) and SCRIPT_NAME before sourcing, and may set EXTRA_CONF: lines
# appended to postgresql.conf after those settings (a later line wins); the environment may
# override PORT, PGBIN, WORKDIR and KEEP.
set -euo pipefail

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
KEEP=${KEEP:-0}
WORKDIR=${WORKDIR:-$(mktemp -d "/tmp/awa-${SCRIPT_NAME:-bench}.XXXXXX")}
mkdir -p "$WORKDIR/logs"
PGDATA="$WORKDIR/data"
SERVER_LOG="$WORKDIR/server.log"

as_pg() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [ "$(id -u)" = 0 ]; then chown -R postgres "$WORKDIR"; fi

PSQL=("$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$WORKDIR" -p "$PORT" -U postgres)
# shellcheck disable=SC2034  # used by the scripts that source this file
PGBENCH=("$PGBIN/pgbench" -h "$WORKDIR" -p "$PORT" -U postgres)
# One value or rows, unaligned, in database ${DB:-postgres}.
sql() { PGOPTIONS="-c client_min_messages=warning" "${PSQL[@]}" -d "${DB:-postgres}" -At -c "$1"; }
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# Background processes the calling script started (killed by pid on exit).
BG_PIDS=()
server_started=0
scratch_cleanup() {
	local rc=$?
	local p
	for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	if [ "$server_started" = 1 ]; then
		as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true
	fi
	if [ "$KEEP" != 1 ] && [ "$rc" = 0 ]; then
		rm -rf "$PGDATA"
		log "server stopped, data directory removed (logs kept in $WORKDIR)"
	else
		log "server stopped; WORKDIR kept: $WORKDIR"
	fi
	exit "$rc"
}
trap scratch_cleanup EXIT
trap 'exit 130' INT TERM

start_scratch_server() {
	log "initdb in $PGDATA (port $PORT)"
	as_pg "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust --no-sync -E UTF8 --locale=C >"$WORKDIR/initdb.log"
	cat >>"$PGDATA/postgresql.conf" <<EOF

# ---- bench/scratch_server.sh (settings shared with bench/run.sh: bench/server.conf)
port = $PORT
listen_addresses = ''
unix_socket_directories = '$WORKDIR'
shared_preload_libraries = 'awa'
EOF
	cat "$(dirname "${BASH_SOURCE[0]}")/server.conf" >>"$PGDATA/postgresql.conf"
	if [ -n "${EXTRA_CONF:-}" ]; then
		printf '\n# ---- %s\n%s\n' "${SCRIPT_NAME:-bench}" "$EXTRA_CONF" >>"$PGDATA/postgresql.conf"
	fi
	as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$SERVER_LOG" -w start >/dev/null
	server_started=1
}

restart_scratch_server() {
	as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$SERVER_LOG" -m fast -w restart >/dev/null
}

# ERROR/WARNING/FATAL/PANIC lines in the server log (count). Not counted, as
# they are the harness, not awa: "FATAL: connection to client lost" from a
# backend whose pgbench client the script stopped with SIGTERM at the end of a
# run, and "FATAL: terminating background worker ... due to administrator
# command" from a shutdown the script asked for (restart_scratch_server).
server_log_problems() {
	grep -E ' (ERROR|WARNING|FATAL|PANIC): ' "$SERVER_LOG" |
		grep -Ev 'FATAL:  (connection to client lost|terminating background worker ".*" due to administrator command)$' -c || true
}

# "latency average = X ms" of a pgbench output file.
pgbench_latency() {
	{ grep -E '^latency average' "$1" || true; } | head -1 | sed -E 's/.*= *([0-9.]+) ms.*/\1/'
}
