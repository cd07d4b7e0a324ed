#!/usr/bin/env bash
# bench/lock_footprint.sh: the shared-lock-table entries an enqueue transaction holds, and the WAL
# of a single-job enqueue (docs/architecture.md, "A bounded number of locks per transaction").
#
#   PGBIN=/path/to/bin bench/lock_footprint.sh       TXNS=2000 single-job transactions per WAL round,
#                                                     ROUNDS=3
#
# On a scratch server (bench/scratch_server.sh; the maintenance worker off) with the awa build that
# PGBIN's PostgreSQL has installed:
#   - first, WAL bytes per single-job enqueue transaction into an existing lane
#     (bench/awa_enqueue_1.sql, pgbench -c 1 -t TXNS, pg_current_wal_insert_lsn before and after,
#     after a CHECKPOINT), ROUNDS rounds;
#   - then the locks (pg_locks rows of the backend, by kind) a transaction holds after it enqueued and
#     wrote its jobs (awa._flush_enqueues: the state from its pre-commit to its commit's end), for
#     1 job into an existing lane, 1 job into a new lane, and 1 job into each of 17 and 20,000 new
#     queues (or the error it got; each transaction rolls back);
#   - the time of one transaction that creates 5,000 new lanes (1 job each), ROUNDS rounds.
# Prints markdown tables.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TXNS=${TXNS:-2000}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-55494}
SCRIPT_NAME=lock-footprint
# shellcheck source=bench/scratch_server.sh
source "$BENCH_DIR/scratch_server.sh"

start_scratch_server
sql "ALTER SYSTEM SET awa.maintenance_enabled = off" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
sql "CREATE EXTENSION awa" >/dev/null
sql "SELECT awa.enqueue('seed', queue => 'bench')" >/dev/null

# The backend's locks by kind after the enqueue statement $1 and the write.
locks_after() {
	sql "BEGIN; $1; SELECT awa._flush_enqueues();
	     SELECT count(*) FILTER (WHERE locktype = 'advisory' AND objsubid = 16646) || ' | ' ||
	            count(*) FILTER (WHERE locktype = 'advisory' AND objsubid = 16648) || ' | ' ||
	            count(*) FILTER (WHERE locktype = 'advisory' AND objsubid = 16645) || ' | ' ||
	            count(*) FILTER (WHERE locktype = 'relation') || ' | ' ||
	            count(*) FILTER (WHERE locktype = 'relation' AND fastpath) || ' | ' || count(*)
	       FROM pg_locks WHERE pid = pg_backend_pid(); ROLLBACK;" >"$WORKDIR/logs/locks.txt" 2>&1 || true
	if grep -q 'ERROR:' "$WORKDIR/logs/locks.txt"; then
		grep -m1 -o 'ERROR: .*' "$WORKDIR/logs/locks.txt"
	else
		tail -1 "$WORKDIR/logs/locks.txt"
	fi
}

echo "| round | WAL bytes per single-job enqueue transaction ($TXNS transactions) |"
echo "|---|---|"
for round in $(seq 1 "$ROUNDS"); do
	sql "CHECKPOINT" >/dev/null
	before=$(sql "SELECT pg_current_wal_insert_lsn()")
	as_pg "${PGBENCH[@]}" -n -c 1 -t "$TXNS" -f "$BENCH_DIR/awa_enqueue_1.sql" postgres >"$WORKDIR/logs/wal_$round.txt"
	bytes=$(sql "SELECT round(pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$before') / $TXNS, 1)")
	echo "| $round | $bytes |"
done
echo
echo "| transaction | lane reserve (16646) | wide reserve (16648) | lane create (16645) | relation | of which fast path | all rows |"
echo "|---|---|---|---|---|---|---|"
echo "| 1 job, existing lane | $(locks_after "SELECT awa.enqueue('k', queue => 'bench')") |"
echo "| 1 job, new lane | $(locks_after "SELECT awa.enqueue('k', queue => 'fresh')") |"
echo "| 17 new queues, 1 job each | $(locks_after "SELECT count(awa.enqueue('k', queue => 'q17_' || i)) FROM generate_series(1, 17) i") |"
echo "| 20,000 new queues, 1 job each | $(locks_after "SELECT count(awa.enqueue('k', queue => 'q20k_' || i)) FROM generate_series(1, 20000) i") |"
echo
echo "| round | ms to create 5,000 new lanes in one transaction (1 job each, written, rolled back) |"
echo "|---|---|"
for round in $(seq 1 "$ROUNDS"); do
	ms=$(sql "BEGIN; SELECT count(awa.enqueue('k', queue => 'new${round}_' || i)) FROM generate_series(1, 5000) i;
	          SELECT awa._flush_enqueues();
	          SELECT round(extract(epoch FROM clock_timestamp() - now()) * 1000); ROLLBACK;" | tail -1)
	echo "| $round | $ms |"
done
