#!/usr/bin/env bash
# bench/fairness.sh: fair share between keys (issue 21 §3; docs/flow-control.md, "Fair share between
# keys").
#
# On a scratch server (bench/scratch_server.sh, configured as bench/run.sh's; the maintenance worker at
# its default cadence):
#   1. Pickup latency of small keys. SMALL_KEYS keys each get SMALL_RATE jobs per second (one pgbench
#      producer at -R SMALL_KEYS*SMALL_RATE, a random small key per job) for DURATION seconds while
#      CLIENTS consumers claim one job, record its pickup (claim time - enqueue time) and complete it.
#      Three cells: no backlog; a BACKLOG-job backlog of one big key, fairness 'key'; the same backlog,
#      fairness 'none' (first come: the big key's older jobs go first, so small keys may get none while
#      it lasts: '-'). Reported: the small keys' pickup p50/p99 and the ratio of each p99 to the cell
#      without backlog (target with fairness 'key': <= 2).
#   2. Shares by weight. WEIGHTS.len keys with weights WEIGHTS, each a backlog of SATURATED jobs, CLIENTS
#      consumers for DURATION seconds: claims per key against its weight's share, and Jain's index of
#      claims/weight over the keys (target >= 0.95).
# Prints markdown tables (also $WORKDIR/result.md).
#
#   bench/fairness.sh      CLIENTS=4 DURATION=20 SMALL_KEYS=20 SMALL_RATE=10 BACKLOG=100000 WEIGHTS="1 2 3 4"
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
CLIENTS=${CLIENTS:-4}
DURATION=${DURATION:-20}
SMALL_KEYS=${SMALL_KEYS:-20}
SMALL_RATE=${SMALL_RATE:-10}
BACKLOG=${BACKLOG:-100000}
WEIGHTS=${WEIGHTS:-"1 2 3 4"}
SATURATED=${SATURATED:-50000}
PORT=${PORT:-55497}
SCRIPT_NAME=fairness

# shellcheck source=bench/scratch_server.sh
. "$BENCH_DIR/scratch_server.sh"

start_scratch_server
sql "CREATE DATABASE bench" >/dev/null
DB=bench sql "CREATE EXTENSION awa" >/dev/null
export DB=bench
sql "CREATE TABLE picks (cell text, key text, pickup_ms float8);
     CREATE FUNCTION consume(q text, cell text) RETURNS void LANGUAGE plpgsql AS \$\$
     DECLARE j record;
     BEGIN
       FOR j IN SELECT * FROM awa.claim(q, 1) LOOP
         INSERT INTO picks VALUES (cell, j.args->>'key', extract(epoch FROM clock_timestamp() - j.created_at) * 1000);
         PERFORM awa.complete(j.job_id, j.run_lease, j.receipt_id);
       END LOOP;
     END \$\$;" >/dev/null
printf "SELECT consume(':q', ':cell');\n" >"$WORKDIR/consume.sql"
printf "\\\\set k random(1, %d)\nSELECT awa.enqueue('small', jsonb_build_object('key', 'small-' || :k), ':q', opts => jsonb_build_object('concurrency_key', 'small-' || :k));\n" \
	"$SMALL_KEYS" >"$WORKDIR/produce.sql"
if [ "$(id -u)" = 0 ]; then chown -R postgres "$WORKDIR"; fi

pickup_cell() {  # pickup_cell NAME BACKLOG FAIRNESS
	local q="fq_$1"
	sql "SELECT awa.configure_queue('$q', fairness => '$3')" >/dev/null
	if [ "$2" -gt 0 ]; then
		sql "SELECT count(*) FROM awa.enqueue_many(array_fill('big'::text, ARRAY[$2]), array_fill('{\"key\": \"big\"}'::jsonb, ARRAY[$2]),
		       '$q', opts => array_fill('{\"concurrency_key\": \"big\"}'::jsonb, ARRAY[$2]))" >/dev/null
	fi
	sql "CHECKPOINT" >/dev/null
	as_pg "${PGBENCH[@]}" -n -c 1 -R $((SMALL_KEYS * SMALL_RATE)) -T "$DURATION" -D "q=$q" -f "$WORKDIR/produce.sql" bench \
		>"$WORKDIR/produce_$1.log" 2>&1 &
	local producer=$!
	as_pg "${PGBENCH[@]}" -n -c "$CLIENTS" -j 2 -T "$DURATION" -D "q=$q" -D "cell=$1" -f "$WORKDIR/consume.sql" bench \
		>"$WORKDIR/consume_$1.log" 2>&1
	wait "$producer"
}

