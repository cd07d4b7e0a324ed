#!/usr/bin/env bash
# bench/queue_metrics.sh: the cost of awa.queue_metrics() (the monitoring surface,
# docs/monitoring.md) and of one exporter scrape against the number of queues, and the hot
# path (enqueue 1, drain batch 1) it must not slow down. Results: bench/RESULTS-metrics.md.
#
#   bench/queue_metrics.sh
#
# On a scratch server (bench/scratch_server.sh, the settings of bench/run.sh):
#   1. For each Q in SIZES (default "10 1000 10000"): a database with Q queues, PER_QUEUE jobs
#      each (default 10, one awa.enqueue_many per queue) and a quarter of them (at least 1)
#      claimed in one claim, so each lane's claim cursor lags behind its claimed lanes. Then
#      SELECT count(*) FROM awa.queue_metrics() runs REPS times in one session (idle backlog),
#      after a server restart, so the first run is the first after the restart (shared memory
#      empty; the oldest-job values are recomputed there).
#   2. The same while WORKERS pgbench clients (default 2) claim one job from a random queue
#      and complete it, for LOAD_SECONDS (default 8): queue_metrics() runs REPS times during
#      the load, 0.5 s apart, in one session (as a scraper keeps its connection), and
#      awa._oldest_unknown_queues() (queues whose oldest job is not kept, so queue_metrics()
#      walks them, docs/monitoring.md) is sampled before each run.
#   3. For Q = SCRAPE_QUEUES (default 1000; 0: skipped): every query of
#      monitoring/postgres_exporter.yml once, in a new psql session, REPS times (the sum of their
#      times is printed); then, if /usr/bin/prometheus-postgres-exporter is installed, the real
#      exporter with that file, scraped REPS + 1 times with curl (the first scrape opens its
#      database connection, the later ones reuse it, as a running exporter does).
#   4. HOTPATH=1 (default): pgbench enqueue-1 (bench/awa_enqueue_1.sql) and drain-b1
#      (bench/awa_drain_b1.sql, over a backlog of DRAIN_PRELOAD jobs) with CLIENTS clients
#      (default 4) for HOT_SECONDS (default 10), HOT_REPS times (default 3); per run the tps
#      and the server's CPU time per transaction (user + system of the postmaster and all its
#      children, from /proc: less sensitive than tps to other work on the machine).
# Environment: SIZES ("": only the other parts), PER_QUEUE, REPS (default 5), WORKERS, LOAD_SECONDS, SCRAPE_QUEUES,
# HOTPATH, CLIENTS, HOT_SECONDS, HOT_REPS, DRAIN_PRELOAD (default 100000), PORT (default
# 55443), PGBIN, WORKDIR, KEEP=1. Run as root or as postgres.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
REPS=${REPS:-5}
PORT=${PORT:-55443}
SIZES=${SIZES-10 1000 10000}
PER_QUEUE=${PER_QUEUE:-10}
WORKERS=${WORKERS:-2}
LOAD_SECONDS=${LOAD_SECONDS:-8}
SCRAPE_QUEUES=${SCRAPE_QUEUES:-1000}
HOTPATH=${HOTPATH:-1}
CLIENTS=${CLIENTS:-4}
HOT_SECONDS=${HOT_SECONDS:-10}
HOT_REPS=${HOT_REPS:-3}
DRAIN_PRELOAD=${DRAIN_PRELOAD:-100000}
SCRIPT_NAME=queue-metrics
# shellcheck source=bench/scratch_server.sh
. "$BENCH_DIR/scratch_server.sh"

start_scratch_server
if [ "$(id -u)" = 0 ]; then chown -R postgres "$WORKDIR"; fi

# Times (ms) of REPS runs of $1 in one session of database $2.
timed_runs() {
	{ echo '\timing on'; for _ in $(seq "$REPS"); do echo "$1"; done; } |
		"${PSQL[@]}" -d "$2" -At | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | paste -sd' '
}

# Jobs for queues 1..$1 in database $3, $2 each, 500 queues per transaction (a new lane
# takes locks on its two new sequences until its transaction ends).
fill() {
	local from
	for ((from = 1; from <= $1; from += 500)); do
		DB=$3 sql "SELECT count(*) FROM (SELECT awa.enqueue_many(array_fill('k'::text, ARRAY[$2]), NULL, 'q' || q)
		              FROM generate_series($from, least($from + 499, $1)) q) x" >/dev/null
	done
}
setup_db() { # $1 queues, $2 jobs per queue, $3 database
	local from
	sql "CREATE DATABASE $3" >/dev/null
	DB=$3 sql "CREATE EXTENSION awa" >/dev/null
	fill "$1" "$2" "$3"
	for ((from = 1; from <= $1; from += 500)); do
		DB=$3 sql "SELECT count(*) FROM generate_series($from, least($from + 499, $1)) q,
		                                LATERAL awa.claim('q' || q, greatest($2 / 4, 1)) c" >/dev/null
	done
}

