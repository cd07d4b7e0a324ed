#!/usr/bin/env bash
# bench/run.sh: awa vs. a classic FOR UPDATE SKIP LOCKED jobs table (bench/baseline.sql),
# measured in one run, on one dedicated throwaway PostgreSQL 15 server started here.
#
#   bench/run.sh                  full run (default DURATION=20 s per cell, about 20 minutes)
#   QUICK=1 bench/run.sh          smoke run (DURATION=5, PRELOAD=50000, fewer cells, ~4 minutes)
#
# Environment: DURATION (s per pgbench run), PRELOAD (jobs pre-loaded for drains, default
# 200000), REPS (repetitions of every cell, default 1), PORT (default 55440), PGBIN,
# WORKDIR (server + logs, default a new /tmp/awa-bench.XXXXXX), OUT (default
# bench/RESULTS.md), KEEP=1 (keep the data directory afterwards), ONLY (bash regexp: run
# only the cells whose label WORKLOAD-SYSTEM-VARIANT-N<n>-B<b> matches, e.g.
# ONLY='drain-(awa|base)-default-N16-B10$'; systems: awa awa_sync awa_hold awa_synchold
# base base_async; variants: default slow).
# Run as root (the server is started as the postgres user through runuser) or as postgres.
# Needs: the awa extension installed into the PostgreSQL 15 tree (make install).
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The exact command, as it was typed modulo the environment variables that matter.
CMD=""
for v in QUICK DURATION PRELOAD REPS ONLY PORT; do
	if [ -n "${!v+x}" ]; then CMD+="$v=$(printf %q "${!v}") "; fi
done
CMD+="bench/run.sh${*:+ $*}"

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
	DURATION=${DURATION:-5}
	PRELOAD=${PRELOAD:-50000}
else
	DURATION=${DURATION:-20}
	PRELOAD=${PRELOAD:-200000}
fi
REPS=${REPS:-1}
ONLY=${ONLY:-}
PORT=${PORT:-55440}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
OUT=${OUT:-$BENCH_DIR/RESULTS.md}
KEEP=${KEEP:-0}
WORKDIR=${WORKDIR:-$(mktemp -d /tmp/awa-bench.XXXXXX)}
mkdir -p "$WORKDIR/logs"
PGDATA="$WORKDIR/data"
SERVER_LOG="$WORKDIR/server.log"
RES="$WORKDIR/results.tsv"     # one line per measured run
NOTES="$WORKDIR/notes.txt"     # integrity / log findings
: >"$RES"
: >"$NOTES"

if [ "$QUICK" = 1 ]; then
	ENQ_N=(1 16); DRAIN_N=(4 16)
else
	ENQ_N=(1 4 16); DRAIN_N=(1 4 16 64)
fi
ENQ_B=(1 100)
DRAIN_B=(1 10)

as_pg() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [ "$(id -u)" = 0 ]; then chown -R postgres "$WORKDIR"; fi

PSQL=("$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$WORKDIR" -p "$PORT" -U postgres)
sql() { PGOPTIONS="-c client_min_messages=warning" "${PSQL[@]}" -d "${DB:-postgres}" -At -c "$1"; }  # one value / rows, unaligned
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

