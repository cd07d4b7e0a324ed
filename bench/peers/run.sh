#!/usr/bin/env bash
# bench/peers/run.sh: awa next to three other PostgreSQL queues under pgbench, on one throwaway
# PostgreSQL 15 cluster that this script creates, measures on and stops again.
#
#   bench/peers/run.sh                                             full comparison (long: T=20, REPS=2)
#   T=3 REPS=1 W1_N="1 4" W2_N=4 W2_B=10 bench/peers/run.sh         smoke run (a few minutes)
#
# Systems (SYSTEMS): skip = a classic FOR UPDATE SKIP LOCKED jobs table (sql/skip_schema.sql);
# pgq = PgQ 3.5 (Debian postgresql-15-pgq3); pgmq = pgmq's pure-SQL install script, read from
# $PGMQ_SQL (never kept in this repository); awa = this repository, installed into the
# PostgreSQL tree of $PGBIN with `make install`; pgboss = pg-boss (npm, pinned in
# pgboss/package.json; `npm ci` in bench/peers/pgboss), driven by pgboss/driver.js through its own
# API (W2 and L only).
# Workloads (WORKLOADS): W1 enqueue, W2 drain, W3 steady mixed load, W4 slow WAL flush, P pressure
# phases (clean, idle in transaction, REPEATABLE READ readers, burst, recovery), L limits (drain
# cells with a limit that never binds beside the same drain without one, and binding limits).
# Every run also
# reports its cost: WAL bytes, commits, WAL flushes and server CPU time (per job in report.md).
# Every knob is an environment variable; bench/peers/README.md lists them and tells how each
# system is driven and counted.
#
# Output in $OUTDIR: raw.tsv (one row per measured run), report.md (report.py), *.png (plot.py,
# if matplotlib is installed), runner.log, meta.tsv, per run a pgbench log, the 1 s queue samples
# (.mon) and pgbench's per-second aggregates (.agg.*), and the server log (server-log/).
# Run it as root (initdb, pg_ctl and the server run as user postgres via runuser; psql and
# pgbench connect as database user postgres over a Unix socket) or as the user that should own
# the server. The cluster is stopped at the end, also when something fails.
set -euo pipefail

PEERS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# ----------------------------------------------------------------------------- knobs
# The command as typed, with the knobs that were set in the environment (for the report).
CMD=""
for v in T REPS SYSTEMS WORKLOADS W1_N W2_N W2_B PRELOAD IDLE_MS RATE CLAIM_SAMPLE AWA_WAIT_MS P_PHASES P_T P_RATE P_BURST_X P_N P_B P_WORK_MS P_READERS L_N L_B L_BIND_N L_BIND_CONC L_BIND_RATE L_BIND_BURST L_KEYS PGBIN PGMQ_SQL PORT OUTDIR WORKDIR KEEP WALDUMP; do
	if [ -n "${!v+x}" ]; then CMD+="$v=$(printf %q "${!v}") "; fi
done
CMD+="bench/peers/run.sh"
T=${T:-20}                                    # seconds per pgbench run (-T)
REPS=${REPS:-2}                               # repetitions of every cell
SYSTEMS=${SYSTEMS:-"skip pgq pgmq awa pgboss"}
WORKLOADS=${WORKLOADS:-"W1 W2 W3 W4"}
W1_N=${W1_N:-"1 4 16"}                        # W1 enqueue clients
W2_N=${W2_N:-"1 4 16 64"}                     # W2 drain workers
W2_B=${W2_B:-"1 10"}                          # W2 claim batch sizes
PRELOAD=${PRELOAD:-200000}                    # jobs pre-loaded for W2/W4
IDLE_MS=${IDLE_MS:-10}                        # workers' pause after a claim that returned nothing
RATE=${RATE:-2000}                            # W3 offered load, jobs/s (all producers together)
CLAIM_SAMPLE=${CLAIM_SAMPLE:-0.2}             # W3: share of worker statements logged with their duration
AWA_WAIT_MS=${AWA_WAIT_MS:-}                  # set: awa claims wait up to this long in the server
P_PHASES=${P_PHASES:-"clean idle_tx readers burst recovery"}   # P: the pressure phases, in order
P_T=${P_T:-30}                                # P: seconds per phase
P_RATE=${P_RATE:-500}                         # P: offered load, jobs/s (burst: P_BURST_X times this)
P_BURST_X=${P_BURST_X:-10}                    # P: the burst phase's rate multiplier
P_N=${P_N:-8}                                 # P: workers
P_B=${P_B:-10}                                # P: claim batch
P_WORK_MS=${P_WORK_MS:-0}                     # P: each claimed batch's work: the worker sleeps this long between claim and completion
P_READERS=${P_READERS:-4}                     # P: REPEATABLE READ sessions in the readers phase
L_N=${L_N:-"16 64"}                           # L: workers of the non-binding limit cells
L_B=${L_B:-"1 10"}                            # L: claim batch sizes (non-binding and binding cells)
L_BIND_N=${L_BIND_N:-16}                      # L: workers of the binding cells
L_BIND_CONC=${L_BIND_CONC:-4}                 # L: the binding concurrency limit
L_KEYS=${L_KEYS:-1000}                        # L: the concurrency keys of awa's keyed cells
L_BIND_RATE=${L_BIND_RATE:-200}               # L: the binding rate limit, jobs per second
L_BIND_BURST=${L_BIND_BURST:-10}              # L: its burst
# L's limits that never bind (awa): far above anything 64 workers on 2 cores reach
L_FREE_MAXRUN=100000
L_FREE_RATE=1000000
L_FREE_BURST=10000
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PGMQ_SQL=${PGMQ_SQL:-}                        # a copy of pgmq-extension/sql/pgmq.sql; unset = no pgmq
PORT=${PORT:-5499}                            # only names the socket file (no TCP listener)
WORKDIR=${WORKDIR:-}                          # data directory + socket; default a new /tmp/awa-peers.XXXXXX
OUTDIR=${OUTDIR:-$PEERS_DIR/results/run-$(date +%Y%m%d-%H%M%S)}
KEEP=${KEEP:-0}                               # 1 = keep the data directory afterwards
WALDUMP=${WALDUMP:-0}                         # 1 = each W1/W2/W4 run's WAL by record type and relation (<tag>.wal)
FIGURES=${FIGURES:-}                          # also write the PNGs here (relative: to the repository root)
if [ -z "${PYTHON:-}" ]; then
	# Debian's python3-matplotlib belongs to the system interpreter, which a pyenv or venv
	# python3 earlier in PATH would not see.
	if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi

RUNDB=bq_run              # the database every measured run gets, copied from a template
SQLD=$PEERS_DIR/pgbench
PAYLOAD='{"task":"send_email","user_id":12345,"template":"welcome","attempt_limit":25}'

# ----------------------------------------------------------------------------- helpers
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" | tee -a "$OUTDIR/runner.log" >&2; }
die() { printf 'run.sh: %s\n' "$*" >&2; exit 1; }
# The server and initdb run as postgres when we are root (initdb refuses root).
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
# psql: quiet, stop on error, unaligned tuples only. NOTICEs (CREATE EXTENSION, pgmq's DDL) off.
q() {
	local db=$1; shift
	PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -At -d "$db" "$@"
}
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
has_word() { [[ " $1 " == *" $2 "* ]]; }
count_words() { set -f; set -- $1; set +f; echo $#; }

check_knobs() {
	local v x
	for v in T REPS PRELOAD IDLE_MS RATE PORT KEEP WALDUMP P_T P_RATE P_BURST_X P_N P_B P_WORK_MS P_READERS L_BIND_N L_BIND_CONC L_BIND_RATE L_BIND_BURST; do
		is_uint "${!v}" || die "$v must be a non-negative integer (got '${!v}')"
	done
	[ "$T" -ge 1 ] && [ "$REPS" -ge 1 ] && [ "$PRELOAD" -ge 1 ] || die "T, REPS and PRELOAD must be at least 1"
	[ "$P_T" -ge 1 ] && [ "$P_RATE" -ge 1 ] && [ "$P_BURST_X" -ge 1 ] && [ "$P_N" -ge 1 ] && [ "$P_B" -ge 1 ] &&
		[ "$P_READERS" -ge 1 ] || die "P_T, P_RATE, P_BURST_X, P_N, P_B and P_READERS must be at least 1"
	for x in $P_PHASES; do case $x in clean|idle_tx|readers|burst|recovery) ;; *) die "unknown phase '$x' in P_PHASES (clean idle_tx readers burst recovery)";; esac; done
	[ -n "$P_PHASES" ] || die "P_PHASES must not be empty"
	[ "$L_BIND_N" -ge 1 ] && [ "$L_BIND_CONC" -ge 1 ] && [ "$L_BIND_RATE" -ge 1 ] && [ "$L_BIND_BURST" -ge 1 ] ||
		die "L_BIND_N, L_BIND_CONC, L_BIND_RATE and L_BIND_BURST must be at least 1"
	for v in W1_N W2_N W2_B L_N L_B; do
		for x in ${!v}; do is_uint "$x" && [ "$x" -ge 1 ] || die "$v must list positive integers (got '${!v}')"; done
	done
	if [ -n "$AWA_WAIT_MS" ]; then
		is_uint "$AWA_WAIT_MS" && [ "$AWA_WAIT_MS" -ge 1 ] || die "AWA_WAIT_MS must be a positive integer (ms)"
	fi
	for x in $SYSTEMS; do case $x in skip|pgq|pgmq|awa|pgboss) ;; *) die "unknown system '$x' (skip pgq pgmq awa pgboss)";; esac; done
	for x in $WORKLOADS; do case $x in W1|W2|W3|W4|P|L) ;; *) die "unknown workload '$x' (W1 W2 W3 W4 P L)";; esac; done
	[ -n "$SYSTEMS" ] && [ -n "$WORKLOADS" ] || die "SYSTEMS and WORKLOADS must not be empty"
}

