#!/usr/bin/env bash
# bench/queue_metrics.sh: the cost of awa.queue_metrics() (the monitoring surface,
# docs/monitoring.md) against the backlog and the number of queues.
#
#   bench/queue_metrics.sh          QUEUES=100 queues at 10 and at 10,000 jobs each, then 1,000 queues at 10
#
# On a scratch server (bench/scratch_server.sh), each queue gets PER_QUEUE jobs (one
# awa.enqueue_many each) and a quarter of them (at least 1) claimed in one claim, so each
# lane's claim cursor lags behind its claimed lanes, as after a burst of claims. The counters
# are rebuilt, then SELECT count(*) FROM awa.queue_metrics() runs REPS times in one session;
# the script prints each run's time (psql \timing) per configuration (also $WORKDIR/result.md).
# Environment: QUEUES (default 100), DEEP (jobs per queue of the second configuration, default
# 10000), MANY (queues of the third, default 1000), REPS (default 5), PORT (default 55443), PGBIN,
# WORKDIR, KEEP=1. Run as root or as postgres.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPS=${REPS:-5}
PORT=${PORT:-55443}
SCRIPT_NAME=queue-metrics
# shellcheck source=bench/scratch_server.sh
. "$BENCH_DIR/scratch_server.sh"

start_scratch_server
measure() {
	local queues=$1 per_queue=$2 db="qm_${1}_${2}"
	sql "CREATE DATABASE $db" >/dev/null
	DB=$db sql "CREATE EXTENSION awa" >/dev/null
	DB=$db sql "SELECT count(*) FROM (SELECT awa.enqueue_many(array_fill('k'::text, ARRAY[$per_queue]), NULL, 'q' || q)
	              FROM generate_series(1, $queues) q) x" >/dev/null
	DB=$db sql "SELECT count(*) FROM generate_series(1, $queues) q, LATERAL awa.claim('q' || q, greatest($per_queue / 4, 1)) c" >/dev/null
	DB=$db sql "SELECT awa.rebuild_counters()" >/dev/null
	local times
	times=$({ echo '\timing on'; for _ in $(seq "$REPS"); do echo 'SELECT count(*) FROM awa.queue_metrics();'; done; } |
		"${PSQL[@]}" -d "$db" -At | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | paste -sd' ')
	printf '| %s | %s | %s ms |\n' "$queues" "$per_queue" "$times"
}
{
	echo '| queues | jobs per queue | queue_metrics() per run |'
	echo '|---:|---:|---|'
	measure "${QUEUES:-100}" 10
	measure "${QUEUES:-100}" "${DEEP:-10000}"
	measure "${MANY:-1000}" 10
} | tee "$WORKDIR/result.md"
