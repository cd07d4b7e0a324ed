# 037_reservation_durable_at_commit.pl
#
# A lane reservation rewrites the enqueue cursor in place, logged ahead by a
# WAL record (src/pg/lane_cursors.cpp). Like nextval, which assigns the transaction an
# xid for this reason, the reservation must make its transaction's commit
# flush that record: a transaction with no xid of its own otherwise commits
# without flushing, and a crash then hands the same positions out again.
# awa._reserve_lane_positions (the test building block) reserves in a
# transaction that writes nothing else; with the WAL writer paused nothing
# else flushes the record before the crash.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('reservedurable');
# The lane exists (created and committed by an enqueue, flushed by its commit).
$node->safe_psql('postgres', q{SELECT awa.enqueue('k', queue => 'durable')});
pause_wal_writer($node);
is($node->safe_psql('postgres', q{SELECT awa._reserve_lane_positions('durable', 2, 5)}),
	'2', 'positions 2 to 6 reserved and committed');
$node->stop('immediate');
$node->start;
# Past them: the logged value (docs/architecture.md, "The enqueue cursor is
# logged ahead") may be further still (test/t/064_enqueue_cursor_logged_ahead.pl).
cmp_ok($node->safe_psql('postgres', q{SELECT awa._reserve_lane_positions('durable', 2, 1)}),
	'>', 6, 'after a crash the next reservation starts after them');
done_testing();