pickup_cell nobacklog 0 key
pickup_cell backlog_fair "$BACKLOG" key
pickup_cell backlog_fifo "$BACKLOG" none

{
	echo "Small keys' pickup ($SMALL_KEYS keys x $SMALL_RATE jobs/s, $CLIENTS consumers, ${DURATION}s; big key backlog $BACKLOG):"
	echo
	echo "| cell | small jobs picked | big jobs picked | p50 ms | p99 ms | p99 / no backlog |"
	echo "|---|---|---|---|---|---|"
	sql "WITH s AS (SELECT cell, count(*) FILTER (WHERE key <> 'big') AS small, count(*) FILTER (WHERE key = 'big') AS big,
	             percentile_cont(0.5) WITHIN GROUP (ORDER BY pickup_ms) FILTER (WHERE key <> 'big') AS p50,
	             percentile_cont(0.99) WITHIN GROUP (ORDER BY pickup_ms) FILTER (WHERE key <> 'big') AS p99
	        FROM picks GROUP BY cell)
	     SELECT format('| %s | %s | %s | %s | %s | %s |', cell, small, big, coalesce(round(p50::numeric, 1)::text, '-'),
	                   coalesce(round(p99::numeric, 1)::text, '-'),
	                   coalesce(round((p99 / (SELECT p99 FROM s WHERE cell = 'nobacklog'))::numeric, 2)::text, '-'))
	       FROM s ORDER BY array_position(ARRAY['nobacklog', 'backlog_fair', 'backlog_fifo'], cell)"
	echo
} | tee "$WORKDIR/result.md"

# Shares by weight.
q=fw
sql "SELECT awa.configure_queue('$q', fairness => 'key')" >/dev/null
i=0
for w in $WEIGHTS; do
	i=$((i + 1))
	sql "SELECT awa.set_key_weight('$q', 'w$i', $w)" >/dev/null
	sql "SELECT count(*) FROM awa.enqueue_many(array_fill('w'::text, ARRAY[$SATURATED]), array_fill('{\"key\": \"w$i\"}'::jsonb, ARRAY[$SATURATED]),
	       '$q', opts => array_fill('{\"concurrency_key\": \"w$i\"}'::jsonb, ARRAY[$SATURATED]))" >/dev/null
done
sql "CHECKPOINT" >/dev/null
as_pg "${PGBENCH[@]}" -n -c "$CLIENTS" -j 2 -T "$DURATION" -D "q=$q" -D "cell=weights" -f "$WORKDIR/consume.sql" bench \
	>"$WORKDIR/consume_weights.log" 2>&1
{
	echo "Shares by weight (weights $WEIGHTS, each key $SATURATED jobs, $CLIENTS consumers, ${DURATION}s):"
	echo
	echo "| key | weight | claims | share | weight's share |"
	echo "|---|---|---|---|---|"
	sql "WITH c AS (SELECT key, count(*) AS n FROM picks WHERE cell = 'weights' GROUP BY key),
	          w AS (SELECT concurrency_key AS key, weight FROM awa.key_weights WHERE queue = '$q')
	     SELECT '| ' || c.key || ' | ' || w.weight || ' | ' || c.n || ' | ' || round(c.n::numeric / sum(c.n) OVER (), 3)
	            || ' | ' || round(w.weight::numeric / sum(w.weight) OVER (), 3) || ' |'
	       FROM c JOIN w USING (key) ORDER BY c.key"
	echo
	sql "WITH c AS (SELECT key, count(*) AS n FROM picks WHERE cell = 'weights' GROUP BY key),
	          x AS (SELECT c.n::float8 / w.weight AS v FROM c JOIN awa.key_weights w ON w.concurrency_key = c.key AND w.queue = '$q')
	     SELECT 'Jain''s index of claims/weight: ' || round((sum(v) ^ 2 / (count(*) * sum(v ^ 2)))::numeric, 4) FROM x"
} | tee -a "$WORKDIR/result.md"
