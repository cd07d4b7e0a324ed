# 042_limit_lock_held_by_nothing.pl
#
# A queue with a concurrency limit but no counters entry (here: more queues
# than awa.max_queues_per_database, which a producer can reach by enqueueing
# into that many queue names) is limited under its limit lock
# (docs/flow-control.md): a claim that reserves attempts keeps the lock until
# its transaction ends, so that the claims of the queue follow one another.
# A claim that reserved nothing (the queue at its limit) kept it too: one
# worker idle in its transaction after such a claim, or a prepared
# transaction that made one, stopped every claim of the queue, even after
# the running attempts ended (found by the adversary round). Now a claim that
# reserves nothing gives the lock back at once.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('limitlock', maintenance => 1,
	conf => "awa.max_queues_per_database = 16\nmax_prepared_transactions = 2\n");
sub q1 { return $node->safe_psql('postgres', $_[0]); }

# 16 queues take the database's share; 'll' gets no counters entry.
q1(q{SELECT awa.enqueue('k', queue => 'filler' || i) FROM generate_series(1, 16) i});
q1(q{SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[4]), NULL, 'll');
  SELECT awa.configure_queue('ll', max_running => 1)});
my $first = q1(q{SELECT job_id || ',' || run_lease || ',' || receipt_id FROM awa.claim('ll', 1)});
like($first, qr/^\d+,\d+,\d+$/, 'one attempt runs: the queue is at its limit');

# A worker's claim at the limit, in a transaction left open.
my $idle = $node->background_psql('postgres');
$idle->query_safe('SET client_min_messages = error');
$idle->query_safe('BEGIN');
is($idle->query_safe(q{SELECT count(*) FROM awa.claim('ll', 1)}), '0', 'a claim at the limit gets nothing');
is(q1(q{SELECT count(*) FROM pg_locks WHERE objsubid = 16647}), '0', 'and keeps no limit lock');

# The same in a prepared transaction.
q1(q{SET lock_timeout = '10s'; BEGIN; SELECT count(*) FROM awa.claim('ll', 1); PREPARE TRANSACTION 'll_nothing'});
is(q1(q{SELECT count(*) FROM pg_locks WHERE objsubid = 16647}), '0', 'a prepared claim of nothing keeps none either');

# The running attempt ends: the next claim takes the free slot at once.
is(q1(qq{SELECT awa.complete($first)}), 't', 'the running attempt completes');
is(q1(q{SET lock_timeout = '10s'; SELECT count(*) FROM awa.claim('ll', 1)}), '1',
	'a claim takes the freed slot, not stopped by the idle transaction or the prepared one');
is(q1(q{SET lock_timeout = '10s'; SELECT count(*) FROM awa.claim('ll', 1)}), '0', 'and the limit holds');

$idle->query_safe('COMMIT');
$idle->quit;
q1(q{COMMIT PREPARED 'll_nothing'});
is(q1(q{SELECT running || '/' || available FROM awa.queue_counts_exact('ll')}), '1/2', 'one running, two left');
done_testing();
