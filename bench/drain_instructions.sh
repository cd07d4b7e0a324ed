#!/usr/bin/env bash
# bench/drain_instructions.sh: CPU instructions per job of awa's batch-1 drain (claim + complete_many)
# and of its single-job enqueue, counted by callgrind, which does not depend on how fast or how busy the
# machine is.
#
#   PGBIN=/usr/lib/postgresql/15/bin PORT=5497 N=2000 bench/drain_instructions.sh
#
# A scratch server (bench/scratch_server.sh; the maintenance worker and autovacuum off,
# synchronous_commit off so no commit waits) gets N + 500 jobs, one per transaction, as producers
# write them (bench/peers/pgbench/awa_enq1.sql; BACKLOG=many: one enqueue_many call instead); a warm-up
# of 500 jobs drains outside valgrind (plans, first pages); then the server is restarted under
# `valgrind --tool=callgrind --trace-children=yes` and one pgbench client drains N jobs with
# bench/peers/pgbench/awa_worker.sql (B=1). The pgbench backend is the largest callgrind output; its
# instruction total / N is printed. Then a second pgbench client enqueues N jobs, one per transaction
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
start_scratch_server
sql 'CREATE EXTENSION awa'
enqueuer() {
	as_pg "${PGBENCH[@]}" -n -M prepared -c 1 -t "$1" -f "$HERE/peers/pgbench/awa_enq1.sql" postgres
}
if [ "${BACKLOG:-single}" = many ]; then
	sql "SELECT count(*) FROM awa.enqueue_many(array_fill('job'::text, ARRAY[$((N + 500))]), NULL, 'default')" >/dev/null
else
	enqueuer $((N + 500)) >/dev/null
fi
worker() {
	as_pg "${PGBENCH[@]}" -n -M prepared -c 1 -t "$1" -D B=1 -D async=off -D wait_ms=0 -D idle_ms=10 -D awa_init=0 \
		-f "$HERE/peers/pgbench/awa_worker.sql" postgres
}
worker 500 >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
mkdir -p "$WORKDIR/callgrind" && chown postgres "$WORKDIR/callgrind" 2>/dev/null || true
as_pg bash -c "valgrind --tool=callgrind --trace-children=yes --callgrind-out-file='$WORKDIR/callgrind/cg.%p' \
	'$PGBIN/postgres' -D '$PGDATA' >'$WORKDIR/valgrind.log' 2>&1 &"
for _ in $(seq 1 120); do sql 'SELECT 1' >/dev/null 2>&1 && break; sleep 1; done
worker "$N" | grep -E '^number of transactions actually processed' >&2
left=$(sql "SELECT available FROM awa.queue_counts('default')")
sleep 2  # the drain's backend has written its callgrind output
drained=$(ls "$WORKDIR"/callgrind/)
enqueuer "$N" | grep -E '^number of transactions actually processed' >&2
as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
server_started=0
sleep 2
out=$(cd "$WORKDIR"/callgrind && ls -S $drained | head -1)
total=$(grep -m1 '^totals:' "$WORKDIR/callgrind/$out" | awk '{print $2}')
echo "batch-1 drain, $N jobs (left in the queue: $left): pgbench backend $total instructions, $((total / N)) per job"
out=$(cd "$WORKDIR"/callgrind && ls -S | grep -vxF -f <(echo "$drained") | head -1)
total=$(grep -m1 '^totals:' "$WORKDIR/callgrind/$out" | awk '{print $2}')
echo "single-job enqueue, $N jobs: pgbench backend $total instructions, $((total / N)) per job"