# Sets ACTIVE (the systems that will run). awa must be installed in any case: it is preloaded
# for the whole cluster. A missing PgQ or pgmq only drops that system, with a message.
check_prerequisites() {
	local b
	for b in initdb pg_ctl postgres psql pgbench pg_config; do
		[ -x "$PGBIN/$b" ] || die "$PGBIN/$b not found (PGBIN must point at a PostgreSQL 15 bin directory)"
	done
	PG_MAJOR=$("$PGBIN/pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
	[ "$PG_MAJOR" = 15 ] || echo "run.sh: warning: $PGBIN is PostgreSQL $PG_MAJOR, the harness is made for 15" >&2
	SHAREDIR=$("$PGBIN/pg_config" --sharedir)
	PKGLIBDIR=$("$PGBIN/pg_config" --pkglibdir)
	[ -f "$SHAREDIR/extension/awa.control" ] && [ -f "$PKGLIBDIR/awa.so" ] ||
		die "awa is not installed in $PGBIN's tree ($SHAREDIR, $PKGLIBDIR): run 'make && make install' from the repository root (PG_CONFIG=$PGBIN/pg_config for another tree)"
	[ "$(id -u)" != 0 ] || id postgres >/dev/null 2>&1 || die "running as root needs an OS user 'postgres' to own the server"
	"$PYTHON" -c 'import sys' 2>/dev/null || die "python3 not found (PYTHON=$PYTHON); report.py needs it"
	ACTIVE=""
	SKIPPED=""
	for b in $SYSTEMS; do
		has_word "$ACTIVE" "$b" && continue
		case $b in
		pgq)
			if [ ! -f "$SHAREDIR/extension/pgq.control" ]; then
				echo "run.sh: skipping pgq: PgQ is not installed in $SHAREDIR. Debian: apt-get install -y postgresql-15-pgq3 (for a relocated tree, copy its extension/pgq* and lib/pgq_*.so files in too)" >&2
				SKIPPED+="pgq "; continue
			fi ;;
		pgmq)
			if [ -z "$PGMQ_SQL" ]; then
				echo "run.sh: skipping pgmq: PGMQ_SQL is not set. It must point at a copy of pgmq's pure-SQL install script, e.g." >&2
				echo "  git clone --depth 1 --branch v1.5.1 https://github.com/pgmq/pgmq /tmp/pgmq-src && cp /tmp/pgmq-src/pgmq-extension/sql/pgmq.sql /tmp/pgmq.sql" >&2
				echo "  PGMQ_SQL=/tmp/pgmq.sql bench/peers/run.sh" >&2
				SKIPPED+="pgmq "; continue
			fi
			[ -r "$PGMQ_SQL" ] || die "PGMQ_SQL=$PGMQ_SQL is not readable"
			grep -q 'FUNCTION pgmq.read' "$PGMQ_SQL" || die "PGMQ_SQL=$PGMQ_SQL does not look like pgmq-extension/sql/pgmq.sql" ;;
		pgboss)
			if ! command -v node >/dev/null 2>&1 || [ ! -f "$PEERS_DIR/pgboss/node_modules/pg-boss/package.json" ]; then
				echo "run.sh: skipping pgboss: it needs Node (20 or newer) and pg-boss installed next to its driver:" >&2
				echo "  (cd bench/peers/pgboss && npm ci)" >&2
				SKIPPED+="pgboss "; continue
			fi
			if ! wants W2 L; then
				echo "run.sh: skipping pgboss: it runs the W2 and L workloads only (WORKLOADS='$WORKLOADS')" >&2
				SKIPPED+="pgboss "; continue
			fi ;;
		esac
		ACTIVE+="$b "
	done
	ACTIVE=${ACTIVE% }
	[ -n "$ACTIVE" ] || die "none of SYSTEMS='$SYSTEMS' can run"
}

