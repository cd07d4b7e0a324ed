# 032_database_shares.pl
#
# One database must not exhaust what every database shares (issue 20 §2). The
# counters' table of queue entries is shared by all databases (awa.max_queues);
# outside testing filled it from one database with enqueues that rolled back,
# so that another database's next new queue fell back to exact counting.
#
# One node, awa.max_queues = 100, maintenance off (only the calls below touch
# the counters; every outcome is read with awa.run_maintenance('counters')),
# databases dba and dbb with awa, and a login role `prod` that is only a
# member of awa_producer.
# (a) prod enqueues into 150 new queues of dba, each in a subtransaction that
#     rolls back (BEGIN ... EXCEPTION in a DO block): no entry is taken. dbb's
#     new queue then has trusted counters (no WARNING, the 'counters' step says
#     trusted, queue_counts equals queue_counts_exact), and so has dba's.
# (b) awa.max_queues_per_database = 40: prod, in dba, rolls back 150 more new
#     queues, then commits new queues until dba holds exactly 40 entries: dba
#     is still trusted and nobody warned (so the rolled-back enqueues took
#     exactly nothing). The 41st new queue of dba warns about
#     awa.max_queues_per_database, and dba counts exactly (step unavailable,
#     counts still equal to the exact pass), while a new queue of dbb keeps
#     trusted counters without a warning, also after dba has committed 110
#     new queues (more than the table holds): dba's share is full, not the
#     table.
# (c) With the share and the cap raised and awa.rebuild_counters(), dba is
#     trusted again, with counts equal to the exact pass for all 110 queues.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('shares', conf => "awa.max_queues = 100\n");
for my $db ('dba', 'dbb')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION awa');
}
$node->safe_psql('postgres', 'CREATE ROLE prod LOGIN IN ROLE awa_producer');

# Runs $sql in $db (as $role when given); returns (exit code, stdout, stderr).
sub run
{
	my ($db, $sql, $role) = @_;
	my ($stdout, $stderr) = ('', '');
	my $ret = $node->psql($db, $sql,
		stdout => \$stdout, stderr => \$stderr,
		$role ? (extra_params => [ '-U', $role ]) : ());
	return ($ret, $stdout, $stderr);
}

sub counters_step
{
	my ($db) = @_;
	return $node->safe_psql($db, "SELECT outcome FROM awa.run_maintenance('counters')");
}

sub same_as_exact
{
	my ($db, $queue) = @_;
	return $node->safe_psql($db, qq{
		SELECT (SELECT c FROM awa.queue_counts('$queue') c) IS NOT DISTINCT FROM
		       (SELECT e FROM awa.queue_counts_exact('$queue') e)});
}

# $n new queues named $prefix1 .. $prefixN, each enqueued in a subtransaction
# that rolls back, in one DO block run by prod.
sub rolled_back
{
	my ($db, $prefix, $n) = @_;
	return run($db, qq{DO \$\$ BEGIN
		FOR i IN 1..$n LOOP
			BEGIN
				PERFORM awa.enqueue('k', '{}', '$prefix' || i);
				RAISE EXCEPTION 'undo';
			EXCEPTION WHEN raise_exception THEN NULL;
			END;
		END LOOP;
	END \$\$}, 'prod');
}

# (a) The outside finding.
my ($ret, $out, $err) = rolled_back('dba', 'rb', 150);
is($ret, 0, 'prod (awa_producer only) ran 150 rolled-back enqueues into new queues of dba');
is($err, '', 'no warning: rolled-back enqueues do not reach the counter table');
is($node->safe_psql('dba', q{SELECT count(*) FROM awa.queue_lanes WHERE queue LIKE 'rb%'}), '0',
	'and left no lane behind');

($ret, $out, $err) = run('dbb', q{SELECT awa.enqueue('k', '{}', 'b1')});
is($ret, 0, "dbb's first new queue");
unlike($err, qr/WARNING/, "dbb's new queue raises no warning");
is(counters_step('dbb'), 'trusted', "dbb's counters step: trusted");
is($node->safe_psql('dbb', q{SELECT available FROM awa.queue_counts('b1')}), '1', "dbb's queue_counts: 1 available");
is(same_as_exact('dbb', 'b1'), 't', "dbb's queue_counts equals queue_counts_exact");

