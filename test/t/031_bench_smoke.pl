# 031_bench_smoke.pl
#
# Every benchmark script in bench/ runs to its end on a machine set up by
# scripts/install-deps.sh and
# writes its report: each is run once here with tiny sizes and durations (its
# environment knobs, listed below), on its own scratch server
# (bench/scratch_server.sh, or bench/run.sh's own), with PGBIN taken from the
# pg_config on PATH, WORKDIR and every output file under tmp_check, and a
# free port. For each: the exit status is 0, and the report (the file the
# script writes: OUT, or $WORKDIR/result.md) holds the script's table or
# heading (or prints it: paused_growth, idle_backlog, ring_spares_cost). What the numbers
# are is not checked: a smoke run measures nothing.
#
# bench/soak.sh also runs bench/soak_report.py and bench/plot_soak.py; with
# matplotlib (Debian's python3-matplotlib) its figures are drawn, without it
# the report says why it has none. It runs with SMOKE=1: phases of seconds
# measure nothing, so the report's contract, validity and instrument verdicts
# are written but do not decide its exit status (its other integrity checks,
# counters = exact counts, one maintenance worker, no error in the logs, do).
#
# bench/peers/run.sh runs once too, with SKIP LOCKED and awa only (PgQ and
# pgmq need files the test does not install): the W2 batch-1 drain durable
# and with synchronous_commit = off, and the P pressure phases (clean, idle in
# transaction, REPEATABLE READ readers, burst, recovery) of 2 s each. Its
# report has the cost-per-job table and the phase tables. And once more with
# awa and pg-boss in workload L (limits that never bind, binding limits);
# pg-boss is skipped with a message where its node_modules are not installed.
#
# The whole test takes about four minutes on 2 cores.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;

my $bench = "$FindBin::Bin/../../bench";
my $pgbin = `pg_config --bindir`;
chomp $pgbin;
plan skip_all => "no pgbench in $pgbin" unless -x "$pgbin/pgbench";

my $out = "$PostgreSQL::Test::Utils::tmp_check/bench_smoke";
mkdir $out;