# A worker: claim one job of a random queue, complete it.
WORKER_SQL="$WORKDIR/worker.sql"
cat >"$WORKER_SQL" <<'EOF'
\set q random(1, :nq)
SELECT count(*) AS n, coalesce(max(job_id), 0) AS j, coalesce(max(run_lease), 0) AS l, coalesce(max(receipt_id), 0) AS r FROM awa.claim('q' || :q, 1) \gset
\if :n > 0
SELECT awa.complete(:j, :l, :r);
\endif
EOF
if [ "$(id -u)" = 0 ]; then chown postgres "$WORKER_SQL"; fi

idle_and_load() { # $1 queues
	local queues=$1 db="qm_$1"
	setup_db "$queues" "$PER_QUEUE" "$db"
	restart_scratch_server
	local idle
	idle=$(timed_runs 'SELECT count(*) FROM awa.queue_metrics();' "$db")
	printf '| %s | idle (first run after a restart) | %s ms | |\n' "$queues" "$idle"
	# Under load: enough backlog that the workers do not run dry.
	fill "$queues" 40 "$db"
	DB=$db sql "SELECT count(*) FROM awa.queue_metrics()" >/dev/null
	as_pg "${PGBENCH[@]}" -n -c "$WORKERS" -j "$WORKERS" -T "$LOAD_SECONDS" -D nq="$queues" -f "$WORKER_SQL" "$db" \
		>"$WORKDIR/logs/load_$queues.pgbench" 2>&1 &
	local bench=$!
	BG_PIDS+=("$bench")
	sleep 1
	# One session, as a scraper keeps: before each run, the queues not kept.
	local out times unknown
	out=$({ echo '\timing on'; for _ in $(seq "$REPS"); do
			echo "SELECT 'U', awa._oldest_unknown_queues();"
			echo "SELECT 'M', count(*) FROM awa.queue_metrics();"
			echo 'SELECT pg_sleep(0.5);'
		done; } | "${PSQL[@]}" -d "$db" -At 2>/dev/null || true)
	times=$(awk '/^M\|/ { m = 1; next } m && /^Time:/ { print $2; m = 0 }' <<<"$out" | paste -sd' ')
	unknown=$(awk -F'|' '/^U\|/ { print $2 }' <<<"$out" | paste -sd' ')
	wait "$bench" || true
	local tps
	tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$WORKDIR/logs/load_$queues.pgbench" | head -1)
	printf '| %s | %s workers claiming (%s claim+complete/s), one session | %s ms | %s |\n' "$queues" "$WORKERS" "$tps" "$times" "${unknown:--}"
}

scrape() { # $1 queues
	local db="qm_$1"
	local queries="$WORKDIR/scrape.sql"
	python3 - "$REPO_DIR/monitoring/postgres_exporter.yml" >"$queries" <<'EOF'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
for name, spec in doc.items():
    print(spec["query"].strip().rstrip(";") + ";")
EOF
	local n
	n=$(grep -c ';$' "$queries")
	local sums=""
	for _ in $(seq "$REPS"); do
		local s
		s=$({ echo '\timing on'; cat "$queries"; } | "${PSQL[@]}" -d "$db" -At -o /dev/null 2>&1 |
			sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | paste -sd+ | bc)
		sums+="$s "
	done
	printf '| %s | the %s queries of monitoring/postgres_exporter.yml, each run in a new psql session (sum) | %s ms | |\n' "$1" "$n" "${sums% }"
	# The real exporter (Debian's prometheus-postgres-exporter), as docs/monitoring.md runs
	# it: one HTTP scrape of /metrics each, over the connection it keeps. Its own database
	# collector (pg_database_size of every database, not awa's) is off: it took 160-290 ms
	# a scrape here by itself.
	local exporter=/usr/bin/prometheus-postgres-exporter
	if [ -x "$exporter" ]; then
		local eport=$((PORT + 10000))
		DATA_SOURCE_NAME="host=$WORKDIR port=$PORT user=postgres dbname=$db sslmode=disable" \
			"$exporter" --web.listen-address=127.0.0.1:$eport \
			--extend.query-path="$REPO_DIR/monitoring/postgres_exporter.yml" \
			--disable-default-metrics --disable-settings-metrics --no-collector.database \
			>"$WORKDIR/logs/exporter.log" 2>&1 &
		local epid=$!
		BG_PIDS+=("$epid")
		sleep 2
		local scrapes="" lines=0
		for _ in $(seq $((REPS + 1))); do
			scrapes+="$(curl -s -o "$WORKDIR/metrics.txt" -w '%{time_total}' "http://127.0.0.1:$eport/metrics" |
				awk '{ printf "%.1f", $1 * 1000 }') "
			lines=$(grep -c '^awa_' "$WORKDIR/metrics.txt" || true)
		done
		kill "$epid" 2>/dev/null || true
		printf '| %s | one exporter scrape (curl /metrics; %s awa_ series; the first opens its connection) | %s ms | |\n' \
			"$1" "$lines" "${scrapes% }"
	fi
}

