# 041_limit_wakeups.pl
#
# A claim with `wait` at a queue's limit sleeps until the limit may let it
# claim (docs/flow-control.md): at the concurrency limit, until an attempt of
# the queue ends (complete, retry, fail, a cancel of the running job, the
# rollback of an open claim, the maintenance worker's rescue of an expired
# claim); at the rate limit, until the next token is due. Each case: queue
# with max_running 1 (or a rate limit), its slot taken, a waiter started in a
# background psql and seen asleep (pg_stat_activity: wait_event Extension
# inside awa.claim), then one event; the waiter must return a job. Waits are
# 300 s, beyond the test's own time, so a waiter that is not woken fails its
# case (as in test/t/016_waiting_claim.pl), and no case depends on the
# machine's speed. The worker runs at its default cadence.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('limitwake', maintenance => 1);
sub q1 { return $node->safe_psql('postgres', $_[0]); }

q1(q{CREATE TABLE held (queue text, job_id bigint, run_lease bigint, receipt_id bigint)});

sub wait_until_sleeping
{
	my ($pid) = @_;
	$node->poll_query_until('postgres', qq{
SELECT wait_event_type = 'Extension' AND wait_event = 'Extension' AND query LIKE '%awa.claim%'
  FROM pg_stat_activity WHERE pid = $pid}) or die "waiter $pid never slept";
}

sub start_waiter
{
	my ($queue) = @_;
	my $session = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $session->query_safe('SELECT pg_backend_pid()');
	$session->query_until(qr/waiting\n/,
		"\\echo waiting\nSELECT 'got:' || count(*) FROM awa.claim('$queue', 1, NULL, '300 seconds');\n");
	wait_until_sleeping($pid);
	return $session;
}

sub result_of
{
	my ($session) = @_;
	my ($out) = $session->query("SELECT 'end'");
	my ($got) = $out =~ /(got:[0-9]+)/;
	return $got // "no result: $out";
}

# A queue of 3 jobs with max_running 1 whose slot is taken by a committed
# claim (in table held).
sub limited_queue
{
	my ($queue, $deadline) = @_;
	$deadline //= 'NULL';
	q1(qq{SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[3]), NULL, '$queue');
  SELECT awa.configure_queue('$queue', max_running => 1);
  INSERT INTO held SELECT '$queue', job_id, run_lease, receipt_id FROM awa.claim('$queue', 1, $deadline);});
	is(q1("SELECT count(*) FROM held WHERE queue = '$queue'"), '1', "$queue: the slot is taken");
	is(q1("SELECT count(*) FROM awa.claim('$queue', 1)"), '0', "$queue: at the limit");
}

my %ends = (
	complete => q{awa.complete(job_id, run_lease, receipt_id)},
	retry    => q{awa.retry(job_id, run_lease, receipt_id, 'again', 3600)},
	fail     => q{awa.fail(job_id, run_lease, receipt_id, 'no')},
	cancel   => q{awa.cancel(job_id)},);
for my $end (sort keys %ends)
{
	my $queue = "lw_$end";
	limited_queue($queue);
	my $w = start_waiter($queue);
	q1("SELECT $ends{$end} FROM held WHERE queue = '$queue'");
	is(result_of($w), 'got:1', "$queue: the commit of a $end of the running attempt wakes the waiter");
	$w->quit;
}

# The rollback of an open claim at the limit.
{
	q1(q{SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[3]), NULL, 'lw_rollback');
  SELECT awa.configure_queue('lw_rollback', max_running => 1)});
	my $holder = $node->background_psql('postgres');
	$holder->query_safe(q{BEGIN; SELECT job_id FROM awa.claim('lw_rollback', 1)});
	is(q1(q{SELECT count(*) FROM awa.claim('lw_rollback', 1)}), '0', 'lw_rollback: at the limit');
	my $w = start_waiter('lw_rollback');
	$holder->query_safe('ROLLBACK');
	is(result_of($w), 'got:1', 'lw_rollback: the rollback of an open claim at the limit wakes the waiter');
	$w->quit;
	$holder->quit;
}

# The worker's rescue of an expired claim (deadline 1 second).
{
	limited_queue('lw_rescue', q{'1 second'});
	my $w = start_waiter('lw_rescue');
	is(result_of($w), 'got:1', "lw_rescue: the worker's rescue of the expired attempt wakes the waiter");
	$w->quit;
}

# The rate limit: the burst used, a waiter gets the next token's job.
{
	q1(q{SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[3]), NULL, 'lw_rate');
  SELECT awa.configure_queue('lw_rate', rate_limit => '1 per 3 seconds', burst => 1)});
	is(q1(q{SELECT count(*) FROM awa.claim('lw_rate', 5)}), '1', 'lw_rate: the burst of 1');
	my $w = start_waiter('lw_rate');
	is(result_of($w), 'got:1', 'lw_rate: a waiter at the rate limit gets the job when the next token is due');
	$w->quit;
}
done_testing();
