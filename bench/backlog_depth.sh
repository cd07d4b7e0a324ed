#!/usr/bin/env bash
# bench/backlog_depth.sh: does the drain rate depend on how deep the backlog is? (issue 10 §5)
#
#   bench/backlog_depth.sh                 100,000 vs 1,000,000 jobs, 5 alternating repetitions
#   REPS=2 bench/backlog_depth.sh          smoke run
#
# On a scratch server (bench/scratch_server.sh: stock planner and JIT settings, the maintenance
# worker at its default cadence), each repetition and each depth gets a fresh database with
# DEPTH jobs on one queue (enqueue_many calls of 1,000), VACUUM ANALYZE, CHECKPOINT, then 8
# workers (pgbench -c 8, bench/awa_drain_bn.sql, claim batch 10, complete_many) drain exactly
# the first DRAIN jobs (default 100,000: -t DRAIN/80 per client): the rate is DRAIN / the wall time. Depths
# alternate within each repetition, so the machine's drift hits both alike. Prints a markdown
# table (also $WORKDIR/result.md). Target: rate at 1,000,000 / rate at 100,000 >= 0.9.
#
# Environment: REPS (default 5), SMALL (default 100000), LARGE (default 1000000), DRAIN (jobs
# drained per run, a multiple of 80 no larger than SMALL, default 100000), PORT (default 55444),
# PGBIN, WORKDIR, KEEP=1.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPS=${REPS:-5}
SMALL=${SMALL:-100000}
LARGE=${LARGE:-1000000}
DRAIN=${DRAIN:-100000}
if (( DRAIN % 80 != 0 || DRAIN <= 0 || DRAIN > SMALL || SMALL % 1000 != 0 || LARGE % 1000 != 0 )); then
	echo "DRAIN must be a positive multiple of 80 no larger than SMALL; SMALL and LARGE multiples of 1000" >&2
	exit 2
fi
PORT=${PORT:-55444}
SCRIPT_NAME=backlog-depth
# shellcheck source=bench/scratch_server.sh
source "$BENCH_DIR/scratch_server.sh"

start_scratch_server
declare -A total
total[$SMALL]=0
total[$LARGE]=0
rows=()
for rep in $(seq 1 "$REPS"); do
	line="| $rep"
	for depth in $SMALL $LARGE; do
		sql "DROP DATABASE IF EXISTS dq WITH (FORCE)" >/dev/null
		sql "CREATE DATABASE dq" >/dev/null
		DB=dq sql "CREATE EXTENSION awa"
		DB=dq sql "SELECT count(*) FROM (SELECT awa.enqueue_many(array_fill('k'::text, ARRAY[1000]),
		             array_fill('{}'::jsonb, ARRAY[1000]), queue => 'bench') FROM generate_series(1, $depth / 1000)) x" >/dev/null
		DB=dq sql "VACUUM ANALYZE" >/dev/null
		DB=dq sql "CHECKPOINT" >/dev/null
		start=$(date +%s.%N)
		"${PGBENCH[@]}" -n -M prepared -t $((DRAIN / 80)) -c 8 -j 2 -D B=10 -f "$BENCH_DIR/awa_drain_bn.sql" dq \
			>"$WORKDIR/logs/r${rep}_$depth.txt" 2>&1
		end=$(date +%s.%N)
		rate=$(awk -v s="$start" -v e="$end" -v d="$DRAIN" 'BEGIN { printf "%.0f", d / (e - s) }')
		left=$(DB=dq sql "SELECT available FROM awa.queue_counts('bench')")
		[ "$left" = $((depth - DRAIN)) ] || { log "rep $rep depth $depth: $left jobs left, expected $((depth - DRAIN))"; exit 1; }
		total[$depth]=$((total[$depth] + rate))
		line+=" | $rate"
		log "rep $rep depth $depth: $rate jobs/s"
	done
	rows+=("$line |")
done
small=$((total[$SMALL] / REPS))
large=$((total[$LARGE] / REPS))
{
	echo "## Drain rate against backlog depth ($(date -u +%Y-%m-%d), $(nproc) cores)"
	echo
	echo "Command: \`REPS=$REPS SMALL=$SMALL LARGE=$LARGE DRAIN=$DRAIN bench/backlog_depth.sh\`. 8 workers, batch 10, the first $DRAIN jobs of the backlog."
	echo
	echo "| repetition | jobs/s, backlog $SMALL | jobs/s, backlog $LARGE |"
	echo "|---:|---:|---:|"
	printf '%s\n' "${rows[@]}"
	echo "| mean | $small | $large |"
	echo
	echo "Ratio (deep / shallow): $(awk -v a="$large" -v b="$small" 'BEGIN { printf "%.2f", a / b }'). Server log ERROR/WARNING/FATAL lines: $(server_log_problems)."
} | tee "$WORKDIR/result.md"
