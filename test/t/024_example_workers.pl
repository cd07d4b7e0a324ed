# 024_example_workers.pl
#
# The example workers (examples/python, examples/node; issue 12 §1) against a
# real server with its maintenance worker at the default cadence, directly
# and through a real pgbouncer (Debian's) in transaction pooling mode.
#
# For each language and each way in, on a queue of its own: the example's
# producer enqueues 200 example.echo, 20 example.flaky (max_attempts 3) and
# 10 example.fail (max_attempts 1); the worker runs with AWA_EXIT_WHEN_IDLE=1
# and must exit 0 on its own, leaving every echo job completed at attempt 1,
# every flaky job completed at attempt 2 (its first attempt raised), and every
# fail job failed.
#
# SIGTERM (each language, direct): two example.sleep jobs of 3 s are running
# (the server says so) and heartbeated (AWA_HEARTBEAT=1), the worker gets SIGTERM; a job enqueued once it says
# it stopped claiming is not claimed; the worker exits 0 and both sleeping
# jobs are completed.
#
# The grace period (each language, direct): with AWA_GRACE=1 and AWA_WAIT=60,
# SIGTERM while a 60 s example.sleep job runs and a claim waits: the worker
# exits 0 (well before the job or the claim's wait could have ended: it
# cancels the claim), logs that it handed the job back, and the job is not completed:
# it is scheduled or available at attempt 0 (awa.snooze gave the attempt back).
#
# Cancellation (each language, direct): a running, heartbeated 60 s job is
# cancelled with awa.cancel (cancel_requested); the handler logs that it
# stopped because of the cancel, the worker logs that it did not end the
# attempt and never completes, retries, snoozes or fails it, and the job's
# state is cancelled.
#
# Stale (each language, direct): an attempt rescued after its deadline
# (AWA_DEADLINE=2) while its handler runs: the heartbeat answers stale, the
# handler logs that it stopped (stale), and the worker makes no call for it.
#
# pgbouncer runs the shipped examples/pgbouncer/pgbouncer.ini with only its
# per-machine lines replaced.
#
# The interpreters: /usr/bin/python3 (Debian's, which has python3-psycopg; the
# python3 first on PATH may be another) and node with the pg package from
# examples/node/node_modules (scripts/install-deps.sh runs npm ci there).
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $root = "$FindBin::Bin/../..";
my $python = '/usr/bin/python3';
plan skip_all => "$python has no psycopg (install python3-psycopg)"
  unless system($python, '-c', 'import psycopg') == 0;
plan skip_all => 'node or examples/node/node_modules is missing (npm ci in examples/node)'
  unless system('node', '-e', "require('$root/examples/node/node_modules/pg')") == 0;
my $pgbouncer = (grep { -x $_ } ('/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'))[0];
plan skip_all => 'pgbouncer is not installed' unless $pgbouncer;

my $node = start_awa_node('examples', maintenance => 1);
my $host = $node->host;
my $user = $node->safe_psql('postgres', 'SELECT current_user');
my $direct = "postgresql://$user\@/postgres?host=$host&port=" . $node->port;

# pgbouncer in transaction mode, configured by the shipped
# examples/pgbouncer/pgbouncer.ini: only its per-machine lines (the server's
# address, listen_port, unix_socket_dir, auth_file, logfile, pidfile) are
# replaced, each exactly once; every other setting is the shipped one.
my $bouncer_port = PostgreSQL::Test::Cluster::get_free_port();
my $bdir = $node->basedir . '/pgbouncer';
mkdir $bdir;
my $ini_text = slurp_file("$root/examples/pgbouncer/pgbouncer.ini");
my %per_machine = (
	qr/^postgres = host=\S+ port=\d+ dbname=postgres$/m => "postgres = host=$host port=@{[ $node->port ]} dbname=postgres",
	qr/^listen_port = .*$/m => "listen_port = $bouncer_port",
	qr/^unix_socket_dir =.*$/m => "unix_socket_dir = $bdir",
	qr/^auth_file = .*$/m => "auth_file = $bdir/userlist.txt",
	qr/^logfile = .*$/m => "logfile = $bdir/pgbouncer.log",
	qr/^pidfile = .*$/m => "pidfile = $bdir/pgbouncer.pid");
while (my ($re, $line) = each %per_machine)
{
	my $n = () = $ini_text =~ /$re/g;
	die "examples/pgbouncer/pgbouncer.ini: $n lines match $re, expected 1" unless $n == 1;
	$ini_text =~ s/$re/$line/;
}
like($ini_text, qr/^pool_mode = transaction$/m, 'the shipped pgbouncer.ini pools transactions');
open my $ini, '>', "$bdir/pgbouncer.ini" or die;
print $ini $ini_text;
close $ini;
open my $ul, '>', "$bdir/userlist.txt" or die;
print $ul qq{"$user" ""\n};
close $ul;
system($pgbouncer, '-d', "$bdir/pgbouncer.ini") == 0 or die 'pgbouncer did not start';
# Stopped at the end, also when a check dies half-way.
END { kill 'TERM', `cat $bdir/pgbouncer.pid` + 0 if $bdir && -e "$bdir/pgbouncer.pid"; }
my $bounced = "postgresql://$user\@/postgres?host=$bdir&port=$bouncer_port";
# pgbouncer -d returns once it has forked, before its socket may exist (seen
# on a busy machine): wait for the socket, however long that takes.
for (1 .. 600) {
	last if -S "$bdir/.s.PGSQL.$bouncer_port";
	usleep(100_000);
}
is(`psql -X -At -d '$bounced' -c 'SELECT 1' 2>&1`, "1\n", 'pgbouncer (transaction pooling) is up');

