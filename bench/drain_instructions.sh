#!/usr/bin/env bash
# bench/drain_instructions.sh: CPU instructions per job of awa's batch-1 drain (claim + complete_many)
# and of its single-job enqueue, counted by callgrind, which does not depend on how fast or how busy the
# machine is.
#
#   PGBIN=/usr/lib/postgresql/15/bin PORT=5497 N=2000 bench/drain_instructions.sh
#   SYSTEM=skip ... bench/drain_instructions.sh     the SKIP LOCKED table of bench/peers, the same way
#
# A scratch server (bench/scratch_server.sh; the maintenance worker and autovacuum off,
# synchronous_commit off so no commit waits) gets N + 500 jobs, one per transaction, as producers
# write them (bench/peers/pgbench/awa_enq1.sql; BACKLOG=many: one enqueue_many call instead); a warm-up
# of 500 jobs drains outside valgrind (plans, first pages); then the server is restarted under
# `valgrind --tool=callgrind --trace-children=yes` and one pgbench client drains N jobs with
# bench/peers/pgbench/awa_worker.sql (B=1). The pgbench backend is the largest callgrind output; its
# instruction total / N is printed, and PostgresMain's inclusive count / N (without the postmaster's
# start-up, which callgrind counts in every child's file). Then a second pgbench client enqueues N jobs, one per transaction
# (awa_enq1.sql); its backend is the callgrind output that appears after the drain's. Needs valgrind.
# Takes about two minutes for N = 2,000.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PORT=${PORT:-5497}
N=${N:-2000}
SCRIPT_NAME=drain-instr
EXTRA_CONF="awa.maintenance_enabled = off
autovacuum = off
synchronous_commit = off"
# shellcheck source=bench/scratch_server.sh
source "$HERE/scratch_server.sh"
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
SYSTEM=${SYSTEM:-awa}
start_scratch_server
if [ "$SYSTEM" = skip ]; then
	# The SKIP LOCKED table of bench/peers, on the same server (awa preloaded, not created): its
	# single-row insert, and its batch-1 worker (claim UPDATE, then DELETE), measured the same way.
	"${PSQL[@]}" -d postgres -f "$HERE/peers/sql/skip_schema.sql" >/dev/null
	enqueuer() {
		as_pg "${PGBENCH[@]}" -n -M prepared -c 1 -t "$1" -f "$HERE/peers/pgbench/skip_enq1.sql" postgres
	}
	worker() {
		as_pg "${PGBENCH[@]}" -n -M prepared -c 1 -t "$1" -D B=1 -D idle_ms=10 \
			-f "$HERE/peers/pgbench/skip_worker.sql" postgres
	}
	left_sql="SELECT count(*) FROM jobs WHERE state = 'ready'"
else
	sql 'CREATE EXTENSION awa'
	enqueuer() {
		as_pg "${PGBENCH[@]}" -n -M prepared -c 1 -t "$1" -f "$HERE/peers/pgbench/awa_enq1.sql" postgres
	}
	worker() {
		as_pg "${PGBENCH[@]}" -n -M prepared -c 1 -t "$1" -D B=1 -D async=off -D wait_ms=0 -D idle_ms=10 -D awa_init=0 \
			-f "$HERE/peers/pgbench/awa_worker.sql" postgres
	}
	left_sql="SELECT available FROM awa.queue_counts('default')"
fi
if [ "$SYSTEM" = skip ]; then
	enqueuer $((N + 500)) >/dev/null
elif [ "${BACKLOG:-single}" = many ]; then
	sql "SELECT count(*) FROM awa.enqueue_many(array_fill('job'::text, ARRAY[$((N + 500))]), NULL, 'default')" >/dev/null
else
	enqueuer $((N + 500)) >/dev/null
fi
worker 500 >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
mkdir -p "$WORKDIR/callgrind" && chown postgres "$WORKDIR/callgrind" 2>/dev/null || true
as_pg bash -c "valgrind --tool=callgrind --trace-children=yes --callgrind-out-file='$WORKDIR/callgrind/cg.%p' \
	'$PGBIN/postgres' -D '$PGDATA' >'$WORKDIR/valgrind.log' 2>&1 &"
for _ in $(seq 1 120); do sql 'SELECT 1' >/dev/null 2>&1 && break; sleep 1; done
worker "$N" | grep -E '^number of transactions actually processed' >&2
left=$(sql "$left_sql")
sleep 2  # the drain's backend has written its callgrind output
drained=$(ls "$WORKDIR"/callgrind/)
enqueuer "$N" | grep -E '^number of transactions actually processed' >&2
as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
server_started=0
sleep 2
# A backend's callgrind file also holds what the postmaster did before the fork (loading libraries,
# _PG_init's GUC definitions: about 94 million instructions, the same for every build), so the
# backend's own work is PostgresMain's inclusive count; both are printed.
own() { callgrind_annotate --inclusive=yes "$1" 2>/dev/null | awk '/:PostgresMain / && !done {gsub(",", "", $1); print $1; done = 1}'; }
out=$(cd "$WORKDIR"/callgrind && ls -S $drained | head -1)
total=$(grep -m1 '^totals:' "$WORKDIR/callgrind/$out" | awk '{print $2}')
main=$(own "$WORKDIR/callgrind/$out")
echo "batch-1 drain, $N jobs (left in the queue: $left): pgbench backend $total instructions, $((total / N)) per job;" \
	"its own work (PostgresMain) $main, $((main / N)) per job"
out=$(cd "$WORKDIR"/callgrind && ls -S | grep -vxF -f <(echo "$drained") | head -1)
total=$(grep -m1 '^totals:' "$WORKDIR/callgrind/$out" | awk '{print $2}')
main=$(own "$WORKDIR/callgrind/$out")
echo "single-job enqueue, $N jobs: pgbench backend $total instructions, $((total / N)) per job;" \
	"its own work (PostgresMain) $main, $((main / N)) per job"
