#!/usr/bin/env bash
# bench/paused_growth.sh: WAL and prune time per queue-ring wrap while a paused queue keeps receiving
# enqueues (issue 19 §3, docs/maintenance.md §3.6 "Limit"). Since stop 41 the paused queue's jobs are parked
# outside the ring (docs/architecture.md §6), so this shows that the ring's cost stays flat.
#
#   SPARE=16 bench/paused_growth.sh              default rings (16 slots + 16 spare), up to 1,000,000 jobs
#   SPARE=0 TOTAL=500000 bench/paused_growth.sh  the fixed ring of before (no spare slot)
#
# On a scratch server (bench/scratch_server.sh; the maintenance worker off: the script drives every
# step), a fresh database made with awa.ring_spare_slots = SPARE gets, per rotation, PER_ROTATION
# (5,000) jobs enqueued into the paused queue `paused` (enqueue_many calls of 1,000) and 10 jobs into
# a queue `live` that is claimed and completed at once (so the ring is never idle), then
# run_maintenance('prune_queue') and run_maintenance('rotate_queue'). For each wrap (16 rotations)
# it reports the backlog at its end, the WAL the 16 prunes and rotations wrote (pg_current_wal_lsn
# around each prune and rotation, the enqueues left out), the prunes' summed wall time, the rows they carried, the
# slots in use and the slots kept (more available rows than awa.carry_max_rows). TOTAL (default 1,000,000) is the backlog it stops at.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SPARE=${SPARE:-16}
TOTAL=${TOTAL:-1000000}
PER_ROTATION=${PER_ROTATION:-5000}
PORT=${PORT:-55492}
SCRIPT_NAME=paused-growth
# shellcheck source=bench/scratch_server.sh
source "$BENCH_DIR/scratch_server.sh"

start_scratch_server
sql "ALTER SYSTEM SET awa.maintenance_enabled = off" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
sql "CREATE DATABASE pg_bench_growth" >/dev/null
DB=pg_bench_growth
export DB
PGOPTIONS="-c awa.ring_spare_slots=$SPARE" "${PSQL[@]}" -d "$DB" -c "CREATE EXTENSION awa" >/dev/null
sql "SELECT awa.pause_queue('paused')" >/dev/null
log "spare=$SPARE total=$TOTAL per_rotation=$PER_ROTATION: $(sql "SELECT slot_count || ' partitions, width ' || width FROM awa.queue_ring_state")"

echo "| spare | wrap | backlog at end | WAL of prunes+rotations (MB) | prune time (s) | rows carried | slots in use | kept slots |"
echo "|---|---|---|---|---|---|---|---|"
backlog=0
wrap=0
while (( backlog < TOTAL )); do
	wrap=$((wrap + 1))
	wal=0
	prune_ms=0
	carried=0
	for _ in $(seq 1 16); do
		sql "SELECT count(*) FROM (SELECT awa.enqueue_many(array_fill('k'::text, ARRAY[1000]), NULL, 'paused')
		       FROM generate_series(1, $PER_ROTATION / 1000)) x" >/dev/null
		sql "SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[10]), NULL, 'live')" >/dev/null
		sql "SELECT count(*) FROM (SELECT awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('live', 10) c) x" >/dev/null
		backlog=$((backlog + PER_ROTATION))
		# Each step in its own transaction, as the worker runs them: LSN, prune (timed), rotate, LSN.
		lsn0=$(sql "SELECT pg_current_wal_lsn()")
		t0=$(date +%s%N)
		rows=$(sql "SELECT coalesce((detail -> 'carried' ->> 'rows')::bigint, 0)
		                   + coalesce((SELECT sum((m -> 'carried' ->> 'rows')::bigint) FROM jsonb_array_elements(detail -> 'more') m), 0)
		              FROM awa.run_maintenance('prune_queue')")
		t1=$(date +%s%N)
		sql "SELECT outcome FROM awa.run_maintenance('rotate_queue')" >/dev/null
		step_wal=$(sql "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0')::bigint")
		step_ms=$(( (t1 - t0) / 1000000 ))
		wal=$((wal + step_wal))
		prune_ms=$((prune_ms + step_ms))
		carried=$((carried + rows))
	done
	# Kept: slots in use, other than the current one, with more available rows than awa.carry_max_rows.
	status=$(sql "SELECT s.slots_in_use || ' | ' || (SELECT count(*) FROM unnest(awa._ring_slots_in_use('queue')) u
	                                                 WHERE u <> s.current_slot
	                                                   AND awa._slot_live_rows(u) > current_setting('awa.carry_max_rows')::bigint)
	                FROM awa.storage_status() s WHERE s.ring = 'queue'")
	printf '| %s | %s | %s | %.1f | %.2f | %s | %s |\n' "$SPARE" "$wrap" "$backlog" \
		"$(echo "$wal / 1048576" | bc -l)" "$(echo "$prune_ms / 1000" | bc -l)" "$carried" "$status"
done
log "server log problems: $(server_log_problems)"
