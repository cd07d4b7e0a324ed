# 056_key_scheduler_reuse.pl
#
# A key scheduler that holds no key is given up for a queue that needs one
# (src/pg/key_lanes.cpp, MakeSlot); a transaction that noted a lane in the
# scheduler given up must still reach the queue's scheduler of now. Found
# from outside: a claim rolled back after its queue's scheduler was given up
# and made again left its job available and unclaimable for good (the new
# scheduler was built while the claim was open, and its first walk dropped
# the lane). awa.max_keyed_queues 4: a database holds 2 schedulers.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('keyreuse', conf => "awa.max_keyed_queues = 4\n");
sub q1 { return $node->safe_psql('postgres', $_[0]); }
sub keyed { return "SELECT awa.enqueue('k', '{}', '$_[0]', opts => '{\"concurrency_key\": \"$_[1]\"}')"; }

# x gets the first scheduler (one job), z the second (drained: no key).
q1(keyed('x', 'a'));
q1(keyed('z', 'a'));
is(q1(q{SELECT count(*) FROM awa.claim('z', 5) c, LATERAL awa.complete(c.job_id, c.run_lease, c.receipt_id)}), '1',
	'z drained');
is(q1(q{SELECT count(*) FROM awa.claim('z', 5)}), '0', 'and its key left its scheduler');

# A claim of x's job stays open; y's enqueue takes x's scheduler (now
# without a key), then a claim of x makes x one again from z's, built while
# the claim is open.
my $a = $node->background_psql('postgres');
$a->query_safe('BEGIN');
is($a->query_safe(q{SELECT count(*) FROM awa.claim('x', 5)}), '1', 'an open claim took x\'s job');
q1(keyed('y', 'b'));
is(q1(q{SELECT count(*) FROM awa.claim('x', 5)}), '0', 'x has nothing claimable while the claim is open');
$a->query_safe('ROLLBACK');
$a->quit;

# Rolled back: x's job is claimable again.
is(q1(q{SELECT available FROM awa.queue_counts_exact('x')}), '1', 'x\'s job is available again');
is(q1(q{SELECT count(*) FROM awa.claim('x', 5)}), '1', 'and the next claim takes it');
is(q1(q{SELECT count(*) FROM awa.claim('y', 5)}), '1', 'y\'s job is claimed too');

$node->stop;
done_testing();
