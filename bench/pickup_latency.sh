#!/usr/bin/env bash
# bench/pickup_latency.sh: how soon a waiting claim (awa.claim(..., wait)) returns a job after the
# enqueue's commit, and what idle waiters cost.
#
#   bench/pickup_latency.sh                  8 waiters, 200 jobs/s offered for 20 s
#   WAITERS=4 RATE=50 DURATION=5 bench/pickup_latency.sh      smoke run
#
# On a scratch server (bench/scratch_server.sh: stock planner and JIT settings, the maintenance
# worker at its default cadence), WAITERS pgbench clients loop
#     INSERT INTO lat SELECT clock_timestamp() - c.created_at ... FROM awa.claim('lat', 1, NULL, '10 s') c
# then complete the job, while one producer client enqueues RATE jobs/s (pgbench -R), one job per
# transaction with synchronous_commit = off, so the commit follows the enqueue call by
# microseconds and `created_at` (the enqueue call's clock time) stands for the commit time. The
# latency recorded is thus enqueue call -> the claim statement has the job, measured by the
# server's clock. Idle cost: with no producer, the waiters' CPU time (utime + stime from
# /proc/<pid>/stat) over IDLE_S seconds.
#
# Prints a markdown table (also written to $WORKDIR/result.md). Targets (issue 10 §3): p50 <= 1 ms,
# p99 <= 5 ms, idle waiters ~0 CPU. Exit status 1 when a job was lost or the log has errors.
#
# A second load phase ("open") adds a producer that keeps each of its transactions open OPEN_S s
# (default 2; 0 skips the phase) before it commits one job into the same queue, again and again
# (issue 19 §1: no open producer may hold back anyone's jobs).
#
# Environment: WAITERS, RATE, DURATION, IDLE_S, CLAIM_WAIT (s a waiter's claim waits, default 10), OPEN_S,
# PORT (default 55442), PGBIN, WORKDIR, KEEP=1.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WAITERS=${WAITERS:-8}
RATE=${RATE:-200}
DURATION=${DURATION:-20}
IDLE_S=${IDLE_S:-10}
CLAIM_WAIT=${CLAIM_WAIT:-10}
OPEN_S=${OPEN_S:-2}
PORT=${PORT:-55442}
SCRIPT_NAME=pickup-latency
# shellcheck source=bench/scratch_server.sh
source "$BENCH_DIR/scratch_server.sh"

start_scratch_server
sql "CREATE EXTENSION awa"
sql "CREATE TABLE lat (job_id bigint, kind text, ms double precision)"
# The worker loop: wait up to CLAIM_WAIT s for one job, record its pickup latency, complete it.
cat >"$WORKDIR/waiter.sql" <<EOF
WITH c AS (SELECT * FROM awa.claim('lat', 1, NULL, '$CLAIM_WAIT seconds')),
     r AS (INSERT INTO lat SELECT c.job_id, c.kind, extract(epoch FROM clock_timestamp() - c.created_at) * 1000 FROM c)
SELECT count(*) AS n, coalesce(max(job_id), 0) AS j, coalesce(max(run_lease), 0) AS l,
       coalesce(max(receipt_id), 0) AS r FROM c \gset
