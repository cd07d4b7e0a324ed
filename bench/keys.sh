#!/usr/bin/env bash
# bench/keys.sh: what keyed lanes cost a drain (issue 21 §2, §3, §7; docs/flow-control.md, "Fair share
# between keys").
#
# On a scratch server (bench/scratch_server.sh, configured as bench/run.sh's; the maintenance worker at
# its default cadence), per repetition, batch size B (1: claim 1 + complete; 10: claim 10 +
# complete_many) and cell, a fresh queue gets JOBS jobs, then CLIENTS pgbench clients drain it for
# DURATION seconds. Cells, alternated within each repetition:
#   none       jobs without a key (today's lanes)
#   K keys     the same jobs spread round-robin over K concurrency keys, fairness 'none'
#   K fair     the same with fairness 'key' (claims interleave the keys)
#   K limits   fairness 'key' and limits per key set but not binding (key_max_running 100000,
#              key_rate_limit '100000000 per 1 second', key_burst 100000: issue 21 §7's "set but not
#              binding"; each claim reserves and gives back on its key's counters entry)
# for each K in KEYS. Prints a markdown table (also $WORKDIR/result.md): jobs completed per second,
# and each keyed cell's ratio to the cell without keys of the same repetition and batch.
#
#   bench/keys.sh      REPS=2 JOBS=100000 CLIENTS=8 DURATION=10 KEYS="100 10000"
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
REPS=${REPS:-2}
JOBS=${JOBS:-100000}
CLIENTS=${CLIENTS:-8}
DURATION=${DURATION:-10}
KEYS=${KEYS:-"100 10000"}
BATCHES=${BATCHES:-"1 10"}
PORT=${PORT:-55496}
SCRIPT_NAME=keys

# shellcheck source=bench/scratch_server.sh
. "$BENCH_DIR/scratch_server.sh"

start_scratch_server
sql "CREATE DATABASE bench" >/dev/null
DB=bench sql "CREATE EXTENSION awa" >/dev/null
export DB=bench
printf "SELECT awa.complete(job_id, run_lease, receipt_id) FROM awa.claim(':q', 1);\n" >"$WORKDIR/drain1.sql"
printf "SELECT count(*) FROM (SELECT awa.complete_many(coalesce(array_agg(job_id), '{}'), coalesce(array_agg(run_lease), '{}'), coalesce(array_agg(receipt_id), '{}')) FROM awa.claim(':q', 10)) x;\n" >"$WORKDIR/drain10.sql"
if [ "$(id -u)" = 0 ]; then chown -R postgres "$WORKDIR"; fi

# cell REP B KEYS FAIR -> jobs completed per second (KEYS 0: no key)
cell() {
	local q="kq_${1}_${2}_${3}_${4}"
	if [ "$3" = 0 ]; then
		sql "SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[$JOBS]), NULL, '$q')" >/dev/null
	else
		if [ "$4" = fair ]; then sql "SELECT awa.configure_queue('$q', fairness => 'key')" >/dev/null; fi
		if [ "$4" = limits ]; then
			sql "SELECT awa.configure_queue('$q', fairness => 'key', key_max_running => 100000,
			       key_rate_limit => '100000000 per 1 second', key_burst => 100000)" >/dev/null
			# Setting limits per key makes the counters untrusted (rebuilt by the worker within 5 s,
			# claims count exactly meanwhile): the steady state is measured, after the rebuild.
			# (Trusted only once the transactions older than the setting have ended, and 1 s after it.)
			for _ in $(seq 1 100); do
				[ "$(sql "SELECT awa.rebuild_counters()")" = t ] && break
				sleep 0.2
			done
		fi
		sql "SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[$JOBS]), NULL, '$q', opts =>
		       ARRAY(SELECT jsonb_build_object('concurrency_key', 'tenant-' || (g % $3)) FROM generate_series(1, $JOBS) g))" >/dev/null
	fi
	sql "CHECKPOINT" >/dev/null
	local t0 t1
	t0=$(date +%s.%N)
	as_pg "${PGBENCH[@]}" -n -c "$CLIENTS" -j 2 -T "$DURATION" -D "q=$q" -f "$WORKDIR/drain$2.sql" bench >/dev/null 2>&1
	t1=$(date +%s.%N)
	sql "SELECT round(completed / ($t1 - $t0)) FROM awa.queue_counts_exact('$q')"
}

{
	echo "| rep | B | cell | jobs/s | ratio to no key |"
	echo "|---|---|---|---|---|"
	for rep in $(seq 1 "$REPS"); do
		for b in $BATCHES; do
			base=$(cell "$rep" "$b" 0 none)
			echo "| $rep | $b | no key | $base | 1.00 |"
			for k in $KEYS; do
				for mode in ${MODES:-none fair limits}; do
					got=$(cell "$rep" "$b" "$k" "$mode")
					awk -v r="$rep" -v b="$b" -v k="$k" -v m="$mode" -v g="$got" -v f="$base" \
						'BEGIN {printf "| %s | %s | %s keys, %s | %d | %.2f |\n", r, b, k, (m == "fair" ? "fairness key" : (m == "limits" ? "fairness key + limits per key (not binding)" : "fairness none")), g, (f > 0 ? g/f : 0)}'
				done
			done
		done
	done
} | tee "$WORKDIR/result.md"