server_started=0
cleanup() {
	local rc=$?
	touch "$WORKDIR/sampler.stop" 2>/dev/null || true
	[ -n "${SAMPLER_PID:-}" ] && kill "$SAMPLER_PID" 2>/dev/null || true
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
trap cleanup EXIT
trap 'exit 130' INT TERM

START_UTC=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
START_EPOCH=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
OTHER_PG=$(ps -eo args= | grep -cE '^(/usr/lib/postgresql/[0-9]+/bin/)?postgres -D' || true)
log "start $START_UTC, load $LOAD_START, other postgres servers running: $OTHER_PG"

# ----------------------------------------------------------------------------- server
log "initdb in $PGDATA (port $PORT)"
as_pg "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust --no-sync -E UTF8 --locale=C >"$WORKDIR/initdb.log"
cat >>"$PGDATA/postgresql.conf" <<EOF

# ---- bench/run.sh
port = $PORT
listen_addresses = ''
unix_socket_directories = '$WORKDIR'
shared_preload_libraries = 'awa'
EOF
cat "$BENCH_DIR/server.conf" >>"$PGDATA/postgresql.conf"
# The maintenance worker runs at its defaults (rings rotate and prune every
# second), as on a user's server: the integrity checks below therefore read
# awa's counters and the exact counts, which prunes do not change, not the
# claim evidence, which they truncate.
as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$SERVER_LOG" -w start >/dev/null
server_started=1

PG_VERSION=$(sql "SELECT version()")
SETTINGS=$(sql "SELECT string_agg(name || '=' || current_setting(name), ', ' ORDER BY name) FROM pg_settings
                WHERE name IN ('shared_buffers','max_connections','fsync','synchronous_commit','checkpoint_timeout',
                               'max_wal_size','autovacuum','wal_level','commit_delay','commit_siblings',
                               'shared_preload_libraries','awa.async_claim_commit','awa.early_lane_release','full_page_writes','wal_buffers')")

# Template database: awa + the baseline table. Every measured run gets a fresh copy.
sql "CREATE DATABASE bench_tmpl"
DB=bench_tmpl sql "CREATE EXTENSION awa" >/dev/null
"${PSQL[@]}" -d bench_tmpl -f "$BENCH_DIR/baseline.sql" >/dev/null
AWA_VERSION=$(DB=bench_tmpl sql "SELECT extversion FROM pg_extension WHERE extname = 'awa'")
# A database with awa gets a maintenance worker, and CREATE DATABASE ... TEMPLATE
# refuses a source that someone is connected to: mark bench_tmpl a template (the
# launcher skips templates) and end the worker it already has.
sql "ALTER DATABASE bench_tmpl WITH IS_TEMPLATE true" >/dev/null
for _ in $(seq 1 100); do
	sql "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = 'bench_tmpl'" >/dev/null
	[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE datname = 'bench_tmpl'")" = 0 ] && break
	sleep 0.1
done
AWA_SO="$("$PGBIN/pg_config" --pkglibdir)/awa.so"
AWA_SHA=$(sha256sum "$AWA_SO" | cut -c1-16)

fresh_db() {
	sql "DROP DATABASE IF EXISTS bench WITH (FORCE)" >/dev/null
	sql "CREATE DATABASE bench TEMPLATE bench_tmpl" >/dev/null
}

# Pre-load $PRELOAD jobs in batches of 100 (one enqueue_many call / INSERT per 100 jobs).
preload() {
	local sys=$1 batches=$((PRELOAD / 100))
	if [ "$sys" = awa ]; then
		DB=bench sql "SELECT count(*) FROM generate_series(0, $batches - 1) AS b
		  CROSS JOIN LATERAL awa.enqueue_many(array_fill('send_email'::text, ARRAY[100]),
		    ARRAY(SELECT jsonb_build_object('user_id', b * 100 + g, 'template', 'welcome')
		          FROM generate_series(1, 100) AS g), 'bench') AS e" >/dev/null
	else
		DB=bench sql "INSERT INTO jobs (queue, kind, args)
		  SELECT 'bench', 'send_email', jsonb_build_object('user_id', g, 'template', 'welcome')
		  FROM generate_series(1, $batches * 100) AS g" >/dev/null
	fi
	DB=bench sql "VACUUM ANALYZE" >/dev/null
}

# Queue sampler (1 s, one psql session with \watch): "epoch done claimed_or_remaining".
#   awa:  done = sum(completed_count) in receipt_completion_batches,
#         left = PRELOAD - sum(claimed_count) in ready_claim_attempt_batches (unclaimed jobs)
#   base: done = PRELOAD - rows left in jobs (DELETE on completion),
#         left = rows with state = 'available'
start_sampler() {
	local sys=$1 file=$2 q
	if [ "$sys" = awa ]; then
		q="SELECT extract(epoch FROM clock_timestamp()),
		   (SELECT coalesce(sum(completed_count), 0) FROM awa.receipt_completion_batches),
		   $PRELOAD - (SELECT coalesce(sum(claimed_count), 0) FROM awa.ready_claim_attempt_batches);"
	else
		q="SELECT extract(epoch FROM clock_timestamp()), $PRELOAD - count(*),
		   count(*) FILTER (WHERE state = 'available') FROM jobs;"
	fi
	rm -f "$WORKDIR/sampler.stop"
	# One psql session fed one query per second; stopping the feeder closes its stdin, so
	# psql finishes its current query and exits cleanly (no "connection lost" in the log).
	( while [ ! -e "$WORKDIR/sampler.stop" ]; do printf '%s\n' "$q"; sleep 1; done ) |
		"${PSQL[@]}" -d bench -At -F ' ' >"$file" 2>&1 &
	SAMPLER_PID=$!
}
stop_sampler() {
	touch "$WORKDIR/sampler.stop"
	wait "$SAMPLER_PID" 2>/dev/null || true
	SAMPLER_PID=""
}

# CPU accounting, to show how much of the 2 vCPUs other sessions took during a run.
busy_jiffies() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat; }
# Our server: postmaster (own + reaped children) + its live children.
server_jiffies() {
	local pm; pm=$(head -1 "$PGDATA/postmaster.pid")
	for f in /proc/[0-9]*/stat; do cat "$f" 2>/dev/null || true; done | awk -v pm="$pm" '
		{ pid = $1; line = $0; sub(/^.*\) /, "", line); split(line, f, " ")
		  if (pid == pm) s += f[12] + f[13] + f[14] + f[15]; else if (f[2] == pm) s += f[12] + f[13] }
		END { print s + 0 }'
}

