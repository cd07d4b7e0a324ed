#!/usr/bin/env bash
# bench/queue_counts.sh: latency of awa.queue_counts('q') (shared-memory counters) against the
# backlog size, with awa.queue_counts_exact('q') (counted from the tables) for contrast.
#
#   bench/queue_counts.sh                      10,000 and 1,000,000 available jobs, 10 s per run
#   LARGE_N=100000 DURATION=3 bench/queue_counts.sh      smoke run (well under a minute)
#
# On a scratch server (bench/scratch_server.sh, configured as bench/run.sh's), queue q gets
# FINISHED jobs (default 3000) that are claimed and ended (two thirds completed, one third
# failed), then SMALL_N available jobs (default 10000): pgbench -n -M prepared -c 1 -T DURATION
# runs SELECT * FROM awa.queue_counts('q'), then the same with queue_counts_exact. The backlog is
# then grown to LARGE_N available jobs (default 1000000) and both are measured again. Enqueues
# are awa.enqueue_many calls of 10,000 jobs, one transaction each. Before each measurement:
# VACUUM ANALYZE, CHECKPOINT, and a check that queue_counts = queue_counts_exact = the expected
# counts. After each pair of runs the server is restarted and the first queue_counts call is
# timed (it rebuilds the counters by one exact pass), next to the first call of a new session
# without a restart.
#
# Prints a markdown table (also written to $WORKDIR/result.md). Target: queue_counts latency at
# LARGE_N / at SMALL_N <= 1.5. Exit status 1 if a count check fails or the server log has
# ERROR/WARNING/FATAL/PANIC lines.
#
# Environment: SMALL_N, LARGE_N (multiples of 10000), FINISHED (multiple of 3), DURATION (s per
# pgbench run), PORT (default 55441), PGBIN, WORKDIR, KEEP=1. Run as root or as postgres.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CMD=""
for v in SMALL_N LARGE_N FINISHED DURATION PORT; do
	if [ -n "${!v+x}" ]; then CMD+="$v=$(printf %q "${!v}") "; fi
done
CMD+="bench/queue_counts.sh"

SMALL_N=${SMALL_N:-10000}
LARGE_N=${LARGE_N:-1000000}
FINISHED=${FINISHED:-3000}
DURATION=${DURATION:-10}
PORT=${PORT:-55441}
SCRIPT_NAME=queue-counts
BATCH=10000
for v in SMALL_N LARGE_N; do
	if (( ${!v} % BATCH != 0 || ${!v} <= 0 )); then echo "$v must be a positive multiple of $BATCH" >&2; exit 2; fi
done
if (( LARGE_N <= SMALL_N )); then echo "LARGE_N must be larger than SMALL_N" >&2; exit 2; fi
if (( FINISHED % 3 != 0 || FINISHED > 9999 )); then echo "FINISHED must be a multiple of 3 below 10000" >&2; exit 2; fi
COMPLETED=$((FINISHED * 2 / 3))
FAILED=$((FINISHED - COMPLETED))

# shellcheck source=bench/scratch_server.sh
. "$BENCH_DIR/scratch_server.sh"

START_UTC=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
start_scratch_server
sql "CREATE DATABASE bench" >/dev/null
DB=bench sql "CREATE EXTENSION awa" >/dev/null
export DB=bench

printf 'SELECT * FROM awa.queue_counts(%s);\n' "'q'" >"$WORKDIR/queue_counts.sql"
printf 'SELECT * FROM awa.queue_counts_exact(%s);\n' "'q'" >"$WORKDIR/queue_counts_exact.sql"

# n enqueue_many calls of 10,000 jobs on q, each its own transaction (one psql session).
enqueue_batches() {
	local n=$1 i
	for ((i = 0; i < n; i++)); do
		echo "SELECT count(*) FROM awa.enqueue_many(array_fill('send_email'::text, ARRAY[$BATCH]),
		      ARRAY(SELECT jsonb_build_object('user_id', g) FROM generate_series(1, $BATCH) AS g), 'q');"
	done | "${PSQL[@]}" -d bench -At >/dev/null
}

# --- the finished jobs: claimed (in as many claims as it takes), then ended
log "enqueue $FINISHED jobs, claim them, complete $COMPLETED and fail $FAILED"
sql "SELECT count(*) FROM awa.enqueue_many(array_fill('send_email'::text, ARRAY[$FINISHED]), NULL, 'q')" >/dev/null
sql "CREATE TABLE bench_claimed (job_id bigint, run_lease bigint, receipt_id bigint)"
for _ in $(seq 1 100); do
	have=$(sql "SELECT count(*) FROM bench_claimed")
	[ "$have" -ge "$FINISHED" ] && break
	sql "INSERT INTO bench_claimed SELECT job_id, run_lease, receipt_id FROM awa.claim('q', $((FINISHED - have)))"
done
[ "$(sql "SELECT count(*) FROM bench_claimed")" = "$FINISHED" ] || { echo "could not claim $FINISHED jobs" >&2; exit 1; }
done_n=$(sql "SELECT count(*) FROM awa.complete_many(
	ARRAY(SELECT job_id FROM bench_claimed ORDER BY job_id LIMIT $COMPLETED),
	ARRAY(SELECT run_lease FROM bench_claimed ORDER BY job_id LIMIT $COMPLETED),
	ARRAY(SELECT receipt_id FROM bench_claimed ORDER BY job_id LIMIT $COMPLETED)) WHERE accepted")
