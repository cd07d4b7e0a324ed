#!/usr/bin/env bash
# bench/many_queues.sh: per-call costs as the number of queues grows (issue 10 §5).
#
#   bench/many_queues.sh                 10, 1,000 and 10,000 queues, 20 jobs each
#   COUNTS="10 1000" bench/many_queues.sh
#
# On a scratch server (bench/scratch_server.sh: stock planner and JIT settings, the maintenance
# worker at its default cadence), for each N: N queues get 20 available jobs each (one
# enqueue_many per queue), then, timed server-side (clock_timestamp around the call, median of
# REPS calls): awa.queue_counts() for all queues, awa.queue_counts('q1'), one
# awa.run_maintenance('prune'), one whole awa.run_maintenance(), 17 rotations each followed by a
# prune (a whole wrap of the 16-slot queue ring, so the slot holding the jobs is pruned and its
# rows carried forward), an enqueue, and a claim plus complete on one queue. Also the relations in the catalog and the shared memory awa uses. Prints
# a markdown table (also $WORKDIR/result.md). Targets: with 1,000 queues queue_counts() <= 10 ms and
# one maintenance pass <= 100 ms; 10,000 queues work with no fallback (no WARNING in the log).
#
# Environment: COUNTS, REPS (default 5), PORT (default 55443), PGBIN, WORKDIR, KEEP=1.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
COUNTS=${COUNTS:-10 1000 10000}
REPS=${REPS:-5}
PORT=${PORT:-55443}
SCRIPT_NAME=many-queues
# shellcheck source=bench/scratch_server.sh
source "$BENCH_DIR/scratch_server.sh"

start_scratch_server
rows=()
for n in $COUNTS; do
	sql "CREATE DATABASE mq$n" >/dev/null
	DB=mq$n sql "CREATE EXTENSION awa"
	log "N=$n: enqueue 20 jobs into each of $n queues"
	DB=mq$n sql "DO \$\$ BEGIN FOR i IN 1..$n LOOP PERFORM awa.enqueue_many(array_fill('k'::text, ARRAY[20]), NULL, queue => 'q' || i); IF i % 500 = 0 THEN COMMIT; END IF; END LOOP; END \$\$"
	run() {
		PGOPTIONS="-c client_min_messages=warning" "${PSQL[@]}" -d "mq$n" -At -c "CREATE FUNCTION pg_temp.ms(q text, reps int) RETURNS numeric LANGUAGE plpgsql AS \$f\$
DECLARE t timestamptz; v numeric[] := '{}';
BEGIN
  FOR i IN 1..reps LOOP t := clock_timestamp(); EXECUTE q; v := v || extract(epoch FROM clock_timestamp() - t)::numeric * 1000; END LOOP;
  RETURN (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY x)::numeric, 2) FROM unnest(v) x);
END \$f\$" -c "SELECT pg_temp.ms(\$q\$$1\$q\$, $REPS)" | tail -1
	}
	counts_all=$(run "SELECT count(*) FROM awa.queue_counts()")
	counts_one=$(run "SELECT * FROM awa.queue_counts('q1')")
	prune=$(run "SELECT * FROM awa.run_maintenance('prune')")
	whole=$(run "SELECT * FROM awa.run_maintenance()")
	enqueue=$(run "SELECT awa.enqueue('k', '{}', queue => 'q2')")
	claim=$(run "SELECT awa.complete(job_id, run_lease, receipt_id) FROM awa.claim('q3', 1)")
	# A wrap of the queue ring: every slot, the one holding the jobs included, comes up for prune.
	wrap=$(run "DO \$d\$ BEGIN FOR i IN 1..17 LOOP PERFORM awa.run_maintenance('rotate'); PERFORM awa.run_maintenance('prune'); END LOOP; END \$d\$" )
	rels=$(DB=mq$n sql "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'awa'")
	exact=$(DB=mq$n sql "SELECT (SELECT count(*) FROM awa.queue_counts()) = $n AND NOT EXISTS (SELECT FROM awa.queue_counts() c JOIN awa.queue_counts_exact() e USING (queue) WHERE (c.available, c.running) <> (e.available, e.running))")
	rows+=("| $n | $counts_all | $counts_one | $prune | $whole | $wrap | $enqueue | $claim | $rels | $exact |")
done
problems=$(server_log_problems)
{
	echo "## Per-call cost against the number of queues ($(date -u +%Y-%m-%d), $(nproc) cores, median of $REPS calls, ms)"
	echo
	echo "Command: \`COUNTS=\"$COUNTS\" REPS=$REPS bench/many_queues.sh\`"
	echo
	echo "| queues | queue_counts() all | queue_counts(one) | run_maintenance('prune') | run_maintenance() | 17 x (rotate + prune), a whole wrap | enqueue | claim + complete | awa relations | counts = exact |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
	printf '%s\n' "${rows[@]}"
	echo
	echo "Server log ERROR/WARNING/FATAL lines: $problems"
} | tee "$WORKDIR/result.md"
