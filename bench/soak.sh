#!/usr/bin/env bash
# bench/soak.sh: a long run under steady load with the maintenance worker on, to show that the
# rings stay free of dead tuples and that throughput holds while another session sits idle in a
# transaction that holds an xid.
#
#   bench/soak.sh                                   about 8 minutes (30+120+60+120+120 s)
#   WARMUP=5 CLEAN=20 IDLE_TX=20 RECOVERY=20 CLEAN2=20 OUT=/tmp/soak.md CSV_OUT=/tmp/soak.csv \
#     FIGURES=/tmp/fig bench/soak.sh                 smoke run (under 2 minutes; the RSS item is
#                                                   judged only when the clean phase ends at 100 s
#                                                   or later: warm-up takes ~100 s)
#
# Scratch server (bench/scratch_server.sh, settings of bench/server.conf; awa.maintenance_enabled
# and the rotate intervals keep their defaults: worker on, 1 s). Database bench with the extension;
# the run starts once its maintenance worker is up. Load, for the whole run:
#   producers: pgbench -n -M prepared -c PRODUCERS -j 2 -R PRODUCER_RATE, bench/awa_enqueue_1.sql
#              (one awa.enqueue per transaction into queue bench, Poisson arrivals at the rate);
#   consumers: pgbench -n -M prepared -c CONSUMERS -j 2 -D B=10 -D IDLE_MS, bench/soak_consumer.sql
#              (claim up to B, complete_many; IDLE_MS pause after an empty claim).
# Phases: warmup, clean, idle_in_tx (a psql session runs BEGIN; SELECT txid_current(); and stays
# idle in that transaction until the phase ends, then commits), recovery, clean2.
#
# A sampler (one psql call per second) appends to $WORKDIR/soak.csv (copied to CSV_OUT):
#   - enqueued: awa.job_id_seq's last value (every enqueue takes one id; none rolls back here);
#   - completed: enqueued - (available + running + scheduled + retryable) of
#     awa.queue_counts('bench'). Nothing fails, is cancelled or retried in this workload (checked:
#     failed = cancelled = dlq = 0 at every sample), so every job that left the pending states was
#     completed. The counters are shared memory (no snapshot, no lock). An enqueue between its
#     nextval and its commit counts as completed for that instant: the error is at most PRODUCERS
#     jobs and never accumulates. (queue_counts' own completed column cannot be used: prune takes
#     a pruned slot's completions out of it.)
#   - n_dead_tup per table family from pg_stat_all_tables, max over the family's partitions and sum
#     (queue ring, claim ring, leases, attempt_state, deferred_jobs); the three rotation ledgers'
#     n_dead_tup, n_tup_upd and n_tup_del (summed);
#   - ring generations (ledger max), the last prune outcomes, maintenance errors;
#   - the maintenance worker of database bench: pid, VmRSS, RssAnon, RssShmem, RssFile
#     (/proc/<pid>/status) and whether it has LLVM mapped (/proc/<pid>/maps: it ran a JIT-compiled query);
#   - age(backend_xid) of an idle-in-transaction session (0 when none), oldest backend_xmin age;
#   - CPU jiffies of the machine and of this benchmark (server tree + its pgbench), to show noise.
# The sampler takes no lock on a ring partition (statistics views, shared-memory counters and
# the ledgers only), so it cannot block prune's ACCESS EXCLUSIVE.
#
# After the run (load stopped): queue_counts('bench') = queue_counts_exact('bench') (compared while
# no prune moves the counters), the worker kept its pid, no maintenance step error, no pgbench or
# server log error, and an instrument check: one enqueue rolled back must show as n_dead_tup > 0.
# Then bench/soak_report.py writes OUT (per-phase table and contract checks) and bench/plot_soak.py
# draws the PNGs into FIGURES (when /usr/bin/python3 has matplotlib; otherwise the report says so).
# Exit status 1 if a contract item or an integrity check fails; the report is written either way.
#
# Environment: WARMUP CLEAN IDLE_TX RECOVERY CLEAN2 (s; default 30 120 60 120 120), PRODUCER_RATE
# (jobs/s offered, default 800), PRODUCERS (default 4), CONSUMERS (default 8), B (default 10),
# IDLE_MS (default 10), OUT (default bench/RESULTS-maintenance.md), CSV_OUT (default
# bench/soak.csv), FIGURES (default docs/figures), PORT (default 55443), PGBIN, WORKDIR, KEEP=1,
# MEMCTX_EVERY (diagnostics, default 0 = off: every that many samples the sampler also runs
# pg_log_backend_memory_contexts() on the worker, which writes its memory contexts to the server log),
# SMOKE=1 (a smoke run, test/t/031_bench_smoke.pl: soak_report.py's contract and validity verdicts
# and the instrument check are in the report but do not set the exit status; the other integrity
# checks still do).
# Run as root or as postgres, after make install.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
CMD=""
for v in WARMUP CLEAN IDLE_TX RECOVERY CLEAN2 PRODUCER_RATE PRODUCERS CONSUMERS B IDLE_MS MEMCTX_EVERY PORT; do
	if [ -n "${!v+x}" ]; then CMD+="$v=$(printf %q "${!v}") "; fi
