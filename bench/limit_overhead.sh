#!/usr/bin/env bash
# bench/limit_overhead.sh: what a concurrency limit that never binds costs a drain (issue 21 §7; the
# limit is docs/flow-control.md).
#
# On a scratch server (bench/scratch_server.sh, configured as bench/run.sh's; the maintenance worker
# at its default cadence), per repetition and batch size B (1: claim 1 + complete; 10: claim 10 +
# complete_many), a queue without a limit and a queue with max_running = 100000 (never binding) each
# get JOBS jobs (more than the clients drain: the rate is jobs completed over the run's wall time), then
# CLIENTS pgbench clients drain it for DURATION seconds; the two alternate.
# Prints a markdown table (also written to $WORKDIR/result.md): claims+completions per second per
# cell, and the ratio limited / unlimited. Target: the ratio at least 0.9.
#
#   bench/limit_overhead.sh                      REPS=2 JOBS=500000 CLIENTS=16 DURATION=10
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
REPS=${REPS:-2}
JOBS=${JOBS:-500000}
CLIENTS=${CLIENTS:-16}
DURATION=${DURATION:-10}
PORT=${PORT:-55494}
SCRIPT_NAME=limit-overhead

# shellcheck source=bench/scratch_server.sh
. "$BENCH_DIR/scratch_server.sh"

start_scratch_server
sql "CREATE DATABASE bench" >/dev/null
DB=bench sql "CREATE EXTENSION awa" >/dev/null
export DB=bench
printf "SELECT awa.complete(job_id, run_lease, receipt_id) FROM awa.claim(':q', 1);\n" >"$WORKDIR/drain1.sql"
printf "SELECT count(*) FROM (SELECT awa.complete_many(coalesce(array_agg(job_id), '{}'), coalesce(array_agg(run_lease), '{}'), coalesce(array_agg(receipt_id), '{}')) FROM awa.claim(':q', 10)) x;\n" >"$WORKDIR/drain10.sql"
if [ "$(id -u)" = 0 ]; then chown -R postgres "$WORKDIR"; fi

cell() {  # cell REP LIMIT B -> jobs completed per second
	local q="lq_${2}_${3}_${1}"
	sql "SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[$JOBS]), NULL, '$q')" >/dev/null
	if [ "$2" != none ]; then sql "SELECT awa.configure_queue('$q', max_running => $2)" >/dev/null; fi
	local t0 t1
	t0=$(date +%s.%N)
	as_pg "${PGBENCH[@]}" -n -c "$CLIENTS" -j 2 -T "$DURATION" -D "q=$q" -f "$WORKDIR/drain$3.sql" bench >/dev/null 2>&1
	t1=$(date +%s.%N)
	sql "SELECT round(completed / ($t1 - $t0)) FROM awa.queue_counts_exact('$q')"
}

{
	echo "| rep | B | no limit (jobs/s) | limit 100000 (jobs/s) | ratio |"
	echo "|---|---|---|---|---|"
	for rep in $(seq 1 "$REPS"); do
		for b in 1 10; do
			free=$(cell "$rep" none "$b")
			limited=$(cell "$rep" 100000 "$b")
			awk -v r="$rep" -v b="$b" -v f="$free" -v l="$limited" \
				'BEGIN {printf "| %s | %s | %d | %d | %.2f |\n", r, b, f, l, (f > 0 ? l/f : 0)}'
		done
	done
} | tee "$WORKDIR/result.md"