failed_n=$(sql "SELECT count(*) FROM (SELECT * FROM bench_claimed ORDER BY job_id OFFSET $COMPLETED) c
	WHERE awa.fail(c.job_id, c.run_lease, c.receipt_id, 'bench failure') = 'failed'")
if [ "$done_n" != "$COMPLETED" ] || [ "$failed_n" != "$FAILED" ]; then
	echo "completed $done_n (want $COMPLETED), failed $failed_n (want $FAILED)" >&2
	exit 1
fi
sql "DROP TABLE bench_claimed"

# 1000000 -> 1,000,000
fmt() { echo "$1" | sed -E ':a;s/^([0-9]+)([0-9]{3})/\1,\2/;ta'; }

CHECK_FAILED=0
ROWS=()
declare -A LAT_C LAT_E

# measure SIZE: checks, two pgbench runs, restart, first-call timings
measure() {
	local size=$1 want got exact lc le first_restart first_session
	log "available = $size: VACUUM ANALYZE, CHECKPOINT, checks"
	sql "VACUUM ANALYZE" >/dev/null
	sql "CHECKPOINT" >/dev/null
	want="q|$size|0|0|0|$COMPLETED|$FAILED|0|0"
	got=$(sql "SELECT * FROM awa.queue_counts('q')")
	exact=$(sql "SELECT * FROM awa.queue_counts_exact('q')")
	local ok=yes
	if [ "$got" != "$want" ] || [ "$exact" != "$want" ]; then
		ok=NO; CHECK_FAILED=1
		printf 'available=%s: queue_counts %s, queue_counts_exact %s, expected %s\n' "$size" "$got" "$exact" "$want" >&2
	fi
	log "available = $size: pgbench queue_counts, ${DURATION} s"
	"${PGBENCH[@]}" -n -M prepared -c 1 -T "$DURATION" -f "$WORKDIR/queue_counts.sql" bench >"$WORKDIR/logs/queue_counts_$size.pgbench" 2>&1
	log "available = $size: pgbench queue_counts_exact, ${DURATION} s"
	"${PGBENCH[@]}" -n -M prepared -c 1 -T "$DURATION" -f "$WORKDIR/queue_counts_exact.sql" bench >"$WORKDIR/logs/queue_counts_exact_$size.pgbench" 2>&1
	lc=$(pgbench_latency "$WORKDIR/logs/queue_counts_$size.pgbench")
	le=$(pgbench_latency "$WORKDIR/logs/queue_counts_exact_$size.pgbench")
	LAT_C[$size]=$lc
	LAT_E[$size]=$le
	# First call of a new session, then first call after a restart (counter rebuild).
	first_session=$(printf '\\timing on\nSELECT * FROM awa.queue_counts(%s);\n' "'q'" |
		"${PSQL[@]}" -d bench -At | sed -nE 's/^Time: ([0-9.]+) ms.*/\1/p')
	restart_scratch_server
	first_restart=$(printf '\\timing on\nSELECT * FROM awa.queue_counts(%s);\n' "'q'" |
		"${PSQL[@]}" -d bench -At | sed -nE 's/^Time: ([0-9.]+) ms.*/\1/p')
	got=$(sql "SELECT * FROM awa.queue_counts('q')")
	if [ "$got" != "$want" ]; then
		ok=NO; CHECK_FAILED=1
		printf 'available=%s after restart: queue_counts %s, expected %s\n' "$size" "$got" "$want" >&2
	fi
	ROWS+=("| $(fmt "$size") | $lc | $le | $first_session | $first_restart | $ok |")
}

log "enqueue $SMALL_N jobs"
enqueue_batches $((SMALL_N / BATCH))
measure "$SMALL_N"

log "enqueue $((LARGE_N - SMALL_N)) more jobs (batches of $BATCH)"
t0=$(date +%s.%N)
enqueue_batches $(((LARGE_N - SMALL_N) / BATCH))
t1=$(date +%s.%N)
ENQ_RATE=$(awk -v a="$t0" -v b="$t1" -v n=$((LARGE_N - SMALL_N)) 'BEGIN {printf "%.0f", n / (b - a)}')
measure "$LARGE_N"

RATIO_C=$(awk -v a="${LAT_C[$SMALL_N]}" -v b="${LAT_C[$LARGE_N]}" 'BEGIN {printf "%.2f", b / a}')
RATIO_E=$(awk -v a="${LAT_E[$SMALL_N]}" -v b="${LAT_E[$LARGE_N]}" 'BEGIN {printf "%.1f", b / a}')
VERDICT=$(awk -v r="$RATIO_C" 'BEGIN {print (r <= 1.5) ? "met" : "NOT met"}')
LOG_PROBLEMS=$(server_log_problems)
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

{
	echo "### awa.queue_counts latency vs. backlog"
	echo
	echo "\`$CMD\`, $START_UTC, $(nproc) vCPU, load before/after: $LOAD_START / $LOAD_END."
	echo "Queue q: $COMPLETED completed + $FAILED failed jobs plus the available backlog; pgbench -n -M prepared -c 1 -T $DURATION per cell."
	echo
	echo "| available jobs | queue_counts mean ms | queue_counts_exact mean ms | first queue_counts, new session ms | first queue_counts after restart (rebuild) ms | counts = exact = expected |"
	echo "|---:|---:|---:|---:|---:|---|"
	printf '%s\n' "${ROWS[@]}"
	echo
	echo "- queue_counts latency ratio $(fmt "$LARGE_N") / $(fmt "$SMALL_N"): **$RATIO_C** (target <= 1.5: $VERDICT)"
	echo "- queue_counts_exact latency ratio: $RATIO_E"
	echo "- enqueue rate while growing the backlog: $ENQ_RATE jobs/s (enqueue_many of $BATCH)"
	echo "- server log ERROR/WARNING/FATAL/PANIC lines: $LOG_PROBLEMS"
} | tee "$WORKDIR/result.md"

[ "$CHECK_FAILED" = 0 ] && [ "$LOG_PROBLEMS" = 0 ]