done
CMD+="bench/soak.sh"

WARMUP=${WARMUP:-30}
CLEAN=${CLEAN:-120}
IDLE_TX=${IDLE_TX:-60}
RECOVERY=${RECOVERY:-120}
CLEAN2=${CLEAN2:-120}
PRODUCER_RATE=${PRODUCER_RATE:-800}
PRODUCERS=${PRODUCERS:-4}
CONSUMERS=${CONSUMERS:-8}
B=${B:-10}
IDLE_MS=${IDLE_MS:-10}
OUT=${OUT:-$BENCH_DIR/RESULTS-maintenance.md}
CSV_OUT=${CSV_OUT:-$BENCH_DIR/soak.csv}
FIGURES=${FIGURES:-$REPO_DIR/docs/figures}
PORT=${PORT:-55443}
PYTHON=${PYTHON:-/usr/bin/python3}
MEMCTX_EVERY=${MEMCTX_EVERY:-0}
SMOKE=${SMOKE:-0}
SCRIPT_NAME=soak
PHASES=(warmup clean idle_in_tx recovery clean2)
DURATIONS=("$WARMUP" "$CLEAN" "$IDLE_TX" "$RECOVERY" "$CLEAN2")
TOTAL=$((WARMUP + CLEAN + IDLE_TX + RECOVERY + CLEAN2))

# shellcheck source=bench/scratch_server.sh
. "$BENCH_DIR/scratch_server.sh"

START_UTC=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
OTHER_PG=$(ps -eo args= | grep -cE '^(/usr/lib/postgresql/[0-9]+/bin/)?postgres -D' || true)
start_scratch_server
sql "CREATE DATABASE bench" >/dev/null
export DB=bench
sql "CREATE EXTENSION awa" >/dev/null

log "waiting for the maintenance worker of database bench"
sql "DO \$\$
BEGIN
    FOR i IN 1 .. 300 LOOP
        EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity
                           WHERE backend_type = 'awa maintenance worker' AND datname = 'bench');
        PERFORM pg_sleep(0.1);
    END LOOP;
    IF NOT EXISTS (SELECT 1 FROM pg_stat_activity
                    WHERE backend_type = 'awa maintenance worker' AND datname = 'bench') THEN
        RAISE EXCEPTION 'no awa maintenance worker for database bench after 30 s';
    END IF;
