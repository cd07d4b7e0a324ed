#!/usr/bin/env bash
# bench/idle_backlog.sh: what a backlog costs while nothing runs (docs/maintenance.md §3.6,
# "An idle backlog stays put").
#
#   TOTAL=800000 bench/idle_backlog.sh
#   PGBIN=/opt/x/usr/lib/postgresql/15/bin TOTAL=800000 bench/idle_backlog.sh   another build
#
# On a scratch server (bench/scratch_server.sh) with the maintenance worker on at its default
# cadence, one pgbench client enqueues 100 jobs per transaction (bench/awa_enqueue_100.sql) at
# RATE transactions/s (80: 8,000 jobs/s) into a queue nobody claims, until TOTAL jobs are
# waiting: the backlog spreads over one generation per second, past the slots the ring keeps
# in place (23 with the defaults). Then nothing runs. After SETTLE seconds (30) it measures for
# WINDOW seconds (30): the maintenance worker's CPU time (/proc), the WAL the server wrote
# (pg_current_wal_insert_lsn), the queue ring's generations and the rows its prunes carried
# (awa.maintenance_status). Nothing in the window is the benchmark's own work.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOTAL=${TOTAL:-800000}
RATE=${RATE:-80}
SETTLE=${SETTLE:-30}
WINDOW=${WINDOW:-30}
PORT=${PORT:-55493}
SCRIPT_NAME=idle-backlog
# shellcheck source=bench/scratch_server.sh
source "$BENCH_DIR/scratch_server.sh"

start_scratch_server
sql "CREATE EXTENSION awa" >/dev/null
seconds=$(( (TOTAL / 100 + RATE - 1) / RATE ))
log "enqueueing $TOTAL jobs at $((RATE * 100)) jobs/s ($seconds s)"
as_pg "${PGBENCH[@]}" -n -c 1 -R "$RATE" -t $((TOTAL / 100)) -f "$BENCH_DIR/awa_enqueue_100.sql" postgres \
	>"$WORKDIR/logs/enqueue.log" 2>&1
log "enqueued; settling for $SETTLE s"
sleep "$SETTLE"

worker_pid=""
for _ in $(seq 1 120); do
	worker_pid=$(sql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'awa maintenance worker' AND datname = current_database() ORDER BY backend_start DESC LIMIT 1")
	[ -n "$worker_pid" ] && break
	sleep 0.5
done
[ -n "$worker_pid" ] || { log "no maintenance worker found"; exit 1; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
read -r lsn0 gen0 <<<"$(sql "SELECT pg_current_wal_insert_lsn(), (SELECT max(generation) FROM awa.queue_ring_rotations)" | tr '|' ' ')"
t0=$(ticks "$worker_pid")
sleep "$WINDOW"
t1=$(ticks "$worker_pid")
read -r wal gen1 <<<"$(sql "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$lsn0')::bigint, (SELECT max(generation) FROM awa.queue_ring_rotations)" | tr '|' ' ')"
backlog=$(sql "SELECT available FROM awa.queue_counts_exact('bench')")
kept=$(sql "SELECT count(*) FROM awa.queue_ring_slots s WHERE awa._slot_live_rows(s.slot) > current_setting('awa.carry_max_rows')::int")

echo "| backlog | window (s) | worker CPU (% of a core) | WAL (MB) | queue generations | slots over carry_max_rows |"
echo "|---|---|---|---|---|---|"
printf '| %s | %s | %.1f | %.1f | %s | %s |\n' "$backlog" "$WINDOW" \
	"$(echo "($t1 - $t0) * 100 / $hz / $WINDOW" | bc -l)" "$(echo "$wal / 1000000" | bc -l)" \
	"$((gen1 - gen0))" "$kept"
