# 072_lane_rows_beside_concurrent_reindex.pl
#
# REINDEX CONCURRENTLY of awa.queue_lanes while producers create lanes. A
# lane's row is committed as it is inserted (docs/architecture.md, "A lane's
# row is committed when it is inserted"), so it is visible to snapshots taken
# before it; a concurrent index build's validation scan inserts every row its
# snapshot sees that the new index lacks, and a row that its creator had put
# into the new index already went in twice: found by the adversarial review
# of stop 45, where every REINDEX CONCURRENTLY of a unique index failed with
# 23505 and left an invalid index, and one of a plain index left duplicate
# entries. Now a lane is committed at insert only while its creator holds
# ShareUpdateExclusiveLock on the table, which such a build holds for its
# whole run: beside one, lanes are inserted in their transactions. Here 8
# producers create lanes (each writing its job early, half of them rolling
# back) while unique and plain indexes of the table are rebuilt concurrently,
# again and again: every rebuild succeeds, no invalid index is left, amcheck
# finds every heap row once in each index, and an index scan counts what the
# heap holds.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('lanereindex', maintenance => 1);
$node->safe_psql('postgres', q{
	CREATE EXTENSION amcheck;
	CREATE INDEX lanes_created_at ON awa.queue_lanes (created_at);
});

my $script = $node->basedir . '/create_lanes.sql';
PostgreSQL::Test::Utils::append_to_file($script, q{
\set q random(1, 1000000000)
BEGIN;
SELECT awa.enqueue('lr.v', queue => 'rx_' || :q);
SELECT awa._flush_enqueues();
\if :q % 2 = 0
COMMIT;
\else
ROLLBACK;
\endif
});
my ($out, $err) = ('', '');
my $producers = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '8', '-j', '2', '-t', '1500', '-f', $script, '-h', $node->host, '-p', $node->port,
		'postgres' ],
	'>', \$out, '2>', \$err);

my @failures;
my $rebuilds = 0;
while ($producers->pumpable || $rebuilds < 3)
{
	for my $index (qw(awa.queue_lanes_lane_id_key awa.queue_lanes_identity awa.lanes_created_at))
	{
		my ($rc, $o, $e) = $node->psql('postgres', "REINDEX INDEX CONCURRENTLY $index");
		push @failures, "$index: $e" if $rc != 0;
		$rebuilds++;
	}
	$producers->pump_nb if $producers->pumpable;
}
$producers->finish;
is($producers->result(0), 0, 'the producers ran') or diag $err;
note "$rebuilds concurrent rebuilds";
is_deeply(\@failures, [], 'every REINDEX CONCURRENTLY succeeded');
is($node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_index WHERE indrelid = 'awa.queue_lanes'::regclass AND NOT indisvalid}),
	'0', 'no invalid index is left');
is($node->safe_psql('postgres', q{
		SELECT 'checked' FROM bt_index_check('awa.queue_lanes_lane_id_key', true) a,
		                      bt_index_check('awa.queue_lanes_identity', true) b,
		                      bt_index_check('awa.lanes_created_at', true) c}),
	'checked', 'amcheck: every heap row once in each index');
my $heap = $node->safe_psql('postgres', q{
	SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
	SELECT count(*) FROM awa.queue_lanes});
my $indexed = $node->safe_psql('postgres', q{
	SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
	SELECT count(*) FROM awa.queue_lanes WHERE created_at > '-infinity'});
is($indexed, $heap, 'an index scan of the plain index counts the rows the heap holds');
cmp_ok($heap, '>', 0, 'lanes were created');
# Half of the producers rolled back: a lane without a job is one that was
# committed at insert, so the run did not just fall back every time.
cmp_ok($node->safe_psql('postgres', q{
		SELECT count(*) FROM awa.queue_lanes l
		 WHERE NOT EXISTS (SELECT FROM awa.ready_entries r WHERE r.queue = l.queue)}),
	'>', 0, 'some lanes of rolled-back producers were committed at insert');
$node->stop;
done_testing();