# ----------------------------------------------------------------------------- cluster
SERVER_STARTED=0
OWN_WORKDIR=0
SOCKDIR=""
setup_dirs() {
	[ ! -e "$OUTDIR/raw.tsv" ] || die "$OUTDIR/raw.tsv exists: pick a new OUTDIR (rows of two runs would be averaged as repetitions)"
	mkdir -p "$OUTDIR"
	OUTDIR=$(cd "$OUTDIR" && pwd)
	: >"$OUTDIR/runner.log"
	if [ -z "$WORKDIR" ]; then
		WORKDIR=$(mktemp -d /tmp/awa-peers.XXXXXX)
		OWN_WORKDIR=1
	fi
	mkdir -p "$WORKDIR"
	WORKDIR=$(cd "$WORKDIR" && pwd)
	PGDATA_DIR=$WORKDIR/data
	[ ! -e "$PGDATA_DIR" ] || die "$PGDATA_DIR exists: pick a new WORKDIR"
	# A Unix socket path must fit in 107 bytes: a long WORKDIR gets its socket in /tmp.
	SOCKDIR=$WORKDIR
	[ ${#SOCKDIR} -le 80 ] || SOCKDIR=$(mktemp -d /tmp/awa-peers-sock.XXXXXX)
	if [ "$(id -u)" = 0 ]; then chown postgres "$WORKDIR" "$SOCKDIR"; fi
	# Every client below (psql, pgbench) reaches this cluster only, with no inherited options:
	# a PGOPTIONS such as '-c jit=off' would silently change what is measured.
	unset PGOPTIONS PGDATABASE PGSERVICE PGSERVICEFILE PGHOSTADDR PGPASSWORD PGSSLMODE
	export PGHOST=$SOCKDIR PGPORT=$PORT PGUSER=postgres
}

start_cluster() {
	log "initdb in $PGDATA_DIR (PostgreSQL $PG_MAJOR from $PGBIN), socket $SOCKDIR/.s.PGSQL.$PORT"
	as_pg "$PGBIN/initdb" -D "$PGDATA_DIR" -U postgres --auth=trust --no-sync -E UTF8 --locale=C >"$WORKDIR/initdb.log"
	# PostgreSQL's defaults everywhere else: planner, JIT (jit = on), autovacuum, and awa's
	# maintenance worker at its default cadence (no awa.* setting).
	cat >>"$PGDATA_DIR/postgresql.conf" <<-EOF

	# ---- bench/peers/run.sh
	port = $PORT
	listen_addresses = ''                 # Unix socket only
	unix_socket_directories = '$SOCKDIR'
	# awa's claim registry, counters and maintenance launcher need the preload; the other systems
	# run on the same cluster with it loaded (workers only start in databases that have awa)
	shared_preload_libraries = 'awa'
	shared_buffers = 512MB
	max_connections = 200
	# PostgreSQL's defaults, written out because the comparison relies on them
	wal_level = replica
	synchronous_commit = on
	fsync = on
	autovacuum = on
	# harness choices: fewer forced checkpoints inside a run; a server log with autovacuum runs
	max_wal_size = 4GB
	logging_collector = on
	log_directory = 'log'
	log_line_prefix = '%m [%p] %d %a '
	log_autovacuum_min_duration = 0
	EOF
	# WALDUMP=1: keep every segment a run wrote until it has been read (wal_dump)
	[ "$WALDUMP" != 1 ] || echo "wal_keep_size = 16GB" >>"$PGDATA_DIR/postgresql.conf"
	as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -l "$WORKDIR/startup.log" -w start >/dev/null
	SERVER_STARTED=1
}

stop_cluster() {
	[ "$SERVER_STARTED" = 1 ] || return 0
	if ! as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w -t 120 stop >/dev/null 2>&1; then
		as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	SERVER_STARTED=0
}

# ERROR/PANIC lines in the server log so far; a run's note gets the ones written during it.
log_errors_total() {
	local n
	n=$(cat "$PGDATA_DIR"/log/*.log 2>/dev/null | grep -cE ' (ERROR|PANIC): ' || true)
	echo "${n:-0}"
}

# ----------------------------------------------------------------------------- templates
# Every measured run starts from a fresh copy of a template (CREATE DATABASE ... TEMPLATE), so
# each run sees the same state. Templates are created IS_TEMPLATE: awa's launcher starts no
# maintenance worker in a template, so nothing is ever connected to one when it is copied.

# make_template NEW FROM [HELPERS.sql]: copy FROM as a new template, then load the generic
# helpers and after them the system's own (which replace some generic ones, e.g. awa's
# bench_claims(); so both are loaded again in every template, in this order).
make_template() {
	q postgres -c "CREATE DATABASE $1 TEMPLATE $2 IS_TEMPLATE true"
	q "$1" -f "$PEERS_DIR/sql/common_helpers.sql"
	[ -z "${3:-}" ] || q "$1" -f "$PEERS_DIR/sql/$3"
}
wants() { # wants WORKLOAD...: true if one of them was chosen
	local w
	for w in "$@"; do has_word "$WORKLOADS" "$w" && return 0; done
	return 1
}
# The (N, B) pairs a PgQ drain template is needed for: W2's grid, and N=16 B=1 for W4.
pgq_drain_cells() {
	local n b cells=""
	if wants W2; then for b in $W2_B; do for n in $W2_N; do cells+="${n}_${b} "; done; done; fi
	if wants W4 && ! has_word "$cells" 16_1; then cells+="16_1 "; fi
	echo "$cells"
}

prepare_skip() {
	q postgres -c "CREATE DATABASE bq_skip IS_TEMPLATE true"
	q bq_skip -f "$PEERS_DIR/sql/skip_schema.sql"
	if wants W1 W3 P; then make_template bq_t_skip_empty bq_skip; fi
	if wants W2 W4; then
		make_template bq_t_skip_200k bq_skip
		q bq_t_skip_200k -c "INSERT INTO jobs (queue, payload) SELECT 'default', '$PAYLOAD'::jsonb FROM generate_series(1, $PRELOAD)" \
			-c "VACUUM (FREEZE, ANALYZE)"
	fi
}

prepare_pgmq() {
	# pgmq's script creates schema pgmq itself when it is not installed as an extension.
	q postgres -c "CREATE DATABASE bq_pgmq IS_TEMPLATE true"
	q bq_pgmq -f "$PGMQ_SQL" >/dev/null
	# queue 'jobs': plain (not partitioned), logged
	q bq_pgmq -c "SELECT pgmq.create('jobs')" >/dev/null
	if wants W1 W3 P; then
		make_template bq_t_pgmq_empty bq_pgmq pgmq_helpers.sql
		q bq_t_pgmq_empty -c "VACUUM ANALYZE"
	fi
	if wants W2 W4; then
		make_template bq_t_pgmq_200k bq_pgmq pgmq_helpers.sql
		q bq_t_pgmq_200k -c "SELECT count(*) FROM pgmq.send_batch('jobs', array_fill('$PAYLOAD'::jsonb, ARRAY[$PRELOAD]))" \
			-c "VACUUM (FREEZE, ANALYZE)" >/dev/null
	fi
}

prepare_pgq() {
	local cell n b db
	q postgres -c "CREATE DATABASE bq_pgq IS_TEMPLATE true"
	q bq_pgq -c "CREATE EXTENSION pgq" -f "$PEERS_DIR/sql/pgq_helpers.sql"
	if wants W1; then
		make_template bq_t_pgq_w1 bq_pgq
		q bq_t_pgq_w1 -c "CALL bench_pgq_make_queues(1, false)" -c "VACUUM ANALYZE"
	fi
	if wants W3; then
		make_template bq_t_pgq_w3 bq_pgq
		q bq_t_pgq_w3 -c "CALL bench_pgq_make_queues(8, true)" -c "VACUUM ANALYZE"
	fi
	if wants P; then   # P_N workers, each owns one of P_N queues (as W3)
		make_template bq_t_pgq_p bq_pgq
		q bq_t_pgq_p -c "CALL bench_pgq_make_queues($P_N, true)" -c "VACUUM ANALYZE"
	fi
	# PgQ's batch is "the events between two ticks": B is emulated by a tick after every B
	# events per queue, and N parallel workers need N queues (sql/pgq_helpers.sql). The
	# pre-load commits after every round, so it runs with synchronous_commit off.
	for cell in $(pgq_drain_cells); do
		n=${cell%_*} b=${cell#*_} db=bq_t_pgq_n${n}_b${b}
		make_template "$db" bq_pgq
		q "$db" -c "SET synchronous_commit = off" -c "CALL bench_pgq_make_queues($n, true)" \
			-c "CALL bench_pgq_preload($n, $PRELOAD, $b, '$PAYLOAD')" -c "VACUUM (FREEZE, ANALYZE)"
		log "template $db: enqueued|done|remaining = $(q "$db" -c 'SELECT * FROM bench_counts()')"
	done
}

prepare_awa() {
	q postgres -c "CREATE DATABASE bq_awa IS_TEMPLATE true"
	q bq_awa -c "CREATE EXTENSION awa"
	make_template bq_t_awa_empty bq_awa awa_helpers.sql
	q bq_t_awa_empty -c "VACUUM ANALYZE"
	if wants W2 W4 L; then
		make_template bq_t_awa_200k bq_awa awa_helpers.sql
		# One enqueue_many call per 100 jobs, as a producer would batch them. A PL/pgSQL loop:
		# a LATERAL join over generate_series with constant arguments would run it only once.
		q bq_t_awa_200k -c "DO \$\$ BEGIN FOR i IN 0 .. ($PRELOAD - 1) / 100 LOOP
			PERFORM awa.enqueue_many(array_fill('job'::text, ARRAY[least(100, $PRELOAD - i * 100)]),
			                         array_fill('$PAYLOAD'::jsonb, ARRAY[least(100, $PRELOAD - i * 100)]),
			                         queue => 'default');
			END LOOP; END \$\$" -c "VACUUM (FREEZE, ANALYZE)"
	fi
	if wants L; then
		# The same jobs with concurrency keys: round-robin over L_KEYS keys (the keyed cells), and
		# over L_BIND_CONC keys (bind_key: key_max_running 1, pg-boss's singleton-over-keys cell).
		local name keys
		for name in keyed bindkey; do
			keys=$L_KEYS
			[ "$name" = keyed ] || keys=$L_BIND_CONC
			make_template "bq_t_awa_200k_$name" bq_awa awa_helpers.sql
			q "bq_t_awa_200k_$name" -c "DO \$\$ BEGIN FOR i IN 0 .. ($PRELOAD - 1) / 100 LOOP
				PERFORM awa.enqueue_many(array_fill('job'::text, ARRAY[least(100, $PRELOAD - i * 100)]),
				                         array_fill('$PAYLOAD'::jsonb, ARRAY[least(100, $PRELOAD - i * 100)]),
				                         queue => 'default',
				                         opts => ARRAY(SELECT jsonb_build_object('concurrency_key', 'k' || ((i * 100 + g) % $keys))
				                                         FROM generate_series(1, least(100, $PRELOAD - i * 100)) g));
				END LOOP; END \$\$" -c "VACUUM (FREEZE, ANALYZE)"
		done
	fi
}

# pg-boss makes its own schema (boss.start()) and is pre-loaded through its own insert API
# (pgboss/driver.js). Templates: the plain queue for W2 and L; for L, a queue with pg-boss's
# singleton policy whose jobs each have their own singleton key (a per-key concurrency of 1 that never
# binds), and one whose jobs are spread round-robin over L_BIND_CONC keys (at most L_BIND_CONC active).
pgboss_node() { node "$PEERS_DIR/pgboss/driver.js" "$@"; }
pgboss_template() { # pgboss_template NAME POLICY KEYS
	make_template "$1" bq_pgboss pgboss_helpers.sql
	pgboss_node preload --db "$1" --queue default --jobs "$PRELOAD" --policy "$2" --keys "$3"
	q "$1" -c "VACUUM (FREEZE, ANALYZE)"
	log "template $1: enqueued|done|remaining = $(q "$1" -c 'SELECT * FROM bench_counts()')"
}
prepare_pgboss() {
	q postgres -c "CREATE DATABASE bq_pgboss IS_TEMPLATE true"
	pgboss_node install --db bq_pgboss
	pgboss_template bq_t_pgboss_200k standard 0
	if wants L; then
		pgboss_template bq_t_pgboss_200k_key1 singleton -1
		pgboss_template bq_t_pgboss_200k_bind singleton "$L_BIND_CONC"
	fi
}

prepare_templates() {
	local sys t0
	t0=$(date +%s)
	for sys in $ACTIVE; do
		log "templates for $sys"
		"prepare_$sys"
	done
	# Autovacuum must find nothing to do in the harness's own databases during the measured
	# runs, whose WAL and CPU are the whole cluster's: before, a run's cost window could hold
	# autovacuum freezing and pruning the catalog of a fresh template or of the database it was
	# copied from, with full-page images (19 bytes per job in an awa slow-flush cell, 211 in
	# another; bench/peers/RESULTS.md, 2026-12-07). A template that takes no connections is still
	# vacuumed once it has statistics. So every database but the run's is analyzed and then
	# frozen (ANALYZE first: its own pg_statistic updates are vacuumed too), and the templates
	# then take no connections (CREATE DATABASE ... TEMPLATE needs none).
	local db
	for db in $(q postgres -c "SELECT datname FROM pg_database WHERE datallowconn AND datname <> '$RUNDB'"); do
		q "$db" -c "ANALYZE" -c "VACUUM (FREEZE)" >/dev/null
	done
	for db in $(q postgres -c "SELECT datname FROM pg_database WHERE datname LIKE 'bq\_t\_%'"); do
		q postgres -c "ALTER DATABASE $db WITH ALLOW_CONNECTIONS false" >/dev/null
	done
	q postgres -c "CHECKPOINT"
	log "templates ready in $(($(date +%s) - t0)) s"
}

tmpl_w1() { case $1 in skip) echo bq_t_skip_empty ;; pgmq) echo bq_t_pgmq_empty ;; pgq) echo bq_t_pgq_w1 ;; awa) echo bq_t_awa_empty ;; esac; }
tmpl_w2() { case $1 in skip) echo bq_t_skip_200k ;; pgmq) echo bq_t_pgmq_200k ;; pgq) echo "bq_t_pgq_n$2_b$3" ;; awa) echo bq_t_awa_200k ;; pgboss) echo bq_t_pgboss_200k ;; esac; }
# tmpl_l SYS VARIANT: L's template (awa's limits are set on the fresh copy: limit_setup)
tmpl_l() {
	case $1:$2 in
	pgboss:key1) echo bq_t_pgboss_200k_key1 ;;
	pgboss:bind_conc) echo bq_t_pgboss_200k_bind ;;
	awa:keyfree | awa:keylim) echo bq_t_awa_200k_keyed ;;
	awa:bind_key) echo bq_t_awa_200k_bindkey ;;
	*) tmpl_w2 "$1" ;;
	esac
}
tmpl_w3() { case $1 in skip) echo bq_t_skip_empty ;; pgmq) echo bq_t_pgmq_empty ;; pgq) echo bq_t_pgq_w3 ;; awa) echo bq_t_awa_empty ;; esac; }
tmpl_p() { case $1 in pgq) echo bq_t_pgq_p ;; *) tmpl_w3 "$1" ;; esac; }

# ----------------------------------------------------------------------------- measured runs
# worker_script SYS sync|async: the pgbench worker script. awa has one, told by -D async and
# -D wait_ms (awa_args) whether its claims commit asynchronously and wait in the server.
worker_script() {
	local s=$1_worker
	[ "$2" = async ] && [ "$1" != awa ] && s+=_async
	echo "$SQLD/$s.sql"
}
# awa_args sync|async: the variables awa_worker.sql reads (the other scripts ignore them).
awa_args() {
	local async=off
	[ "$1" = async ] && async=on
	echo "-D async=$async -D wait_ms=${AWA_WAIT_MS:-0} -D awa_init=0"
}
# A string that identifies the claim statement in pgbench -r's per-statement output.
claim_pat() { case $1 in skip) echo 'WITH c AS' ;; pgmq) echo 'pgmq.read' ;; pgq) echo 'SELECT b.bid' ;; awa) echo 'awa.claim' ;; pgboss) echo 'boss.fetch' ;; esac; }
# pgbench threads: at most 2 (the harness was made for a 2-core machine that also runs the server).
pgb_threads() { if [ "$1" -lt 2 ]; then echo 1; else echo 2; fi; }
pgb_field() { # pgb_field LOGFILE tps|lat|txns
	case $2 in
	tps) sed -n 's/^tps = \([0-9.]*\) (without.*/\1/p' "$1" | head -1 ;;
	lat) sed -n 's/^latency average = \([0-9.]*\) ms.*/\1/p' "$1" | head -1 ;;
	txns) sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$1" | head -1 ;;
	esac
}
# claim_percentiles APPNAME PATTERN: p50 and p99 (ms) of the sampled server-side durations of
# the statements of APPNAME's sessions that match PATTERN, as W3's note fields.
claim_percentiles() {
	cat "$PGDATA_DIR"/log/*.log 2>/dev/null | awk -v app=" $1 LOG:  duration: " -v pat="$2" '
		index($0, app) && index($0, " ms  execute ") && index($0, pat) {
			split(substr($0, index($0, "duration: ") + 10), f, " "); print f[1] + 0 }' | sort -g |
		awk '{ d[++n] = $1 }
		END {
			if (n == 0) { print "claim_p50_ms=NA,claim_p99_ms=NA,claim_samples=0"; exit }
			i50 = int(0.50 * n + 0.5); if (i50 < 1) i50 = 1
			i99 = int(0.99 * n + 0.5); if (i99 < 1) i99 = 1
			printf "claim_p50_ms=%.3f,claim_p99_ms=%.3f,claim_samples=%d\n", d[i50], d[i99], n }'
}
stmt_lat() { # stmt_lat LOGFILE PATTERN: pgbench -r latency of the first statement matching
	awk -v pat="$2" '/statement latencies/ {on = 1; next} on && index($0, pat) {print $1; exit}' "$1"
}

AWA_PREP=""   # awa only: what was wrong with the run database before the run ("" = ready)
# fresh_db TEMPLATE SYS: a new copy for one measured run, then a checkpoint.
fresh_db() {
	local w="" c="" bad=""
	drop_run_db
	AWA_PREP=""
	q postgres -c "CREATE DATABASE $RUNDB TEMPLATE $1"
	if [ "$2" = awa ]; then
		# As in production, the database's maintenance worker runs during the measurement: wait
		# until the launcher has started it, and until the job counters are trusted (one exact
		# pass over the copied jobs, made here rather than inside the first monitor sample).
		for _ in $(seq 1 50); do
			w=$(q postgres -c "SELECT pid FROM pg_stat_activity WHERE datname = '$RUNDB' AND backend_type = 'awa maintenance worker'")
			[ -n "$w" ] && break
			sleep 0.1
		done
		for _ in $(seq 1 20); do
			c=$(q $RUNDB -c "SELECT outcome FROM awa.run_maintenance('counters')")
			[ "$c" = trusted ] && break
			sleep 0.5
		done
		[ -n "$w" ] || bad+="no_awa_worker,"
		[ "$c" = trusted ] || bad+="awa_counters_$c,"
		[ -z "$bad" ] || log "WARNING: $RUNDB from $1: ${bad%,} (worker pid '$w', counters '$c')"
		AWA_PREP=$bad
	fi
	q postgres -c "CHECKPOINT"
}
# The awa maintenance worker may be connected: FORCE ends it (a FATAL line in the server log).
# awa's maintenance worker leaves a database that DROP DATABASE needs; WITH (FORCE) only if a
# client of the run is still connected.
drop_run_db() {
	q postgres -c "DROP DATABASE IF EXISTS $RUNDB" 2>/dev/null ||
		q postgres -c "DROP DATABASE IF EXISTS $RUNDB WITH (FORCE)"
}

# awa_check TAG: after an awa run; prints "" when fine, else a note flag. The check itself
# (sql/awa_helpers.sql, bench_awa_check) goes to runner.log.
awa_check() {
	local chk=""
	for _ in 1 2 3 4 5; do   # a prune committing between its two counts makes them differ once
		chk=$(q $RUNDB -c "SELECT ok::text || ' ' || line FROM bench_awa_check()")
		[ "${chk%% *}" = true ] && break
		sleep 0.5
	done
	log "$1: awa check: $chk"
	[ "${chk%% *}" = true ] || echo awa_check_failed
}

# One psql session samples the run database every second: "epoch remaining claims" (claims =
# bench_claims(), empty for systems that do not count them). Stopping the feeder closes psql's
# stdin, so psql ends cleanly after its current query.
MON_PID=""
start_monitor() { # start_monitor FILE
	local stop=$1.stop
	rm -f "$stop"
	( while [ ! -e "$stop" ]; do
		echo "SELECT extract(epoch FROM clock_timestamp()), r.remaining, bench_claims() FROM bench_counts() r;"
		sleep 1
	done ) | "$PGBIN/psql" -X -q -At -F ' ' -d $RUNDB >"$1" 2>&1 &
	MON_PID=$!
	MON_FILE=$1
}
stop_monitor() {
	[ -n "$MON_PID" ] || return 0
	touch "$MON_FILE.stop"
	wait "$MON_PID" 2>/dev/null || true
	rm -f "$MON_FILE.stop"
	MON_PID=""
}

# Background pgbench processes (W3 producers and ticker), ended by the exit trap on a failure.
BG_PIDS=""
emit() { local IFS=$'\t'; printf '%s\n' "$*" >>"$OUTDIR/raw.tsv"; }
RAW_HEADER=(rep workload variant system N B tps jobs_per_s lat_ms claim_ms "done" remaining drained_at_s
	dead_total dead_top3 autovac db_mb claims empty_claim_frac wal_bytes commits wal_syncs cpu_s cost_jobs
	log_errors note)

# Cost of a run, independent of how fast the machine is: the whole cluster's WAL bytes, commits,
# WAL flushes and server CPU time between two snapshots, divided (by report.py) by the jobs the
# run did (cost_jobs). cost_snap prints "wal_bytes commits wal_syncs cpu_ticks" so far:
#   wal_bytes  pg_current_wal_insert_lsn() as a byte position;
#   commits    xact_commit summed over pg_stat_database (every database: the run's, and the
#              harness's own few sessions);
#   wal_syncs  pg_stat_wal.wal_sync, the WAL flushes (fsync/fdatasync calls) of every process;
#   cpu_ticks  utime + stime of the postmaster and of every live child of it (backends, awa's
#              maintenance worker, autovacuum, walwriter, checkpointer, ...) from /proc/<pid>/stat,
#              plus the postmaster's cutime + cstime: the CPU of the children it has already
#              reaped (a pgbench client's backend ends with pgbench, before the second snapshot).
# Counters are read after pgbench has exited and backends have flushed their statistics.
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
cost_snap() {
	local pm ticks sql
	pm=$(head -1 "$PGDATA_DIR/postmaster.pid" 2>/dev/null) || pm=""
	[ -n "$pm" ] || { echo ""; return; }
	# /proc/<pid>/stat: "pid (comm) state ppid ... utime(14) stime(15) cutime(16) cstime(17)";
	# after cutting up to ") ", state is $1, ppid $2, utime $12 ... cstime $15. A process that
	# ends between the glob and the read is skipped (cat goes on).
	ticks=$(cat /proc/[0-9]*/stat 2>/dev/null | awk -v pm="$pm" '
		{ pid = $1; sub(/^.*\) /, "")
		  if (pid == pm) t += $12 + $13 + $14 + $15; else if ($2 == pm) t += $12 + $13 }
		END { printf "%d\n", t }')
	sql=$(q postgres -F ' ' -c "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn,
		(SELECT sum(xact_commit) FROM pg_stat_database), wal_sync FROM pg_stat_wal") || sql=""
	[ -n "$sql" ] && echo "$sql $ticks" || echo ""
}
# cost_delta SNAP0 SNAP1: "wal_bytes<TAB>commits<TAB>wal_syncs<TAB>cpu_s" between the two.
cost_delta() {
	if [ -z "$1" ] || [ -z "$2" ]; then printf 'NA\tNA\tNA\tNA\n'; return; fi
	awk -v a="$1" -v b="$2" -v hz="$CLK_TCK" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		printf "%.0f\t%.0f\t%.0f\t%.2f\n", y[1] - x[1], y[2] - x[2], y[3] - x[3], (y[4] - x[4]) / hz }'
}

