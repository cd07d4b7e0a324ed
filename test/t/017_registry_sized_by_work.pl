# 017_registry_sized_by_work.pl
#
# The in-flight claim registry holds an entry only while its lane has a claim
# in flight (docs/architecture.md §3.2), so awa.max_lanes bounds the lanes
# claimed from at the same moment, not the lanes that exist (issue 10 §5).
# With awa.max_lanes = 16 (its minimum), 40 queues are claimed from one after
# the other, each while a first claim of the queue is held open in a
# transaction: the second claimer (awa.lane_wait_timeout = 0, so it never
# waits) must get the queue's next job, which it can only when the first claim
# went into the registry and released the lane lock. Before entries were
# freed, the 17th lane found the registry full and the second claimer got
# nothing. Half the first claims commit, half roll back; a final pass shows
# every job was handed out exactly once (rolled-back ones again).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('registry', conf => "awa.max_lanes = 16\n");
sub q1 { return $node->safe_psql('postgres', $_[0]); }

my $holder = $node->background_psql('postgres');
my $lanes = 40;
my $second_ok = 0;
for my $i (1 .. $lanes)
{
	q1("SELECT awa.enqueue_many(ARRAY['a', 'b', 'c'], NULL, queue => 'reg$i')");
	$holder->query_safe("BEGIN; SELECT job_id FROM awa.claim('reg$i', 1);");
	my $got = q1("SET awa.lane_wait_timeout = 0; SELECT string_agg(kind, ',') FROM awa.claim('reg$i', 1)");
	$second_ok++ if $got eq 'b';
	$holder->query_safe($i % 2 ? 'COMMIT' : 'ROLLBACK');
}
is($second_ok, $lanes, "each of $lanes lanes (awa.max_lanes = 16) let a second claimer in while its first claim was open");

# What is left: per queue, 'c' and, where the first claim rolled back, 'a'.
my $left = q1(qq{SELECT count(*) FILTER (WHERE n = 1), count(*) FILTER (WHERE n = 2)
  FROM (SELECT (SELECT count(*) FROM awa.claim('reg' || i, 10)) AS n FROM generate_series(1, $lanes) i) x});
is($left, '20|20', 'the committed first claims keep their job, the rolled-back ones give it back');

$holder->quit;
$node->stop;
done_testing();
