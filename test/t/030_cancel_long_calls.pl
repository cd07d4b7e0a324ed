# 030_cancel_long_calls.pl
#
# A cancel or a terminate ends a long awa call, and nothing of it stays
# (issue 20 §1). An enqueue_many of 2,000,000 jobs is cancelled, then
# terminated, while it runs: the call ends with 57014 (or the session ends)
# within the 120 s the test waits, no row, segment or count of it remains, and
# the server takes the next call. What it does not pin down: where in the call
# the signal lands. Before the fix, one that landed while the rows were being
# inserted waited for the end of the call (a million rows: more than 12
# minutes); one that lands earlier is seen by both versions. The linear cost
# is measured, not asserted: bench/enqueue_many_scaling.sh.
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

# Starts the call in its own psql; returns the harness and its output refs.
sub start_call
{
	my ($queue) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			'psql', '-X', '-qAt', '-d', $node->connstr('postgres') . " application_name=$queue",
			'-c', "SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, array[$jobs]), NULL, queue => '$queue')"
		],
		'>', \$out, '2>', \$err,
		IPC::Run::timeout(120));
	# Running, inside awa, for a moment (a condition to wait for, not a timing).
	$node->poll_query_until('postgres',
		"SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = '$queue' AND state = 'active'"
		  . " AND now() - query_start > interval '300 milliseconds')")
	  or die "the call of $queue did not start";
	return ($h, \$out, \$err);
}

# Nothing of the call stays: no ready row, deferred row or lane, and the
# counters agree with an exact count.
sub nothing_left
{
	my ($queue, $label) = @_;
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

# 1. pg_cancel_backend
{
	my ($h, $out, $err) = start_call('big_cancel');
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
	my ($h, $out, $err) = start_call('big_terminate');
	is($node->safe_psql('postgres',
			"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'big_terminate'"),
		't', 'terminate sent');
	my $ended = eval { $h->finish; 1 };
	ok($ended, 'the terminated session ended (within 120 s)') or $h->kill_kill;
	like($$err, qr/terminating connection due to administrator command|server closed the connection/,
		'the session reports the terminate');
	nothing_left('big_terminate', 'after terminate');
}

# The server takes the next call; the worker still runs.
is($node->safe_psql('postgres', "SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, array[1000]), NULL, queue => 'after')"),
	'1000', 'the next call enqueues');
ok($node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'awa maintenance worker' AND datname = 'postgres'"),
	'the maintenance worker runs');

$node->stop;
done_testing();
