# 006_counter_limits.pl
#
# The shared-memory counters behind awa.queue_counts have limits:
#   - awa.max_queues entries (a cap: the counters grow in dynamic shared
#     memory up to it, test/t/018_many_queues.pl). Beyond it, queue_counts
#     answers from the exact pass for that database (still correct), warns
#     once per backend, and the counters never take the shared memory
#     PostgreSQL keeps spare for its lock table (a bug found in review: a hash
#     table in the main shared memory grew past its limit until the lock table
#     ran out of memory; the counters now live in their own DSA area).
#   - a standby never trusts counters (replayed changes move none): there
#     queue_counts counts exactly, and after promotion it rebuilds them.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $conf = "awa.max_queues = 16\nmax_locks_per_transaction = 64\n";
my $node = start_awa_node('limits', init => { allows_streaming => 1 }, conf => $conf);

is($node->safe_psql('postgres', 'SHOW awa.max_queues'), '16', 'awa.max_queues is 16');

# How many advisory locks one transaction of $n can take (in steps of 500):
# the lock table's preallocated part plus what it can grow into the spare
# shared memory. Measured on a twin node with the same settings and no queue:
# lock-table entries, once allocated, are never given back, so measuring on
# $node itself first would reserve them before the counters could take them.
sub lock_capacity
{
	my ($n) = @_;
	my $fit = 0;
	for (my $k = 500; $k <= 100000; $k += 500)
	{
		my $ret = $n->psql('postgres',
			"SELECT count(*) FROM (SELECT pg_advisory_xact_lock(i) FROM generate_series(1, $k) i) s");
		last if $ret != 0;
		$fit = $k;
	}
	return $fit;
}
my $twin = start_awa_node('twin', init => { allows_streaming => 1 }, conf => $conf);
my $capacity = lock_capacity($twin);
$twin->stop;
cmp_ok($capacity, '>=', 1000, "a fresh node's lock table takes $capacity advisory locks");

# 2500 queues, one job each, each in its own transaction: far more than the
# limit, and more entries than the spare shared memory could hold.
my ($stdout, $stderr) = ('', '');
$node->psql('postgres',
	join('', map { "SELECT awa.enqueue('k', '{}', 'q$_');\n" } 1 .. 2500),
	stdout => \$stdout, stderr => \$stderr);
my @warnings = ($stderr =~ /more queues than awa\.max_queues/g);
is(scalar(@warnings), 1, 'one session warns once when the counter table is full');

my $compare = q{
	SELECT count(*) FILTER (WHERE c IS DISTINCT FROM e) AS differ, count(*) AS queues
	  FROM (SELECT c.queue, c AS c, e AS e
	          FROM awa.queue_counts() c JOIN awa.queue_counts_exact() e USING (queue)) s};
is($node->safe_psql('postgres', $compare), '0|2500', 'over the limit: all 2500 queues counted, equal to the exact pass');
is($node->safe_psql('postgres', "SELECT available FROM awa.queue_counts('q2500')"), '1',
	'a queue without a counter slot is counted exactly');

# The lock table still has its spare memory: as many locks as right after start.
is(lock_capacity($node), $capacity,
	'after 2500 queues: as many locks as on a fresh node (the counters did not eat the spare memory)');

# A standby counts exactly; after promotion the counters are rebuilt.
my $small = start_awa_node('small', init => { allows_streaming => 1 });
$small->safe_psql('postgres', q{
	SELECT awa.enqueue('k', '{}', 'sq') FROM generate_series(1, 5);
	SELECT count(*) FROM awa.claim('sq', 2);
	SELECT * FROM awa.queue_counts('sq');});
$small->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($small, 'base', has_streaming => 1);
$standby->start;
$small->safe_psql('postgres', q{SELECT awa.enqueue('k', '{}', 'sq') FROM generate_series(1, 3)});
$small->wait_for_catchup($standby);
is($standby->safe_psql('postgres', q{SELECT available, running FROM awa.queue_counts('sq')}), '6|2',
	'standby: queue_counts counts exactly, including changes replayed after its start');
# The oldest available job on a standby: no lane head is kept there (replayed
# commits keep none), so queue_metrics walks and equals the SQL walk, also
# after the primary's claim of the head was replayed.
my $oldest_same = q{SELECT m.oldest_available_at IS NOT DISTINCT FROM awa._oldest_available_at('sq')
  FROM awa.queue_metrics() m WHERE m.queue = 'sq'};
is($standby->safe_psql('postgres', $oldest_same), 't', "standby: queue_metrics' oldest available job equals the SQL walk");
$small->safe_psql('postgres', q{SELECT count(*) FROM awa.claim('sq', 2)});
$small->wait_for_catchup($standby);
is($standby->safe_psql('postgres', $oldest_same), 't', 'standby: and after a claim of the head was replayed');
$standby->promote;
$standby->safe_psql('postgres', q{SELECT count(*) FROM awa.claim('sq', 1)});
is($standby->safe_psql('postgres', q{SELECT available, running FROM awa.queue_counts('sq')}), '3|5',
	'promoted standby: counters rebuilt and moving');
is($standby->safe_psql('postgres', q{
	SELECT (SELECT c FROM awa.queue_counts('sq') c) IS NOT DISTINCT FROM (SELECT e FROM awa.queue_counts_exact('sq') e)}),
	't', 'promoted standby: queue_counts equals the exact pass');

done_testing();