END \$\$" >/dev/null
WORKER_PID0=$(sql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'awa maintenance worker' AND datname = 'bench'")
SETTINGS=$(sql "SELECT string_agg(name || ' = ' || current_setting(name), ', ' ORDER BY name) FROM pg_settings
                 WHERE name IN ('awa.maintenance_enabled', 'awa.queue_rotate_interval', 'awa.claim_rotate_interval',
                                'awa.lease_rotate_interval', 'awa.prune_lock_timeout', 'awa.async_claim_commit',
                                'autovacuum', 'shared_buffers', 'synchronous_commit', 'fsync')")
log "worker pid $WORKER_PID0; $SETTINGS"

# --- sampler ---------------------------------------------------------------------------------
CSV="$WORKDIR/soak.csv"
PHASE_FILE="$WORKDIR/phase"
echo warmup >"$PHASE_FILE"
FAMILIES=(lease_claim_closures lease_claim_closure_batches lease_claim_batches lease_claims
	ready_entries ready_tombstones ready_claim_attempt_batches done_entries
	receipt_completion_batches leases attempt_state deferred_jobs)
fam_values=""
fam_header=""
for i in "${!FAMILIES[@]}"; do
	f=${FAMILIES[$i]}
	ring=true
	case $f in attempt_state | deferred_jobs) ring=false ;; esac
	fam_values+="${fam_values:+, }($i, '$f', $ring)"
	fam_header+=",dead_max_$f,dead_sum_$f"
done
SAMPLE_SQL="
WITH fam(ord, f, ring) AS (VALUES $fam_values),
dead AS (
    SELECT fam.ord, coalesce(max(s.n_dead_tup), 0) AS mx, coalesce(sum(s.n_dead_tup), 0) AS sm
      FROM fam LEFT JOIN pg_stat_all_tables s
        ON s.schemaname = 'awa'
       AND CASE WHEN fam.ring THEN s.relname ~ ('^' || fam.f || '_[0-9]+\$') ELSE s.relname = fam.f END
     GROUP BY fam.ord),
ledger AS (
    SELECT coalesce(sum(n_dead_tup), 0) AS d, coalesce(sum(n_tup_upd), 0) AS u, coalesce(sum(n_tup_del), 0) AS x
      FROM pg_stat_all_tables
     WHERE schemaname = 'awa' AND relname IN ('queue_ring_rotations', 'claim_ring_rotations', 'lease_ring_rotations')),
qc AS (SELECT * FROM awa.queue_counts('bench')),
seq AS (SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS v FROM awa.job_id_seq),
ms AS (SELECT * FROM awa.maintenance_status())
SELECT concat_ws(',',
    extract(epoch FROM clock_timestamp())::numeric(20, 3),
    seq.v, qc.available, qc.running, qc.scheduled, qc.retryable, qc.completed, qc.failed, qc.cancelled, qc.dlq,
    seq.v - (qc.available + qc.running + qc.scheduled + qc.retryable),
    (SELECT coalesce(max(generation), 0) FROM awa.queue_ring_rotations),
    (SELECT coalesce(max(generation), 0) FROM awa.claim_ring_rotations),
    (SELECT coalesce(max(generation), 0) FROM awa.lease_ring_rotations),
    coalesce((SELECT last_outcome FROM ms WHERE task = 'prune_queue'), 'none'),
    coalesce((SELECT last_outcome FROM ms WHERE task = 'prune_claim'), 'none'),
    coalesce((SELECT sum(errors) FROM ms), 0),
    (SELECT coalesce(sum(n_live_tup), 0) FROM pg_stat_all_tables
      WHERE schemaname = 'awa' AND relname ~ '^ready_entries_[0-9]+\$'),
    coalesce((SELECT max(pid) FROM pg_stat_activity
               WHERE backend_type = 'awa maintenance worker' AND datname = 'bench'), 0),
    coalesce((SELECT max(age(backend_xid)) FROM pg_stat_activity
               WHERE state = 'idle in transaction' AND backend_xid IS NOT NULL), 0),
    coalesce((SELECT max(age(backend_xmin)) FROM pg_stat_activity WHERE pid <> pg_backend_pid()), 0),
    (SELECT string_agg(mx || ',' || sm, ',' ORDER BY ord) FROM dead),
    ledger.d, ledger.u, ledger.x)
  FROM qc, seq, ledger"
CSV_HEADER="t,phase,epoch,enqueued,available,running,scheduled,retryable,completed_counter,failed,cancelled,dlq,completed,queue_gen,claim_gen,lease_gen,prune_queue,prune_claim,maint_errors,ready_live,worker_pid,idle_xid_age,xmin_age${fam_header},ledger_dead,ledger_upd,ledger_del,rss_kb,rss_anon_kb,rss_shmem_kb,rss_file_kb,worker_llvm,cpu_busy_jiffies,cpu_ours_jiffies"

busy_jiffies() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat; }
# This benchmark's CPU: the postmaster (own + reaped children), its live children, and the live
# pgbench processes this script started (ppid = this shell).
ours_jiffies() {
	local pm; pm=$(head -1 "$PGDATA/postmaster.pid")
	{ cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v pm="$pm" -v me="$$" '
		{ pid = $1; comm = $2; line = $0; sub(/^.*\) /, "", line); split(line, f, " ")
		  if (pid == pm) s += f[12] + f[13] + f[14] + f[15]
		  else if (f[2] == pm || (f[2] == me && comm == "(pgbench)")) s += f[12] + f[13] }
		END { print s + 0 }'
}
# VmRSS RssAnon RssShmem RssFile (kB) of pid $1, and 1 if it has LLVM (JIT) mapped, else 0.
rss_of() {
	local llvm
	llvm=$(grep -c -i llvm "/proc/$1/maps" 2>/dev/null || true)
	awk -v l="${llvm:-0}" '/^VmRSS:/ {r = $2} /^RssAnon:/ {a = $2} /^RssShmem:/ {s = $2} /^RssFile:/ {f = $2}
	     END {printf "%d,%d,%d,%d,%d\n", r, a, s, f, (l > 0)}' "/proc/$1/status" 2>/dev/null || echo "0,0,0,0,0"
}

