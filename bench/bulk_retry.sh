#!/usr/bin/env bash
# bulk_retry.sh: a bulk retry of many dead-lettered jobs beside a queue's normal load (issue 22 §2).
# On a scratch server (bench/scratch_server.sh), the maintenance worker on at its cadence:
#   - DLQ jobs (default 100,000) of queue `dead` are made by enqueueing and failing them;
#   - the load: LOAD_CLIENTS pgbench clients at LOAD_RATE transactions/s in all, half of them a
#     producer's enqueue of one job of queue `live`, half a worker's claim of one job and its
#     completion (one statement);
#   - phase "quiet": the load alone for PHASE_S seconds; phase "bulk": the same load while one
#     session runs awa.bulk_step(op, STEP) to the end of a dlq_retry of every `dead` job (each
#     step its own transaction, PAUSE_MS between steps, none by default; one connection, as an
#     application or the web UI steps it), then the load goes on until PHASE_S.
# Per phase: the claims' own time (pgbench's log of every transaction, schedule lag taken off):
# p50, p99, max; the bulk's duration and jobs/s. The issue's target: no claim in
# the bulk phase slower than 2x the quiet phase's p99.
# With SAMPLE_WAITS=1, a session samples pg_stat_activity every 10 ms during both phases and the
# report adds, per phase, what the load's and the bulk's backends were doing (wait events; "CPU" is
# an active backend with none), and the machine's busy CPU share per phase (/proc/stat).
# Usage: bench/bulk_retry.sh   (as root or postgres; DLQ_JOBS, LOAD_CLIENTS (4), LOAD_RATE (400),
# PHASE_S (30), STEP (500), PAUSE_MS (0), SAMPLE_WAITS (0); PORT, PGBIN, WORKDIR, KEEP=1 as in
# bench/scratch_server.sh).
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
SAMPLE_WAITS=${SAMPLE_WAITS:-0}
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

sql "CREATE TABLE public.wait_samples (phase text, tick int, who text, what text, at timestamptz DEFAULT clock_timestamp())" >/dev/null
sql "CREATE PROCEDURE public.sample_waits(phase text, seconds float8) LANGUAGE plpgsql AS \$\$
  DECLARE stop timestamptz := clock_timestamp() + seconds * interval '1 second'; n int := 0;
  BEGIN
    WHILE clock_timestamp() < stop LOOP
      n := n + 1;
      INSERT INTO public.wait_samples (phase, tick, who, what)
        SELECT phase, n,
               CASE WHEN a.backend_type <> 'client backend' THEN a.backend_type
                    WHEN a.query LIKE '%awa.claim(%' THEN 'claim'
                    WHEN a.query LIKE '%awa.enqueue(%' THEN 'enqueue'
                    WHEN a.query LIKE '%run_bulk%' THEN 'bulk step'
                    ELSE 'other' END,
               coalesce(a.wait_event_type || ':' || a.wait_event, 'CPU')
          FROM pg_stat_activity a
         WHERE a.pid <> pg_backend_pid() AND a.state IS DISTINCT FROM 'idle'
           AND a.backend_type IN ('client backend', 'awa maintenance worker', 'walwriter', 'checkpointer',
                                  'autovacuum worker', 'background writer')
           AND NOT (a.backend_type <> 'client backend' AND a.wait_event_type = 'Activity');
      COMMIT;
      PERFORM pg_sleep(0.01);
    END LOOP;
  END \$\$" >/dev/null
# The steps run in one session, as an application (or the web UI) runs them:
# each step its own transaction, PAUSE_MS between steps.
# Each step's time goes to public.step_times (a step whose time grows with
# the steps before it would make the operation quadratic).
sql "CREATE TABLE public.step_times (step int, ms float8)" >/dev/null
sql "CREATE PROCEDURE public.run_bulk(op bigint, step int, pause_ms int) LANGUAGE plpgsql AS \$\$
  DECLARE st text := 'running'; n int := 0; t timestamptz;
  BEGIN
    WHILE st = 'running' LOOP
      t := clock_timestamp();
      SELECT b.state INTO st FROM awa.bulk_step(op, step) b;
      COMMIT;
      n := n + 1;
      INSERT INTO public.step_times VALUES (n, extract(epoch FROM clock_timestamp() - t) * 1000);
      COMMIT;
      IF pause_ms > 0 AND st = 'running' THEN
        PERFORM pg_sleep(pause_ms / 1000.0);
      END IF;
    END LOOP;
  END \$\$" >/dev/null
cpu_busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8}' /proc/stat; }
sample_phase() { # sample_phase PHASE: in the background, for the phase's length
	if [ "$SAMPLE_WAITS" = 1 ]; then
		sql "CALL public.sample_waits('$1', $PHASE_S)" >/dev/null &
		BG_PIDS+=("$!")
	fi
}
busy_share() { # busy_share "B0 T0" "B1 T1": the busy share of all CPUs between two readings
	awk -v a="$1" -v b="$2" 'BEGIN {split(a, x, " "); split(b, y, " "); if (y[2] == x[2]) print "n/a (no time)"; else printf "%.0f%%", 100 * (y[1] - x[1]) / (y[2] - x[2])}'
}

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
c0=$(cpu_busy)
sample_phase quiet
run_load quiet
c1=$(cpu_busy)
log "phase bulk: the load, and a dlq_retry of $DLQ_JOBS jobs in steps of $STEP"
c2=$(cpu_busy)
sample_phase bulk
run_load bulk &
load_pid=$!
BG_PIDS+=("$load_pid")
sleep 2
op=$(sql "SELECT awa.bulk_start('dlq_retry', queue => 'dead')")
t0=$(date +%s.%N)
sql "CALL public.run_bulk($op, $STEP, $PAUSE_MS)" >/dev/null
steps=$(sql "SELECT steps FROM awa.bulk_operations WHERE op_id = $op")
t1=$(date +%s.%N)
c3=$(cpu_busy)
wait "$load_pid"
c4=$(cpu_busy)
wait
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
	echo "step time (commit included), median ms: first 20 steps $(sql "SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) FROM public.step_times WHERE step <= 20"), last 20 steps $(sql "SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) FROM public.step_times WHERE step > (SELECT max(step) - 20 FROM public.step_times)")"
	echo "left in the DLQ: $(sql "SELECT count(*) FROM awa.dlq"); available in dead: $(sql "SELECT available FROM awa.queue_counts('dead')")"
	echo "busy CPU (both cores): quiet $(busy_share "$c0" "$c1"); bulk phase while the retry ran $(busy_share "$c2" "$c3"), after it $(busy_share "$c3" "$c4")"
	if [ "$SAMPLE_WAITS" = 1 ]; then
		echo
		echo "Samples of active backends every 10 ms (share of each backend kind's samples in its phase):"
		echo
		sql "SELECT format('| %s | %s | %s | %s |', p, who, what, round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY p, who), 1))
		       FROM (SELECT CASE WHEN phase = 'quiet' THEN '1 quiet'
		                         WHEN at BETWEEN to_timestamp($t0) AND to_timestamp($t1) THEN '2 bulk, retry running'
		                         ELSE '3 bulk, after the retry' END AS p, who, what
		               FROM public.wait_samples) s
		      GROUP BY p, who, what ORDER BY p, who, count(*) DESC" |
			{ echo "| phase | backend | doing | % |"; echo "|---|---|---|---:|"; cat; }
	fi
} | tee "$WORKDIR/result.md"