{
	echo '| queues | situation | queue_metrics() per run | queues not kept (sampled before each run) |'
	echo '|---:|---|---|---|'
	for q in $SIZES; do idle_and_load "$q"; done
	if [ "$SCRAPE_QUEUES" != 0 ]; then
		if ! [[ " $SIZES " == *" $SCRAPE_QUEUES "* ]]; then setup_db "$SCRAPE_QUEUES" "$PER_QUEUE" "qm_$SCRAPE_QUEUES"; fi
		scrape "$SCRAPE_QUEUES"
	fi
} | tee "$WORKDIR/result.md"

# CPU seconds (user + system) the server has used so far: the postmaster, its live children,
# and its exited children (cutime/cstime, once reaped). Interference from other programs on
# the machine changes tps much more than it changes this.
server_cpu() {
	local pm ticks
	pm=$(head -1 "$PGDATA/postmaster.pid")
	ticks=$(getconf CLK_TCK)
	{
		awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pm/stat"
		for c in $(cat /proc/"$pm"/task/*/children 2>/dev/null); do
			awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null || true
		done
	} | awk -v t="$ticks" '{ s += $1 } END { printf "%.3f", s / t }'
}
# "tps / CPU µs per transaction" of one pgbench run (output file $1, server CPU before $2).
run_figures() {
	local tps xacts cpu
	tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$1" | head -1)
	xacts=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$1" | head -1)
	cpu=$(server_cpu)
	awk -v tps="$tps" -v x="$xacts" -v a="$2" -v b="$cpu" 'BEGIN { printf "%.0f tps / %.0f µs", tps, (b - a) * 1e6 / x }'
}

if [ "$HOTPATH" = 1 ]; then
	sql "CREATE DATABASE hot" >/dev/null
	DB=hot sql "CREATE EXTENSION awa" >/dev/null
	{
		echo
		echo "| workload ($CLIENTS clients, $HOT_SECONDS s) | per run: tps / server CPU per transaction |"
		echo '|---|---|'
		enq=""
		for _ in $(seq "$HOT_REPS"); do
			before=$(server_cpu)
			as_pg "${PGBENCH[@]}" -n -c "$CLIENTS" -j "$CLIENTS" -T "$HOT_SECONDS" -f "$BENCH_DIR/awa_enqueue_1.sql" hot \
				>"$WORKDIR/logs/enqueue.pgbench" 2>&1
			enq+="$(run_figures "$WORKDIR/logs/enqueue.pgbench" "$before"); "
		done
		echo "| enqueue-1 | ${enq%; } |"
		drain=""
		for _ in $(seq "$HOT_REPS"); do
			DB=hot sql "SELECT count(*) FROM (SELECT awa.enqueue_many(array_fill('send_email'::text, ARRAY[10000]), NULL, 'bench')
			              FROM generate_series(1, $((DRAIN_PRELOAD / 10000)))) x" >/dev/null
			before=$(server_cpu)
			as_pg "${PGBENCH[@]}" -n -c "$CLIENTS" -j "$CLIENTS" -T "$HOT_SECONDS" -f "$BENCH_DIR/awa_drain_b1.sql" hot \
				>"$WORKDIR/logs/drain.pgbench" 2>&1
			drain+="$(run_figures "$WORKDIR/logs/drain.pgbench" "$before"); "
		done
		echo "| drain-b1 (over a backlog of $DRAIN_PRELOAD jobs, refilled before each run) | ${drain%; } |"
	} | tee -a "$WORKDIR/result.md"
fi