\if :n > 0
SELECT awa.complete(:j, :l, :r);
\endif
EOF
cat >"$WORKDIR/producer.sql" <<'EOF'
SET synchronous_commit = off;
SELECT awa.enqueue('lat.job', '{}', queue => 'lat');
EOF
cat >"$WORKDIR/open_producer.sql" <<SQL
BEGIN;
SELECT awa.enqueue('lat.held', '{}', queue => 'lat');
SELECT pg_sleep($OPEN_S);
COMMIT;
SQL
chown postgres "$WORKDIR"/*.sql 2>/dev/null || true

log "idle: $WAITERS waiters, no producer, ${IDLE_S} s"
"${PGBENCH[@]}" -n -M prepared -c "$WAITERS" -j 2 -T $((IDLE_S + CLAIM_WAIT + 2)) -f "$WORKDIR/waiter.sql" postgres \
	>"$WORKDIR/logs/idle.txt" 2>&1 &
BG_PIDS+=($!)
sleep 2
pids=$(sql "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity WHERE query LIKE '%awa.claim(''lat''%' AND pid <> pg_backend_pid()")
ticks() { local t=0 p; for p in $pids; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
t0=$(ticks)
sleep "$IDLE_S"
t1=$(ticks)
hz=$(getconf CLK_TCK)
idle_cpu_ms=$(( (t1 - t0) * 1000 / hz ))
wait "${BG_PIDS[-1]}" || true

# One load phase: WAITERS waiters and the producer at RATE jobs/s for DURATION s; with $1 = open,
# one more producer loops BEGIN; enqueue; sleep OPEN_S; COMMIT on the same queue (the outside
# finding of issue 19: such a transaction delayed everyone's jobs by a second). Latencies are of
# the RATE producer's jobs only; the held jobs are counted apart.
run_load() {
	local phase=$1
	log "load ($phase): $WAITERS waiters, $RATE jobs/s for ${DURATION} s"
	sql "TRUNCATE lat"
	"${PGBENCH[@]}" -n -M prepared -c "$WAITERS" -j 2 -T $((DURATION + 3)) -f "$WORKDIR/waiter.sql" postgres \
		>"$WORKDIR/logs/waiters-$phase.txt" 2>&1 &
	BG_PIDS+=($!)
	local waiters_pid=$!
	if [ "$phase" = open ]; then
		"${PGBENCH[@]}" -n -c 1 -T "$DURATION" -f "$WORKDIR/open_producer.sql" postgres \
			>"$WORKDIR/logs/open-producer.txt" 2>&1 &
		BG_PIDS+=($!)
	fi
	sleep 1
	"${PGBENCH[@]}" -n -M prepared -c 1 -R "$RATE" -T "$DURATION" -f "$WORKDIR/producer.sql" postgres \
		>"$WORKDIR/logs/producer-$phase.txt" 2>&1
	wait "$waiters_pid" || true
	if [ "$phase" = open ]; then wait "${BG_PIDS[-1]}" || true; fi
	read -r jobs p50 p90 p99 pmax <<<"$(sql "SELECT count(*), round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 3),
	  round(percentile_cont(0.9) WITHIN GROUP (ORDER BY ms)::numeric, 3), round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 3),
	  round(max(ms)::numeric, 3) FROM lat WHERE kind = 'lat.job'" | tr '|' ' ')"
	held=$(sql "SELECT count(*) FROM lat WHERE kind = 'lat.held'")
	# What the waiters left (the last held job commits as they stop) is claimed and completed here.
	sql "SELECT count(awa.complete(job_id, run_lease, receipt_id)) FROM awa.claim('lat', 1000)" >/dev/null
	echo "| $phase | $jobs | $held | $p50 / $p90 / $p99 / $pmax |" >>"$WORKDIR/phases.md"
}

: >"$WORKDIR/phases.md"
run_load clean
if [ "$OPEN_S" != 0 ]; then
	run_load open
fi
left=$(sql "SELECT coalesce(sum(available + running), 0) FROM awa.queue_counts('lat')")
problems=$(server_log_problems)

{
	echo "## Pickup latency of waiting claims ($(date -u +%Y-%m-%d), $(nproc) cores)"
	echo
	echo "Command: \`WAITERS=$WAITERS RATE=$RATE DURATION=$DURATION IDLE_S=$IDLE_S CLAIM_WAIT=$CLAIM_WAIT OPEN_S=$OPEN_S bench/pickup_latency.sh\`"
	echo
	echo "| phase | jobs picked up | held jobs picked up | latency p50 / p90 / p99 / max, ms |"
	echo "|---|---:|---:|---:|"
	cat "$WORKDIR/phases.md"
	echo
	echo "| measure | value |"
	echo "|---|---:|"
	echo "| jobs left unclaimed at the end | $left |"
	echo "| CPU of $WAITERS idle waiters over ${IDLE_S} s, ms | $idle_cpu_ms |"
	echo "| server log ERROR/WARNING/FATAL lines | $problems |"
} | tee "$WORKDIR/result.md"
[ "$left" = 0 ] && [ "$problems" = 0 ]
