#!/usr/bin/env bash
# bench/mixed.sh: a mixed drain. N jobs pre-loaded into queue mix (dlq_enabled); W pgbench
# workers claim batches of 10 and end every job as its job_id decides (bench/mixed_worker.sql):
# 5 % fail (-> dlq), 10 % are retried once with delay 0 on their first attempt and completed
# on the second, the rest complete. A promoter (pgbench -c 1, bench/mixed_promoter.sql) runs
# awa.promote_due() every 100 ms, so the retried jobs come back.
#
#   bench/mixed.sh                       N=50000, W = 4 then 16
#   N=5000 bench/mixed.sh                smoke run (a few seconds per W)
#
# Each W gets a fresh database (copied from a template holding the extension: job ids start
# at 1). After the pre-load (enqueue_many of up to 10,000 jobs per call): VACUUM ANALYZE,
# CHECKPOINT, then the promoter and the workers start (pgbench -n -M prepared -c W -j min(W,4)
# -D B=10). A monitor session polls awa.queue_counts('mix') every 10 ms; the run ends when
# completed + dlq = N (wall time from the workers' start), then the workers and the promoter
# are stopped. jobs/s = N / wall time.
#
# Checks (printed; exit status 1 if one fails): queue_counts('mix') = queue_counts_exact('mix')
# = completed N - D, dlq D, nothing else, where D = the pre-loaded jobs with job_id % 100 < 5
# (5 % of N); attempts claimed = N + the jobs with 5 <= job_id % 100 < 15 (each retried once);
# no pgbench error; no ERROR/WARNING/FATAL/PANIC line in the server log.
#
# Environment: N (multiple of 100, default 50000), WORKERS (default "4 16"), B (claim batch,
# default 10), MAX_SECONDS (give up a drain after this long, default 600), PORT (default
# 55442), PGBIN, WORKDIR, KEEP=1. Run as root or as postgres.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CMD=""
for v in N WORKERS B MAX_SECONDS PORT; do
	if [ -n "${!v+x}" ]; then CMD+="$v=$(printf %q "${!v}") "; fi
done
CMD+="bench/mixed.sh"

N=${N:-50000}
WORKERS=${WORKERS:-4 16}
B=${B:-10}
MAX_SECONDS=${MAX_SECONDS:-600}
PORT=${PORT:-55442}
SCRIPT_NAME=mixed
if (( N % 100 != 0 || N <= 0 )); then echo "N must be a positive multiple of 100" >&2; exit 2; fi

# shellcheck source=bench/scratch_server.sh
. "$BENCH_DIR/scratch_server.sh"

START_UTC=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
start_scratch_server
sql "CREATE DATABASE bench_tmpl" >/dev/null
DB=bench_tmpl sql "CREATE EXTENSION awa" >/dev/null

CHECK_FAILED=0
ROWS=()
COUNTS=()
NOTES=()

