#!/usr/bin/env bash
# bulk_retry.sh: a bulk retry of many dead-lettered jobs beside a queue's normal load (issue 22 §2).
# On a scratch server (bench/scratch_server.sh), the maintenance worker on at its cadence:
#   - DLQ jobs (default 100,000) of queue `dead` are made by enqueueing and failing them;
#   - the load: LOAD_CLIENTS pgbench clients at LOAD_RATE transactions/s in all, half of them a
#     producer's enqueue of one job of queue `live`, half a worker's claim of one job and its
#     completion (one statement);
#   - phase "quiet": the load alone for PHASE_S seconds; phase "bulk": the same load while one
#     session runs awa.bulk_step(op, STEP) to the end of a dlq_retry of every `dead` job (each
#     step its own transaction, PAUSE_MS between steps, none by default), then the load goes on
#     until PHASE_S.
# Per phase: the claims' own time (pgbench's log of every transaction, schedule lag taken off):
# p50, p99, max; the bulk's duration and jobs/s. The issue's target: no claim in
# the bulk phase slower than 2x the quiet phase's p99.
# Usage: bench/bulk_retry.sh   (as root or postgres; DLQ_JOBS, LOAD_CLIENTS (4), LOAD_RATE (400),
# PHASE_S (30), STEP (500), PAUSE_MS (0); PORT, PGBIN, WORKDIR, KEEP=1 as in bench/scratch_server.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PORT=${PORT:-55451}
SCRIPT_NAME=bulk-retry
DLQ_JOBS=${DLQ_JOBS:-100000}
LOAD_CLIENTS=${LOAD_CLIENTS:-4}
LOAD_RATE=${LOAD_RATE:-400}
PHASE_S=${PHASE_S:-30}
STEP=${STEP:-500}
PAUSE_MS=${PAUSE_MS:-0}
# shellcheck source=bench/scratch_server.sh
source "$here/scratch_server.sh"
start_scratch_server
sql "CREATE EXTENSION awa" >/dev/null
sql "SELECT awa.configure_queue('dead', dlq_enabled => true)" >/dev/null

log "making $DLQ_JOBS dead-lettered jobs"
sql "CREATE PROCEDURE public.make_dead(n int) LANGUAGE plpgsql AS \$\$
  DECLARE c record;
  BEGIN
    FOR i IN 0 .. (n - 1) / 1000 LOOP
      PERFORM awa.enqueue_many(array_fill('k'::text, ARRAY[least(1000, n - i * 1000)]),
                               array_fill('{\"x\": 1}'::jsonb, ARRAY[least(1000, n - i * 1000)]), 'dead');
      COMMIT;
      FOR c IN SELECT * FROM awa.claim('dead', 1000) LOOP
        PERFORM awa.fail(c.job_id, c.run_lease, c.receipt_id, 'bench failure');
      END LOOP;
      COMMIT;
    END LOOP;
  END \$\$" >/dev/null
sql "CALL public.make_dead($DLQ_JOBS)" >/dev/null
log "in the DLQ: $(sql "SELECT count(*) FROM awa.dlq")"
# A backlog so that every claim of the load finds a job.
sql "SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[20000]), NULL, 'live')" >/dev/null
sql "VACUUM ANALYZE" >/dev/null

cat >"$WORKDIR/enqueue.sql" <<'EOF'
SELECT awa.enqueue('k', '{"x": 1}', 'live');
EOF
cat >"$WORKDIR/claim.sql" <<'EOF'
SELECT awa.complete(job_id, run_lease, receipt_id) FROM awa.claim('live', 1);
EOF
chown postgres "$WORKDIR"/*.sql 2>/dev/null || true

run_load() { # run_load PHASE: pgbench for PHASE_S s, every transaction logged
	(cd "$WORKDIR/logs" && as_pg "${PGBENCH[@]}" -n -c "$LOAD_CLIENTS" -j "$LOAD_CLIENTS" -R "$LOAD_RATE" -T "$PHASE_S" \
		-f "$WORKDIR/enqueue.sql@1" -f "$WORKDIR/claim.sql@1" -r -l --log-prefix="$1" postgres >"$WORKDIR/pgbench-$1.txt" 2>&1)
}

# Each pgbench transaction is one of two scripts, chosen at random with equal weight: an enqueue
# (script 0) or a claim of one job and its completion (script 1). The log has one line per
# transaction: its script number (column 4), its latency (column 3, in µs, counted from its
# scheduled start under --rate) and its schedule lag (column 7); a claim's own time is latency -
# lag. (With the lag, the figures would measure pgbench's queue behind a busy 2-core machine.)
pct() { # pct FILE...: p50 p99 max of the claims' own time in pgbench's -l logs, in ms
	cat "$@" | awk '$4 == 1 {print $3 - $7}' | sort -n | awk '{a[NR] = $1}
		END {
			if (NR == 0) { print "NA NA NA"; exit }
			i50 = int(NR * 0.5) + 1; i99 = int(NR * 0.99) + 1; if (i99 > NR) i99 = NR
			printf "%.2f %.2f %.2f\n", a[i50] / 1000, a[i99] / 1000, a[NR] / 1000
		}'
}

log "phase quiet: the load alone, $PHASE_S s"
run_load quiet
log "phase bulk: the load, and a dlq_retry of $DLQ_JOBS jobs in steps of $STEP"
run_load bulk &
load_pid=$!
BG_PIDS+=("$load_pid")
sleep 2
op=$(sql "SELECT awa.bulk_start('dlq_retry', queue => 'dead')")
t0=$(date +%s.%N)
state=running
steps=0
while [ "$state" = running ]; do
	state=$(sql "SELECT state FROM awa.bulk_step($op, $STEP)")
	steps=$((steps + 1))
	if [ "$PAUSE_MS" -gt 0 ] && [ "$state" = running ]; then sleep "$(awk -v m="$PAUSE_MS" 'BEGIN {print m / 1000}')"; fi
done
t1=$(date +%s.%N)
wait "$load_pid"
bulk_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
acted=$(sql "SELECT acted FROM awa.bulk_operations WHERE op_id = $op")
read -r q50 q99 qmax < <(pct "$WORKDIR"/logs/quiet.*)
read -r b50 b99 bmax < <(pct "$WORKDIR"/logs/bulk.*)
{
	echo "| phase | claims (claim + complete) | p50 ms | p99 ms | max ms |"
	echo "|---|---:|---:|---:|---:|"
	echo "| quiet | $(cat "$WORKDIR"/logs/quiet.* | awk '$4 == 1' | wc -l) | $q50 | $q99 | $qmax |"
	echo "| bulk | $(cat "$WORKDIR"/logs/bulk.* | awk '$4 == 1' | wc -l) | $b50 | $b99 | $bmax |"
	echo
	echo "bulk: $acted jobs retried in $steps steps of $STEP (pause $PAUSE_MS ms), $bulk_s s ($(awk -v n="$acted" -v s="$bulk_s" 'BEGIN {printf "%.0f", n / s}') jobs/s);" \
		"bulk p99 / quiet p99 = $(awk -v a="$b99" -v b="$q99" 'BEGIN {printf "%.2f", a / b}');" \
		"bulk max / quiet p99 = $(awk -v a="$bmax" -v b="$q99" 'BEGIN {printf "%.2f", a / b}')"
	echo "left in the DLQ: $(sql "SELECT count(*) FROM awa.dlq"); available in dead: $(sql "SELECT available FROM awa.queue_counts('dead')")"
} | tee "$WORKDIR/result.md"
