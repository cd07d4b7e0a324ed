#!/usr/bin/env bash
# bench/wal_per_job.sh: exact WAL bytes per job, by record type, for awa's single-job enqueue and
# batch-1 drain (claim + complete_many), and batch-10 drain (claims of 10, each completed by one
# complete_many), read with pg_waldump --stats=record between two LSNs.
#
#   PGBIN=/usr/lib/postgresql/15/bin PORT=5491 N=10000 bench/wal_per_job.sh
#
# Then, on the same server, bench/lanekey_row_shapes.sql (SHAPES_N rows per table, queue names
# `default` and a 20-character one): WAL per row of the lane-identified ring rows in three shapes
# (bench/RESULTS-lanekey.md).
#
# A throwaway cluster (bench/scratch_server.sh: initdb in $WORKDIR, Unix socket only, stopped at the
# end) with awa's maintenance worker and autovacuum off, so that the WAL between the two LSNs is the
# jobs' own: no rotation, prune or vacuum record is counted. No checkpoint runs in between
# (checkpoint_timeout 1h, max_wal_size 8GB), so full-page images appear only for pages first touched after the
# warm-up's checkpoint. The enqueue is bench/peers/pgbench/awa_enq1.sql, the drain
# bench/peers/pgbench/awa_worker.sql with B=1 (claims durable at commit), both one client, N
# transactions each, after a warm-up of WARMUP (1,000). Each measurement also counts its records by
# relation (pg_waldump's records grouped by relfilenode, named from pg_class): which table or index
# writes what. Run as root (the server runs as postgres) or
# as postgres. Writes Markdown to stdout and $WORKDIR/result.md; the data directory is removed at the
# end (kept with KEEP=1).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PORT=${PORT:-5491}
N=${N:-10000}
WARMUP=${WARMUP:-1000}
SHAPES_N=${SHAPES_N:-10000}
SCRIPT_NAME=walpj
# No rotation, prune, vacuum or checkpoint between the two LSNs (bench/scratch_server.sh starts the
# server with bench/server.conf, then these).
EXTRA_CONF="awa.maintenance_enabled = off
autovacuum = off
checkpoint_timeout = 1h"
# shellcheck source=bench/scratch_server.sh
source "$HERE/scratch_server.sh"
start_scratch_server
DATA=$PGDATA
export PGHOST=$WORKDIR PGPORT=$PORT PGUSER=postgres
psql() { as_pg env PGHOST=$PGHOST PGPORT=$PGPORT "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }
pgb() { as_pg env PGHOST=$PGHOST PGPORT=$PGPORT "$PGBIN/pgbench" -n -M prepared -c 1 "$@" postgres >/dev/null; }
psql -c 'CREATE EXTENSION awa'
WORKER=(-D B=1 -D async=off -D wait_ms=0 -D idle_ms=10 -D awa_init=0 -f "$HERE/peers/pgbench/awa_worker.sql")

# Warm-up: the lane, the first pages and plans; then a checkpoint.
pgb -t "$WARMUP" -f "$HERE/peers/pgbench/awa_enq1.sql"
pgb -t "$WARMUP" "${WORKER[@]}"
psql -c 'CHECKPOINT'

measure() {  # name, pgbench arguments... (TX: transactions, N by default; always per N jobs)
	local name=$1
	shift
	local start end
	start=$(psql -c 'SELECT pg_current_wal_insert_lsn()')
	pgb -t "${TX:-$N}" "$@"
	end=$(psql -c 'SELECT pg_current_wal_insert_lsn()')
	psql -c 'SELECT pg_switch_wal()' >/dev/null  # the end record is in a finished segment
	local total
	total=$(psql -c "SELECT pg_wal_lsn_diff('$end', '$start')")
	echo "## $name: $N jobs, $total WAL bytes, $((total / N)) B/job (pg_current_wal_insert_lsn difference)"
	echo
	echo '| record type | records/job | bytes/job (records) | bytes/job (FPI) |'
	echo '|---|---:|---:|---:|'
	as_pg "$PGBIN/pg_waldump" -p "$DATA/pg_wal" -s "$start" -e "$end" --stats=record 2>/dev/null |
		awk -v n="$N" '{ gsub(/\([^)]*\)|\[[^]]*\]/, "") }
			$1 != "Total" && $2 ~ /^[0-9]+$/ && $2 > 0 { printf "| %s | %.2f | %.1f | %.1f |\n", $1, $2 / n, $3 / n, $4 / n }
			$1 == "Total" { printf "| total | %.2f | %.1f | %.1f |\n", $2 / n, $3 / n, $4 / n }'
	echo
	# By relation: each record's total length (FPIs included), grouped by the relfilenode of its
	# first block reference (none: commit records and the like).
	echo '| relation | record type | records/job | bytes/job |'
	echo '|---|---|---:|---:|'
	psql -F ' ' -c "SELECT relfilenode, relname FROM pg_class WHERE relfilenode <> 0" >"$WORKDIR/relnames"
	as_pg "$PGBIN/pg_waldump" -p "$DATA/pg_wal" -s "$start" -e "$end" 2>/dev/null |
		awk -v n="$N" 'NR == FNR { name[$1] = $2; next }
			{
				match($0, /len \(rec\/tot\): *[0-9]+\/ *[0-9]+/); split(substr($0, RSTART, RLENGTH), l, "/")
				rel = "-"; if (match($0, /rel [0-9]+\/[0-9]+\/[0-9]+/)) { split(substr($0, RSTART + 4, RLENGTH - 4), r, "/"); rel = (r[3] in name) ? name[r[3]] : r[3] }
				match($0, /desc: [A-Z_+0-9]+/); type = substr($0, RSTART + 6, RLENGTH - 6)
				key = rel " | " type; count[key]++; bytes[key] += l[3] + 0
			}
			END { for (k in count) printf "| %s | %.2f | %.1f |\n", k, count[k] / n, bytes[k] / n }' \
			"$WORKDIR/relnames" - | sort -t '|' -k5 -g -r
	echo
}
shapes() {  # queue name
	echo "## WAL bytes per row by shape, queue name '$1' ($SHAPES_N rows per table; bench/lanekey_row_shapes.sql)"
	echo
	echo '| table | today | kept | join |'
	echo '|---|---:|---:|---:|'
	psql -F ' | ' -v q="$1" -v n="$SHAPES_N" -f "$HERE/lanekey_row_shapes.sql" 2>/dev/null |
		grep -E '^(ready|lease|receipt)_' | sed 's/^/| /; s/$/ |/'
	echo
}
{
	# Enqueue N, then drain N of them (the warm-up leaves none behind).
	measure "single-job enqueue (awa_enq1.sql)" -f "$HERE/peers/pgbench/awa_enq1.sql"
	measure "batch-1 drain (awa_worker.sql, B=1)" "${WORKER[@]}"
	# Then N more (not measured), drained 10 a claim, each claim's 10 in one complete_many.
	pgb -t "$N" -f "$HERE/peers/pgbench/awa_enq1.sql"
	TX=$((N / 10)) measure "batch-10 drain (awa_worker.sql, B=10; $((N / 10)) claims)" \
		-D B=10 -D async=off -D wait_ms=0 -D idle_ms=10 -D awa_init=0 -f "$HERE/peers/pgbench/awa_worker.sql"
	echo "Jobs left in the queue: $(psql -c "SELECT available FROM awa.queue_counts('default')")"
	echo
	shapes default
	shapes a_queue_name_of_20ch
} | tee "$WORKDIR/result.md"
