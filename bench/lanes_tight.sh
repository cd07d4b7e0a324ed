#!/usr/bin/env bash
# bench/lanes_tight.sh: server-side per-call time of an enqueue and of a claim + complete into a
# random one of N lanes, each call its own transaction (a DO loop with COMMIT after each call),
# synchronous_commit = off in the session so no call waits for a WAL flush: the time is the
# call's own (CPU), without client round trips or fsync. A companion of bench/lanes.sh, whose
# pgbench figures on a shared 2-core machine are dominated by commit flushes and neighbours.
#
#   BUILDS="old=/opt/a/bin new=/opt/b/bin" COUNTS="10 1000" CALLS=20000 REPS=3 bench/lanes_tight.sh
#
# For each N, each build gets a fresh cluster (as bench/lanes.sh: stock settings, awa preloaded,
# awa.max_queues_per_database = 200000, awa.maintenance_enabled = off) with N lanes (q1..qN,
# priority 2) and enough jobs; then REPS times, alternating enqueue and claim: CALLS calls,
# µs per call from clock_timestamp() around the loop. Prints a Markdown table, one row per
# (N, build), to stdout and $WORKDIR/result.md.
# Environment: BUILDS ("label=bindir ..."; default "build=$PGBIN"), PGBIN, COUNTS (default "10 1000"), CALLS (default 20000), REPS (default 3),
# PORT (default 5493), WORKDIR.
set -euo pipefail
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
BUILDS=${BUILDS:-build=$PGBIN}
COUNTS=${COUNTS:-10 1000}
CALLS=${CALLS:-20000}
REPS=${REPS:-3}
PORT=${PORT:-5493}
WORKDIR=${WORKDIR:-$(mktemp -d /tmp/awa-lanes-tight.XXXXXX)}
mkdir -p "$WORKDIR"
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
if [ "$(id -u)" = 0 ]; then chown postgres "$WORKDIR"; fi
DATA='' BIN=''
trap '[ -n "$DATA" ] && as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null 2>&1; exit' EXIT
q() { PGOPTIONS="-c client_min_messages=warning -c synchronous_commit=off" as_pg "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$WORKDIR" -p "$PORT" -U postgres -d bench -At "$@"; }
# µs per call of a loop of CALLS calls of $1 (i: a random queue index), one transaction each.
per_call() {
	q -c "DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); i int; BEGIN FOR k IN 1..$CALLS LOOP i := 1 + floor(random() * $N)::int; $1; COMMIT; END LOOP; PERFORM set_config('lanes.us', round((extract(epoch FROM clock_timestamp() - t0) * 1e6 / $CALLS)::numeric, 1)::text, false); END \$\$" -c "SELECT current_setting('lanes.us')" | tail -1
}
{
echo "| queues | build | enqueue, µs per call (${REPS} runs) | claim + complete, µs per call (${REPS} runs) |"
echo "|---:|---|---|---|"
for N in $COUNTS; do
	for b in $BUILDS; do
		label=${b%%=*} BIN=${b#*=} DATA="$WORKDIR/data-$label"
		rm -rf "$DATA"
		as_pg "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --no-sync -E UTF8 --locale=C >/dev/null
		printf "port = %s\nlisten_addresses = ''\nunix_socket_directories = '%s'\nshared_preload_libraries = 'awa'\nawa.max_queues_per_database = 200000\nawa.maintenance_enabled = off\n" "$PORT" "$WORKDIR" >>"$DATA/postgresql.conf"
		as_pg "$BIN/pg_ctl" -D "$DATA" -l "$WORKDIR/server-$label-$N.log" -w start >/dev/null
		PGOPTIONS="-c client_min_messages=warning" as_pg "$BIN/psql" -X -q -h "$WORKDIR" -p "$PORT" -U postgres -d postgres -c "CREATE DATABASE bench"
		q -c "CREATE EXTENSION awa"
		per=$(( (REPS * CALLS * 2) / N + 10 ))
		q -c "DO \$\$ BEGIN FOR i IN 1..$N LOOP PERFORM awa.enqueue_many(array_fill('k'::text, ARRAY[$per]), NULL, queue => 'q' || i, priorities => array_fill(2, ARRAY[$per])); IF i % 1000 = 0 THEN COMMIT; END IF; END LOOP; END \$\$"
		q -c "CHECKPOINT"
		enq=() cl=()
		for _ in $(seq "$REPS"); do
			enq+=("$(per_call "PERFORM awa.enqueue('k', '{}', queue => 'q' || i, priority => 2)")")
			cl+=("$(per_call "PERFORM awa.complete(job_id, run_lease, receipt_id) FROM awa.claim('q' || i, 1)")")
		done
		echo "| $N | $label | ${enq[*]} | ${cl[*]} |"
		as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
		rm -rf "$DATA"
		DATA=''
	done
done
} | tee "$WORKDIR/result.md"