# wal_dump TAG SNAP0 SNAP1 JOBS (WALDUMP=1): where a run's WAL went, into $OUTDIR/TAG.wal: bytes
# per job by resource manager and record type (pg_waldump --stats=record), then by relation (a
# record's first block reference; its name from the run database's pg_class, "other database"
# for another database's, "(gone)" for a relfilenode a TRUNCATE replaced during the run).
wal_dump() {
	[ "$WALDUMP" = 1 ] && [ -n "$2" ] && [ -n "$3" ] && [ "${4:-0}" -gt 0 ] || return 0
	local out="$OUTDIR/$1.wal" s e jobs=$4 dboid
	s=$(awk '{b = $1; printf "%X/%X", int(b / 4294967296), b % 4294967296}' <<<"$2")
	e=$(awk '{b = $1; printf "%X/%X", int(b / 4294967296), b % 4294967296}' <<<"$3")
	dboid=$(q $RUNDB -c "SELECT oid FROM pg_database WHERE datname = current_database()")
	{
		echo "# $1: WAL $s .. $e, $jobs jobs"
		"$PGBIN/pg_waldump" -p "$PGDATA_DIR/pg_wal" -s "$s" -e "$e" --stats=record 2>&1
		echo
		echo "# bytes per job by relation (first block reference of each record)"
		"$PGBIN/pg_waldump" -p "$PGDATA_DIR/pg_wal" -s "$s" -e "$e" 2>/dev/null |
			awk -v db="$dboid" -v jobs="$jobs" '
				{ n = split($0, f, "len \\(rec/tot\\): *"); split(f[2], l, "[/,]"); tot = l[2] + 0
				  r = "(no block)"
				  if (match($0, /blkref #0: rel [0-9]+\/[0-9]+\/[0-9]+/)) {
					split(substr($0, RSTART + 16, RLENGTH - 16), p, "/")
					r = (p[2] == db || p[2] == 0) ? p[3] : "other database"
				  } else if ($0 ~ /rmgr: Transaction/) r = "(commit records)"
				  b[r] += tot }
				END { for (r in b) printf "%s\t%.1f\n", r, b[r] / jobs }' |
			sort -t $'\t' -k2,2 -g -r >"$out.rel"
		local ids
		ids=$(cut -f1 "$out.rel" | grep -E '^[0-9]+$' | paste -sd, -)
		local names=""
		[ -z "$ids" ] || names=$(q $RUNDB -F $'\t' -c "SELECT f, coalesce((SELECT c.oid::regclass::text FROM pg_class c
			WHERE pg_relation_filenode(c.oid) = f), '(gone)') FROM unnest('{$ids}'::oid[]) f")
		awk -F'\t' -v names="$names" 'BEGIN { n = split(names, L, "\n"); for (i = 1; i <= n; i++) { split(L[i], x, "\t"); m[x[1]] = x[2] } }
			{ printf "%8.1f  %s\n", $2, ($1 in m) ? m[$1] : $1 }' "$out.rel"
		rm -f "$out.rel"
	} >"$out"
}

