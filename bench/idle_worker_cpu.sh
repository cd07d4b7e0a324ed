#!/bin/bash
# idle_worker_cpu.sh: CPU that an idle database's maintenance worker uses.
#
# For each PostgreSQL bin directory given (each with its own awa build
# installed), starts a scratch server (stock postgresql.conf plus
# shared_preload_libraries = 'awa' and track_functions = all), makes a fresh
# database "idle" with awa and nothing else, waits for its worker, then reads
# the worker's CPU time from /proc over SECONDS and awa.run_maintenance's total
# time from pg_stat_user_functions. The servers run at the same time, so two
# builds are compared under the same load. Run as root (servers run as
# postgres); ports 5494, 5495, ...
#
#   SECONDS_TO_RUN=60 bench/idle_worker_cpu.sh /opt/pg-old/usr/lib/postgresql/15/bin /usr/lib/postgresql/15/bin
#
# Results: bench/RESULTS-idle-maintenance.md.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 PGBIN [PGBIN ...]" >&2; exit 2; }
S=${SECONDS_TO_RUN:-60}
SOCK=/tmp/awa-idle-sock
mkdir -p "$SOCK"
chown postgres "$SOCK"
declare -a PORTS PIDS START
n=0
for B in "$@"; do
	PORT=$((5494 + n))
	D=/tmp/awa-idle-$PORT
	runuser -u postgres -- "$B/pg_ctl" -D "$D" -m fast stop >/dev/null 2>&1 || true
	rm -rf "$D"
	runuser -u postgres -- "$B/initdb" -D "$D" -A trust >/dev/null
	printf "shared_preload_libraries = 'awa'\nport = %s\nunix_socket_directories = '%s'\ntrack_functions = 'all'\n" \
		"$PORT" "$SOCK" >>"$D/postgresql.conf"
	runuser -u postgres -- "$B/pg_ctl" -D "$D" -l "$D.log" -w start >/dev/null
	runuser -u postgres -- "$B/psql" -h "$SOCK" -p "$PORT" -X -q -c "CREATE DATABASE idle" postgres
	runuser -u postgres -- "$B/psql" -h "$SOCK" -p "$PORT" -X -q -c "CREATE EXTENSION awa" idle
	PORTS[$n]=$PORT
	n=$((n + 1))
done
n=0
for B in "$@"; do
	PORT=${PORTS[$n]}
	PID=
	for _ in $(seq 1 120); do
		PID=$(runuser -u postgres -- "$B/psql" -h "$SOCK" -p "$PORT" -X -Atc \
			"SELECT pid FROM pg_stat_activity WHERE datname = 'idle' AND backend_type LIKE '%maintenance worker%'" postgres)
		[ -n "$PID" ] && break
		sleep 1
	done
	[ -n "$PID" ] || { echo "no maintenance worker for database idle on port $PORT" >&2; exit 1; }
	PIDS[$n]=$PID
	n=$((n + 1))
done
sleep 5
n=0
for B in "$@"; do
	runuser -u postgres -- "$B/psql" -h "$SOCK" -p "${PORTS[$n]}" -X -q -c "SELECT pg_stat_reset()" idle >/dev/null
	START[$n]=$(awk '{print $14 + $15}' "/proc/${PIDS[$n]}/stat")
	n=$((n + 1))
done
sleep "$S"
n=0
for B in "$@"; do
	END=$(awk '{print $14 + $15}' "/proc/${PIDS[$n]}/stat")
	MS=$(((END - START[n]) * 1000 / $(getconf CLK_TCK)))
	RM=$(runuser -u postgres -- "$B/psql" -h "$SOCK" -p "${PORTS[$n]}" -X -Atc \
		"SELECT round(total_time::numeric, 1) || ' ms in ' || calls || ' calls' FROM pg_stat_user_functions WHERE funcname = 'run_maintenance'" idle)
	echo "$B: worker CPU $MS ms in $S s; awa.run_maintenance $RM"
	runuser -u postgres -- "$B/pg_ctl" -D "/tmp/awa-idle-${PORTS[$n]}" -m fast stop >/dev/null
	n=$((n + 1))
done
