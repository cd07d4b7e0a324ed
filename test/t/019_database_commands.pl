# 019_database_commands.pl
#
# Databases come and go while awa's maintenance workers serve them (issue 11
# §5): the commands that need a database without other connections work as
# on a server without awa, and a dropped database gives back what awa kept
# for it in shared memory.
#
# Node 1 (maintenance on, the worker at its default cadence):
# (a) DROP DATABASE of a database whose worker is connected succeeds without
#     WITH (FORCE); the worker logged why it left. (a2) A role that does not
#     own the database gets PostgreSQL's refusal and does not move the worker.
# (b) CREATE DATABASE cp TEMPLATE src while src's worker is connected
#     succeeds; cp holds src's job; src gets its worker back.
# (c) ALTER DATABASE src RENAME TO src2 succeeds; the worker comes back.
# (d) A DROP DATABASE that fails (another session is connected) leaves the
#     database served again.
# (e) No FATAL line from an awa worker in the log (the worker left; nobody
#     killed it), and no ERROR line but the one (d) provoked.
#
# Node 2 (awa.max_counted_databases = 4, maintenance off, so that only the
# calls below touch the counters):
# (f) Nine databases in turn, each created from a template with awa, made
#     to keep counters, and dropped: every one gets trusted counters (the
#     slots of dropped databases are freed; before, the fourth failed).
# (g) A backend terminated while it rebuilds the counters (held by the test
#     hook's advisory lock) does not keep the rebuild: another database's
#     rebuild succeeds at once.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

sub worker_in
{
	my ($node, $db) = @_;
	return $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'awa maintenance worker' AND datname = '$db'");
}

