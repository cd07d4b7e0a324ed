# 018_many_queues.pl
#
# Thousands of queues keep O(1) counts: the shared-memory counters grow with
# the queues (a dynamic shared memory area, issue 10 §5) instead of falling
# back to counting from the tables past a fixed table of 1,024 entries. With
# 3,000 queues (jobs moved in each: enqueued, some claimed and completed):
# awa.queue_counts is served by the counters (the 'counters' step says
# trusted), equals awa.queue_counts_exact for every queue, and the log has no
# "more queues than awa.max_queues" WARNING; the same after a restart, whose
# first call rebuilds the counters for all 3,000 queues with one exact pass.
# queue_metrics' oldest available job equals the SQL walk for every queue and
# is kept in shared memory, before and after the restart (lazily walked by
# the first call). The 3,000 lanes add no relation to schema awa (a lane is a
# row; it had two sequences before). Advancing the cursors of all of them in
# one call keeps no lock per lane. The cap still works: with awa.max_queues lowered to 2,000 and a rebuild,
# the database falls back to exact counting (still equal) and warns.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('manyq');
sub q1 { return $node->safe_psql('postgres', $_[0]); }

my $n = 3000;
my $relations = q{SELECT count(*) FROM pg_class WHERE relnamespace = 'awa'::regnamespace};
my $relations_before = q1($relations);
q1(qq{DO \$\$ BEGIN
  FOR i IN 1..$n LOOP
    PERFORM awa.enqueue_many(ARRAY['a', 'b', 'c'], NULL, queue => 'mq' || i);
    IF i % 3 = 0 THEN
      PERFORM awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('mq' || i, 1) c;
    END IF;
  END LOOP;
END \$\$});

is(q1("SELECT count(*) FROM awa.queue_lanes WHERE queue LIKE 'mq%'"), $n, "$n lanes");
is(q1($relations), $relations_before, "and not one more relation in schema awa");

my $same = qq{SELECT count(*) FROM awa.queue_counts() c JOIN awa.queue_counts_exact() e USING (queue)
  WHERE c.queue LIKE 'mq%' AND row(c.*)::text = row(e.*)::text};

sub check
{
	my ($when) = @_;
	is(q1("SELECT outcome FROM awa.run_maintenance('counters')"), 'trusted', "$when: the counters are trusted");
	is(q1($same), $n, "$when: queue_counts equals queue_counts_exact for all $n queues");
	is(q1("SELECT sum(available) || '/' || sum(completed) FROM awa.queue_counts() WHERE queue LIKE 'mq%'"),
		(3 * $n - $n / 3) . '/' . ($n / 3), "$when: the totals are the jobs moved");
}

# The oldest available job of every queue (queue_metrics) equals the SQL
# walk, and is kept in shared memory for all of them once queue_metrics has
# looked (a restart empties shared memory: the first call walks every queue).
my $oldest_same = qq{SELECT count(*) FROM awa.queue_metrics() m
  WHERE m.queue LIKE 'mq%' AND m.oldest_available_at IS NOT DISTINCT FROM awa._oldest_available_at(m.queue)};
my $kept = qq{SELECT count(DISTINCT q) FROM generate_series(1, $n) i, LATERAL (SELECT 'mq' || i AS q) x,
  LATERAL awa._lane_heads(q) h WHERE h.priority = 2 AND h.state = 'known'};

sub check_oldest
{
	my ($when) = @_;
	is(q1($oldest_same), $n, "$when: queue_metrics' oldest available job equals the SQL walk for all $n queues");
	is(q1($kept), $n, "$when: and it is kept in shared memory for all of them");
}

check('3,000 queues');
check_oldest('3,000 queues');
$node->restart;
check('after a restart (rebuilt by one pass)');
check_oldest('after a restart (walked once by the first call)');
unlike(slurp_file($node->logfile), qr/more queues than awa\.max_queues/, 'no fallback warning was logged');

# Maintenance looks at every lane behind its enqueue cursor (all 3,000 here)
# in one transaction: it must not keep a lock per lane (found in review of
# issue 19: "out of shared memory" at about 7,000 lanes, sooner on a server
# with fewer connections, as this one).
# The locks the call leaves in its transaction: none per lane (before: two
# relation locks per lane, 6,000 here); what is left are the ring children's
# and awa's tables', as many whatever the number of lanes.
my $locks = q1(q{BEGIN;
  SELECT awa._advance_cursors() >= 0;
  SELECT count(*) FILTER (WHERE l.locktype = 'advisory'),
         count(*) < 500
    FROM pg_locks l WHERE l.pid = pg_backend_pid();
  COMMIT;});
my ($advanced, $held) = split /\n/, $locks;
is($advanced, 't', "the cursors of $n lanes are advanced in one call");
is($held, '0|t', 'and the call keeps no lock per lane (no advisory lock, fewer than 500 locks in all)');

# The cap: lowered below the number of queues, then a rebuild.
$node->append_conf('postgresql.conf', "awa.max_queues = 2000\n");
$node->restart;
is(q1("SELECT outcome FROM awa.run_maintenance('counters')"), 'unavailable',
	'with awa.max_queues = 2000 the 3,000 queues are counted exactly');
is(q1($same), $n, 'and the exact counts are still right');

$node->stop;
done_testing();
