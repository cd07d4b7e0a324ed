#!/usr/bin/env bash
# bench/live_work.sh: what carrying live work forward (issue 9, finding 2) and the history ring
# (finding 3) cost, measured on one throwaway server (bench/scratch_server.sh: the settings of
# bench/run.sh) with the background worker at its default cadence (1 s rotations).
#
#   bench/live_work.sh            DURATION=15 s per pgbench cell, PAUSED=1000000
#
# 1. One prune that carries a paused backlog: PAUSED jobs enqueued on a paused queue in one
#    queue-ring generation; the ring is rotated by hand until that generation is the prune
#    target; the prune's server-side time and WAL are measured (worker off for this part), with
#    the default awa.carry_max_rows (the slot is kept) and with the copy forced (the limit
#    raised): the cost a carry would have. The same with 0 and 100,000 paused jobs.
# 2. The hot paths with and without live work beside them (worker on, 1 s rotations):
#    enqueue (1 job/tx, 4 clients) and drain (batch 10, 4 workers, over a 100,000-job backlog),
#    first on a database with no other work, then on one that also holds 100,000 paused jobs,
#    an idle job and a long attempt. Each rate is a pgbench run of DURATION seconds.
# 3. The completion path with the history ring on (awa.history_retention = 1h) and off (0):
#    the same drain, and the history ring's size per finished job.
# Writes bench/RESULTS-live-work.md (OUT to change). Run as root or as postgres.
# Environment: DURATION, PAUSED, BACKLOG (the 100,000 of parts 1-3: the middle carry size, the
# live work's paused jobs, the drain's backlog; a multiple of 10,000 or below it), HISTORY_WAIT
# (s to wait for the drained jobs to reach the history ring, default 90), ROUNDS (of part 3,
# default 2), OUT, PORT, PGBIN, WORKDIR, KEEP=1.
SCRIPT_NAME=live-work
PORT=${PORT:-55470}
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/scratch_server.sh
source "$BENCH_DIR/scratch_server.sh"
DURATION=${DURATION:-15}
PAUSED=${PAUSED:-1000000}
BACKLOG=${BACKLOG:-100000}
HISTORY_WAIT=${HISTORY_WAIT:-90}
ROUNDS=${ROUNDS:-2}
if (( BACKLOG <= 0 || (BACKLOG > 10000 && BACKLOG % 10000 != 0) )); then
	echo "BACKLOG must be positive, and a multiple of 10000 above 10000" >&2
	exit 2
fi
BATCH=$((BACKLOG < 10000 ? BACKLOG : 10000))
BATCHES=$((BACKLOG / BATCH))
OUT=${OUT:-$BENCH_DIR/RESULTS-live-work.md}
CMD="DURATION=$DURATION PAUSED=$PAUSED BACKLOG=$BACKLOG ROUNDS=$ROUNDS bench/live_work.sh"

start_scratch_server
report=()
add() { report+=("$1"); log "$1"; }

# ---------------------------------------------------------------------------
# 1. One prune that carries a paused backlog (worker off: each step by hand).
# ---------------------------------------------------------------------------
sql "ALTER SYSTEM SET awa.maintenance_enabled = off" && sql "SELECT pg_reload_conf()" >/dev/null
carry_cost() {
	local n=$1 db=carry_$1
	sql "CREATE DATABASE $db"
	DB=$db sql "CREATE EXTENSION awa" >/dev/null
	local left=$n
	while [ "$left" -gt 0 ]; do
		local batch=$((left < 10000 ? left : 10000))
		DB=$db sql "SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[$batch]), NULL, 'paused')" >/dev/null
		left=$((left - batch))
	done
	# (paused once its jobs are in the ring: jobs enqueued into a paused queue
	# are parked outside it since stop 41)
	DB=$db sql "SELECT awa.pause_queue('paused')" >/dev/null
	# Something else in the ring, so it rotates; then make generation 0 the target.
	DB=$db sql "SELECT awa.enqueue('other', '{}', 'other')" >/dev/null
	for _ in $(seq 1 15); do DB=$db sql "SELECT outcome FROM awa.run_maintenance('rotate_queue')" >/dev/null; done
	local out mode
	for mode in default carry; do
		local set=""
		[ "$mode" = carry ] && set="SET awa.carry_max_rows = 2147483647;"
		out=$(PGOPTIONS="-c client_min_messages=warning" "${PSQL[@]}" -d "$db" -At <<SQL | tr '\n' ' '
$set
CHECKPOINT;
SELECT pg_current_wal_insert_lsn() AS l0, clock_timestamp() AS t0 \gset
SELECT outcome || ', carried ' || coalesce(detail -> 'carried' ->> 'rows', '-') || ', kept slots '
       || coalesce(detail ->> 'kept_slots', '[]') FROM awa.run_maintenance('prune_queue');
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000, 1) || ' ms, '
       || pg_size_pretty(pg_current_wal_insert_lsn() - :'l0'::pg_lsn) || ' WAL';
SQL
)
		add "| $n | $mode | $out |"
	done
	sql "DROP DATABASE $db WITH (FORCE)" >/dev/null
}
report+=("## 1. One prune that carries a paused backlog"
	""
	"| paused jobs in the slot | awa.carry_max_rows | outcome, rows carried, kept slots, prune ms, WAL |"
	"|---:|---|---|")
for n in 0 "$BACKLOG" "$PAUSED"; do carry_cost "$n"; done
report+=("")