# ---------------------------------------------------------------------------
# Node 1
# ---------------------------------------------------------------------------
my $node = start_awa_node('dbcommands', maintenance => 1);
sub q1 { return $node->safe_psql($_[1] // 'postgres', $_[0]); }

# (a)
q1('CREATE DATABASE gone');
q1('CREATE EXTENSION awa', 'gone');
ok(worker_in($node, 'gone'), '(a) a worker serves database gone');
my $log_offset = -s $node->logfile;
my ($rc, $out, $err) = $node->psql('postgres', 'DROP DATABASE gone');
is($rc, 0, '(a) DROP DATABASE succeeds while its worker was connected') or diag($err);
is(q1("SELECT count(*) FROM pg_database WHERE datname = 'gone'"), '0', '(a) the database is gone');
ok($node->log_contains('without other connections; maintenance worker leaves', $log_offset),
	'(a) the worker logged that it left for the command');

# (a2) A role that may not drop the database fails as always, and does not
# move the worker (else anyone could keep a database's maintenance away).
q1('CREATE DATABASE kept');
q1('CREATE EXTENSION awa', 'kept');
ok(worker_in($node, 'kept'), '(a2) a worker serves database kept');
my $kept_worker = q1("SELECT pid FROM pg_stat_activity WHERE backend_type = 'awa maintenance worker' AND datname = 'kept'");
q1('CREATE ROLE not_owner');
$log_offset = -s $node->logfile;
($rc, $out, $err) = $node->psql('postgres', 'SET ROLE not_owner; DROP DATABASE kept');
like($err, qr/must be owner of database kept/, '(a2) DROP DATABASE by a role that does not own it is refused');
# The worker would leave at its next tick (within a second): give it two.
sleep 2;
ok(!$node->log_contains('without other connections; maintenance worker leaves', $log_offset),
	'(a2) and the worker did not leave');
is(q1("SELECT pid FROM pg_stat_activity WHERE backend_type = 'awa maintenance worker' AND datname = 'kept'"),
	$kept_worker, '(a2) the same worker still serves kept');
q1('DROP DATABASE kept');

# (b)
q1('CREATE DATABASE src');
q1('CREATE EXTENSION awa', 'src');
my $job = q1("SELECT awa.enqueue('copied', queue => 'q')", 'src');
ok(worker_in($node, 'src'), '(b) a worker serves database src');
($rc, $out, $err) = $node->psql('postgres', 'CREATE DATABASE cp TEMPLATE src');
is($rc, 0, '(b) CREATE DATABASE ... TEMPLATE src succeeds while src\'s worker was connected') or diag($err);
is(q1("SELECT awa.get_job($job) ->> 'state'", 'cp'), 'available', '(b) the copy holds src\'s job');
ok(worker_in($node, 'src'), '(b) src gets its worker back');

# (c)
($rc, $out, $err) = $node->psql('postgres', 'ALTER DATABASE src RENAME TO src2');
is($rc, 0, '(c) ALTER DATABASE ... RENAME TO succeeds while the worker was connected') or diag($err);
ok(worker_in($node, 'src2'), '(c) the renamed database gets its worker back');
is(q1("SELECT awa.get_job($job) ->> 'state'", 'src2'), 'available', '(c) its job is still there');

# (d)
my $other = $node->background_psql('src2');
$other->query_safe('SELECT 1');
($rc, $out, $err) = $node->psql('postgres', 'DROP DATABASE src2');
isnt($rc, 0, '(d) DROP DATABASE fails while another session is connected');
like($err, qr/being accessed by other users/, '(d) with PostgreSQL\'s own message');
$other->quit;
ok(worker_in($node, 'src2'), '(d) after the failed DROP the database is served again');
my $promoted = q1("SELECT awa.enqueue('later', queue => 'q', run_at => now() + interval '1 second')", 'src2');
ok($node->poll_query_until('src2', "SELECT awa.get_job($promoted) ->> 'state' = 'available'"),
	'(d) its worker promotes a scheduled job');
($rc, $out, $err) = $node->psql('postgres', 'DROP DATABASE src2');
is($rc, 0, '(d) DROP DATABASE succeeds once the other session is gone') or diag($err);
($rc, $out, $err) = $node->psql('postgres', 'DROP DATABASE cp');
is($rc, 0, '(d) DROP DATABASE of the copy succeeds') or diag($err);

# (e)
my $log = slurp_file($node->logfile);
my @fatal = grep { /FATAL/ } split /\n/, $log;
is(scalar(@fatal), 0, '(e) no FATAL line in the log') or diag(join("\n", @fatal));
my @errors = grep { /ERROR:/ && !/being accessed by other users|must be owner of database/ } split /\n/, $log;
is(scalar(@errors), 0, '(e) no ERROR line but the refused DROPs') or diag(join("\n", @errors));
$node->stop;

# ---------------------------------------------------------------------------
# Node 2
# ---------------------------------------------------------------------------
my $n2 = start_awa_node('dbcounters', conf => "awa.max_counted_databases = 4\n");
sub q2 { return $n2->safe_psql($_[1] // 'postgres', $_[0]); }
q2('CREATE DATABASE tpl');
q2('CREATE EXTENSION awa', 'tpl');
q2("SELECT awa.enqueue('seed', queue => 'q')", 'tpl');
q2('ALTER DATABASE tpl WITH IS_TEMPLATE true');
is(q2('SELECT awa._ensure_counters()'), 'trusted', '(f) postgres has trusted counters');

# (f)
my @outcomes;
for my $i (1 .. 9)
{
	q2("CREATE DATABASE c$i TEMPLATE tpl");
	push @outcomes, q2('SELECT awa._ensure_counters()', "c$i") . ':'
	  . q2("SELECT available FROM awa.queue_counts('q')", "c$i");
	q2("DROP DATABASE c$i");
}
is_deeply(\@outcomes, [ ('trusted:1') x 9 ],
	'(f) nine databases created and dropped in turn: each gets trusted counters with max_counted_databases = 4');

# (g)
q2('CREATE DATABASE ga TEMPLATE tpl');
q2('CREATE DATABASE gb TEMPLATE tpl');
my $holder = $n2->background_psql('ga');
$holder->query_safe('SELECT pg_advisory_lock(4242)');
my $builder = $n2->background_psql('ga', on_error_stop => 0);
my $builder_pid = $builder->query_safe('SELECT pg_backend_pid()');
$builder->query_until(qr/start/, q{
\echo start
SET awa.debug_counter_rebuild_lock = 4242;
SELECT awa.rebuild_counters();
});
ok($n2->poll_query_until('ga',
		"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $builder_pid"),
	'(g) a rebuild in ga waits in its exact pass');
is(q2('SELECT awa.rebuild_counters()', 'gb'), 'f', '(g) meanwhile another database\'s rebuild waits its turn');
is(q2("SELECT pg_terminate_backend($builder_pid, 60000)"), 't', '(g) the builder is terminated mid-rebuild');
# Its psql has exited with the connection: nothing to quit.
eval { $builder->quit; };
is(q2('SELECT awa.rebuild_counters()', 'gb'), 't', '(g) the terminated builder kept nothing: gb\'s rebuild succeeds');
is(q2('SELECT awa.rebuild_counters()', 'ga'), 't', '(g) and ga\'s own');
$holder->quit;
$n2->stop;

done_testing();