# drain_rate MONFILE T0 REM0 DONE: jobs/s and the drain time. If a sample saw the queue empty,
# the rate is taken over the time the queue still had jobs: (jobs done by the last sample that
# saw some) / (that sample's time since start); drained_at = time of the first empty sample.
# Otherwise jobs done at the end / T.
drain_rate() {
	awk -v t0="$2" -v r0="$3" -v done="$4" -v T="$T" '
		$1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9]+$/ {
			if ($2 + 0 > 0 && !empty) { t = $1; r = $2 }
			else if ($2 + 0 == 0 && !empty) { empty = 1; et = $1 - t0 }
		}
		END {
			if (empty) {
				if (t > t0 && r0 > r) printf "%.0f %.1f\n", (r0 - r) / (t - t0), et
				else printf "NA %.1f\n", et
			} else printf "%.0f NA\n", done / T
		}' "$1"
}

# empty_frac MONFILE T0 C0 C1 TXNS DRAINED AGGFILES...: the share of claims that returned no job
# (awa only: bench_claims() counts the non-empty ones, pgbench runs one claim per transaction).
# Not drained: exact, 1 - (C1 - C0) / TXNS. Drained: only the claims made while the queue still
# had jobs count: up to the last sample that saw jobs, with pgbench's per-second transaction
# counts (the interval holding that sample pro rata). Prints NA when not countable (also when
# that sample came within 0.5 s of the start: too short a window to mean anything).
empty_frac() {
	local mon=$1 t0=$2 c0=$3 c1=$4 txns=$5 drained=$6
	shift 6
	if [ -z "$c0" ] || [ -z "$c1" ] || [ -z "$txns" ] || [ "$txns" = 0 ]; then echo NA; return; fi
	if [ "$drained" = NA ]; then
		awk -v c0="$c0" -v c1="$c1" -v n="$txns" 'BEGIN {printf "%.4f\n", 1 - (c1 - c0) / n}'
		return
	fi
	[ $# -gt 0 ] || { echo NA; return; }
	awk -v c0="$c0" -v t0="$t0" '
		FNR == NR {
			if (empty) next
			if ($2 ~ /^[0-9]+$/ && $2 + 0 > 0 && $3 != "") { td = $1; cd = $3 }
			else if ($2 ~ /^[0-9]+$/ && $2 + 0 == 0) empty = 1
			next
		}
		{ s[++k] = $1; n[k] = $2 }
		END {
			if (td == "" || td - t0 < 0.5) { print "NA"; exit }
			for (i = 1; i <= k; i++) {
				f = td - s[i]; if (f > 1) f = 1; if (f < 0) f = 0
				tx += n[i] * f
			}
			# (negative: the pro-rata count of the last interval fell short of the claims that
			# took jobs in it; the estimate says nothing then)
			if (tx > 0 && 1 - (cd - c0) / tx >= 0) printf "%.4f\n", 1 - (cd - c0) / tx; else print "NA"
		}' "$mon" "$@"
}

# after_run: dead tuples etc. of the run database, once the backends have flushed their stats.
dead_stats() { q $RUNDB -F $'\t' -c "SELECT dead_total, replace(top3, ' ', ','), autovac, db_mb FROM bench_dead()"; }

# limit_setup SYS VARIANT: L's limits on the fresh run database, before the run (awa: with
# awa.configure_queue; a limit set while the server runs starts with a full token bucket). pg-boss's
# are in its templates (tmpl_l). Prints what was set, for the note.
limit_setup() {
	local a=""
	case $1:$2 in
	awa:conc) a="max_running => $L_FREE_MAXRUN" ;;
	awa:rate) a="rate_limit => '$L_FREE_RATE per 1 second', burst => $L_FREE_BURST" ;;
	awa:both) a="max_running => $L_FREE_MAXRUN, rate_limit => '$L_FREE_RATE per 1 second', burst => $L_FREE_BURST" ;;
	awa:bind_conc) a="max_running => $L_BIND_CONC" ;;
	awa:bind_rate) a="rate_limit => '$L_BIND_RATE per 1 second', burst => $L_BIND_BURST" ;;
	awa:keyfree) a="fairness => 'key'" ;;
	awa:keylim) a="fairness => 'key', key_max_running => $L_FREE_MAXRUN, key_rate_limit => '$L_FREE_RATE per 1 second', key_burst => $L_FREE_BURST" ;;
	awa:bind_key) a="key_max_running => 1" ;;
	esac
	[ -z "$a" ] || q $RUNDB -c "SELECT awa.configure_queue('default', $a)" >/dev/null
	# Limits per key set where none were leave the counters untrusted until a rebuild (the worker's,
	# within 5 s): the runs measure the steady state after it.
	# (Trusted only once the transactions older than the setting have ended, and 1 s after it.)
	case $2 in keylim | bind_key)
		local i
		for i in $(seq 1 100); do
			[ "$(q $RUNDB -c "SELECT awa.rebuild_counters()")" = t ] && break
			sleep 0.2
		done ;;
	esac
}

# run_drain REP WORKLOAD VARIANT SYS N B TEMPLATE SCRIPT: W2, W4 and L (SCRIPT is ignored for
# pgboss, whose workers are pgboss/driver.js).
run_drain() {
	local rep=$1 wl=$2 var=$3 sys=$4 n=$5 b=$6 tmpl=$7 script=$8
	local tag="r${rep}_${wl}_${var}_${sys}_n${n}_b${b}"
	local lf="$OUTDIR/$tag.log" mon="$OUTDIR/$tag.mon" rc=0
	fresh_db "$tmpl" "$sys"
	[ "$wl" != L ] || limit_setup "$sys" "$var"
	local cnt0 rem0 c0
	cnt0=$(q $RUNDB -c "SELECT done, remaining, bench_claims() FROM bench_counts()")
	IFS='|' read -r _ rem0 c0 <<<"$cnt0"
	local le0 k0 k1
	le0=$(log_errors_total)
	k0=$(cost_snap)
	local t0 sp=""
	# a binding concurrency limit: one session samples the queue's running attempts every 10 ms
	# for the whole run (bench_sample_running)
	if [ "$var" = bind_conc ] || [ "$var" = bind_key ]; then
		q $RUNDB -F ' ' -c "SELECT * FROM bench_sample_running($T + 1, 10)" >"$OUTDIR/$tag.sample" 2>&1 &
		sp=$!
		BG_PIDS="$sp"
	fi
	t0=$(date +%s.%N)
	start_monitor "$mon"
	if [ "$sys" = pgboss ]; then
		pgboss_node drain --db $RUNDB --queue default --workers "$n" --batch "$b" --seconds "$T" \
			--idle-ms "$IDLE_MS" >"$lf" 2>&1 || rc=$?
	else
		# -P 1: progress every second (report.py's worker loop latency before the queue emptied);
		# -l --aggregate-interval=1: pgbench's transactions per second (tiny files), to count awa's
		# empty claims up to the moment the queue emptied.
		pgbench -n -M prepared -T "$T" -c "$n" -j "$(pgb_threads "$n")" -P 1 -r \
			-l --aggregate-interval=1 --log-prefix="$OUTDIR/$tag.agg" -f "$script" \
			-D B="$b" -D nq="$n" -D idle_ms="$IDLE_MS" $(awa_args "$([ "$var" = delay_asyncclaim ] && echo async)") \
			$RUNDB >"$lf" 2>&1 || rc=$?
	fi
	local t1
	t1=$(date +%s.%N)
	stop_monitor
	if [ -n "$sp" ]; then wait "$sp" || rc=$((rc + 100)); BG_PIDS=""; fi
	sleep 1.5   # backends flush their statistics when they exit
	k1=$(cost_snap)
	local cnt1 d1 rem c1 d0
	d0=${cnt0%%|*}
	cnt1=$(q $RUNDB -c "SELECT done, remaining, bench_claims() FROM bench_counts()")
	IFS='|' read -r d1 rem c1 <<<"$cnt1"
	local dead tps lat cl txns
	dead=$(dead_stats)
	tps=$(pgb_field "$lf" tps) lat=$(pgb_field "$lf" lat) txns=$(pgb_field "$lf" txns)
	cl=$(stmt_lat "$lf" "$(claim_pat "$sys")")
	local done=$((d1 - d0)) jps dr note=ok ef f
	wal_dump "$tag" "$k0" "$k1" "$done"
	read -r jps dr < <(drain_rate "$mon" "$t0" "$rem0" "$done")
	[ "$dr" = NA ] || note=drained
	local agg=()
	for f in "$OUTDIR/$tag".agg.*; do [ -e "$f" ] && agg+=("$f"); done
	ef=$(empty_frac "$mon" "$t0" "$c0" "$c1" "$txns" "$dr" "${agg[@]}")
	[ "$rc" = 0 ] || note="pgbench_rc=$rc"
	if [ "$sys" = awa ]; then
		local ac
		ac=$(awa_check "$tag")
		[ -z "$AWA_PREP$ac" ] || note="$note,$AWA_PREP$ac"
		note=${note%,}
	fi
	[ "$wl" != L ] || note+=$(limit_check "$sys" "$var" "$OUTDIR/$tag.sample" "$t0" "$t1" "$done")
	local le=$(($(log_errors_total) - le0))
	emit "$rep" "$wl" "$var" "$sys" "$n" "$b" "${tps:-NA}" "$jps" "${lat:-NA}" "${cl:-NA}" "$done" "$rem" "$dr" \
		"$dead" "${txns:-NA}" "$ef" "$(cost_delta "$k0" "$k1")" "$done" "$le" "$note"
	log "$tag: jobs/s=$jps tps=${tps:-NA} done=$done rem=$rem drained=$dr empty_claims=$ef dead=[${dead//$'\t'/ }] log_errors=$le $note"
}

# limit_check SYS VARIANT SAMPLEFILE T0 T1 DONE: note fields of an L run (",key=value..."), and
# limit_exceeded (a failure flag) when a binding limit was not held:
#   bind_conc: max_running / samples / mean_running from the sampler; exceeded if max > L_BIND_CONC;
#   bind_rate: the jobs done against L_BIND_RATE x (T1 - T0) + L_BIND_BURST (T0 just before the
#              workers started, T1 when they had ended: the window holds every claim of the run);
#   awa: claims_limited (claims its concurrency limit gave fewer jobs than asked, since the start).
limit_check() {
	local sys=$1 var=$2 sf=$3 t0=$4 t1=$5 done=$6 out=""
	case $var in
	bind_conc | bind_key)
		local mx smp mean
		read -r mx smp mean <"$sf" 2>/dev/null || true
		out+=",limit=$L_BIND_CONC,max_running=${mx:-NA},samples=${smp:-NA},mean_running=${mean:-NA}"
		if ! is_uint "${mx:-x}" || [ "$mx" -gt "$L_BIND_CONC" ]; then out+=",limit_exceeded"; fi ;;
	bind_rate)
		local el bound
		el=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
		bound=$(awk -v e="$el" -v r="$L_BIND_RATE" -v bu="$L_BIND_BURST" 'BEGIN {printf "%d", r * e + bu}')
		out+=",rate=$L_BIND_RATE,burst=$L_BIND_BURST,elapsed_s=$el,bound=$bound,achieved_per_s=$(awk -v d="$done" -v e="$el" 'BEGIN {printf "%.1f", d / e}')"
		[ "$done" -le "$bound" ] || out+=",limit_exceeded" ;;
	esac
	[ "$sys" != awa ] || out+=",claims_limited=$(q $RUNDB -c 'SELECT bench_claims_limited()')"
	echo "$out"
}