sampler() {
	local t0=$1 next row pid now k=0
	next=$t0
	while [ ! -e "$WORKDIR/sampler.stop" ]; do
		row=$(sql "$SAMPLE_SQL" 2>>"$WORKDIR/sampler.err") || { sleep 0.2; continue; }
		pid=$(cut -d, -f19 <<<"$row")
		if [ "$MEMCTX_EVERY" -gt 0 ] && [ $((k % MEMCTX_EVERY)) = 0 ] && [ "$pid" != 0 ]; then
			sql "SELECT pg_log_backend_memory_contexts($pid)" >/dev/null 2>>"$WORKDIR/sampler.err" || true
		fi
		k=$((k + 1))
		now=$(cut -d, -f1 <<<"$row")
		printf '%s,%s,%s,%s,%s,%s\n' "$(awk -v a="$now" -v b="$t0" 'BEGIN {printf "%.3f", a - b}')" \
			"$(cat "$PHASE_FILE")" "$row" "$(rss_of "$pid")" "$(busy_jiffies)" "$(ours_jiffies)" >>"$CSV"
		next=$(awk -v n="$next" 'BEGIN {printf "%.3f", n + 1}')
		sleep "$(awk -v n="$next" -v now="$(date +%s.%N)" 'BEGIN {d = n - now; printf "%.3f", (d > 0) ? d : 0}')"
	done
}
sleep_until() { sleep "$(awk -v n="$1" -v now="$(date +%s.%N)" 'BEGIN {d = n - now; printf "%.3f", (d > 0) ? d : 0}')"; }

# --- the run ---------------------------------------------------------------------------------
echo "$CSV_HEADER" >"$CSV"
T0=$(date +%s.%N)
sampler "$T0" &
SAMPLER_PID=$!
BG_PIDS+=("$SAMPLER_PID")
"${PGBENCH[@]}" -n -M prepared -c "$CONSUMERS" -j 2 -T "$TOTAL" -P 10 -D B="$B" -D IDLE_MS="$IDLE_MS" \
	-f "$BENCH_DIR/soak_consumer.sql" bench >"$WORKDIR/logs/consumers.pgbench" 2>&1 &
CONSUMERS_PID=$!
BG_PIDS+=("$CONSUMERS_PID")
"${PGBENCH[@]}" -n -M prepared -c "$PRODUCERS" -j 2 -R "$PRODUCER_RATE" -T "$TOTAL" -P 10 \
	-f "$BENCH_DIR/awa_enqueue_1.sql" bench >"$WORKDIR/logs/producers.pgbench" 2>&1 &
PRODUCERS_PID=$!
BG_PIDS+=("$PRODUCERS_PID")