# ---------------------------------------------------------------------------
# 2 and 3. Hot paths with the worker on.
# ---------------------------------------------------------------------------
sql "ALTER SYSTEM RESET awa.maintenance_enabled" && sql "SELECT pg_reload_conf()" >/dev/null
run_cell() {   # $1 db, $2 script file, $3 clients, $4 extra pgbench args; prints tps
	as_pg "${PGBENCH[@]}" -n -M prepared -c "$3" -j 2 -T "$DURATION" $4 -f "$2" "$1" 2>&1 |
		awk '/^tps = / {print int($3)}'
}
setup_db() {   # $1 db, $2 live work (0/1), $3 history retention
	sql "CREATE DATABASE $1"
	DB=$1 sql "CREATE EXTENSION awa" >/dev/null
	sql "ALTER DATABASE $1 SET awa.history_retention = '$3'"
	if [ "$2" = 1 ]; then
		for _ in $(seq 1 "$BATCHES"); do
			DB=$1 sql "SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[$BATCH]), NULL, 'paused')" >/dev/null
		done
		DB=$1 sql "SELECT awa.pause_queue('paused')" >/dev/null  # (after: a paused queue's new jobs are parked)
		DB=$1 sql "SELECT awa.enqueue('idle', '{}', 'idle'); SELECT awa.enqueue('long', '{}', 'long');
		           CREATE TABLE long_attempt AS SELECT * FROM awa.claim('long')" >/dev/null
	fi
}
preload() {   # $1 db: a BACKLOG-job backlog on queue bench
	for _ in $(seq 1 "$BATCHES"); do
		DB=$1 sql "SELECT count(*) FROM awa.enqueue_many(array_fill('send_email'::text, ARRAY[$BATCH]), NULL, 'bench')" >/dev/null
	done
}
# The worker's history retention is the server's: set it for the worker too.
set_retention() { sql "ALTER SYSTEM SET awa.history_retention = '$1'" >/dev/null; sql "SELECT pg_reload_conf()" >/dev/null; }

report+=("## 2. Hot paths with and without live work (worker on, 1 s rotations)"
	""
	"| cell | no live work | $BACKLOG paused + idle + long attempt | ratio |"
	"|---|---:|---:|---:|")
set_retention 1h
setup_db plain 0 1h
setup_db live 1 1h
e0=$(run_cell plain "$BENCH_DIR/awa_enqueue_1.sql" 4 "")
e1=$(run_cell live "$BENCH_DIR/awa_enqueue_1.sql" 4 "")
add "| enqueue, 1 job/tx, 4 clients (jobs/s) | $e0 | $e1 | $(awk -v a="$e1" -v b="$e0" 'BEGIN {printf "%.2f", a / b}') |"
preload plain
preload live
d0=$(run_cell plain "$BENCH_DIR/awa_drain_bn.sql" 4 "-D B=10")
d1=$(run_cell live "$BENCH_DIR/awa_drain_bn.sql" 4 "-D B=10")
add "| drain, batch 10, 4 workers (worker loops/s) | $d0 | $d1 | $(awk -v a="$d1" -v b="$d0" 'BEGIN {printf "%.2f", a / b}') |"
pruned=$(DB=live sql "SELECT runs || ' runs, last ' || last_outcome FROM awa.maintenance_status() WHERE task = 'prune_queue'")
gen=$(DB=live sql "SELECT generation FROM awa.storage_status() WHERE ring = 'queue'")
size=$(DB=live sql "SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) FROM pg_class c
                    WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind = 'r'")
add "Live-work database after the cells: queue ring at generation $gen, prune_queue $pruned, awa schema $size."
report+=("")
# Every database with awa gets a maintenance worker (max_worker_processes = 8): drop what is done.
sql "DROP DATABASE plain WITH (FORCE)" >/dev/null
sql "DROP DATABASE live WITH (FORCE)" >/dev/null

report+=("## 3. The completion path with the history ring on and off (worker on, 1 s rotations)"
	""
	"| awa.history_retention | drain, batch 10, 4 workers (worker loops/s) |"
	"|---|---:|")
# Interleaved, twice each, so that drift on a shared machine shows.
for round in $(seq 1 "$ROUNDS"); do
	for r in 0 1h; do
		set_retention "$r"
		db="hist_${r}_$round"
		setup_db "$db" 0 "$r"
		preload "$db"
		d=$(run_cell "$db" "$BENCH_DIR/awa_drain_bn.sql" 4 "-D B=10")
		add "| $r (run $round) | $d |"
		[ "$db" = "hist_1h_$ROUNDS" ] || sql "DROP DATABASE $db WITH (FORCE)" >/dev/null
	done
done
# History ring size per finished job: wait until the drained jobs' slot was pruned.
rows=$(DB="hist_1h_$ROUNDS" sql "SELECT count(*) FROM awa.job_history")
for _ in $(seq 1 "$HISTORY_WAIT"); do
	[ "$rows" -ge "$BACKLOG" ] && break
	sleep 1
	rows=$(DB="hist_1h_$ROUNDS" sql "SELECT count(*) FROM awa.job_history")
done
bytes=$(DB="hist_1h_$ROUNDS" sql "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
                           WHERE c.relnamespace = 'awa'::regnamespace AND c.relname ~ '^job_history_[0-9]+$'")
add ""
add "History ring after the drain: $rows finished jobs in $((bytes / 1024)) kB: $((bytes / (rows > 0 ? rows : 1))) bytes per job (table and index; args of about 60 bytes)."
report+=("")

{
	echo "# Live work and history: costs (issue 9)"
	echo
	echo "\`$CMD\`, $(date -u '+%Y-%m-%d %H:%M UTC'), build $(git -C "$BENCH_DIR/.." rev-parse --short HEAD 2>/dev/null || echo '?')."
	echo "Settings: bench/server.conf, worker at its default cadence except in part 1."
	echo
	printf '%s\n' "${report[@]}"
} >"$OUT"
log "wrote $OUT"
