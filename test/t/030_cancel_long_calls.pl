# 030_cancel_long_calls.pl
#
# A cancel or a terminate ends a long awa call, and nothing of it stays
# (issue 20 §1). An enqueue_many of 2,000,000 jobs is cancelled, then
# terminated, once its rows are being inserted (the ring's files have grown):
# the call ends with 57014 (or the session ends) within the 120 s the test
# waits, no ready row, segment, deferred row, lane or count of it remains, and
# the server takes the next call. Before the fix the call made one slot per
# row before inserting any, at a cost quadratic in the rows and with no
# interrupt check (a million rows ran for more than 12 minutes), so the
# insert never began within the wait and the test failed. The same for
# 2,000,000 scheduled jobs (run_at a day ahead), whose rows go to
# deferred_jobs through the executor, which was interruptible before too:
# that case guards that nothing partial stays.
#
# Stock settings, the maintenance worker on at its default cadence.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('cancel', maintenance => 1);
my $jobs = 2_000_000;

# The bytes in the files of `table`'s partitions (or of `table` itself).
sub table_bytes
{
	my ($table) = @_;
	return $node->safe_psql('postgres',
		"SELECT pg_relation_size('$table'::regclass) + coalesce((SELECT sum(pg_relation_size(i.inhrelid))"
		  . " FROM pg_inherits i WHERE i.inhparent = '$table'::regclass), 0)");
}

# Starts the call in its own psql once the rows of the call go into `table`
# (its files have grown); returns the harness and its output refs.
sub start_call
{
	my ($queue, $table, $extra) = @_;
	my $before = table_bytes($table);
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			'psql', '-X', '-qAt', '-d', $node->connstr('postgres') . " application_name=$queue",
			'-c', "SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, array[$jobs]), NULL, queue => '$queue'$extra)"
		],
		'>', \$out, '2>', \$err,
		IPC::Run::timeout(120));
	# A condition to wait for, not a timing: the insert has begun.
	$node->poll_query_until('postgres',
		"SELECT pg_relation_size('$table'::regclass) + coalesce((SELECT sum(pg_relation_size(i.inhrelid))"
		  . " FROM pg_inherits i WHERE i.inhparent = '$table'::regclass), 0) > $before")
	  or die "the rows of $queue were never inserted";
	return ($h, \$out, \$err);
}

# Nothing of the call stays: no ready row, segment, deferred row or lane,
# and the counters agree with an exact count.
sub nothing_left
{
	my ($queue, $label) = @_;
	is($node->safe_psql('postgres', "SELECT count(*) FROM awa.deferred_jobs WHERE queue = '$queue'"),
		'0', "$label: no deferred row");
	is($node->safe_psql('postgres', "SELECT count(*) FROM awa.queue_lanes WHERE queue = '$queue'"),
		'0', "$label: no lane");
	is($node->safe_psql('postgres', "SELECT count(*) FROM awa.ready_entries WHERE queue = '$queue'"),
		'0', "$label: no ready row");
	is($node->safe_psql('postgres', "SELECT count(*) FROM awa.ready_segments WHERE queue = '$queue'"),
		'0', "$label: no segment");
	is( $node->safe_psql('postgres',
			"SELECT coalesce(sum(available + scheduled), 0) FROM awa.queue_counts('$queue')"),
		'0', "$label: the counters count nothing");
	is( $node->safe_psql('postgres',
			"SELECT coalesce(sum(available + scheduled + retryable + running + completed + failed + cancelled + dlq), 0)"
			  . " FROM awa.queue_counts_exact('$queue')"),
		'0', "$label: an exact count finds nothing");
}

my $later = ", run_at => array_fill(now() + interval '1 day', array[$jobs])";

# 1. pg_cancel_backend
{
	my ($h, $out, $err) = start_call('big_cancel', 'awa.ready_entries', '');
	is($node->safe_psql('postgres',
			"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'big_cancel'"),
		't', 'cancel sent');
	my $ended = eval { $h->finish; 1 };
	ok($ended, 'the cancelled call ended (within 120 s)') or $h->kill_kill;
	like($$err, qr/canceling statement due to user request/, 'the call reports the cancel');
	nothing_left('big_cancel', 'after cancel');
}

# 2. pg_terminate_backend
{
	my ($h, $out, $err) = start_call('big_terminate', 'awa.ready_entries', '');
	is($node->safe_psql('postgres',
			"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'big_terminate'"),
		't', 'terminate sent');
	my $ended = eval { $h->finish; 1 };
	ok($ended, 'the terminated session ended (within 120 s)') or $h->kill_kill;
	like($$err, qr/terminating connection due to administrator command|server closed the connection/,
		'the session reports the terminate');
	nothing_left('big_terminate', 'after terminate');
}

# 3. pg_cancel_backend of scheduled jobs
{
	my ($h, $out, $err) = start_call('big_later', 'awa.deferred_jobs', $later);
	is($node->safe_psql('postgres',
			"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'big_later'"),
		't', 'cancel sent (scheduled jobs)');
	my $ended = eval { $h->finish; 1 };
	ok($ended, 'the cancelled call of scheduled jobs ended (within 120 s)') or $h->kill_kill;
	like($$err, qr/canceling statement due to user request/, 'the call reports the cancel');
	nothing_left('big_later', 'after cancel (scheduled)');
}

# The server takes the next call; the worker still runs.
is($node->safe_psql('postgres', "SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, array[1000]), NULL, queue => 'after')"),
	'1000', 'the next call enqueues');
ok($node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'awa maintenance worker' AND datname = 'postgres'"),
	'the maintenance worker runs');

$node->stop;
done_testing();
