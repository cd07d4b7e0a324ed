# 036_lane_cursor_wal_consistency.pl
#
# A lane's cursors are rewritten in place in its awa.queue_lanes row (a heap
# page) with a generic WAL record (src/pg/lane_cursors.cpp). With
# wal_consistency_checking, redo compares each replayed page with the image
# the primary logged, masked by the record's resource manager: the generic
# one masks no heap hint bits, which readers set without WAL. So after a
# crash, redo of a delta record made once the lane row's inserting
# transaction was hinted committed found the replayed page without the hint
# bit the primary's image has, and recovery stopped with "inconsistent page
# found" (found in review; since each record asks for the check itself, the
# server then could not start even with the setting turned off). Under that
# setting the cursor records carry the whole page (src/pg/lane_cursors.cpp):
# recovery replays them.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('walcheck', conf => "wal_consistency_checking = 'generic'\n");

# The first enqueue creates the lane (a heap insert) and reserves in it; the
# second one reads the committed row (hint bit set, not logged), then reserves.
$node->safe_psql('postgres', q{SELECT awa.enqueue('k', '{"n": 1}', 'walcheck')});
$node->safe_psql('postgres', q{SELECT count(*) FROM awa.queue_lanes});
$node->safe_psql('postgres', q{SELECT awa.enqueue('k', '{"n": 2}', 'walcheck')});
my $lanes_file = $node->safe_psql('postgres', "SELECT pg_relation_filepath('awa.queue_lanes')");
$node->safe_psql('postgres', 'CREATE TABLE flushed AS SELECT 1 AS one');
$node->stop('immediate');
my $started = $node->start(fail_ok => 1);
my $log = join "\n", grep { /inconsistent|FATAL|PANIC/ } split /\n/, slurp_file($node->logfile);
# The records carry the check themselves (XLR_CHECK_CONSISTENCY): turning the
# setting off does not let the server replay them.
my $started_without = $started;
if (!$started)
{
	$node->append_conf('postgresql.conf', "wal_consistency_checking = ''\n");
	$started_without = $node->start(fail_ok => 1);
}
ok($started, 'crash recovery replays the lane cursor records under wal_consistency_checking')
  or diag("awa.queue_lanes is $lanes_file\n$log");
ok($started_without, 'the server is up');
if ($started_without)
{
	# Each reservation is logged under the setting (none in place), 32
	# positions ahead; after the crash the cursor reads as the logged value
	# (docs/architecture.md, "The enqueue cursor is logged ahead").
	is($node->safe_psql('postgres', "SELECT enqueue_cursor || '|' || enqueue_logged FROM awa.queue_lanes WHERE queue = 'walcheck'"),
		'2|34', 'both reservations survived, logged');
	is($node->safe_psql('postgres', "SELECT enqueue_cursor FROM awa.lanes WHERE queue = 'walcheck'"),
		'34', 'the cursor reads as the logged value after the crash');
}
done_testing();
