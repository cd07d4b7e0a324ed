#!/usr/bin/env bash
# bench/lanes.sh: what a lane costs as the number of queues grows (issue 19 §2): relations and
# on-disk lane bookkeeping per lane, time and WAL per new lane, per-call costs of an enqueue and
# of a claim + complete into a random one of N existing lanes, shared memory, and a backend's
# memory after it touched every lane.
#
#   PGBIN=/usr/lib/postgresql/15/bin bench/lanes.sh              one build, N = 10 1000 10000
#   BUILDS="old=/opt/a/bin new=/opt/b/bin" COUNTS="10 1000 10000 100000" bench/lanes.sh
#                                                                 several builds, alternating:
#                                                                 for each N, each build in turn
#
# Each (build, N) cell gets a fresh cluster (initdb into $DATA_PREFIX-<label>, stock
# postgresql.conf plus: its port, a Unix socket only, shared_preload_libraries = 'awa',
# awa.max_queues_per_database = 200000 so 100,000 queues keep their counters, and
# awa.maintenance_enabled = $MAINT, default off, so the WAL measured is the calls' own, not
# rotations and prunes of the maintenance worker), one database with CREATE EXTENSION awa, and
# is stopped and removed afterwards. In the cell, in order:
#   1. lanes: N queues q1..qN (priority 2), each created by one awa.enqueue, 1,000 per transaction
#      (one DO block with COMMIT); wall time and WAL (pg_current_wal_lsn() difference) per lane.
#      Then the same loop again, into the now existing lanes: the cost of an enqueue alone; the
#      difference is the new lane's own cost.
#   2. relations in schema awa and the lane bookkeeping on disk:
#      pg_total_relation_size('awa.queue_lanes') + sum(pg_relation_size) of the sequences of
#      schema awa, minus the same right after CREATE EXTENSION, divided by N.
#   3. prefill (enqueue_many per queue, not timed) so claims find jobs, then pgbench from the same
#      bin dir, 1 client, -t $TX, twice each: (a) awa.enqueue into queue 'q' || random(1, N),
#      (b) claim + complete of one job of queue 'q' || random(1, N). Reported: pgbench's latency
#      average (µs per transaction, over a Unix socket) and WAL bytes per transaction.
#      "empty" = claims that found no job (should be 0).
#   4. a single session claims + completes one job in each of the N queues (1,000 per transaction)
#      and then reads sum(used_bytes) of pg_backend_memory_contexts and the CacheMemoryContext's
#      own used_bytes (relcache); also in a fresh session after one claim (the baseline).
#   5. shared memory: sum(allocated_size) of the awa-named entries of pg_shmem_allocations, and
#      the DSM segments (/dev/shm/PostgreSQL.*) the session's backend has mapped, which hold the
#      per-queue counters beyond their first 1 MiB (needs to read /proc/<backend pid>/maps: run
#      as root or postgres).
# Writes Markdown tables to stdout and $WORKDIR/result.md.
#
# Environment: BUILDS ("label=bindir ..."; default "build=$PGBIN"), PGBIN (default
# /usr/lib/postgresql/15/bin), COUNTS (default "10 1000 10000"), TX (pgbench transactions per run,
# default 5000), PORT (first port, build i uses PORT+i; default 5493), DATA_PREFIX (default
# $WORKDIR/data), WORKDIR, MAINT (default off), KEEP=1 (keep data directories).
set -euo pipefail

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
BUILDS=${BUILDS:-build=$PGBIN}
COUNTS=${COUNTS:-10 1000 10000}
TX=${TX:-5000}
PORT=${PORT:-5493}
MAINT=${MAINT:-off}
KEEP=${KEEP:-0}
WORKDIR=${WORKDIR:-$(mktemp -d /tmp/awa-lanes.XXXXXX)}
mkdir -p "$WORKDIR"
DATA_PREFIX=${DATA_PREFIX:-$WORKDIR/data}
mkdir -p "$WORKDIR/logs"
CELLS="$WORKDIR/cells.tsv"
: >"$CELLS"

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
now() { date +%s.%N; }
if [ "$(id -u)" = 0 ]; then chown -R postgres "$WORKDIR"; fi

