#!/usr/bin/env bash
# bench/ring_spares_cost.sh: what spare ring slots cost (issue 19 §3; docs/architecture.md §6).
#
#   bench/ring_spares_cost.sh                 SPARES="0 16 48", DURATION=10 s per pgbench cell
#
# On a scratch server (bench/scratch_server.sh; the maintenance worker off), for each value of
# awa.ring_spare_slots a fresh database made with it, then:
#   - relations in schema awa;
#   - relation locks a transaction holds after awa.get_job (it holds every ring table,
#     awa._hold_rings) and after awa.queue_counts_exact, against max_locks_per_transaction x
#     (max_connections + max_prepared_transactions) slots of the shared lock table;
#   - the mean time of run_maintenance('prune_queue') and ('rotate_queue') on a ring in use
#     (one job enqueued, claimed and completed per call pair; 200 pairs): the prune reads every
#     slot's size and pg_locks;
#   - single-job enqueue and batch-1 drain (bench/awa_enqueue_1.sql, bench/awa_drain_b1.sql),
#     pgbench -c 1 for DURATION s each, jobs/s (noisy on a shared 2-core machine: a check that
#     the hot paths, which address one child each, do not see the partitions).
# Prints a markdown table.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SPARES=${SPARES:-"0 16 48"}
DURATION=${DURATION:-10}
PORT=${PORT:-55493}
SCRIPT_NAME=ring-spares
# shellcheck source=bench/scratch_server.sh
source "$BENCH_DIR/scratch_server.sh"

start_scratch_server
sql "ALTER SYSTEM SET awa.maintenance_enabled = off" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
slots=$(sql "SELECT current_setting('max_locks_per_transaction')::int * (current_setting('max_connections')::int + current_setting('max_prepared_transactions')::int)")
echo "Shared lock table: $slots relation-lock slots (max_locks_per_transaction x (max_connections + max_prepared_transactions))."
echo
echo "| spare | queue / claim partitions | relations in awa | locks after get_job | locks after queue_counts_exact | prune_queue (ms) | rotate_queue (ms) | enqueue jobs/s | drain b1 jobs/s |"
echo "|---|---|---|---|---|---|---|---|---|"
for spare in $SPARES; do
	sql "DROP DATABASE IF EXISTS spares WITH (FORCE)" >/dev/null
	sql "CREATE DATABASE spares" >/dev/null
	PGOPTIONS="-c awa.ring_spare_slots=$spare" "${PSQL[@]}" -d spares -c "CREATE EXTENSION awa" >/dev/null
	export DB=spares
	parts=$(sql "SELECT (SELECT slot_count FROM awa.queue_ring_state) || ' / ' || (SELECT slot_count FROM awa.claim_ring_state)")
	rels=$(sql "SELECT count(*) FROM pg_class WHERE relnamespace = 'awa'::regnamespace")
	job=$(sql "SELECT awa.enqueue('k', '{}', 'cost')")
	locks_get=$(sql "BEGIN; SELECT awa.get_job($job) IS NOT NULL; SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'relation'; ROLLBACK" | tail -1)
	locks_exact=$(sql "BEGIN; SELECT count(*) FROM awa.queue_counts_exact('cost'); SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'relation'; ROLLBACK" | tail -1)
	sql "CREATE TABLE step_times (step text, ms float8)" >/dev/null
	sql "DO \$\$
		DECLARE t0 timestamptz;
		BEGIN
		  FOR i IN 1 .. 200 LOOP
		    PERFORM awa.enqueue('k', '{}', 'cost');
		    COMMIT;
		    PERFORM awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('cost', 1) c;
		    COMMIT;
		    t0 := clock_timestamp();
		    PERFORM awa.run_maintenance('prune_queue');
		    INSERT INTO step_times VALUES ('prune', extract(epoch FROM clock_timestamp() - t0) * 1000);
		    COMMIT;
		    t0 := clock_timestamp();
		    PERFORM awa.run_maintenance('rotate_queue');
		    INSERT INTO step_times VALUES ('rotate', extract(epoch FROM clock_timestamp() - t0) * 1000);
		    COMMIT;
		  END LOOP;
		END \$\$" >/dev/null
	times=$(sql "SELECT round(avg(ms) FILTER (WHERE step = 'prune')::numeric, 2) || ' | ' || round(avg(ms) FILTER (WHERE step = 'rotate')::numeric, 2) FROM step_times")
	enq=$("${PGBENCH[@]}" -n -M prepared -c 1 -T "$DURATION" -f "$BENCH_DIR/awa_enqueue_1.sql" spares 2>&1 | sed -nE 's/^tps = ([0-9.]+).*/\1/p')
	drain=$("${PGBENCH[@]}" -n -M prepared -c 1 -T "$DURATION" -f "$BENCH_DIR/awa_drain_b1.sql" spares 2>&1 | sed -nE 's/^tps = ([0-9.]+).*/\1/p')
	echo "| $spare | $parts | $rels | $locks_get | $locks_exact | $times | $enq | $drain |"
	unset DB
done
log "server log problems: $(server_log_problems)"