IDLE_CHECK=""
CHECKS=()
end=$T0
for i in "${!PHASES[@]}"; do
	phase=${PHASES[$i]}
	echo "$phase" >"$PHASE_FILE"
	end=$(awk -v e="$end" -v d="${DURATIONS[$i]}" 'BEGIN {printf "%.3f", e + d}')
	log "phase $phase (${DURATIONS[$i]} s)"
	if [ "$phase" = idle_in_tx ]; then
		# The idle session: BEGIN; SELECT txid_current(); then nothing until COMMIT.
		mkfifo "$WORKDIR/idle.fifo"
		"${PSQL[@]}" -d bench -At <"$WORKDIR/idle.fifo" >"$WORKDIR/logs/idle_session.out" 2>&1 &
		IDLE_PID=$!
		BG_PIDS+=("$IDLE_PID")
		exec 3>"$WORKDIR/idle.fifo"
		echo "BEGIN; SELECT txid_current();" >&3
		sleep 1
		IDLE_CHECK=$(sql "SELECT count(*) || ' session(s) idle in transaction, xid ' || string_agg(backend_xid::text, ',')
		                    FROM pg_stat_activity WHERE state = 'idle in transaction' AND backend_xid IS NOT NULL")
		log "idle session: $IDLE_CHECK"
		sleep_until "$end"
		echo "COMMIT;" >&3
		exec 3>&-
		wait "$IDLE_PID" || true
	else
		sleep_until "$end"
	fi
done
touch "$WORKDIR/sampler.stop"
wait "$SAMPLER_PID" || true
# pgbench runs -T TOTAL from (just after) T0: it ends on its own and prints its summary.
wait "$CONSUMERS_PID" || CHECKS+=("FAIL: the consumers' pgbench exited with status $?")
wait "$PRODUCERS_PID" || CHECKS+=("FAIL: the producers' pgbench exited with status $?")
BG_PIDS=()
log "load stopped"
sleep 1

# --- after the run: integrity checks -----------------------------------------------------------
# The worker keeps pruning after the load stops, and each prune moves a slot's completions out
# of the counters while the exact pass reads the tables: a pair of reads is compared only when
# the counters read before and after queue_counts_exact agree (no prune in between); up to 20
# tries 0.3 s apart.
counts="" exact="" tries=0
for tries in $(seq 1 20); do
	IFS='#' read -r c1 exact c2 < <(sql "SELECT (SELECT row(q.*)::text FROM awa.queue_counts('bench') q) || '#'
	                                   || (SELECT row(q.*)::text FROM awa.queue_counts_exact('bench') q) || '#'
	                                   || (SELECT row(q.*)::text FROM awa.queue_counts('bench') q)")
	counts=$c1
	[ "$c1" = "$c2" ] && break
	sleep 0.3
done
[ "$counts" = "$c2" ] || CHECKS+=("FAIL: the counters kept moving over 20 tries (last: $c1 / $c2)")
[ "$counts" = "$exact" ] || CHECKS+=("FAIL: queue_counts $counts != queue_counts_exact $exact (counters stable around the exact read, try $tries)")
WORKER_PID1=$(sql "SELECT coalesce(max(pid), 0) FROM pg_stat_activity WHERE backend_type = 'awa maintenance worker' AND datname = 'bench'")
[ "$WORKER_PID1" = "$WORKER_PID0" ] || CHECKS+=("FAIL: the maintenance worker changed: pid $WORKER_PID0 at start, $WORKER_PID1 at the end")
MAINT=$(sql "SELECT string_agg(format('| %s | %s | %s | %s |', task, last_outcome, runs, errors), E'\n' ORDER BY task)
              FROM awa.maintenance_status()")
MAINT_ERRORS=$(sql "SELECT sum(errors) FROM awa.maintenance_status()")
[ "$MAINT_ERRORS" = 0 ] || CHECKS+=("FAIL: awa.maintenance_status() reports $MAINT_ERRORS step error(s)")
STORAGE=$(sql "SELECT string_agg(format('| %s | %s | %s | %s | %s | %s |', ring, generation, current_slot, last_rotate,
                                        last_prune, dead_tuples), E'\n' ORDER BY ring) FROM awa.storage_status()")
errors=$(cat "$WORKDIR/logs/consumers.pgbench" "$WORKDIR/logs/producers.pgbench" | { grep -ciE 'error|abort' || true; })
[ "$errors" = 0 ] || CHECKS+=("FAIL: $errors error line(s) in the pgbench output ($WORKDIR/logs)")
LOG_PROBLEMS=$(server_log_problems)
[ "$LOG_PROBLEMS" = 0 ] || CHECKS+=("FAIL: server log: $LOG_PROBLEMS ERROR/WARNING/FATAL/PANIC line(s) ($SERVER_LOG)")
[ -s "$WORKDIR/sampler.err" ] && CHECKS+=("note: sampler errors: $(head -3 "$WORKDIR/sampler.err" | tr '\n' ' ')")
# The instrument sees dead tuples: one enqueue rolled back leaves a dead ready row
# in the current queue slot, which n_dead_tup must show within 10 s (the slot is not
# pruned before the ring comes round again). Sampled after the run, so the contract is untouched.
sql "DO \$\$
BEGIN
    PERFORM awa.enqueue('probe', '{}', 'bench');
    RAISE EXCEPTION USING ERRCODE = 'P0004';
EXCEPTION WHEN assert_failure THEN NULL;
END \$\$" >/dev/null
sql "DO \$\$
BEGIN
    FOR i IN 1 .. 100 LOOP
        PERFORM pg_stat_clear_snapshot();
        EXIT WHEN (SELECT max(n_dead_tup) FROM pg_stat_all_tables
                    WHERE schemaname = 'awa' AND relname ~ '^ready_entries_[0-9]+\$') > 0;
        PERFORM pg_sleep(0.1);
    END LOOP;
END \$\$" >/dev/null
PROBE_DEAD=$(sql "SELECT coalesce(max(n_dead_tup), 0) FROM pg_stat_all_tables
                   WHERE schemaname = 'awa' AND relname ~ '^ready_entries_[0-9]+\$'")
[ "${PROBE_DEAD:-0}" -gt 0 ] || CHECKS+=("$([ "$SMOKE" = 1 ] && echo 'note (SMOKE=1, not judged)' || echo FAIL): a rolled-back enqueue left no dead tuple visible in pg_stat_all_tables within 10 s: the dead-tuple columns could not have seen one")
AUTOVAC=$(grep -c 'automatic vacuum of table "bench.awa.' "$SERVER_LOG" || true)
AUTOANALYZE=$(grep -c 'automatic analyze of table "bench.awa.' "$SERVER_LOG" || true)
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
LAT_P=$(pgbench_latency "$WORKDIR/logs/producers.pgbench")
LAT_C=$(pgbench_latency "$WORKDIR/logs/consumers.pgbench")

cp "$CSV" "$CSV_OUT"
mkdir -p "$FIGURES"
# The figures need matplotlib (python3-matplotlib, which scripts/install-deps.sh installs). Without
# it, or if plotting fails, the report is written all the same, saying why it has no figures.
FIG_NOTE=""
if ! "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
	FIG_NOTE="No figures: $PYTHON cannot import matplotlib (apt-get install python3-matplotlib, or run scripts/install-deps.sh)."
elif ! "$PYTHON" "$BENCH_DIR/plot_soak.py" "$CSV" "$FIGURES" "$PRODUCER_RATE" 2>"$WORKDIR/logs/plot_soak.err"; then
	FIG_NOTE="No figures: bench/plot_soak.py failed: $(tail -n 1 "$WORKDIR/logs/plot_soak.err")"
fi
[ -z "$FIG_NOTE" ] || log "$FIG_NOTE"
REPORT_RC=0
TABLES=$("$PYTHON" "$BENCH_DIR/soak_report.py" "$CSV" "$PRODUCER_RATE") || REPORT_RC=$?
FIG_REL=$(realpath --relative-to="$(dirname "$OUT")" "$FIGURES" 2>/dev/null || echo "$FIGURES")
CSV_REL=$(realpath --relative-to="$(dirname "$OUT")" "$CSV_OUT" 2>/dev/null || echo "$CSV_OUT")

{
	echo "# Maintenance soak: dead tuples, throughput and worker memory under steady load"
	echo
	echo "\`$CMD\`, $START_UTC."
	echo
	echo "- Machine: $(nproc) vCPU ($(lscpu 2>/dev/null | sed -nE 's/^Model name: *//p' | head -1)), $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) RAM, $(uname -sr); PostgreSQL $(sql 'SHOW server_version')."
	echo "- Noise: load average (1/5/15 min) at start $LOAD_START, at end $LOAD_END; other PostgreSQL servers running at start: $OTHER_PG. Per-phase CPU of this benchmark (server + pgbench) and of every other process is in the table (cores, from /proc/stat)."
	echo "- Server: bench/server.conf; $SETTINGS."
	echo "- Load for the whole run: producers \`pgbench -c $PRODUCERS -j 2 -R $PRODUCER_RATE\` with \`awa_enqueue_1.sql\` (one job per transaction; mean latency $LAT_P ms); consumers \`pgbench -c $CONSUMERS -j 2 -D B=$B -D IDLE_MS=$IDLE_MS\` with \`soak_consumer.sql\` (claim up to $B, then complete_many; mean loop latency $LAT_C ms)."
	echo "- Phases (s): warmup $WARMUP, clean $CLEAN, idle_in_tx $IDLE_TX (${IDLE_CHECK:-idle session not seen}), recovery $RECOVERY, clean2 $CLEAN2."
	echo "- Samples: one per second, [$(basename "$CSV_OUT")]($CSV_REL). Completed = enqueued (awa.job_id_seq) - (available + running + scheduled + retryable) of awa.queue_counts; rates are the change over a phase / its duration. Dead tuples: pg_stat_all_tables.n_dead_tup, max over a family's partitions (statistics are flushed by each backend at most once a second)."
	echo
	echo "$TABLES"
	echo
	echo "## End of run"
	echo
	echo "- queue_counts('bench') = queue_counts_exact('bench') after the load stopped (read while no prune ran; try $tries): \`$counts\` / \`$exact\`"
	echo "- maintenance worker pid: $WORKER_PID0 at start, $WORKER_PID1 at the end; autovacuum of awa tables (server log): $AUTOVAC vacuums, $AUTOANALYZE analyzes"
	echo "- instrument check: after the run, one enqueue rolled back in a subtransaction shows as n_dead_tup = ${PROBE_DEAD:-0} on its ready_entries partition (the sampler's source sees dead tuples)"
	echo "- server log ERROR/WARNING/FATAL/PANIC lines: $LOG_PROBLEMS; pgbench error lines: $errors"
	if [ "${#CHECKS[@]}" = 0 ]; then
		echo "- integrity checks: all passed"
	else
		printf -- '- %s\n' "${CHECKS[@]}"
	fi
	echo
	echo "| ring | generation | current slot | last rotate | last prune | dead tuples (storage_status) |"
	echo "|---|---:|---:|---|---|---|"
	echo "$STORAGE"
	echo
	echo "| task | last outcome | runs | errors |"
	echo "|---|---|---:|---:|"
	echo "$MAINT"
	echo
	echo "## Figures"
	echo
	if [ -n "$FIG_NOTE" ]; then
		echo "$FIG_NOTE"
	else
		echo "![enqueue and completion rate]($FIG_REL/soak_rates.png)"
		echo
		echo "![dead tuples per family]($FIG_REL/soak_dead_tuples.png)"
		echo
		echo "![maintenance worker RSS]($FIG_REL/soak_worker_rss.png)"
	fi
} >"$OUT"
cat "$OUT"

FAILED=0
for c in "${CHECKS[@]}"; do case $c in FAIL:*) FAILED=1 ;; esac; done
# SMOKE=1: the contract and validity verdicts of soak_report.py are written but do not decide the
# exit status (a run of seconds measures nothing); the report must still have been made.
if [ "$SMOKE" = 1 ] && [ "$REPORT_RC" = 1 ] && grep -q '^## Contract' <<<"$TABLES"; then
	log "SMOKE=1: soak_report.py's verdicts do not decide the exit status"
	REPORT_RC=0
fi
[ "$REPORT_RC" = 0 ] && [ "$FAILED" = 0 ]