# Drain rate (peers method): if a sample saw the queue empty, rate = done at the last
# sample that still saw jobs / that sample's time since pgbench start; drained@ = time of
# the first empty sample. Otherwise rate = done at the end / pgbench wall time.
drain_rate() { # samples t0 elapsed final_done
	awk -v t0="$2" -v el="$3" -v fin="$4" '
		NF == 3 && $1 ~ /^[0-9.]+$/ {
			t = $1 - t0; if (t < 0 || t > el) next
			if ($3 > 0) { lt = t; ld = $2; seen = 1 }
			else if (!empty) { empty = 1; et = t }
		}
		END {
			if (empty) {
				if (seen && lt > 0) printf "%.0f %.1f\n", ld / lt, et
				else printf "%.0f %.1f\n", fin / el, et
			} else printf "%.0f -\n", fin / el
		}' "$1"
}

LOG_OFFSET=0
check_log() { # $1 = run label: ERROR/WARNING/FATAL/PANIC lines written since the last call
	local size bad
	size=$(stat -c %s "$SERVER_LOG")
	bad=$(tail -c +"$((LOG_OFFSET + 1))" "$SERVER_LOG" | grep -E ' (ERROR|WARNING|FATAL|PANIC): ' || true)
	LOG_OFFSET=$size
	if [ -n "$bad" ]; then
		printf '%s: %d server log line(s):\n%s\n' "$1" "$(printf '%s\n' "$bad" | wc -l)" "$(printf '%s\n' "$bad" | head -5)" >>"$NOTES"
		printf '%s\n' "$bad" | wc -l
	else
		echo 0
	fi
}

pgb_field() { # $1 pgbench output file, $2 regexp of the line, prints the number after '='/':'
	{ grep -E "$2" "$1" || true; } | head -1 | sed -E 's/.*[=:] *([0-9.]+).*/\1/'
}
# Per-statement latency (-r) of the K-th SQL statement of the script (1 = claim, 2 = complete).
stmt_latency() { # file K
	awk -v k="$2" '/^statement latencies/ {on = 1; next}
		on && NF >= 3 && $3 !~ /^\\/ { if (++i == k) { print $1; exit } }' "$1"
}

