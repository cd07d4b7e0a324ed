# 009_worker_lifecycle.pl
#
# The life of the maintenance launcher and workers (docs/maintenance.md §1).
# awa.launcher_naptime is 1 h here, so a database is only served when the
# launcher is told to (CREATE EXTENSION, a worker that stopped) or starts.
#
# (a) A launcher and one worker for database postgres run (pg_stat_activity),
#     and maintenance_status().worker_pid names the worker; no template
#     database has a worker.
# (b) pg_terminate_backend(worker): a new worker starts, and maintenance goes
#     on (a job scheduled 2 s ahead is promoted by the new worker).
# (c) pg_terminate_backend(launcher): the postmaster restarts it
#     (bgw_restart_time 5 s); one worker still serves postgres (the new
#     launcher's extra worker exits), maintenance goes on, and a worker
#     terminated now is restarted by the new launcher.
# (d) SIGHUP: awa.maintenance_enabled = off (ALTER SYSTEM + reload) stops
#     the steps: promote's run count stays put and a due job stays scheduled
#     for 3 s; back on, it is promoted.
# (e) A second database: CREATE EXTENSION awa there gets it a worker
#     (the launcher is woken at commit; the naptime is 1 h); DROP EXTENSION
#     awa makes that worker exit, so DROP DATABASE succeeds.
# (f) A clean restart: launcher and worker are back, the worker makes the
#     counters trusted, and a scheduled job is promoted.
# (g) A crash restart (kill -9 of a regular backend): the same.
# (h) The server log has no ERROR or PANIC line, and no maintenance step
#     counted an error, d2's worker included: a step holds a share lock on
#     the extension, so DROP EXTENSION awa waits for it instead of making it
#     fail half-way.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('lifecycle', maintenance => 1, conf => qq{
awa.launcher_naptime = '1h'
awa.promote_interval = '100ms'
restart_after_crash = on
});

