# 044_limit_reservation_error.pl
#
# A claim of a limited queue adds what it wants to the queue's claims in
# flight, then reads the running attempts, then records its reservation so
# that the end of its transaction gives it back (src/pg/running_limits.cpp).
# An error in between (a cancel, a statement_timeout, a lock_timeout) left the
# addition in shared memory for good: the queue's limit was short by it until
# the server restarted, and a queue whose claims asked for its whole limit
# was stopped (found by the adversary round). The read that can fail is the
# exact count of running attempts, made while the counters are not trusted
# (here: after a restart, with the worker off so no rebuild runs); a lock on a
# ring child holds it, and the claim is cancelled while it waits.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('limiterror');
sub q1 { return $node->safe_psql('postgres', $_[0]); }

q1(q{SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[6]), NULL, 'le');
  SELECT awa.configure_queue('le', max_running => 2)});
$node->restart;

# A lock that the exact count of running attempts waits for.
my $slot = q1(q{SELECT current_slot FROM awa.storage_status() WHERE ring = 'queue'});
my $locker = $node->background_psql('postgres');
$locker->query_safe("BEGIN; LOCK TABLE awa.ready_entries_$slot IN ACCESS EXCLUSIVE MODE");

my $claimer = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $claimer->query_safe('SELECT pg_backend_pid()');
$claimer->query_until(qr/started\n/, "\\echo started\nSELECT count(*) FROM awa.claim('le', 2);\n");
$node->poll_query_until('postgres',
	"SELECT EXISTS (SELECT FROM pg_locks WHERE pid = $pid AND NOT granted AND relation = 'awa.ready_entries_$slot'::regclass)")
  or die 'the claim never waited for the lock';
is(q1("SELECT pg_cancel_backend($pid)"), 't', 'the claim is cancelled while it counts the running attempts');
my ($out) = $claimer->query('SELECT 1');
$claimer->quit;
$locker->query_safe('ROLLBACK');
$locker->quit;

is(q1(q{SELECT count(*) FROM awa.claim('le', 2)}), '2',
	'nothing runs: the next claim gets the whole limit (the cancelled one gave its reservation back)');
is(q1(q{SELECT running FROM awa.queue_counts_exact('le')}), '2', 'two running');
is(q1(q{SELECT count(*) FROM awa.claim('le', 2)}), '0', 'and the limit holds');
done_testing();