run_one() {
	local w=$1 j left batch
	j=$((w < 4 ? w : 4))
	log "W=$w: fresh database, pre-load $N jobs"
	DB=postgres sql "DROP DATABASE IF EXISTS bench WITH (FORCE)" >/dev/null
	DB=postgres sql "CREATE DATABASE bench TEMPLATE bench_tmpl" >/dev/null
	export DB=bench
	sql "SELECT awa.configure_queue('mix', dlq_enabled => true)" >/dev/null
	left=$N
	while [ "$left" -gt 0 ]; do
		batch=$((left < 10000 ? left : 10000))
		echo "SELECT count(*) FROM awa.enqueue_many(array_fill('send_email'::text, ARRAY[$batch]),
		      ARRAY(SELECT jsonb_build_object('user_id', g) FROM generate_series(1, $batch) AS g), 'mix');"
		left=$((left - batch))
	done | "${PSQL[@]}" -d bench -At >/dev/null
	# The expected outcome, from the pre-loaded job ids.
	local exp_dlq exp_retries
	read -r exp_dlq exp_retries < <(sql "SELECT count(*) FILTER (WHERE job_id % 100 < 5),
		count(*) FILTER (WHERE job_id % 100 >= 5 AND job_id % 100 < 15)
		FROM awa.ready_entries WHERE queue = 'mix'" | tr '|' ' ')
	local want="mix|0|0|0|0|$((N - exp_dlq))|0|0|$exp_dlq"
	sql "VACUUM ANALYZE" >/dev/null
	sql "CHECKPOINT" >/dev/null

	local out="$WORKDIR/logs/mixed_W$w"
	"${PGBENCH[@]}" -n -M prepared -c 1 -T "$MAX_SECONDS" -f "$BENCH_DIR/mixed_promoter.sql" bench >"$out.promoter" 2>&1 &
	local ppid=$!
	BG_PIDS+=("$ppid")
	local t0 t1 wpid rc=0
	t0=$(date +%s.%N)
	"${PGBENCH[@]}" -n -M prepared -c "$w" -j "$j" -T "$MAX_SECONDS" -D B="$B" -f "$BENCH_DIR/mixed_worker.sql" bench >"$out.workers" 2>&1 &
	wpid=$!
	BG_PIDS+=("$wpid")
	# Blocks until completed + dlq = N (counters: shared memory, no snapshot), or MAX_SECONDS.
	sql "DO \$\$
	BEGIN
	    LOOP
	        EXIT WHEN (SELECT completed + dlq FROM awa.queue_counts('mix')) >= $N;
	        IF clock_timestamp() - statement_timestamp() > interval '$MAX_SECONDS seconds' THEN
	            RAISE EXCEPTION 'mixed drain W=$w not finished after $MAX_SECONDS s';
	        END IF;
	        PERFORM pg_sleep(0.01);
	    END LOOP;
	END \$\$" >/dev/null || rc=$?
	t1=$(date +%s.%N)
	# SIGTERM: background jobs of a non-interactive shell ignore SIGINT.
	kill -TERM "$wpid" "$ppid" 2>/dev/null || true
	wait "$wpid" 2>/dev/null || true
	wait "$ppid" 2>/dev/null || true
	BG_PIDS=()
	[ "$rc" = 0 ] || { NOTES+=("W=$w: the drain did not finish (see $out.workers)"); CHECK_FAILED=1; }
	sleep 0.5    # the workers' backends end (their open transactions roll back)

	local wall rate counts exact claimed errors ok=yes
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
	rate=$(awk -v w="$wall" -v n="$N" 'BEGIN {printf "%.0f", n / w}')
	counts=$(sql "SELECT * FROM awa.queue_counts('mix')")
	exact=$(sql "SELECT * FROM awa.queue_counts_exact('mix')")
	claimed=$(sql "SELECT coalesce(sum(claimed_count), 0) FROM awa.lease_claim_batches WHERE queue = 'mix'")
	errors=$(cat "$out.workers" "$out.promoter" | { grep -ciE 'error|abort' || true; })
	if [ "$counts" != "$want" ] || [ "$exact" != "$want" ]; then
		ok=NO; CHECK_FAILED=1
		NOTES+=("W=$w: queue_counts $counts, queue_counts_exact $exact, expected $want")
	fi
	if [ "$claimed" != "$((N + exp_retries))" ]; then
		ok=NO; CHECK_FAILED=1
		NOTES+=("W=$w: $claimed attempts claimed, expected $((N + exp_retries)) (N + $exp_retries retried jobs)")
	fi
	if [ "$errors" != 0 ]; then
		ok=NO; CHECK_FAILED=1
		NOTES+=("W=$w: $errors error line(s) in the pgbench output ($out.*)")
	fi
	ROWS+=("| $w | $B | $N | $wall | $rate | $claimed | $((N - exp_dlq)) / $exp_dlq | $ok |")
	COUNTS+=("| $w | queue_counts | ${counts//|/ | } |" "| $w | queue_counts_exact | ${exact//|/ | } |")
	log "W=$w: $N jobs in $wall s = $rate jobs/s; counts $counts; exact $exact"
}

for w in $WORKERS; do
	run_one "$w"
done

LOG_PROBLEMS=$(server_log_problems)
[ "$LOG_PROBLEMS" = 0 ] || { CHECK_FAILED=1; NOTES+=("server log: $LOG_PROBLEMS ERROR/WARNING/FATAL/PANIC line(s) ($SERVER_LOG)"); }
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

{
	echo "### Mixed drain (complete / retry once / fail to DLQ)"
	echo
	echo "\`$CMD\`, $START_UTC, $(nproc) vCPU, load before/after: $LOAD_START / $LOAD_END."
	echo "Queue mix (dlq_enabled), $N pre-loaded jobs; fate by job_id % 100: < 5 fail, < 15 retry once (delay 0), else complete; promote_due every 100 ms."
	echo
	echo "| workers | batch | jobs | wall s | jobs/s | attempts claimed | expected completed / dlq | checks |"
	echo "|---:|---:|---:|---:|---:|---:|---|---|"
	printf '%s\n' "${ROWS[@]}"
	echo
	echo "| workers | function | queue | available | scheduled | retryable | running | completed | failed | cancelled | dlq |"
	echo "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	printf '%s\n' "${COUNTS[@]}"
	echo
	if [ "${#NOTES[@]}" = 0 ]; then
		echo "- checks: queue_counts = queue_counts_exact = expected, attempts = N + retried, no pgbench or server log errors"
	else
		printf -- '- CHECK FAILED: %s\n' "${NOTES[@]}"
	fi
} | tee "$WORKDIR/result.md"

[ "$CHECK_FAILED" = 0 ]