sub q1 { return $node->safe_psql($_[1] // 'postgres', $_[0]); }

sub worker_pids
{
	my ($db) = @_;
	return q1("SELECT coalesce(string_agg(pid::text, ',' ORDER BY pid), '') FROM pg_stat_activity
	            WHERE backend_type = 'awa maintenance worker' AND datname = '$db'");
}

sub launcher_pid
{
	return q1("SELECT coalesce(string_agg(pid::text, ','), '') FROM pg_stat_activity
	            WHERE backend_type = 'awa maintenance launcher'");
}

# Waits until exactly one worker serves $db, other than $not_pid; returns its pid.
sub wait_worker
{
	my ($db, $not_pid) = @_;
	$not_pid //= 0;
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 AND bool_and(pid <> $not_pid) FROM pg_stat_activity
		  WHERE backend_type = 'awa maintenance worker' AND datname = '$db'")
	  or return '';
	return worker_pids($db);
}

# A job scheduled $secs seconds ahead in database $db.
sub scheduled_job
{
	my ($secs, $db) = @_;
	return q1("SELECT awa.enqueue('k', '{}', 'life', run_at => now() + interval '$secs s')", $db);
}

sub promoted
{
	my ($job, $db) = @_;
	return $node->poll_query_until($db // 'postgres', "SELECT awa.get_job($job) ->> 'state' = 'available'");
}

sub promote_runs { return q1("SELECT runs FROM awa.maintenance_status() WHERE task = 'promote'"); }

# ---------------------------------------------------------------------------
# (a)
# ---------------------------------------------------------------------------
my $launcher = launcher_pid();
like($launcher, qr/^\d+$/, '(a) one launcher runs');
is(q1("SELECT application_name FROM pg_stat_activity WHERE pid = $launcher"), 'awa launcher',
	'(a) the launcher\'s application_name');
my $worker = wait_worker('postgres');
like($worker, qr/^\d+$/, '(a) one worker serves postgres');
is(q1("SELECT application_name FROM pg_stat_activity WHERE pid = $worker"), 'awa maintenance',
	'(a) the worker\'s application_name');
is(q1("SELECT DISTINCT worker_pid FROM awa.maintenance_status()"), $worker,
	'(a) maintenance_status().worker_pid is the worker');
is(q1("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'awa maintenance worker'
        AND (datname IS NULL OR datname LIKE 'template%')"), '0', '(a) no worker for a template database');
ok($node->poll_query_until('postgres',
		"SELECT last_outcome = 'trusted' FROM awa.maintenance_status() WHERE task = 'counters'"),
	'(a) the worker made the counters trusted');

# ---------------------------------------------------------------------------
# (b) worker terminated
# ---------------------------------------------------------------------------
my $job = scheduled_job(2);
is(q1("SELECT pg_terminate_backend($worker)"), 't', '(b) worker terminated');
my $worker2 = wait_worker('postgres', $worker);
like($worker2, qr/^\d+$/, "(b) a new worker serves postgres ($worker -> $worker2)");
ok(promoted($job), '(b) a job scheduled 2 s ahead is promoted after the restart');
is(q1("SELECT DISTINCT worker_pid FROM awa.maintenance_status()"), $worker2,
	'(b) maintenance_status().worker_pid is the new worker');
ok($node->log_contains("awa: maintenance worker started for database"), '(b) the worker logs its start');

# ---------------------------------------------------------------------------
# (c) launcher terminated
# ---------------------------------------------------------------------------
is(q1("SELECT pg_terminate_backend($launcher)"), 't', '(c) launcher terminated');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 AND bool_and(pid <> $launcher) FROM pg_stat_activity
		  WHERE backend_type = 'awa maintenance launcher'"),
	'(c) the postmaster restarted the launcher');
my $launcher2 = launcher_pid();
# The new launcher starts a worker for postgres, which finds the database
# served and exits at once.
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 AND bool_and(pid = $worker2) FROM pg_stat_activity
		  WHERE backend_type = 'awa maintenance worker' AND datname = 'postgres'"),
	'(c) the worker that ran before still serves postgres, alone');
is(q1("SELECT DISTINCT worker_pid FROM awa.maintenance_status()"), $worker2,
	'(c) maintenance_status().worker_pid is still that worker');
$job = scheduled_job(1);
ok(promoted($job), '(c) maintenance goes on: a scheduled job is promoted');
is(q1("SELECT pg_terminate_backend($worker2)"), 't', '(c) worker terminated under the new launcher');
my $worker3 = wait_worker('postgres', $worker2);
like($worker3, qr/^\d+$/, "(c) the new launcher ($launcher2) restarted it ($worker3)");
$job = scheduled_job(1);
ok(promoted($job), '(c) and the new worker promotes');

# ---------------------------------------------------------------------------
# (d) SIGHUP: maintenance off, then on
# ---------------------------------------------------------------------------
q1("ALTER SYSTEM SET awa.maintenance_enabled = off");
q1("SELECT pg_reload_conf()");
# The worker reloads at the top of its loop: wait until promote stops running
# (two reads 1 s apart equal; promote_interval is 100 ms).
my $stopped = 0;
for (1 .. 60)
{
	my $r1 = promote_runs();
	sleep 1;
	if (promote_runs() eq $r1) { $stopped = 1; last; }
}
ok($stopped, '(d) after the reload, promote stops running');
my $runs_off = promote_runs();
$job = scheduled_job(1);
sleep 3;
is(q1("SELECT awa.get_job($job) ->> 'state'"), 'scheduled', '(d) a job due 2 s ago is still scheduled');
is(promote_runs(), $runs_off, '(d) promote did not run while maintenance was off');
is(worker_pids('postgres'), $worker3, '(d) the worker stays connected, idle');
q1("ALTER SYSTEM RESET awa.maintenance_enabled");
q1("SELECT pg_reload_conf()");
ok(promoted($job), '(d) maintenance on again: the job is promoted');
ok(promote_runs() > $runs_off, '(d) promote runs again');

# ---------------------------------------------------------------------------
# (e) a second database
# ---------------------------------------------------------------------------
q1("CREATE DATABASE d2");
q1("CREATE EXTENSION awa", 'd2');
my $d2_worker = wait_worker('d2');
like($d2_worker, qr/^\d+$/, '(e) CREATE EXTENSION awa in d2: a worker serves d2 (naptime is 1 h)');
is(q1("SELECT DISTINCT worker_pid FROM awa.maintenance_status()", 'd2'), $d2_worker,
	'(e) d2\'s maintenance_status names its own worker');
$job = scheduled_job(1, 'd2');
ok(promoted($job, 'd2'), '(e) d2\'s worker promotes d2\'s jobs');
is(worker_pids('postgres'), $worker3, '(e) postgres keeps its worker');
q1("DROP EXTENSION awa", 'd2');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE datname = 'd2'"),
	'(e) DROP EXTENSION awa in d2: its worker exits');
ok($node->log_contains("awa: extension dropped from database"), '(e) the worker logged why it exits');
q1("DROP DATABASE d2");
is(q1("SELECT count(*) FROM pg_database WHERE datname = 'd2'"), '0', '(e) DROP DATABASE d2 succeeds');
is(worker_pids('postgres'), $worker3, '(e) postgres still has its worker');

# ---------------------------------------------------------------------------
# (f) clean restart
# ---------------------------------------------------------------------------
$job = scheduled_job(2);
$node->restart;
like(wait_worker('postgres'), qr/^\d+$/, '(f) after a restart a worker serves postgres');
like(launcher_pid(), qr/^\d+$/, '(f) and a launcher runs');
ok($node->poll_query_until('postgres',
		"SELECT last_outcome = 'trusted' FROM awa.maintenance_status() WHERE task = 'counters'"),
	'(f) the worker made the counters trusted');
ok(promoted($job), '(f) the job scheduled before the restart is promoted');
is( q1("SELECT count(*) FROM ((SELECT * FROM awa.queue_counts(NULL) EXCEPT ALL SELECT * FROM awa.queue_counts_exact(NULL))
	    UNION ALL (SELECT * FROM awa.queue_counts_exact(NULL) EXCEPT ALL SELECT * FROM awa.queue_counts(NULL))) x"),
	'0', '(f) queue_counts = queue_counts_exact');

# ---------------------------------------------------------------------------
# (g) crash restart: kill -9 of a regular backend
# ---------------------------------------------------------------------------
my $worker_f = worker_pids('postgres');
$job = scheduled_job(2);
my $victim = $node->background_psql('postgres', on_error_stop => 0);
my $victim_pid = $victim->query('SELECT pg_backend_pid()');
like($victim_pid, qr/^\d+$/, '(g) a regular backend');
is(kill('KILL', $victim_pid), 1, '(g) kill -9 of the backend');
$victim->quit;
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 AND bool_and(pid <> $worker_f) FROM pg_stat_activity
		  WHERE backend_type = 'awa maintenance worker' AND datname = 'postgres'"),
	'(g) after the crash restart a new worker serves postgres');
ok($node->log_contains('terminated by signal 9'), '(g) the postmaster saw the crash');
ok($node->poll_query_until('postgres',
		"SELECT last_outcome = 'trusted' FROM awa.maintenance_status() WHERE task = 'counters'"),
	'(g) the worker made the counters trusted');
ok(promoted($job), '(g) the job scheduled before the crash is promoted');

# ---------------------------------------------------------------------------
# (h)
# ---------------------------------------------------------------------------
is(q1("SELECT coalesce(sum(errors), 0) FROM awa.maintenance_status()"), '0',
	'(h) no maintenance step counted an error (since the crash restart)');
$node->stop;
my $log = slurp_file($node->logfile);
my @bad = grep { /\b(ERROR|PANIC):/ } split /\n/, $log;
my @drop_race = grep { /\[$d2_worker\] ERROR:/ } @bad;
my @other = grep { !/\[$d2_worker\] ERROR:/ } @bad;
is(scalar(@other), 0, '(h) the server log has no ERROR or PANIC line (d2\'s worker aside)')
  or diag(join "\n", @other);
is(scalar(@drop_race), 0, '(h) d2\'s worker logged no ERROR while DROP EXTENSION ran')
  or diag(join "\n", @drop_race);
done_testing();
