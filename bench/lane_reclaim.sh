#!/bin/bash
# bench/lane_reclaim.sh: what the lane reclaim costs at N lanes.
#
# Makes a database with N drained, empty lanes (rows inserted with both cursors
# at 0, as a producer that rolled back leaves them), then times:
#   look:    one pass of awa._reclaim_idle_lanes(1000, 86400) over 1,000 lanes
#            none of which is idle long enough (the worker's every-10 s pass
#            on a database whose lanes are all in use or recent);
#   round:   the passes of 1,000 lanes over all N with that idle time (N / 1000
#            passes: the worker's round);
#   reclaim: the passes of 1,000 lanes that reclaim all N (idle time 0; at
#            most 100 reclaimed per pass, the worker's);
#   one:     one pass that reclaims 100 lanes (what a producer of a lane
#            reclaimed in it may wait for);
# and the relations in schema awa and the size of awa.queue_lanes before and
# after. Usage: PGBIN=... PORT=... HOST=... N="10000 100000 1000000" bench/lane_reclaim.sh
set -euo pipefail
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PORT=${PORT:-5432}
HOST=${HOST:-/tmp}
N=${N:-"10000 100000 1000000"}
psql() { "$PGBIN/psql" -X -q -h "$HOST" -p "$PORT" -U postgres -v ON_ERROR_STOP=1 "$@"; }
for n in $N; do
	psql -d postgres -c "DROP DATABASE IF EXISTS awa_lane_reclaim_bench" -c "CREATE DATABASE awa_lane_reclaim_bench"
	psql -d awa_lane_reclaim_bench -c "CREATE EXTENSION awa" -c "
		INSERT INTO awa.queue_lanes (lane_id, priority, queue, concurrency_key)
		SELECT nextval('awa.queue_lane_id_seq'), 2, 'bench', 'key' || i FROM generate_series(1, $n) i" \
		-c "VACUUM ANALYZE awa.queue_lanes"
	out=$(psql -d awa_lane_reclaim_bench -At <<SQL
SET awa.lane_reclaim_after = -1;
SELECT count(*) FROM pg_class WHERE relnamespace = 'awa'::regnamespace;
SELECT pg_total_relation_size('awa.queue_lanes');
\timing on
SELECT (awa._reclaim_idle_lanes(1000, 86400))[1];
\timing off
SELECT clock_timestamp() AS t0 \gset
DO \$\$ BEGIN FOR i IN 1 .. ($n + 999) / 1000 LOOP PERFORM awa._reclaim_idle_lanes(1000, 86400); END LOOP; END \$\$;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0') * 1000);
SELECT clock_timestamp() AS t1 \gset
DO \$\$ BEGIN WHILE EXISTS (SELECT FROM awa.queue_lanes) LOOP PERFORM awa._reclaim_idle_lanes(1000, 0); END LOOP; END \$\$;
SELECT round(extract(epoch FROM clock_timestamp() - :'t1') * 1000);
INSERT INTO awa.queue_lanes (lane_id, priority, queue, concurrency_key)
SELECT nextval('awa.queue_lane_id_seq'), 2, 'bench', 'again' || i FROM generate_series(1, 1000) i;
\timing on
SELECT (awa._reclaim_idle_lanes(1000, 0))[3];
\timing off
SELECT count(*) FROM awa.queue_lanes;
SELECT count(*) FROM pg_class WHERE relnamespace = 'awa'::regnamespace;
SQL
)
	echo "N=$n"; echo "$out" | sed 's/^/  /'
done
psql -d postgres -c "DROP DATABASE IF EXISTS awa_lane_reclaim_bench"