# run_enq REP VARIANT SYS N JOBS_PER_TX TEMPLATE SCRIPT: W1.
run_enq() {
	local rep=$1 var=$2 sys=$3 n=$4 jpt=$5 tmpl=$6 script=$7
	local tag="r${rep}_W1_${var}_${sys}_n${n}"
	local lf="$OUTDIR/$tag.log" rc=0
	fresh_db "$tmpl" "$sys"
	local le0 k0 k1
	le0=$(log_errors_total)
	k0=$(cost_snap)
	pgbench -n -M prepared -T "$T" -c "$n" -j "$(pgb_threads "$n")" -P 5 -r -f "$script" -D nq=1 $RUNDB >"$lf" 2>&1 || rc=$?
	sleep 1.5
	k1=$(cost_snap)
	local enq dead tps lat jps note=ok
	enq=$(q $RUNDB -c "SELECT enqueued FROM bench_counts()")
	wal_dump "$tag" "$k0" "$k1" "$enq"
	dead=$(dead_stats)
	tps=$(pgb_field "$lf" tps) lat=$(pgb_field "$lf" lat)
	# jobs/s from pgbench's committed transactions; `done` holds the jobs found in the database
	jps=$(awk -v t="${tps:-0}" -v j="$jpt" 'BEGIN {printf "%.0f", t * j}')
	[ "$rc" = 0 ] || note="pgbench_rc=$rc"
	if [ "$sys" = awa ]; then
		local ac
		ac=$(awa_check "$tag")
		[ -z "$AWA_PREP$ac" ] || note="$note,$AWA_PREP$ac"
		note=${note%,}
	fi
	local le=$(($(log_errors_total) - le0))
	emit "$rep" W1 "$var" "$sys" "$n" "$jpt" "${tps:-NA}" "$jps" "${lat:-NA}" NA "$enq" 0 NA "$dead" NA NA \
		"$(cost_delta "$k0" "$k1")" "$enq" "$le" "$note"
	log "$tag: jobs/s=$jps tps=${tps:-NA} enqueued=$enq log_errors=$le $note"
}

# run_mixed REP SYS TEMPLATE: W3, 4 producers at RATE jobs/s in total + 8 workers (B=10), and for
# PgQ a client calling pgq.ticker() every 50 ms (a stand-in for pgqd).
run_mixed() {
	local rep=$1 sys=$2 tmpl=$3
	local tag="r${rep}_W3_mixed_${sys}"
	local lf="$OUTDIR/$tag" rc=0 rc1=0 p1 p3=""
	fresh_db "$tmpl" "$sys"
	local c0 e0 d0 kc0 kc1
	c0=$(q $RUNDB -c "SELECT enqueued, done, bench_claims() FROM bench_counts()")
	IFS='|' read -r e0 d0 kc0 <<<"$c0"
	local le0 k0 k1
	le0=$(log_errors_total)
	k0=$(cost_snap)
	pgbench -n -M prepared -T "$T" -c 4 -j 2 -R "$RATE" -P 5 -r -f "$SQLD/${sys}_enq1.sql" -D nq=8 $RUNDB >"$lf.prod.log" 2>&1 &
	p1=$!
	BG_PIDS="$p1"
	if [ "$sys" = pgq ]; then
		pgbench -n -M prepared -T "$T" -c 1 -j 1 -f "$SQLD/pgq_ticker.sql" -D tick_ms=50 $RUNDB >"$lf.ticker.log" 2>&1 &
		p3=$!
		BG_PIDS+=" $p3"
	fi
	# The workers' statements are sampled into the server log with their duration (server side,
	# from the statement's arrival to its result), tagged with the run's application_name: the
	# claim statement's p50 and p99 come from there (pgbench -r only gives a mean).
	PGAPPNAME="bq_$tag" PGOPTIONS="-c log_min_duration_sample=0 -c log_statement_sample_rate=$CLAIM_SAMPLE" \
	pgbench -n -M prepared -T "$T" -c 8 -j 2 -P 5 -r -f "$(worker_script "$sys" sync)" \
		-D B=10 -D nq=8 -D idle_ms="$IDLE_MS" $(awa_args sync) $RUNDB >"$lf.work.log" 2>&1 || rc=$?
	wait "$p1" || rc1=$?
	[ -z "$p3" ] || wait "$p3" || true
	BG_PIDS=""
	sleep 1.5
	k1=$(cost_snap)
	local c1 e1 d1 rem
	c1=$(q $RUNDB -c "SELECT enqueued, done, remaining, bench_claims() FROM bench_counts()")
	IFS='|' read -r e1 d1 rem kc1 <<<"$c1"
	local dead ptps wtps wlat cl plat txns
	dead=$(dead_stats)
	ptps=$(pgb_field "$lf.prod.log" tps) plat=$(pgb_field "$lf.prod.log" lat)
	wtps=$(pgb_field "$lf.work.log" tps) wlat=$(pgb_field "$lf.work.log" lat) txns=$(pgb_field "$lf.work.log" txns)
	cl=$(stmt_lat "$lf.work.log" "$(claim_pat "$sys")")
	local done=$((d1 - d0)) enq=$((e1 - e0)) jps eps ef
	jps=$(awk -v d="$done" -v t="$T" 'BEGIN {printf "%.0f", d / t}')
	eps=$(awk -v d="$enq" -v t="$T" 'BEGIN {printf "%.0f", d / t}')
	ef=$(empty_frac /dev/null 0 "$kc0" "$kc1" "$txns" NA)
	local cpct
	cpct=$(claim_percentiles "bq_$tag" "$(claim_pat "$sys")")
	local note="enq_per_s=$eps,prod_lat_ms=${plat:-NA},worker_tps=${wtps:-NA},$cpct"
	if [ "$rc" != 0 ] || [ "$rc1" != 0 ]; then note+=",pgbench_rc=$rc/$rc1"; fi
	if [ "$sys" = awa ]; then
		local ac
		ac=$(awa_check "$tag")
		[ -z "$AWA_PREP$ac" ] || note="$note,$AWA_PREP$ac"
		note=${note%,}
	fi
	local le=$(($(log_errors_total) - le0))
	emit "$rep" W3 mixed "$sys" 8 10 "${ptps:-NA}" "$jps" "${wlat:-NA}" "${cl:-NA}" "$done" "$rem" NA "$dead" \
		"${txns:-NA}" "$ef" "$(cost_delta "$k0" "$k1")" "$done" "$le" "$note"
	log "$tag: done/s=$jps enq/s=$eps claim_ms=${cl:-NA} worker_lat=${wlat:-NA} rem=$rem dead=[${dead//$'\t'/ }] log_errors=$le"
}

# W4: every WAL flush waits 5 ms (commit_delay with commit_siblings = 0), emulating a slow disk.
set_commit_delay() { # on|off
	if [ "$1" = on ]; then
		q postgres -c "ALTER SYSTEM SET commit_delay = 5000" -c "ALTER SYSTEM SET commit_siblings = 0" -c "SELECT pg_reload_conf()" >/dev/null
	else
		q postgres -c "ALTER SYSTEM RESET commit_delay" -c "ALTER SYSTEM RESET commit_siblings" -c "SELECT pg_reload_conf()" >/dev/null
	fi
	sleep 1
	log "commit_delay = $(q postgres -c 'SHOW commit_delay'), commit_siblings = $(q postgres -c 'SHOW commit_siblings')"
}

# The W2 batch-1 cells again with synchronous_commit = off for the whole cluster (ALTER SYSTEM):
# no commit waits for its WAL flush, so CPU rather than the flush bounds the drain.
set_sync_commit() { # on|off
	if [ "$1" = off ]; then
		q postgres -c "ALTER SYSTEM SET synchronous_commit = off" -c "SELECT pg_reload_conf()" >/dev/null
	else
		q postgres -c "ALTER SYSTEM RESET synchronous_commit" -c "SELECT pg_reload_conf()" >/dev/null
	fi
	sleep 1
	log "synchronous_commit = $(q postgres -c 'SHOW synchronous_commit')"
}

# ----------------------------------------------------------------------------- P: pressure phases
# The phase types of the public long-horizon harness for PostgreSQL job queues
# (hardbyte/postgresql-job-queue-benchmarking, docs/method.md), run one after the other on one
# database while P_N workers (batch P_B) drain it the whole time and 4 producers offer P_RATE
# jobs/s (pgbench -R; a new producer pgbench per phase, -T P_T):
#   clean     steady state at P_RATE;
#   idle_tx   one session runs BEGIN; SELECT txid_current(); and stays idle in that transaction
#             for the phase (it holds an xid: the xmin horizon stays where it was);
#   readers   P_READERS sessions each BEGIN ISOLATION LEVEL REPEATABLE READ and scan the queue's
#             table (count(*)) every 0.1 s in that one snapshot for the phase (overlapping
#             snapshots, as analytics readers on the queue's tables);
#   burst     P_BURST_X times P_RATE;
#   recovery  P_RATE again: how soon the backlog is gone.
# The workers (<sys>_pworker.sql) record each job's pickup latency (claim time minus the job's
# enqueue timestamp) in the unlogged table bench_pickup, in the completion's statement.
reader_table() { case $1 in skip) echo public.jobs ;; pgmq) echo pgmq.q_jobs ;; pgq) echo pgq.event_template ;; awa) echo awa.ready_entries ;; esac; }
phase_rate() { if [ "$1" = burst ]; then echo $((P_RATE * P_BURST_X)); else echo "$P_RATE"; fi; }
phase_sample() { # enqueued|done|remaining|dead_total|top3|autovac|storage_mb|ring_dead
	q $RUNDB -c "SELECT r.enqueued, r.done, r.remaining, d.dead_total, replace(d.top3, ' ', ';'), d.autovac,
		round((pg_database_size(current_database()) - pg_total_relation_size('public.bench_pickup')) / 1048576.0, 1),
		bench_ring_dead() FROM bench_counts() r, bench_dead() d"
}