# name => [ environment, report file, what the report must contain ]
my @runs = (
	[ 'enqueue_many_scaling', { SIZES => '1000' }, 'result.md', qr/^jobs\s+run_at\s+ms\s+us_per_job$/m ],
	[ 'many_queues', { COUNTS => '10', REPS => '1' }, 'result.md', qr/^\| 10 \|/m ],
	[ 'lanes', { COUNTS => '10', TX => '20' }, 'result.md', qr/^\| build \| 10 \| \d+ → \d+ \|/m ],
	[ 'lanes_tight', { COUNTS => '10', CALLS => '20', REPS => '1' }, 'result.md', qr/^\| 10 \| build \| [0-9.]+ \| [0-9.]+ \|$/m ],
	[ 'queue_metrics', { SIZES => '10', PER_QUEUE => '4', REPS => '1', LOAD_SECONDS => '1', SCRAPE_QUEUES => '10',
		HOT_SECONDS => '1', HOT_REPS => '1', DRAIN_PRELOAD => '2000' }, 'result.md',
		qr/^\| 10 \| idle .*\n.*^\| enqueue-1 \|/ms ],
	[ 'mixed', { N => '1000', WORKERS => '2' }, 'result.md', qr/^\| 2 \|/m ],
	[ 'queue_counts', { SMALL_N => '10000', LARGE_N => '20000', FINISHED => '3', DURATION => '1' },
		'result.md', qr/^\| 20,000 \|/m ],
	[ 'backlog_depth', { REPS => '1', SMALL => '2000', LARGE => '4000', DRAIN => '800' }, 'result.md',
		qr/^\| mean \|/m ],
	[ 'pickup_latency', { WAITERS => '2', RATE => '20', DURATION => '2', IDLE_S => '1', CLAIM_WAIT => '1' },
		'result.md', qr/^\| jobs left unclaimed at the end \| 0 \|$/m ],
	[ 'live_work', { DURATION => '1', PAUSED => '2000', BACKLOG => '1000', HISTORY_WAIT => '0', ROUNDS => '1',
			OUT => "$out/live_work.md" }, 'live_work.md', qr/^## 3\. The completion path/m ],
	[ 'run', { QUICK => '1', DURATION => '1', PRELOAD => '2000',
			ONLY => '^drain-(awa|base)-default-N4-B10$',
			OUT => "$out/run.md" }, 'run.md', qr/^\| drain \| 4 \| 10 \| \d+ \| \d+ \|/m ],
	[ 'paused_growth', { SPARE => '16', TOTAL => '16000', PER_ROTATION => '500' }, '-', qr/^\| 16 \| 1 \| /m ],
	[ 'idle_backlog', { TOTAL => '2000', RATE => '20', SETTLE => '1', WINDOW => '1' }, '-',
		qr/^\| \d+ \| 1 \| [0-9.]+ \| [0-9.]+ \| \d+ \| \d+ \|$/m ],
	[ 'ring_spares_cost', { SPARES => '0', DURATION => '1' }, '-', qr/^\| 0 \| /m ],
	[ 'limit_overhead', { REPS => '1', JOBS => '2000', CLIENTS => '2', DURATION => '1' }, 'result.md',
		qr/^\| 1 \| 10 \| \d+ \| \d+ \| [0-9.]+ \|$/m ],
	[ 'open_claim', { JOBS => '600', BASE => '50', CHUNK => '100', CHUNKS => '2' }, 'result.md',
		qr/^\| after it rolled back, chunk 2 \| 20 \| \d+ \|$/m ],
	[ 'keys', { REPS => '1', JOBS => '400', CLIENTS => '2', DURATION => '1', KEYS => '10', BATCHES => '1' },
		'result.md', qr/^\| 1 \| 1 \| 10 keys, fairness key \| \d+ \| [0-9.]+ \|$/m ],
	[ 'fairness', { CLIENTS => '2', DURATION => '2', SMALL_KEYS => '3', SMALL_RATE => '5', BACKLOG => '200',
			SATURATED => '300' }, 'result.md', qr/^Jain's index of claims\/weight: [0-9.]+$/m ],
	[ 'drain_instructions', { N => '20' }, '-',
		qr/^batch-1 drain, 20 jobs \(left in the queue: 0\): pgbench backend \d+ instructions, \d+ per job; its own work \(PostgresMain\) \d+, \d+ per job\n(?s:.*)^single-job enqueue, 20 jobs: pgbench backend \d+ instructions, \d+ per job; its own work \(PostgresMain\) \d+, \d+ per job$/m ],
	[ 'bulk_retry', { DLQ_JOBS => '1000', LOAD_CLIENTS => '2', LOAD_RATE => '40', PHASE_S => '2', STEP => '100',
			SAMPLE_WAITS => '1' }, 'result.md', qr/^bulk: 1000 jobs retried in \d+ steps of 100 .*^step time .*^left in the DLQ: 0; available in dead: 1000$/ms ],
	[ 'list_jobs', { SIZES => '1000', REPS => '1' }, 'result.md', qr/^\| 1000 \| /m ],
	[ 'lock_footprint', { TXNS => '20', ROUNDS => '1' }, '-', qr/^\| 1 job, existing lane \| \d+ \|/m ],
	[ 'wal_per_job', { N => '50', WARMUP => '10', SHAPES_N => '20' }, 'result.md',
		qr/^## batch-1 drain .*^\| lease_claim_batches_0 \| INSERT \| [0-9.]+ \| [0-9.]+ \|\n.*^\| receipt_completion_batches \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$/ms ],
	[ 'soak', { WARMUP => '1', CLEAN => '3', IDLE_TX => '3', RECOVERY => '3', CLEAN2 => '3', SMOKE => '1',
			PRODUCER_RATE => '100', OUT => "$out/soak.md", CSV_OUT => "$out/soak.csv",
			FIGURES => "$out/soak_figures" }, 'soak.md', qr/^## Figures$/m ],
);

for my $run (@runs)
{
	my ($name, $env, $report, $expect) = @$run;
	my $workdir = "$out/$name";
	local %ENV = (%ENV, %$env, PGBIN => $pgbin, WORKDIR => $workdir,
		PORT => PostgreSQL::Test::Cluster::get_free_port());
	my ($stdout, $stderr) = ('', '');
	my $ok = IPC::Run::run([ 'bash', "$bench/$name.sh" ], '<', \undef, '>', \$stdout, '2>', \$stderr);
	ok($ok, "bench/$name.sh exits 0") or diag("stdout:\n$stdout\nstderr:\n$stderr");
	my $path = $report eq 'result.md' ? "$workdir/result.md" : "$out/$report";
	# '-': the script prints its table on stdout.
	my $text = $report eq '-' ? $stdout : -e $path ? slurp_file($path) : '';
	like($text, $expect, "bench/$name.sh wrote its report ($report)");
}

# bench/peers: cost per job and the pressure phases, on the smallest sizes.
{
	my $outdir = "$out/peers";
	local %ENV = (%ENV, PGBIN => $pgbin, WORKDIR => "$out/peers_work", OUTDIR => $outdir,
		PORT => PostgreSQL::Test::Cluster::get_free_port(),
		SYSTEMS => 'skip awa', WORKLOADS => 'W2 P', T => '1', REPS => '1', W2_N => '2', W2_B => '1',
		PRELOAD => '2000', P_T => '2', P_RATE => '20', P_N => '2', P_READERS => '2');
	delete $ENV{PGMQ_SQL};
	my ($stdout, $stderr) = ('', '');
	my $ok = IPC::Run::run([ 'bash', "$bench/peers/run.sh" ], '<', \undef, '>', \$stdout, '2>', \$stderr);
	ok($ok, 'bench/peers/run.sh exits 0') or diag("stdout:\n$stdout\nstderr:\n$stderr");
	my $text = -e "$outdir/report.md" ? slurp_file("$outdir/report.md") : '';
	like($text, qr/^\| W2 drain, sync_commit off N=2 B=1 \| awa \| /m,
		'bench/peers report: cost per job of the synchronous_commit = off drain');
	like($text, qr/^\| 5 recovery \| (?:[0-9.]+|n\/a) \| (?:[0-9.]+|n\/a) \| /m, 'bench/peers report: the pressure phases side by side');
}

# bench/peers workload L (limits): awa's drain with limits that never bind beside the drain without
# one, and the binding cells (run.sh fails the run if a binding limit was not held). pg-boss is
# asked for too: without its node_modules (CI installs no npm packages) run.sh skips it with a
# message and goes on; with them it runs as well.
{
	my $outdir = "$out/peers_limits";
	local %ENV = (%ENV, PGBIN => $pgbin, WORKDIR => "$out/peers_limits_work", OUTDIR => $outdir,
		PORT => PostgreSQL::Test::Cluster::get_free_port(),
		SYSTEMS => 'awa pgboss', WORKLOADS => 'L', T => '1', REPS => '1', L_N => '2', L_B => '1',
		L_BIND_N => '2', L_BIND_CONC => '1', L_BIND_RATE => '50', PRELOAD => '2000');
	my ($stdout, $stderr) = ('', '');
	my $ok = IPC::Run::run([ 'bash', "$bench/peers/run.sh" ], '<', \undef, '>', \$stdout, '2>', \$stderr);
	ok($ok, 'bench/peers/run.sh WORKLOADS=L exits 0') or diag("stdout:\n$stdout\nstderr:\n$stderr");
	my $text = -e "$outdir/report.md" ? slurp_file("$outdir/report.md") : '';
	like($text, qr/^\| N \| B \| awa, no limit \| awa, max_running \(never binds\) \| awa, rate limit \(never binds\) \| awa, both \|/m,
		'bench/peers report: the non-binding limit cells');
	like($text, qr/^\| awa, max_running \| 2 \| 1 \| 1 \| .* \| limit 1: max seen [01], .* \| yes \|/m,
		'bench/peers report: the binding concurrency limit held');
	like($text, qr/^\| awa, rate limit \| 2 \| 1 \| 1 \| .* \| yes \|/m, 'bench/peers report: the binding rate limit held');
	like($text, qr/\| awa, keyed jobs, fairness 'key', no limit \| awa, keyed jobs, limits per key \(never bind\) \|/m,
		'bench/peers report: the keyed cells without and with limits per key');
	like($text, qr/^\| awa, key_max_running 1 over keys \| 2 \| 1 \| 1 \| .* \| limit 1: max seen [01], .* \| yes \|/m,
		'bench/peers report: the binding limit per key held');
	if (-e "$bench/peers/pgboss/node_modules/pg-boss/package.json")
	{
		like($text, qr/^\| pg-boss, singleton policy over keys \| 2 \| 1 \| 1 \|/m, 'bench/peers report: pg-boss ran');
	}
	else
	{
		like($stderr, qr/skipping pgboss: .*npm ci/s, 'bench/peers/run.sh says why pg-boss is skipped');
	}
}

# The soak report has its figures, or says why not.
my $soak = -e "$out/soak.md" ? slurp_file("$out/soak.md") : '';
if (system('/usr/bin/python3', '-c', 'import matplotlib') == 0)
{
	ok(-s "$out/soak_figures/soak_rates.png" && $soak =~ /soak_rates\.png/,
		'bench/soak.sh drew its figures (matplotlib is there)');
}
else
{
	like($soak, qr/^No figures: .* cannot import matplotlib/m, 'bench/soak.sh says why it has no figures');
}

done_testing();
