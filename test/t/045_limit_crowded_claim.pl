# 045_limit_crowded_claim.pl
#
# A claim of a limited queue reserves optimistically: it adds what it wants
# to the queue's claims in flight, reads the running attempts, and gives back
# what does not fit (docs/flow-control.md). A claim that another claim's
# reservation cut, where that reservation was then given back unused (the
# other claim rolled back, failed, took fewer), got nothing although nothing
# ran, and a waiting claim then slept until an attempt of the queue ended,
# which never came while nothing ran: jobs available, slots free, the waiter
# asleep for its whole wait (found by the adversary round). Now a cut claim
# that finds, when it gives back, that the others gave back too, reserves
# again; and a reservation given back unused after a claim was cut wakes the
# queue's waiting claims.
#
# Made deterministic with a lock that both claims' exact count of running
# attempts waits for (counters not trusted: after a restart, the worker off):
# the first claim (max_jobs 2 = the limit) has added 2 when it waits; the
# waiter adds 1 and waits too; the first is cancelled (giving its 2 back);
# the lock goes; the waiter counted the 2 when it added. Its wait is 300 s, so
# a waiter that is not given the job fails the test (as in 016).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('limitcrowd');
sub q1 { return $node->safe_psql('postgres', $_[0]); }

q1(q{SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[4]), NULL, 'cr');
  SELECT awa.configure_queue('cr', max_running => 2)});
$node->restart;

my $slot = q1(q{SELECT current_slot FROM awa.storage_status() WHERE ring = 'queue'});
my $locker = $node->background_psql('postgres');
$locker->query_safe("BEGIN; LOCK TABLE awa.ready_entries_$slot IN ACCESS EXCLUSIVE MODE");

sub start_blocked
{
	my ($sql) = @_;
	my $session = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $session->query_safe('SELECT pg_backend_pid()');
	$session->query_until(qr/started\n/, "\\echo started\n$sql\n");
	$node->poll_query_until('postgres',
		"SELECT EXISTS (SELECT FROM pg_locks WHERE pid = $pid AND NOT granted AND relation = 'awa.ready_entries_$slot'::regclass)")
	  or die "session $pid never waited for the lock";
	return ($session, $pid);
}

my ($first, $first_pid) = start_blocked(q{SELECT count(*) FROM awa.claim('cr', 2);});
my ($waiter, $waiter_pid) = start_blocked(q{SELECT 'got:' || count(*) FROM awa.claim('cr', 1, NULL, '300 seconds');});
is(q1("SELECT pg_cancel_backend($first_pid)"), 't', 'the first claim is cancelled: its reservation is given back');
$node->poll_query_until('postgres', "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $first_pid AND state = 'active')")
  or die 'the first claim did not end';
$locker->query_safe('ROLLBACK');
my ($out) = $waiter->query("SELECT 'end'");
my ($got) = $out =~ /(got:[0-9]+)/;
is($got // "no result: $out", 'got:1', 'the waiter, cut by the reservation given back, gets a job');
$waiter->quit;
$first->quit;
$locker->quit;
is(q1(q{SELECT running FROM awa.queue_counts_exact('cr')}), '1', 'one running');
is(q1(q{SELECT count(*) FROM awa.claim('cr', 5)}), '1', 'the limit leaves one more');
done_testing();