run_phases() {
	local rep=$1 sys=$2
	local tag="r${rep}_P_${sys}" np total wt rc=0 i ph
	local lf="$OUTDIR/$tag"
	np=$(count_words "$P_PHASES")
	total=$((np * P_T))
	# the workers outlive the last phase by a margin for the snapshots between phases; they end
	# on their own (pgbench -T ends a client after its script, so no claim is left open)
	wt=$((total + np + 3))
	fresh_db "$(tmpl_p "$sys")" "$sys"
	q $RUNDB -c "TRUNCATE bench_pickup"
	local le0 wp tp=""
	le0=$(log_errors_total)
	PGAPPNAME="bq_${tag}_w" pgbench -n -M prepared -T "$wt" -c "$P_N" -j "$(pgb_threads "$P_N")" -P 5 \
		-f "$SQLD/${sys}_pworker.sql" -D B="$P_B" -D nq="$P_N" -D idle_ms="$IDLE_MS" -D work_ms="$P_WORK_MS" $(awa_args sync) \
		$RUNDB >"$lf.work.log" 2>&1 &
	wp=$!
	BG_PIDS="$wp"
	if [ "$sys" = pgq ]; then
		pgbench -n -M prepared -T "$wt" -c 1 -j 1 -f "$SQLD/pgq_ticker.sql" -D tick_ms=50 $RUNDB >"$lf.ticker.log" 2>&1 &
		tp=$!
		BG_PIDS+=" $tp"
	fi
	local -a starts=() ends=() samples=() costs=()
	local k s0 rate prc sp
	s0=$(phase_sample)
	k=$(cost_snap)
	i=0
	for ph in $P_PHASES; do
		i=$((i + 1))
		rate=$(phase_rate "$ph")
		starts[i]=$(date +%s.%N)
		local -a stress=()
		case $ph in
		idle_tx)
			{ echo "BEGIN; SELECT txid_current();"; sleep "$P_T"; echo "COMMIT;"; } |
				"$PGBIN/psql" -X -q -At -d $RUNDB >"$lf.$i.idle_tx.log" 2>&1 &
			stress+=($!) ;;
		readers)
			local rdr
			for rdr in $(seq 1 "$P_READERS"); do
				"$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d $RUNDB >"$lf.$i.reader$rdr.log" 2>&1 <<-EOF &
				BEGIN ISOLATION LEVEL REPEATABLE READ;
				SELECT count(*) FROM $(reader_table "$sys");
				DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); BEGIN
				  WHILE clock_timestamp() < t0 + make_interval(secs => $P_T) LOOP
				    PERFORM count(*) FROM $(reader_table "$sys");
				    PERFORM pg_sleep(0.1);
				  END LOOP; END \$\$;
				COMMIT;
				EOF
				stress+=($!)
			done ;;
		esac
		BG_PIDS="$wp $tp ${stress[*]}"
		prc=0
		pgbench -n -M prepared -T "$P_T" -c 4 -j 2 -R "$rate" -P 5 -f "$SQLD/${sys}_enq1.sql" -D nq="$P_N" \
			$RUNDB >"$lf.$i.$ph.prod.log" 2>&1 || prc=$?
		for sp in "${stress[@]}"; do wait "$sp" || prc=$((prc + 100)); done
		BG_PIDS="$wp $tp"
		ends[i]=$(date +%s.%N)
		samples[i]=$(phase_sample)
		costs[i]=$(cost_snap)
		[ "$prc" = 0 ] || { log "$tag phase $i $ph: producer or pressure session failed (rc $prc)"; rc=1; }
		log "$tag phase $i $ph: $(awk -v a="${starts[i]}" -v b="${ends[i]}" 'BEGIN {printf "%.1f", b - a}') s, counts|dead|storage: ${samples[i]}"
	done
	local we
	we=$(date +%s.%N)
	local wrc=0
	kill -0 "$wp" 2>/dev/null || wrc=early
	wait "$wp" || wrc=$?
	[ -z "$tp" ] || wait "$tp" || true
	BG_PIDS=""
	sleep 1.5
	local fin
	fin=$(q $RUNDB -c "SELECT remaining FROM bench_counts()")
	local note0=""
	[ "$wrc" = 0 ] || note0="pgbench_rc=workers_$wrc,"
	[ "$rc" = 0 ] || note0+="pgbench_rc=phase_sessions,"
	if [ "$sys" = awa ]; then
		local ac
		ac=$(awa_check "$tag")
		[ -z "$AWA_PREP$ac" ] || note0+="$AWA_PREP$ac,"
	fi
	local le=$(($(log_errors_total) - le0))
	# per phase: completed (completion time in the phase), pickup percentiles (claim time in the phase)
	local prev=$s0 prevk=$k e0 d0 e1 d1 rem dead top3 av mb rd st st_p pst
	i=0
	for ph in $P_PHASES; do
		i=$((i + 1))
		IFS='|' read -r e0 _ _ _ _ _ _ _ <<<"$prev"
		IFS='|' read -r e1 d1 rem dead top3 av mb rd <<<"${samples[i]}"
		pst=$(q $RUNDB -F ' ' -c "SELECT count(*) FILTER (WHERE done_at >= ${starts[i]} AND done_at < ${ends[i]}),
			coalesce(round((percentile_cont(0.5) WITHIN GROUP (ORDER BY lat_ms) FILTER (WHERE claimed_at >= ${starts[i]} AND claimed_at < ${ends[i]}))::numeric, 2)::text, 'NA'),
			coalesce(round((percentile_cont(0.99) WITHIN GROUP (ORDER BY lat_ms) FILTER (WHERE claimed_at >= ${starts[i]} AND claimed_at < ${ends[i]}))::numeric, 2)::text, 'NA')
			FROM bench_pickup")
		local ncomp p50 p99 dur jps eps
		read -r ncomp p50 p99 <<<"$pst"
		dur=$(awk -v a="${starts[i]}" -v b="${ends[i]}" 'BEGIN {printf "%.3f", b - a}')
		jps=$(awk -v n="$ncomp" -v d="$dur" 'BEGIN {printf "%.0f", n / d}')
		eps=$(awk -v a="$e0" -v b="$e1" -v d="$dur" 'BEGIN {printf "%.0f", (b - a) / d}')
		local note="${note0}offered=$(phase_rate "$ph"),enq_per_s=$eps,pickup_p50_ms=$p50,pickup_p99_ms=$p99,phase_s=$(printf '%.1f' "$dur"),ring_dead=${rd:-NA},backlog_after_workers=$fin"
		emit "$rep" P "${i}_$ph" "$sys" "$P_N" "$P_B" NA "$jps" NA NA "$ncomp" "$rem" NA \
			"$dead" "${top3//;/,}" "$av" "$mb" NA NA "$(cost_delta "$prevk" "${costs[i]}")" "$ncomp" "$le" "${note%,}"
		prev=${samples[i]} prevk=${costs[i]}
	done
	log "$tag: workers rc=$wrc, backlog at the end ${fin}, log_errors=$le"
}

# only_w2 SYSTEMS: the systems without pgboss (it runs W2 and L only).
only_w2() { local s out=""; for s in $1; do [ "$s" = pgboss ] || out+="$s "; done; echo "${out% }"; }

# L: the cost of limits in the drain cells (issue 21 §7). Per batch size and worker count, the
# same drain without a limit and with limits that never bind (awa: max_running far above the
# workers, a rate far above the drain, both; pg-boss: its singleton policy with every job its own
# key), in one order on odd repetitions and the reverse on even ones, so a drift of the machine
# over the run falls on both sides alike. Then the binding cells at L_BIND_N workers: a
# concurrency limit of L_BIND_CONC (awa: max_running; pg-boss: singleton policy over that many
# keys), sampled every 10 ms, and a rate of L_BIND_RATE per second with a burst of L_BIND_BURST
# (awa only: pg-boss 10 has no rate limit on fetching).
l_cells() { # the "sys:variant" list of the non-binding cells, in the order of repetition $1
	local s v out=""
	for s in $ACTIVE; do
		case $s in
		awa) for v in free conc rate both keyfree keylim; do out+="awa:$v "; done ;;
		pgboss) out+="pgboss:free pgboss:key1 " ;;
		esac
	done
	if [ $(($1 % 2)) = 0 ]; then echo "$out" | tr ' ' '\n' | tac | tr '\n' ' '; else echo "$out"; fi
}
run_limits() {
	local rep=$1 b n c sys var
	for b in $L_B; do for n in $L_N; do
		for c in $(l_cells "$rep"); do
			sys=${c%%:*} var=${c#*:}
			run_drain "$rep" L "$var" "$sys" "$n" "$b" "$(tmpl_l "$sys" "$var")" "$(worker_script "$sys" sync)"
		done
	done; done
	for b in $L_B; do
		for c in awa:bind_conc awa:bind_key pgboss:bind_conc awa:bind_rate; do
			sys=${c%%:*} var=${c#*:}
			has_word "$ACTIVE" "$sys" || continue
			run_drain "$rep" L "$var" "$sys" "$L_BIND_N" "$b" "$(tmpl_l "$sys" "$var")" "$(worker_script "$sys" sync)"
		done
	done
}

run_workloads() {
	local rep wl var jpt n b sys
	local full=$ACTIVE
	if has_word "$ACTIVE" pgboss && { wants W1 W3 W4 P; }; then
		log "pgboss runs W2 and L only (not W1, W3, W4, P)"
	fi
	for rep in $(seq 1 "$REPS"); do
		for wl in $WORKLOADS; do
			ACTIVE=$full
			case $wl in W1|W3|W4|P) ACTIVE=$(only_w2 "$full") ;; esac
			[ -n "$ACTIVE" ] || continue
			case $wl in
			L)
				run_limits "$rep" ;;
			W1)
				for var in enq1 enq100; do
					jpt=1
					[ $var = enq100 ] && jpt=100
					for n in $W1_N; do for sys in $ACTIVE; do
						run_enq "$rep" "$var" "$sys" "$n" "$jpt" "$(tmpl_w1 "$sys")" "$SQLD/${sys}_${var}.sql"
					done; done
				done ;;
			W2)
				for b in $W2_B; do for n in $W2_N; do for sys in $ACTIVE; do
					run_drain "$rep" W2 drain "$sys" "$n" "$b" "$(tmpl_w2 "$sys" "$n" "$b")" "$(worker_script "$sys" sync)"
				done; done; done
				# the batch-1 cells again with synchronous_commit = off (cluster-wide): CPU-bound
				if has_word "$W2_B" 1; then
					set_sync_commit off
					for n in $W2_N; do for sys in $ACTIVE; do
						run_drain "$rep" W2 drain_nosync "$sys" "$n" 1 "$(tmpl_w2 "$sys" "$n" 1)" "$(worker_script "$sys" sync)"
					done; done
					set_sync_commit on
				fi ;;
			W3)
				for sys in $ACTIVE; do run_mixed "$rep" "$sys" "$(tmpl_w3 "$sys")"; done ;;
			W4)
				set_commit_delay on
				for sys in $ACTIVE; do
					run_drain "$rep" W4 delay_sync "$sys" 16 1 "$(tmpl_w2 "$sys" 16 1)" "$(worker_script "$sys" sync)"
				done
				# claim committed asynchronously: SET LOCAL synchronous_commit = off in the claim
				# transaction; for awa, awa.async_claim_commit = on (its default)
				for sys in $ACTIVE; do
					run_drain "$rep" W4 delay_asyncclaim "$sys" 16 1 "$(tmpl_w2 "$sys" 16 1)" "$(worker_script "$sys" async)"
				done
				set_commit_delay off ;;
			P)
				for sys in $ACTIVE; do run_phases "$rep" "$sys"; done ;;
			esac
		done
	done
	ACTIVE=$full
	drop_run_db
}