CUR_BIN='' CUR_DATA='' CUR_SOCK='' CUR_PORT=''
cleanup() {
	local rc=$?
	if [ -n "$CUR_DATA" ] && [ -f "$CUR_DATA/postmaster.pid" ]; then
		as_pg "$CUR_BIN/pg_ctl" -D "$CUR_DATA" -m fast -w stop >/dev/null 2>&1 || true
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# psql in database bench of the current cell: one value or rows, unaligned.
q() { PGOPTIONS="-c client_min_messages=warning" as_pg "$CUR_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$CUR_SOCK" -p "$CUR_PORT" -U postgres -d bench -At "$@"; }
lsn() { q -c "SELECT pg_current_wal_lsn()"; }
wal_diff() { q -c "SELECT pg_wal_lsn_diff('$2', '$1')::bigint"; }
div() { awk -v a="$1" -v b="$2" -v d="${3:-1}" 'BEGIN { if (b == 0) print "-"; else printf "%.*f\n", d, a / b }'; }

# The lane bookkeeping on disk: queue_lanes with its indexes and TOAST, and the sequences of awa.
lane_bytes() {
	q -c "SELECT pg_total_relation_size('awa.queue_lanes') + coalesce((SELECT sum(pg_relation_size(oid)) FROM pg_class WHERE relnamespace = 'awa'::regnamespace AND relkind = 'S'), 0)"
}
rels() { q -c "SELECT count(*) FROM pg_class WHERE relnamespace = 'awa'::regnamespace"; }
seqs() { q -c "SELECT count(*) FROM pg_class WHERE relnamespace = 'awa'::regnamespace AND relkind = 'S'"; }
# Available jobs, counted from the tables (awa.queue_counts_exact) and by the counters.
available() { q -c "SELECT coalesce(sum(available), 0) FROM awa.queue_counts_exact()"; }
counters_exact() {
	q -c "SELECT (SELECT count(*) FROM awa.queue_counts()) = $N AND NOT EXISTS (SELECT FROM awa.queue_counts() c JOIN awa.queue_counts_exact() e USING (queue) WHERE (c.available, c.running) <> (e.available, e.running))"
}

# One loop over q1..qN in one DO block, COMMIT every 1,000: $1 the statement per queue (i the
# index). Prints the loop's own time in µs per queue, taken in the server (clock_timestamp()),
# followed by the value of the SQL expression $2 (if any) evaluated in the same session after it.
loop_queues() {
	q -c "DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); BEGIN FOR i IN 1..$N LOOP $1; IF i % 1000 = 0 THEN COMMIT; END IF; END LOOP; PERFORM set_config('lanes.us', (extract(epoch FROM clock_timestamp() - t0) * 1e6 / $N)::numeric(20, 1)::text, false); END \$\$" -c "SELECT current_setting('lanes.us') ${2:+|| ' ' || $2}" | tail -1
}
# CPU time (µs) of the server's exited processes: the postmaster's cutime + cstime, to which a
# backend's CPU is added when it exits (each psql and pgbench run here is its own backend).
# Counted in clock ticks (10 ms); other processes that exit meanwhile (autovacuum workers) count too.
TICK_US=$((1000000 / $(getconf CLK_TCK)))
server_cpu() {
	sleep 0.3 # the backend of the client that just ended is reaped
	local pm
	pm=$(as_pg head -1 "$CUR_DATA/postmaster.pid")
	awk -v t="$TICK_US" '{ print ($16 + $17) * t }' "/proc/$pm/stat"
}
# "lsn|full-page images written so far|checkpoints so far" (pg_stat_wal, pg_stat_bgwriter; a
# backend's WAL statistics reach pg_stat_wal when it exits, as the clients here do).
walstat() { q -c "SELECT pg_current_wal_lsn(), (SELECT wal_fpi FROM pg_stat_wal), (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter)"; }
# "WAL bytes per unit (full-page images per 1,000 units)", with " ckpt" when a checkpoint
# happened in between: $1, $2 walstat before and after, $3 units.
wal_per() {
	local l0 f0 k0 l1 f1 k1
	IFS='|' read -r l0 f0 k0 <<<"$1"
	IFS='|' read -r l1 f1 k1 <<<"$2"
	printf '%s (%s)%s\n' "$(div "$(wal_diff "$l0" "$l1")" "$3" 0)" "$(div "$((1000 * (f1 - f0)))" "$3" 0)" "$([ "$k1" = "$k0" ] || echo ' ckpt')"
}
# Times a loop: prints "µs per queue<TAB>server CPU µs per queue<TAB>WAL per queue" (wal_per).
timed_loop() {
	local w0 w1 us c0 c1
	c0=$(server_cpu)
	w0=$(walstat)
	us=$(loop_queues "$1")
	c1=$(server_cpu)
	w1=$(walstat)
	printf '%s\t%s\t%s\n' "$us" "$(div "$((c1 - c0))" "$N" 1)" "$(wal_per "$w0" "$w1" "$N")"
}
# One pgbench run: $1 script, $2 log name. Prints "µs per transaction<TAB>server CPU µs per
# transaction<TAB>WAL per transaction" (wal_per).
pgbench_run() {
	local w0 w1 c0 c1 out="$WORKDIR/logs/$2.pgbench" lat
	c0=$(server_cpu)
	w0=$(walstat)
	as_pg "$CUR_BIN/pgbench" -h "$CUR_SOCK" -p "$CUR_PORT" -U postgres -n -c 1 -t "$TX" -D n="$N" -f "$1" bench >"$out" 2>&1
	c1=$(server_cpu)
	w1=$(walstat)
	lat=$(sed -nE 's/^latency average = ([0-9.]+) ms.*/\1/p' "$out")
	printf '%s\t%s\t%s\n' "$(awk -v l="$lat" 'BEGIN { printf "%.0f", l * 1000 }')" "$(div "$((c1 - c0))" "$TX" 0)" "$(wal_per "$w0" "$w1" "$TX")"
}

run_cell() { # $1 label, $2 bin dir, $3 port, $4 N
	local label=$1 tag
	CUR_BIN=$2 CUR_PORT=$3 N=$4
	CUR_DATA="$DATA_PREFIX-$label" CUR_SOCK="$WORKDIR/sock-$label"
	tag="$label-$N"
	rm -rf "$CUR_DATA"
	mkdir -p "$CUR_SOCK"
	if [ "$(id -u)" = 0 ]; then chown postgres "$CUR_SOCK" "$WORKDIR" "$WORKDIR/logs"; fi
	log "$label N=$N: initdb $CUR_DATA, port $CUR_PORT"
	as_pg "$CUR_BIN/initdb" -D "$CUR_DATA" -U postgres --auth=trust --no-sync -E UTF8 --locale=C >"$WORKDIR/logs/initdb-$tag.log"
	cat >>"$CUR_DATA/postgresql.conf" <<EOF

# ---- bench/lanes.sh (otherwise stock)
port = $CUR_PORT
listen_addresses = ''
unix_socket_directories = '$CUR_SOCK'
shared_preload_libraries = 'awa'
awa.max_queues_per_database = 200000
awa.maintenance_enabled = $MAINT
EOF
	rm -f "$WORKDIR/logs/server-$tag.log"
	as_pg "$CUR_BIN/pg_ctl" -D "$CUR_DATA" -l "$WORKDIR/logs/server-$tag.log" -w start >/dev/null
	PGOPTIONS="-c client_min_messages=warning" as_pg "$CUR_BIN/psql" -X -q -h "$CUR_SOCK" -p "$CUR_PORT" -U postgres -d postgres -c "CREATE DATABASE bench" >/dev/null
	q -c "CREATE EXTENSION awa"

	local rels0 bytes0 create existing rels1 seqs1 bytes1 lane_bytes_per
	rels0=$(rels)
	bytes0=$(lane_bytes)
	q -c "CHECKPOINT"
	log "$label N=$N: create $N lanes (one enqueue each, 1,000 per transaction)"
	create=$(timed_loop "PERFORM awa.enqueue('k', '{}', queue => 'q' || i, priority => 2)")
	rels1=$(rels)
	seqs1=$(seqs)
	bytes1=$(lane_bytes)
	lane_bytes_per=$(div "$((bytes1 - bytes0))" "$N" 0)
	log "$label N=$N: one more enqueue into each existing lane"
	existing=$(timed_loop "PERFORM awa.enqueue('k', '{}', queue => 'q' || i, priority => 2)")

	# Enough jobs that a random claim finds one: 2 x the expected claims per queue + a margin.
	local per
	per=$(awk -v t="$TX" -v n="$N" 'BEGIN { p = int(2 * 2 * t / n) + (n >= 10000 ? 4 : 10); print p }')
	log "$label N=$N: prefill $per jobs per queue"
	loop_queues "PERFORM awa.enqueue_many(array_fill('k'::text, ARRAY[$per]), NULL, queue => 'q' || i, priorities => array_fill(2, ARRAY[$per]))"  >/dev/null
	q -c "CHECKPOINT"

	cat >"$WORKDIR/enqueue.sql" <<'EOF'
\set q random(1, :n)
SELECT awa.enqueue('k', '{}', queue => 'q' || :q, priority => 2);
EOF
	cat >"$WORKDIR/claim.sql" <<'EOF'
\set q random(1, :n)
SELECT awa.complete(job_id, run_lease, receipt_id) FROM awa.claim('q' || :q, 1);
EOF
	if [ "$(id -u)" = 0 ]; then chown postgres "$WORKDIR"/*.sql; fi
	local enq1 enq2 cl1 cl2 avail0 avail1 empty
	log "$label N=$N: pgbench enqueue x2, claim + complete x2 (-t $TX)"
	enq1=$(pgbench_run "$WORKDIR/enqueue.sql" "$tag-enqueue-1")
	enq2=$(pgbench_run "$WORKDIR/enqueue.sql" "$tag-enqueue-2")
	avail0=$(available)
	q -c "CHECKPOINT"
	cl1=$(pgbench_run "$WORKDIR/claim.sql" "$tag-claim-1")
	cl2=$(pgbench_run "$WORKDIR/claim.sql" "$tag-claim-2")
	avail1=$(available)
	empty=$((2 * TX - (avail0 - avail1)))
	local exact
	exact=$(counters_exact)

	# One session: a fresh backend's memory after one claim, then another session's after a claim in
	# every queue (its time per claim too), its mapped DSM segments and the shared memory entries.
	local base shm claim_all touched_total touched_cache base_total base_cache
	base=$(q -F ' ' -c "SELECT count(*) FROM awa.claim('q1', 1)" \
		-c "SELECT (SELECT sum(used_bytes) FROM pg_backend_memory_contexts), (SELECT used_bytes FROM pg_backend_memory_contexts WHERE name = 'CacheMemoryContext')" | tail -1)
	log "$label N=$N: one session claims + completes in each of the $N queues"
	read -r claim_all touched_total touched_cache <<<"$(loop_queues "PERFORM awa.complete(job_id, run_lease, receipt_id) FROM awa.claim('q' || i, 1)" \
		"(SELECT sum(used_bytes) FROM pg_backend_memory_contexts) || ' ' || (SELECT used_bytes FROM pg_backend_memory_contexts WHERE name = 'CacheMemoryContext')")"
	shm=$(q -c "SELECT sum(allocated_size) FROM pg_shmem_allocations WHERE name LIKE 'awa%'")
	# DSM: the dynamic shared memory segments (/dev/shm/PostgreSQL.*) mapped by any process of the
	# cluster, read from /proc while a session that read every queue's counters (awa.queue_counts())
	# and every sequence's statistics (pg_statio_all_sequences) sleeps: the counters' area beyond
	# its first 1 MiB, and the cumulative statistics' area (one entry per relation used).
	local dsm=- pm seg
	PGAPPNAME=lanes-dsm q -c "SELECT count(*) FROM awa.queue_counts()" -c "SELECT count(blks_hit) FROM pg_statio_all_sequences" -c "SELECT pg_sleep(3)" >/dev/null &
	local qpid=$!
	sleep 2
	pm=$(as_pg head -1 "$CUR_DATA/postmaster.pid")
	dsm=$(for p in $(pgrep -P "$pm"); do grep -o '/PostgreSQL\.[0-9]*' "/proc/$p/maps" 2>/dev/null || true; done | sort -u |
		while read -r seg; do stat -c %s "/dev/shm$seg" 2>/dev/null || true; done | awk '{ s += $1 } END { print s + 0 }')
	wait "$qpid"

	as_pg "$CUR_BIN/pg_ctl" -D "$CUR_DATA" -m fast -w stop >/dev/null
	local problems
	problems=$(grep -E ' (ERROR|WARNING|FATAL|PANIC): ' "$WORKDIR/logs/server-$tag.log" |
		grep -Evc 'FATAL:  terminating background worker ".*" due to administrator command$' || true)
	if [ "$KEEP" != 1 ]; then rm -rf "$CUR_DATA"; fi
	CUR_DATA=''
	read -r base_total base_cache <<<"$base"
	# 1 label, 2 N, 3 rels0, 4 rels1, 5 seqs, 6 lane bytes per lane, 7-9 create µs/CPU/WAL,
	# 10-12 existing µs/CPU/WAL, 13-15 enqueue run 1, 16-18 run 2, 19-21 claim run 1, 22-24 run 2,
	# 25 empty, 26 claim-all µs, 27-30 memory, 31 shm, 32 dsm, 33 problems, 34 counters = exact
	printf '%s\t' "$label" "$N" "$rels0" "$rels1" "$seqs1" "$lane_bytes_per" "$create" "$existing" "$enq1" "$enq2" "$cl1" "$cl2" \
		"$empty" "$claim_all" "$base_total" "$base_cache" "$touched_total" "$touched_cache" "$shm" "$dsm" "$problems" >>"$CELLS"
	printf '%s\n' "$exact" >>"$CELLS"
	log "$label N=$N: done: $(tail -1 "$CELLS")"
}

for n in $COUNTS; do
	i=0
	for b in $BUILDS; do
		run_cell "${b%%=*}" "${b#*=}" "$((PORT + i))" "$n"
		i=$((i + 1))
	done
done

render() {
	echo "## Lanes against the number of queues ($(date -u +%Y-%m-%d), $(nproc) cores, pgbench 1 client -t $TX, awa.maintenance_enabled = $MAINT)"
	echo
	echo "Command: \`BUILDS=\"$BUILDS\" COUNTS=\"$COUNTS\" TX=$TX bench/lanes.sh\`"
	echo
	echo "µs: wall time (server-side for the loops, pgbench's latency average for pgbench); CPU: server CPU time (postmaster's children, 10 ms ticks); WAL: pg_current_wal_lsn() difference, bytes, with the full-page images per 1,000 (pg_stat_wal.wal_fpi) in parentheses and \"ckpt\" when a checkpoint (pg_stat_bgwriter) fell inside. Each divided by the lanes created or the calls made. A CHECKPOINT precedes the lane creation and the first run of each pgbench pair, so those include the full-page images of the pages first touched."
	echo
	echo "### Structure and new lanes"
	echo
	echo "| build | queues | relations in awa (after CREATE EXTENSION → with the lanes) | sequences in awa | lane bookkeeping on disk, bytes per lane | new lane (first enqueue): µs | CPU µs | WAL B (FPI/1k) | enqueue into an existing lane (same loop): µs | CPU µs | WAL B (FPI/1k) |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	awk -F'\t' '{ printf "| %s | %d | %s → %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 }' "$CELLS"
	echo
	echo "### Per call with N lanes (pgbench, 1 client; run 1 after a CHECKPOINT, run 2)"
	echo
	echo "| build | queues | enqueue, random queue: µs | CPU µs | WAL B (FPI/1k) | claim + complete, random queue: µs | CPU µs | WAL B (FPI/1k) | claims that found no job | counters = exact after |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
	awk -F'\t' '{ printf "| %s | %d | %s, %s | %s, %s | %s, %s | %s, %s | %s, %s | %s, %s | %s | %s |\n", $1, $2, $13, $16, $14, $17, $15, $18, $19, $22, $20, $23, $21, $24, $25, $34 }' "$CELLS"
	echo
	echo "### Memory"
	echo
	echo "| build | queues | claim + complete in each queue, one session, µs per queue | backend memory after 1 claim: all contexts / CacheMemoryContext, bytes | after a claim in every queue: all / CacheMemoryContext, bytes | pg_shmem_allocations 'awa%', bytes | DSM segments mapped by the cluster, bytes | server log ERROR/WARNING/FATAL |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|"
	awk -F'\t' '{ printf "| %s | %d | %s | %s / %s | %s / %s | %s | %s | %s |\n", $1, $2, $26, $27, $28, $29, $30, $31, $32, $33 }' "$CELLS"
}
render | tee "$WORKDIR/result.md"