($ret, $out, $err) = run('dba', q{SELECT awa.enqueue('k', '{}', 'a1')}, 'prod');
is($ret, 0, "prod's committed enqueue into dba's queue a1");
unlike($err, qr/WARNING/, 'no warning in dba either');
is(counters_step('dba'), 'trusted', "dba's counters step: trusted");
is(same_as_exact('dba', 'a1'), 't', "dba's queue_counts equals queue_counts_exact");

# (b) A database's share.
$node->safe_psql('postgres', 'ALTER SYSTEM SET awa.max_queues_per_database = 40');
$node->reload;
is($node->safe_psql('dba', 'SHOW awa.max_queues_per_database'), '40', 'the share is 40 queues per database');

($ret, $out, $err) = rolled_back('dba', 'rc', 150);
is($ret, 0, '150 more rolled-back new queues in dba');
is($err, '', 'no warning');
# a1 and a2 .. a40: dba's share, exactly.
($ret, $out, $err) = run('dba', join('', map { "SELECT awa.enqueue('k', '{}', 'a$_');\n" } 2 .. 40), 'prod');
is($ret, 0, 'prod commits 39 more new queues in dba, one transaction each');
is($err, '', 'no warning: 40 entries fit the share (the 300 rolled-back queues took none)');
is(counters_step('dba'), 'trusted', 'dba at its share: still trusted');
is($node->safe_psql('dba', q{SELECT sum(available) FROM awa.queue_counts() WHERE queue LIKE 'a%'}), '40',
	"dba's counters: 40 jobs in 40 queues");

($ret, $out, $err) = run('dba', q{SELECT awa.enqueue('k', '{}', 'a41')}, 'prod');
is($ret, 0, "dba's 41st queue is enqueued");
like($err, qr/WARNING:  awa: more queues in this database than awa\.max_queues_per_database \(40\); queue counts are counted exactly/,
	"dba's 41st queue warns about dba's share");
is(counters_step('dba'), 'unavailable', 'dba counts exactly now (step: unavailable)');
is(same_as_exact('dba', 'a41'), 't', "dba's queue_counts of a41 still equals queue_counts_exact");
is($node->safe_psql('dba', q{SELECT sum(available) FROM awa.queue_counts() WHERE queue LIKE 'a%'}), '41',
	"dba's exact counts: 41 jobs");

# dba goes on to 110 queues: past its share, and past what the table holds.
($ret, $out, $err) = run('dba', join('', map { "SELECT awa.enqueue('k', '{}', 'a$_');\n" } 42 .. 110), 'prod');
is($ret, 0, 'prod commits 69 more new queues in dba (110 in all, the table holds 100)');
is($node->safe_psql('dba', q{SELECT sum(available) FROM awa.queue_counts() WHERE queue LIKE 'a%'}), '110',
	"dba's exact counts: 110 jobs");

($ret, $out, $err) = run('dbb', q{SELECT awa.enqueue('k', '{}', 'b2')}, 'prod');
is($ret, 0, "dbb's next new queue, while dba is beyond its share");
unlike($err, qr/WARNING/, 'no warning in dbb');
is(counters_step('dbb'), 'trusted', "dbb's counters step: still trusted");
is(same_as_exact('dbb', 'b2'), 't', "dbb's queue_counts of b2 equals queue_counts_exact");

# (c) Raising the share (and the cap) and rebuilding gives dba its counters back.
$node->safe_psql('postgres', 'ALTER SYSTEM RESET awa.max_queues_per_database');
$node->safe_psql('postgres', 'ALTER SYSTEM SET awa.max_queues = 1000');
$node->reload;
is($node->safe_psql('dba', 'SELECT awa.rebuild_counters()'), 't', 'dba: rebuild_counters after the share is raised');
is(counters_step('dba'), 'trusted', 'dba: trusted again');
is($node->safe_psql('dba', q{
	SELECT count(*) FROM awa.queue_counts() c JOIN awa.queue_counts_exact() e USING (queue)
	 WHERE row(c.*)::text = row(e.*)::text}), '110', 'dba: all 110 queues equal the exact pass');

$node->stop;
done_testing();