# ----------------------------------------------------------------------------- metadata, report
# planned_runs: the number of measured runs, for the time estimate.
planned_runs() {
	local s s2 bind=0
	s=$(count_words "$ACTIVE")
	s2=$(count_words "$(only_w2 "$ACTIVE")")
	local per=0
	if wants L; then
		has_word "$ACTIVE" awa && per=$((per + 4 * $(count_words "$L_N") * $(count_words "$L_B"))) && bind=$((bind + 2))
		has_word "$ACTIVE" pgboss && per=$((per + 2 * $(count_words "$L_N") * $(count_words "$L_B"))) && bind=$((bind + 1))
		per=$((per + bind * $(count_words "$L_B")))
	fi
	wants W1 && per=$((per + 2 * $(count_words "$W1_N") * s2))
	wants W2 && per=$((per + $(count_words "$W2_B") * $(count_words "$W2_N") * s))
	wants W2 && has_word "$W2_B" 1 && per=$((per + $(count_words "$W2_N") * s))
	wants W3 && per=$((per + s2))
	wants W4 && per=$((per + 2 * s2))
	echo $((per * REPS))
}

write_meta() {
	local f=$OUTDIR/meta.tsv rev awa_so
	rev=$(git -C "$PEERS_DIR" rev-parse --short HEAD 2>/dev/null || echo unknown)
	[ -z "$(git -C "$PEERS_DIR" status --porcelain -- . 2>/dev/null)" ] || rev+=" (bench/peers modified)"
	awa_so=$(sha256sum "$PKGLIBDIR/awa.so" | cut -c1-16)
	{
		printf 'started\t%s\n' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
		printf 'command\t%s\n' "$CMD"
		printf 'systems\t%s\n' "$ACTIVE"
		printf 'skipped\t%s\n' "${SKIPPED:-none}"
		printf 'knobs\tT=%s REPS=%s WORKLOADS="%s" W1_N="%s" W2_N="%s" W2_B="%s" PRELOAD=%s IDLE_MS=%s RATE=%s AWA_WAIT_MS=%s' \
			"$T" "$REPS" "$WORKLOADS" "$W1_N" "$W2_N" "$W2_B" "$PRELOAD" "$IDLE_MS" "$RATE" "${AWA_WAIT_MS:-unset}"
		if wants L; then
			printf ' L_N="%s" L_B="%s" L_BIND_N=%s L_BIND_CONC=%s L_BIND_RATE=%s L_BIND_BURST=%s (non-binding: max_running %s, rate %s per 1 second, burst %s)' \
				"$L_N" "$L_B" "$L_BIND_N" "$L_BIND_CONC" "$L_BIND_RATE" "$L_BIND_BURST" "$L_FREE_MAXRUN" "$L_FREE_RATE" "$L_FREE_BURST"
		fi
		if wants P; then
			printf ' P_PHASES="%s" P_T=%s P_RATE=%s P_BURST_X=%s P_N=%s P_B=%s P_WORK_MS=%s P_READERS=%s' \
				"$P_PHASES" "$P_T" "$P_RATE" "$P_BURST_X" "$P_N" "$P_B" "$P_WORK_MS" "$P_READERS"
		fi
		printf '\n'
		printf 'machine\t%s, %s CPUs (%s), %s MB RAM, load at start %s\n' "$(uname -srm)" "$(nproc)" \
			"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
			"$(awk '/^MemTotal/ {printf "%d", $2 / 1024}' /proc/meminfo)" "$(cut -d' ' -f1-3 /proc/loadavg)"
		printf 'postgresql\t%s (%s)\n' "$(q postgres -c 'SHOW server_version')" "$PGBIN"
		printf 'awa\t%s, awa.so sha256 %s…, bench/peers at %s\n' "$(q bq_awa -c "SELECT extversion FROM pg_extension WHERE extname = 'awa'" 2>/dev/null || echo '?')" "$awa_so" "$rev"
		if has_word "$ACTIVE" pgq; then printf 'pgq\t%s\n' "$(q bq_pgq -c 'SELECT pgq.version()')"; fi
		if has_word "$ACTIVE" pgboss; then printf 'pgboss\tpg-boss %s (npm, pinned in bench/peers/pgboss/package.json), Node %s\n' \
			"$(node -p "require('$PEERS_DIR/pgboss/node_modules/pg-boss/package.json').version")" "$(node --version)"; fi
		if has_word "$ACTIVE" pgmq; then printf 'pgmq\t%s (sha256 %s…)\n' "$PGMQ_SQL" "$(sha256sum "$PGMQ_SQL" | cut -c1-16)"; fi
		printf 'settings\t%s\n' "$(q postgres -c "SELECT string_agg(name || '=' || current_setting(name), ', ' ORDER BY name)
			FROM pg_settings WHERE name IN ('shared_buffers', 'max_connections', 'max_wal_size', 'wal_level', 'synchronous_commit',
			  'fsync', 'autovacuum', 'jit', 'jit_above_cost', 'shared_preload_libraries', 'checkpoint_timeout', 'commit_delay')")"
		# expected: none (the maintenance worker runs at its default cadence)
		printf 'awa_settings\t%s\n' "$(q postgres -c "SELECT coalesce(string_agg(name || '=' || setting, ', ' ORDER BY name), 'all at their defaults')
			FROM pg_settings WHERE name LIKE 'awa.%' AND source <> 'default'")"
	} >"$f"
}

make_report() {
	"$PYTHON" "$PEERS_DIR/report.py" "$OUTDIR/raw.tsv" >"$OUTDIR/report.md"
	log "report: $OUTDIR/report.md"
	if "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
		if FIGURES="$FIGURES" "$PYTHON" "$PEERS_DIR/plot.py" "$OUTDIR/raw.tsv" >>"$OUTDIR/runner.log" 2>&1; then
			log "figures: $OUTDIR/*.png${FIGURES:+ and $FIGURES}"
		else
			log "WARNING: plot.py failed (see runner.log)"
		fi
	else
		log "no figures: matplotlib is missing for $PYTHON (Debian: apt-get install -y python3-matplotlib)"
	fi
}

cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	stop_monitor
	local p
	for p in $BG_PIDS; do kill "$p" 2>/dev/null; done
	stop_cluster
	if [ -n "$PGDATA_DIR" ] && [ -d "$PGDATA_DIR/log" ]; then
		mkdir -p "$OUTDIR/server-log"
		cp -p "$PGDATA_DIR"/log/* "$WORKDIR/initdb.log" "$WORKDIR/startup.log" "$OUTDIR/server-log/" 2>/dev/null
	fi
	if [ "$rc" = 0 ] && [ "$KEEP" != 1 ]; then
		rm -rf "$PGDATA_DIR"
		if [ "$OWN_WORKDIR" = 1 ]; then rm -rf "$WORKDIR"; fi
	elif [ -n "${WORKDIR:-}" ] && [ -d "$PGDATA_DIR" ]; then
		echo "run.sh: cluster stopped; data directory kept: $PGDATA_DIR" >&2
	fi
	if [ -n "$SOCKDIR" ] && [ "$SOCKDIR" != "${WORKDIR:-}" ]; then rm -rf "$SOCKDIR"; fi
	[ "$rc" = 0 ] || echo "run.sh: failed (exit $rc); see $OUTDIR/runner.log" >&2
	exit "$rc"
}

main() {
	check_knobs
	check_prerequisites
	PGDATA_DIR=""
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	setup_dirs
	local runs
	runs=$(planned_runs)
	local psec=0
	if wants P; then psec=$((REPS * $(count_words "$(only_w2 "$ACTIVE")") * ($(count_words "$P_PHASES") * (P_T + 1) + 20))); fi
	log "start: systems [$ACTIVE]${SKIPPED:+ (skipped: ${SKIPPED% })}, workloads [$WORKLOADS], T=$T REPS=$REPS: $runs measured runs$([ "$psec" -gt 0 ] && echo " and the P phases"), roughly $(((runs * (T + 4) + psec) / 60 + 1)) min plus the templates; out=$OUTDIR"
	printf '%s\n' "$(IFS=$'\t'; echo "${RAW_HEADER[*]}")" >"$OUTDIR/raw.tsv"
	start_cluster
	prepare_templates
	write_meta
	run_workloads
	log "measurements done"
	stop_cluster
	make_report
	# A run whose pgbench failed or whose awa checks failed makes the whole run fail (after the
	# report, which lists them under Notes); the data directory is then kept for inspection.
	local failed
	failed=$(awk -F '\t' 'NR > 1 && $NF ~ /(pgbench_rc|awa_check_failed|no_awa_worker|awa_counters_|limit_exceeded)/' "$OUTDIR/raw.tsv" | wc -l)
	if [ "$failed" -gt 0 ]; then
		log "$failed run(s) failed or were doubtful: see the Notes of $OUTDIR/report.md"
		exit 1
	fi
	log "done"
}

main "$@"
