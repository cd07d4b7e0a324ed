#!/usr/bin/env bash
# bench/open_claim.sh: claim throughput of a lane while one claim of it stays open in a transaction
# (docs/architecture.md, "Claims past an open claim").
#
#   PGBIN=/usr/lib/postgresql/15/bin PORT=5498 bench/open_claim.sh
#
# A scratch server (bench/scratch_server.sh, synchronous_commit off: the claims' own cost, not the
# flush) gets JOBS jobs in queue 'default'. One pgbench client claims and completes one job per
# transaction (bench/awa_claim_complete_1.sql): first BASE transactions with no open claim; then a
# session claims one job and keeps its transaction open while the client runs CHUNKS chunks of CHUNK
# transactions; then the session rolls back and the client runs 2 chunks more. Prints jobs/s per
# chunk (markdown, also $WORKDIR/result.md). Before the lane's frontier the rate fell with every claim
# after the open one; it should stay flat.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PORT=${PORT:-5498}
JOBS=${JOBS:-40000}
BASE=${BASE:-3000}
CHUNK=${CHUNK:-5000}
CHUNKS=${CHUNKS:-6}
SCRIPT_NAME=open-claim
EXTRA_CONF="synchronous_commit = off"
# shellcheck source=bench/scratch_server.sh
source "$HERE/scratch_server.sh"
start_scratch_server
sql 'CREATE EXTENSION awa'
sql "SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[$JOBS]), NULL, 'default')" >/dev/null
rate() {  # transactions
	as_pg "${PGBENCH[@]}" -n -M prepared -c 1 -t "$1" -f "$HERE/awa_claim_complete_1.sql" postgres 2>&1 |
		sed -nE 's/^tps = ([0-9]+)\..*/\1/p'
}
{
	echo '| phase | transactions | jobs/s |'
	echo '|---|---:|---:|'
	echo "| no open claim | $BASE | $(rate "$BASE") |"
	# The open claim: a session that claims one job and waits for a signal file.
	as_pg "${PSQL[@]}" -d postgres -c 'BEGIN' -c "SELECT count(*) FROM awa.claim('default', 1)" \
		-c "DO \$\$ BEGIN WHILE (pg_stat_file('$WORKDIR/open_claim.done', true)).size IS NULL LOOP PERFORM pg_sleep(0.1); END LOOP; END \$\$" \
		-c 'ROLLBACK' >/dev/null &
	BG_PIDS+=($!)
	for _ in $(seq 1 50); do
		[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'DO %open_claim.done%'")" = 1 ] && break
		sleep 0.2
	done
	for i in $(seq 1 "$CHUNKS"); do
		echo "| open claim, claims $(((i - 1) * CHUNK + 1))-$((i * CHUNK)) after it | $CHUNK | $(rate "$CHUNK") |"
	done
	touch "$WORKDIR/open_claim.done"
	wait "${BG_PIDS[-1]}" || true
	for i in 1 2; do
		echo "| after it rolled back, chunk $i | $((CHUNK / 5)) | $(rate $((CHUNK / 5))) |"
	done
	echo
	echo "Jobs left: $(sql "SELECT available FROM awa.queue_counts('default')") of $JOBS."
} | tee "$WORKDIR/result.md"