# run_cell SYSTEM WORKLOAD N B VARIANT REP
#   WORKLOAD enqueue | drain;  VARIANT: default | slow (commit_delay) ;
#   SYSTEM awa | awa_sync (awa.async_claim_commit=off) | awa_hold (awa.early_lane_release=off)
#          | awa_synchold (both off) | base | base_async
run_cell() {
	local sys=$1 wl=$2 n=$3 b=$4 variant=$5 rep=$6
	local label="$wl-$sys-$variant-N$n-B$b-r$rep" script opts=() pgopt="" j
	local out="$WORKDIR/logs/$label.pgbench" samples="$WORKDIR/logs/$label.samples"
	local kind=${sys%%_*}
	if [ -n "$ONLY" ] && ! [[ "$wl-$sys-$variant-N$n-B$b" =~ $ONLY ]]; then return 0; fi
	j=$((n < 4 ? n : 4))
	if [ "$wl" = enqueue ]; then
		script="$BENCH_DIR/${kind}_enqueue_$b.sql"
	else
		if [ "$b" = 1 ]; then script="$BENCH_DIR/${kind}_drain_b1"; else script="$BENCH_DIR/${kind}_drain_bn"; opts=(-D "B=$b"); fi
		[ "$sys" = base_async ] && script+="_async"
		script+=".sql"
	fi
	case "$sys" in
	awa_sync) pgopt="-c awa.async_claim_commit=off" ;;
	# The lane lock held until the claim commits (awa.early_lane_release=off), as
	# in the reference design that awa's asynchronous claim commit was built for.
	awa_hold) pgopt="-c awa.early_lane_release=off" ;;
	awa_synchold) pgopt="-c awa.async_claim_commit=off -c awa.early_lane_release=off" ;;
	esac

	fresh_db
	[ "$wl" = drain ] && preload "$kind"
	sql "CHECKPOINT"
	check_log "$label (setup)" >/dev/null
	local load0; load0=$(cut -d' ' -f1 /proc/loadavg)

	[ "$wl" = drain ] && start_sampler "$kind" "$samples"
	local t0 t1 rc=0 cpu0 srv0 cpu1 srv1
	cpu0=$(busy_jiffies); srv0=$(server_jiffies)
	t0=$(date +%s.%N)
	PGOPTIONS="$pgopt" /usr/bin/time -f '%U %S' -o "$out.time" "$PGBIN/pgbench" -h "$WORKDIR" -p "$PORT" -U postgres -n -M prepared -r \
		-T "$DURATION" -c "$n" -j "$j" "${opts[@]}" -f "$script" bench >"$out" 2>&1 || rc=$?
	t1=$(date +%s.%N)
	cpu1=$(busy_jiffies); srv1=$(server_jiffies)
	[ "$wl" = drain ] && stop_sampler
	local elapsed; elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
	# cores used by us (server + pgbench) and by everything else during the pgbench run
	local cores
	cores=$(awk -v el="$elapsed" -v b="$((cpu1 - cpu0))" -v s="$((srv1 - srv0))" \
		'NR == 1 && NF == 2 { p = ($1 + $2) * 100 } END { printf "%.2f/%.2f", (s + p) / (100 * el), (b - s - p) / (100 * el) }' "$out.time")
	sleep 1.5 # let backends' statistics reach the cumulative stats system
	local xacts failed lat clat cplat dead empty="-"
	xacts=$(pgb_field "$out" '^number of transactions actually processed')
	failed=$(pgb_field "$out" '^number of failed transactions' ); failed=${failed:-0}
	lat=$(pgb_field "$out" '^latency average')
	clat="-"; cplat="-"
	if [ "$wl" = drain ]; then
		clat=$(stmt_latency "$out" 1); clat=${clat:--}
		cplat=$(stmt_latency "$out" 2); cplat=${cplat:--}
	fi
	dead=$(DB=bench sql "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables")
	[ "$rc" != 0 ] && printf '%s: pgbench exit status %s (see %s)\n' "$label" "$rc" "$out" >>"$NOTES"
	[ "${failed%.*}" != 0 ] && printf '%s: pgbench reports %s failed transactions\n' "$label" "$failed" >>"$NOTES"

	local jobs rate drained="-" final
	if [ "$wl" = enqueue ]; then
		if [ "$kind" = awa ]; then
			read -r jobs distinct cursor < <(DB=bench sql "SELECT count(*), count(DISTINCT job_id),
				(SELECT coalesce(sum(enqueue_cursor), 0) FROM awa.lanes) FROM awa.ready_entries" | tr '|' ' ')
			[ "$jobs" != "$distinct" ] && printf '%s: %s ready rows but %s distinct job ids\n' "$label" "$jobs" "$distinct" >>"$NOTES"
			[ "$jobs" != "$cursor" ] && printf '%s: %s ready rows but enqueue cursors sum to %s\n' "$label" "$jobs" "$cursor" >>"$NOTES"
		else
			jobs=$(DB=bench sql "SELECT count(*) FROM jobs")
		fi
		# every committed transaction must have left exactly B jobs
		[ -n "$xacts" ] && [ "$jobs" != "$((xacts * b))" ] &&
			printf '%s: counted %s jobs, pgbench committed %s transactions x %s\n' "$label" "$jobs" "$xacts" "$b" >>"$NOTES"
		rate=$(awk -v j="$jobs" -v d="$DURATION" 'BEGIN {printf "%.0f", j / d}')
		final=$jobs
	else
		if [ "$kind" = awa ]; then
			local completed available running others exact batches
			# From the counters (O(1), unchanged by prunes; completed jobs stay
			# counted for awa.history_retention) and the exact pass.
			read -r completed available running others exact batches < <(DB=bench sql "SELECT
				c.completed, c.available, c.running, c.scheduled + c.retryable + c.failed + c.cancelled + c.dlq,
				row(c.*)::text = row(e.*)::text, (SELECT last_value FROM awa.claim_batch_id_seq)
				FROM awa.queue_counts('bench') c, awa.queue_counts_exact('bench') e" | tr '|' ' ')
			final=$completed
			# share of claim calls that returned no job: every pgbench transaction claims once, and
			# only a claim that returns jobs takes a claim batch id (the template took none)
			empty=$(awk -v x="${xacts:-0}" -v c="${batches:-0}" 'BEGIN { if (x > 0) printf "%.0f%%", 100 * (x - c) / x; else print "-" }')
			[ "$running" != 0 ] && printf '%s: %s jobs still running at the end\n' "$label" "$running" >>"$NOTES"
			[ "$others" != 0 ] && printf '%s: %s jobs retried, failed, cancelled or dead-lettered\n' "$label" "$others" >>"$NOTES"
			[ "$exact" != t ] && printf '%s: queue_counts differs from queue_counts_exact\n' "$label" >>"$NOTES"
			[ $((completed + available)) != "$PRELOAD" ] && printf '%s: %s completed + %s available, pre-loaded %s (JOBS LOST?)\n' "$label" "$completed" "$available" "$PRELOAD" >>"$NOTES"
			if [ -s "$samples" ] && awk 'NF == 3 && $3 == 0 {e = 1} END {exit !e}' "$samples" && [ "$completed" != "$PRELOAD" ]; then
				printf '%s: queue seen empty but only %s of %s jobs completed (JOBS LOST?)\n' "$label" "$completed" "$PRELOAD" >>"$NOTES"
			fi
		else
			local left running
			read -r left running < <(DB=bench sql "SELECT count(*), count(*) FILTER (WHERE state = 'running') FROM jobs" | tr '|' ' ')
			final=$((PRELOAD - left))
			[ "$running" != 0 ] && printf '%s: %s jobs still running at the end\n' "$label" "$running" >>"$NOTES"
		fi
		read -r rate drained < <(drain_rate "$samples" "$t0" "$elapsed" "$final")
	fi
	local errs; errs=$(check_log "$label")
	local load1; load1=$(cut -d' ' -f1 /proc/loadavg)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
		"$wl" "$sys" "$variant" "$n" "$b" "$rep" "$rate" "$drained" "$final" "$dead" "${lat:--}" "$clat" "$errs" "$load0/$load1" "$elapsed" \
		"$cplat" "$empty" "$cores" "${xacts:-0}" >>"$RES"
	log "$(printf '%-7s %-10s %-7s N=%-2s B=%-3s rep %s: %8s jobs/s drained@%s dead=%s lat=%s claim=%s complete=%s empty=%s cpu us/others=%s errors=%s' \
		"$wl" "$sys" "$variant" "$n" "$b" "$rep" "$rate" "$drained" "$dead" "${lat:--}" "$clat" "$cplat" "$empty" "$cores" "$errs")"
}

set_slow_flush() { # on | off
	if [ "$1" = on ]; then
		sql "ALTER SYSTEM SET commit_delay = 5000" >/dev/null
		sql "ALTER SYSTEM SET commit_siblings = 0" >/dev/null
	else
		sql "ALTER SYSTEM RESET commit_delay" >/dev/null
		sql "ALTER SYSTEM RESET commit_siblings" >/dev/null
	fi
	sql "SELECT pg_reload_conf()" >/dev/null
	sleep 1
	log "commit_delay=$(sql 'SHOW commit_delay') commit_siblings=$(sql 'SHOW commit_siblings')"
}

# ----------------------------------------------------------------------------- the runs
# Systems alternate inside every cell so that drift and outside noise hit both alike.
for rep in $(seq 1 "$REPS"); do
	for b in "${ENQ_B[@]}"; do
		for n in "${ENQ_N[@]}"; do
			run_cell awa enqueue "$n" "$b" default "$rep"
			run_cell base enqueue "$n" "$b" default "$rep"
		done
	done
	for b in "${DRAIN_B[@]}"; do
		for n in "${DRAIN_N[@]}"; do
			run_cell awa drain "$n" "$b" default "$rep"
			run_cell base drain "$n" "$b" default "$rep"
		done
	done
	# Durability check: how much of the B=10 gain is the asynchronous claim commit?
	run_cell awa_sync drain 16 10 default "$rep"
	run_cell base_async drain 16 10 default "$rep"
	# Emulated slow WAL flush: every synchronous commit waits 5 ms before its flush.
	set_slow_flush on
	run_cell awa_sync drain 16 1 slow "$rep"
	run_cell awa drain 16 1 slow "$rep"
	run_cell awa_synchold drain 16 1 slow "$rep"
	run_cell awa_hold drain 16 1 slow "$rep"
	run_cell base drain 16 1 slow "$rep"
	run_cell base_async drain 16 1 slow "$rep"
	set_slow_flush off
done
sql "DROP DATABASE IF EXISTS bench WITH (FORCE)" >/dev/null

# Plan of the baseline claim, for the record.
fresh_db
preload base
BASE_PLAN=$("${PSQL[@]}" -d bench -At -c "EXPLAIN (COSTS OFF) UPDATE jobs SET state = 'running', attempt = attempt + 1
	WHERE id IN (SELECT id FROM jobs WHERE queue = 'bench' AND state = 'available' AND run_at <= now()
	             ORDER BY priority, run_at, id LIMIT 10 FOR UPDATE SKIP LOCKED) RETURNING id")
sql "DROP DATABASE IF EXISTS bench WITH (FORCE)" >/dev/null
CHECKPOINTS=$(grep -c 'checkpoint starting: wal' "$SERVER_LOG" || true)
AUTOVAC=$(grep -c 'automatic vacuum of table "bench\.' "$SERVER_LOG" || true)

END_UTC=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
MINUTES=$(( ($(date +%s) - START_EPOCH + 30) / 60 ))
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ----------------------------------------------------------------------------- report
# mean and "(rep1 / rep2 ...)" of column $2 for the lines matching key columns
cell() { # wl sys variant n b col
	awk -F'\t' -v wl="$1" -v sys="$2" -v va="$3" -v n="$4" -v b="$5" -v c="$6" '
		$1 == wl && $2 == sys && $3 == va && $4 == n && $5 == b { v[++k] = $c; if ($c ~ /^[0-9.]+$/) { s += $c; m++ } }
		END {
			if (!k) { print "n/a"; exit }
			if (!m) { out = v[1]; for (i = 2; i <= k; i++) out = out "," v[i]; print out; exit }
			mean = s / m
			out = (mean >= 100 || mean == int(mean) ? sprintf("%.0f", mean) : sprintf("%.2f", mean))
			if (k > 1) { out = out " ("; for (i = 1; i <= k; i++) out = out (i > 1 ? " / " : "") v[i]; out = out ")" }
			print out
		}' "$RES"
}
mean() { cell "$@" | awk '{print $1}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", a / b; else print "n/a" }'; }
verdict() { awk -v r="${1%x}" -v t="$2" 'BEGIN { if (r == "n/a") print "n/a"; else if (r + 0 >= t) print "met"; else print "**not met**" }'; }
drained() { local d; d=$(cell drain "$@" 8); [ "$d" = "-" ] || [ -z "$d" ] && return 0; echo " [drained@${d}s]"; }
lats() { echo "$(mean drain "$@" 11) / $(mean drain "$@" 12) / $(mean drain "$@" 16)"; }
# "us/others" CPU cores during a run (column 18), averaged
cpu() { awk -F'\t' -v wl="$1" -v sys="$2" -v va="$3" -v n="$4" -v b="$5" '$1 == wl && $2 == sys && $3 == va && $4 == n && $5 == b {
	split($18, c, "/"); u += c[1]; o += c[2]; k++ } END { if (k) printf "%.2f / %.2f", u / k, o / k; else print "n/a" }' "$RES"; }
OTHERS=$(awk -F'\t' '{ split($18, c, "/"); s += c[2]; if (c[2] > m) m = c[2]; k++ } END { if (k) printf "%.2f cores on average, %.2f at most", s / k, m }' "$RES")

{
	echo "# awa vs. FOR UPDATE SKIP LOCKED: benchmark results"
	echo
	echo "Generated by \`bench/run.sh\` (see bench/README.md). One dedicated PostgreSQL server, both"
	echo "systems measured alternately in the same run; ratios are awa / baseline of that run."
	echo
	echo "- Command: \`$CMD\`"
	echo "- Started: $START_UTC, finished: $END_UTC (about $MINUTES min)."
	echo "- Machine: $(nproc) vCPU ($(lscpu 2>/dev/null | sed -nE 's/^Model name: *//p' | head -1)), $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) RAM, $(uname -sr)."
	echo "- Noise: other sessions share this machine. Load average (1/5/15 min) at start: $LOAD_START, at end: $LOAD_END; other PostgreSQL servers running at start: $OTHER_PG. During the pgbench runs, processes other than this benchmark's server and pgbench used $OTHERS of the $(nproc) vCPUs (/proc/stat; column \`cpu us/others\` of the raw table)."
	echo "- $PG_VERSION"
	echo "- awa $AWA_VERSION, $AWA_SO sha256 $AWA_SHA..."
	echo "- Settings: $SETTINGS; plus log_checkpoints=on, log_autovacuum_min_duration=0. Everything else initdb defaults."
	echo "- pgbench: \`pgbench -n -M prepared -r -T $DURATION -c N -j min(N,4)\`, user postgres over the Unix socket, $REPS repetition(s) per cell$( [ "$REPS" -gt 1 ] && echo ' (mean, repetitions in parentheses)'). Fresh database (copy of a template holding awa + baseline.sql) and \`CHECKPOINT\` before every run; drains pre-load $PRELOAD jobs (batches of 100) then \`VACUUM ANALYZE\`."
	echo "- Jobs are counted in the database, not from pgbench tps. Drain rates use a 1 s sampler: when the queue emptied before the end, the rate is the jobs done at the last sample that still saw unclaimed jobs divided by that sample's time (\`drained@Xs\` = first empty sample)."
	echo
	echo "## Ratios (awa / baseline, same run)"
	echo
	echo "| workload | N | B | awa jobs/s | baseline jobs/s | awa / baseline | target |"
	echo "|---|---:|---:|---:|---:|---:|---|"
	for b in "${ENQ_B[@]}"; do for n in "${ENQ_N[@]}"; do
		a=$(mean enqueue awa default "$n" "$b" 7); s=$(mean enqueue base default "$n" "$b" 7); r=$(ratio "$a" "$s")
		echo "| enqueue | $n | $b | $a | $s | $r | >= 1.0x: $(verdict "$r" 1.0) |"
	done; done
	for b in "${DRAIN_B[@]}"; do for n in "${DRAIN_N[@]}"; do
		a=$(mean drain awa default "$n" "$b" 7); s=$(mean drain base default "$n" "$b" 7); r=$(ratio "$a" "$s")
		t="-"; [ "$n" = 16 ] && [ "$b" = 10 ] && t=">= 1.5x: $(verdict "$r" 1.5)"
		echo "| drain | $n | $b | $a | $s | $r | $t |"
	done; done
	a=$(mean drain awa slow 16 1 7); o=$(mean drain awa_sync slow 16 1 7); r=$(ratio "$a" "$o")
	echo "| slow flush: awa async claim on / off | 16 | 1 | $a (on) | $o (off) | $r (on/off) | >= 3x: $(verdict "$r" 3) |"
	ha=$(mean drain awa_hold slow 16 1 7); ho=$(mean drain awa_synchold slow 16 1 7); hr=$(ratio "$ha" "$ho")
	echo "| slow flush, lane held to commit (early_lane_release=off): async claim on / off | 16 | 1 | $ha (on) | $ho (off) | $hr (on/off) | >= 3x: $(verdict "$hr" 3) |"
	s=$(mean drain base slow 16 1 7); echo "| slow flush: awa off / baseline sync claim | 16 | 1 | $o | $s | $(ratio "$o" "$s") | - |"
	s=$(mean drain base_async slow 16 1 7); echo "| slow flush: awa on / baseline async claim | 16 | 1 | $a | $s | $(ratio "$a" "$s") | - |"
	echo
	echo "## Absolute numbers"
	echo
	echo "### Enqueue: jobs/s (jobs counted in the database / $DURATION s)"
	echo
	echo "| N | B | awa | baseline | awa latency ms | baseline latency ms | cpu us / others, awa | cpu us / others, baseline |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
	for b in "${ENQ_B[@]}"; do for n in "${ENQ_N[@]}"; do
		echo "| $n | $b | $(cell enqueue awa default "$n" "$b" 7) | $(cell enqueue base default "$n" "$b" 7) | $(cell enqueue awa default "$n" "$b" 11) | $(cell enqueue base default "$n" "$b" 11) | $(cpu enqueue awa default "$n" "$b") | $(cpu enqueue base default "$n" "$b") |"
	done; done
	echo
	echo "### Drain of $PRELOAD pre-loaded jobs: jobs completed/s"
	echo
	echo "Latencies are pgbench's (-r), in ms: loop = one worker script (claim + complete), then the claim"
	echo "statement and the complete statement; after a drain they include cheap empty polls. \"awa empty"
	echo "claims\" = share of awa.claim calls that returned no job (whole run, so it includes polls after a"
	echo "drain). n_dead_tup = sum over all tables, 1.5 s after pgbench exits."
	echo
	echo "| N | B | awa | baseline | awa loop / claim / complete | baseline loop / claim / complete | awa empty claims | awa n_dead_tup | baseline n_dead_tup |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for b in "${DRAIN_B[@]}"; do for n in "${DRAIN_N[@]}"; do
		echo "| $n | $b | $(cell drain awa default "$n" "$b" 7)$(drained awa default "$n" "$b") | $(cell drain base default "$n" "$b" 7)$(drained base default "$n" "$b") | $(lats awa default "$n" "$b") | $(lats base default "$n" "$b") | $(cell drain awa default "$n" "$b" 17) | $(cell drain awa default "$n" "$b" 10) | $(cell drain base default "$n" "$b" 10) |"
	done; done
	echo
	echo "### Synchronous vs. asynchronous claim commit, N=16, B=10 (normal WAL flush)"
	echo
	echo "awa's default is awa.async_claim_commit=on (a claim in its own transaction commits with"
	echo "synchronous_commit=off); the baseline in the tables above commits its claims synchronously."
	echo "Both the other way round, for comparison:"
	echo
	echo "| system | jobs/s | loop / claim / complete ms | empty claims |"
	echo "|---|---:|---:|---:|"
	echo "| awa, async_claim_commit=on (default, as above) | $(cell drain awa default 16 10 7)$(drained awa default 16 10) | $(lats awa default 16 10) | $(cell drain awa default 16 10 17) |"
	echo "| awa, async_claim_commit=off | $(cell drain awa_sync default 16 10 7)$(drained awa_sync default 16 10) | $(lats awa_sync default 16 10) | $(cell drain awa_sync default 16 10 17) |"
	echo "| baseline, sync claim (as above) | $(cell drain base default 16 10 7)$(drained base default 16 10) | $(lats base default 16 10) | - |"
	echo "| baseline, claim with set_config('synchronous_commit','off',true) | $(cell drain base_async default 16 10 7)$(drained base_async default 16 10) | $(lats base_async default 16 10) | - |"
	echo
	echo "### Emulated slow WAL flush (commit_delay=5000, commit_siblings=0), drain N=16, B=1"
	echo
	echo "| system | jobs/s | loop / claim / complete ms | empty claims | n_dead_tup |"
	echo "|---|---:|---:|---:|---:|"
	for s in "awa_sync|awa, async_claim_commit=off" "awa|awa, async_claim_commit=on" "awa_synchold|awa, lane held to commit, async_claim_commit=off" "awa_hold|awa, lane held to commit, async_claim_commit=on" "base|baseline, sync claim" "base_async|baseline, claim with set_config('synchronous_commit','off',true)"; do
		k=${s%%|*}
		echo "| ${s#*|} | $(cell drain "$k" slow 16 1 7)$(drained "$k" slow 16 1) | $(lats "$k" slow 16 1) | $(cell drain "$k" slow 16 1 17) | $(cell drain "$k" slow 16 1 10) |"
	done
	echo
	echo "Both settings were reset (ALTER SYSTEM RESET, reload) after these runs."
	echo
	echo "## Checks"
	echo
	echo "- After every drain, awa: jobs claimed (lease_claim_batches) = distinct claimed job ids = jobs completed (receipt_completion_batches) = distinct completed ids, all $PRELOAD ready rows present, and a queue seen empty had all jobs completed; baseline: no row left in state 'running'. After every enqueue: jobs counted = committed pgbench transactions x B (awa also: distinct job ids, enqueue cursors)."
	echo "- Server log: ERROR/WARNING/FATAL/PANIC lines checked after each run; WAL-triggered checkpoints: $CHECKPOINTS; autovacuum runs in the bench databases: $AUTOVAC."
	if [ -s "$NOTES" ]; then
		echo "- Findings:"
		echo
		echo '```'
		cat "$NOTES"
		echo '```'
	else
		echo "- Findings: none (every check passed, no ERROR/WARNING/FATAL lines in the server log)."
	fi
	echo
	echo "Baseline claim plan (\`EXPLAIN\`, after pre-loading):"
	echo
	echo '```'
	echo "$BASE_PLAN"
	echo '```'
	echo
	echo "## Raw runs"
	echo
	echo "cpu us/others = CPU cores used by this benchmark (server + pgbench) / by all other processes, averaged over the pgbench run."
	echo
	echo "| workload | system | variant | N | B | rep | jobs/s | drained@ s | jobs done | pgbench xacts | loop ms | claim ms | complete ms | empty claims | n_dead_tup | log errors | cpu us/others | load 1m before/after | wall s |"
	echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|"
	awk -F'\t' '{ print "| " $1 " | " $2 " | " $3 " | " $4 " | " $5 " | " $6 " | " $7 " | " $8 " | " $9 " | " $19 " | " $11 " | " $12 " | " $16 " | " $17 " | " $10 " | " $13 " | " $18 " | " $14 " | " $15 " |" }' "$RES"
} >"$WORKDIR/RESULTS.md"

cp "$WORKDIR/RESULTS.md" "$OUT"
sed -n '/^## Ratios/,/^## Absolute/p' "$WORKDIR/RESULTS.md" | head -n -1
log "wrote $OUT (raw logs: $WORKDIR/logs, server log: $SERVER_LOG)"