my %cmd = (
	python => { producer => [ $python, "$root/examples/python/producer.py" ],
		worker => [ $python, "$root/examples/python/worker.py" ] },
	node => { producer => [ 'node', "$root/examples/node/producer.js" ],
		worker => [ 'node', "$root/examples/node/worker.js" ] },
);

sub produce
{
	my ($lang, $url, $queue, @args) = @_;
	my ($out, $err) = ('', '');
	local %ENV = (%ENV, DATABASE_URL => $url, AWA_QUEUE => $queue);
	IPC::Run::run([ @{ $cmd{$lang}{producer} }, @args ], '>', \$out, '2>', \$err)
	  or die "$lang producer failed: $err";
	return [ grep { /^\d+$/ } split /\n/, $out ];
}

sub states
{
	my ($ids) = @_;
	return $node->safe_psql('postgres',
		"SELECT string_agg(k || ' x' || n, ',' ORDER BY k) FROM ("
		  . "SELECT (awa.get_job(j) ->> 'state') || '\@' || (awa.get_job(j) ->> 'attempt') AS k, count(*) AS n"
		  . ' FROM unnest(ARRAY[' . join(',', @$ids) . ']::bigint[]) j GROUP BY 1) t');
}

for my $lang (qw(python node))
{
	for my $way ([ 'direct', $direct ], [ 'pgbouncer', $bounced ])
	{
		my ($name, $url) = @$way;
		my $queue = "ex_${lang}_$name";
		my $echo = produce($lang, $url, $queue, 'example.echo', 200, 25);
		my $flaky = produce($lang, $url, $queue, 'example.flaky', 20, 3);
		my $fail = produce($lang, $url, $queue, 'example.fail', 10, 1);
		is(scalar(@$echo) + scalar(@$flaky) + scalar(@$fail), 230, "$lang, $name: the producer enqueued 230 jobs");
		my ($out, $err) = ('', '');
		local %ENV = (%ENV, DATABASE_URL => $url, AWA_QUEUE => $queue, AWA_EXIT_WHEN_IDLE => '1', AWA_WAIT => '1');
		my $ok = IPC::Run::run($cmd{$lang}{worker}, '>', \$out, '2>', \$err, IPC::Run::timeout(300));
		ok($ok, "$lang, $name: the worker exited 0 once the queue was idle") or diag($err);
		is(states($echo), 'completed@1 x200', "$lang, $name: 200 example.echo completed at attempt 1");
		is(states($flaky), 'completed@2 x20', "$lang, $name: 20 example.flaky completed at attempt 2");
		is(states($fail), 'failed@1 x10', "$lang, $name: 10 example.fail failed");
	}

	# SIGTERM while two jobs run.
	my $queue = "ex_${lang}_term";
	my $sleepers = produce($lang, $direct, $queue, 'example.sleep', 2, 1, '{"seconds": 3}');
	my ($out, $err) = ('', '');
	local %ENV = (%ENV, DATABASE_URL => $direct, AWA_QUEUE => $queue, AWA_WAIT => '1', AWA_GRACE => '60',
		AWA_HEARTBEAT => '1');
	my $h = IPC::Run::start($cmd{$lang}{worker}, '>', \$out, '2>', \$err, IPC::Run::timeout(300));
	ok($node->poll_query_until('postgres', "SELECT running = 2 FROM awa.queue_counts('$queue')"),
		"$lang: both example.sleep jobs are running");
	ok($node->poll_query_until('postgres',
			'SELECT count(*) = 2 FROM awa.attempt_state WHERE heartbeat_at IS NOT NULL AND job_id = ANY (ARRAY['
			  . join(',', @$sleepers) . '])'),
		"$lang: the worker heartbeats both running jobs");
	$h->signal('TERM');
	# Once the worker says it stopped claiming (a claim in flight when the
	# signal came may still return jobs), a job enqueued stays available.
	$h->pump until $err =~ /stopped claiming/;
	my $late = produce($lang, $direct, $queue, 'example.echo', 1, 1);
	$h->finish;
	is($h->result(0), 0, "$lang: after SIGTERM the worker exited 0") or diag($err);
	is(states($sleepers), 'completed@1 x2', "$lang: the running jobs finished within the grace period");
	is(states($late), 'available@0 x1', "$lang: a job enqueued after SIGTERM was not claimed");

	# SIGTERM with AWA_GRACE=1 while a job of 60 s runs and the worker's next
	# claim waits in the server (AWA_WAIT=60): the worker cancels that claim,
	# exits after the grace period without completing the job, and hands the
	# job back with awa.snooze (scheduled, then available again; attempt not
	# used up).
	$queue = "ex_${lang}_grace";
	my ($long) = @{ produce($lang, $direct, $queue, 'example.sleep', 1, 3, '{"seconds": 60}') };
	($out, $err) = ('', '');
	local %ENV = (%ENV, DATABASE_URL => $direct, AWA_QUEUE => $queue, AWA_WAIT => '60', AWA_GRACE => '1',
		AWA_HEARTBEAT => '1');
	$h = IPC::Run::start($cmd{$lang}{worker}, '>', \$out, '2>', \$err, IPC::Run::timeout(300));
	ok($node->poll_query_until('postgres', "SELECT running = 1 FROM awa.queue_counts('$queue')"),
		"$lang: the 60 s example.sleep job is running");
	my $termed = time;
	$h->signal('TERM');
	$h->finish;
	is($h->result(0), 0, "$lang: with AWA_GRACE=1 the worker exited 0 after SIGTERM") or diag($err);
	# Generous: the job still had most of its 60 s to run, and the claim most
	# of its 60 s wait.
	cmp_ok(time - $termed, '<', 45,
		"$lang: the worker exited before the running job or its waiting claim could have finished");
	like($err, qr/job $long: grace period over: handed back \(snooze -> scheduled\)/,
		"$lang: the unfinished job was handed back with awa.snooze");
	unlike($err, qr/job $long \(example\.sleep, attempt 1\): complete/, "$lang: the worker did not complete it");
	like(states([$long]), qr/^(scheduled|available)\@0 x1$/,
		"$lang: the job is not completed, waits to run again, its attempt given back");

	# A running job cancelled with awa.cancel: the next heartbeat answers
	# cancel_requested, the handler is told (it logs that it stopped), and the
	# worker makes no call to end the attempt (the cancel closed it).
	$queue = "ex_${lang}_cancel";
	my ($victim) = @{ produce($lang, $direct, $queue, 'example.sleep', 1, 3, '{"seconds": 60}') };
	($out, $err) = ('', '');
	local %ENV = (%ENV, DATABASE_URL => $direct, AWA_QUEUE => $queue, AWA_WAIT => '1', AWA_GRACE => '60',
		AWA_HEARTBEAT => '1');
	$h = IPC::Run::start($cmd{$lang}{worker}, '>', \$out, '2>', \$err, IPC::Run::timeout(300));
	ok($node->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM awa.attempt_state WHERE heartbeat_at IS NOT NULL AND job_id = $victim"),
		"$lang: the 60 s job is running and heartbeated");
	is($node->safe_psql('postgres', "SELECT awa.cancel($victim)"), 'cancel_requested',
		"$lang: awa.cancel of the running job");
	$h->pump until $err =~ /job $victim \(example\.sleep\): handler stopped: cancelled/
	  && $err =~ /job $victim \(example\.sleep, attempt 1\): not ended by the worker \(cancelled\)/;
	pass("$lang: the handler saw the cancellation and stopped; the worker did not end the attempt");
	$h->signal('TERM');
	$h->finish;
	is($h->result(0), 0, "$lang: the worker then exited 0 on SIGTERM") or diag($err);
	unlike($err, qr/job $victim \(example\.sleep, attempt 1\): (complete|retry|snooze|fail)/,
		"$lang: the worker never completed (or otherwise ended) the cancelled job");
	is(states([$victim]), 'cancelled@1 x1', "$lang: the cancelled job's final state is cancelled");

	# An attempt that awa ended without the worker (rescued after its
	# deadline, AWA_DEADLINE=2; max_attempts 1, so the job fails): the next
	# heartbeat answers stale, the handler is told (reason stale), and the
	# worker makes no call for that attempt.
	$queue = "ex_${lang}_stale";
	my ($lost) = @{ produce($lang, $direct, $queue, 'example.sleep', 1, 1, '{"seconds": 60}') };
	($out, $err) = ('', '');
	local %ENV = (%ENV, DATABASE_URL => $direct, AWA_QUEUE => $queue, AWA_WAIT => '1', AWA_GRACE => '60',
		AWA_HEARTBEAT => '1', AWA_DEADLINE => '2');
	$h = IPC::Run::start($cmd{$lang}{worker}, '>', \$out, '2>', \$err, IPC::Run::timeout(300));
	ok($node->poll_query_until('postgres', "SELECT awa.get_job($lost) ->> 'state' = 'failed'"),
		"$lang: the attempt past its deadline was rescued (the job failed: no attempt left)");
	$h->pump until $err =~ /job $lost \(example\.sleep\): handler stopped: stale/
	  && $err =~ /job $lost \(example\.sleep, attempt 1\): not ended by the worker \(stale\)/;
	pass("$lang: the heartbeat answered stale, the handler stopped, the worker did not end the attempt");
	$h->signal('TERM');
	$h->finish;
	is($h->result(0), 0, "$lang: the worker then exited 0 on SIGTERM") or diag($err);
	unlike($err, qr/job $lost \(example\.sleep, attempt 1\): (complete|retry|snooze|fail)/,
		"$lang: the worker made no call for the rescued attempt");
}

$node->stop;
done_testing();
