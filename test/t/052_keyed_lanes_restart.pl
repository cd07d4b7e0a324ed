# 052_keyed_lanes_restart.pl
#
# Keyed lanes (opts.concurrency_key) across a crash, a clean restart and a
# standby's promotion (src/pg/key_lanes.hpp): nothing of a queue's key
# scheduler is kept in shared memory but what the lanes tell, so the first
# claim after the start builds it from the lanes whose claim cursor is behind
# their enqueue cursor. Checked: every committed keyed job is claimed exactly
# once after each event (none lost, none twice), a claim open at the crash
# gives its jobs back, fair share holds again at once (the first claims after
# the start take each key with work once before any key twice), and the
# weights (awa.key_weights) come back with the tables. The maintenance worker
# runs at its default cadence.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $primary = start_awa_node('keysprimary', init => { allows_streaming => 1 }, maintenance => 1);
sub p1 { return $primary->safe_psql('postgres', $_[0]); }

# Found from outside: on a server where no key scheduler exists yet, a job
# without a key written (not committed) in a priority that then gets keyed
# lanes. The first claims build the scheduler and meet that job uncommitted;
# its lane must stay a member (nothing proves it empty), so that once the
# producer commits the job is claimed (it stayed unclaimed for good: the
# commit of a job without a key noted nothing while no scheduler existed).
{
	my $producer = $primary->background_psql('postgres');
	$producer->query_safe('BEGIN');
	$producer->query_safe(q{SELECT awa.enqueue('k', '{"n": "A"}', 'nk')});
	$producer->query_safe(q{SELECT count(*) FROM awa.claim('nothing_here')});    # writes the pending job now
	p1(q{SELECT awa.enqueue('k', '{"n": "B"}', 'nk', opts => '{"concurrency_key": "t1"}')});
	is(p1(q{SELECT args->>'n' FROM awa.claim('nk', 10)}), 'B', 'the keyed job is claimed');
	is(p1(q{SELECT count(*) FROM awa.claim('nk', 10)}), '0', 'the job without a key is not committed yet');
	$producer->query_safe('COMMIT');
	is(p1(q{SELECT args->>'n' FROM awa.claim('nk', 10)}), 'A', 'once committed, the job without a key is claimed');
	$producer->quit;
}

# Found from outside: in first-come order, a lane held busy by a claim that
# keeps its lane lock (awa.early_lane_release off) made every pick of other
# claims choose that lane again: they returned nothing while another key had
# jobs. A busy lane now goes behind the others.
{
	p1(q{SELECT count(*) FROM (SELECT awa.enqueue('k', jsonb_build_object('key', k), 'busy',
	                                              opts => jsonb_build_object('concurrency_key', k))
	                             FROM unnest(ARRAY['t1','t1','t1','t2','t2']) k) x});
	my $holder = $primary->background_psql('postgres');
	$holder->query_safe('SET awa.early_lane_release = off');
	$holder->query_safe('BEGIN');
	is($holder->query_safe(q{SELECT args->>'key' FROM awa.claim('busy', 1)}), 't1', 'a claim holds key t1\'s lane to its end');
	is(p1(q{SELECT args->>'key' FROM awa.claim('busy', 1)}), 't2', 'another claim takes key t2 instead of returning nothing');
	$holder->query_safe('COMMIT');
	$holder->quit;
	is(p1(q{SELECT count(*) FROM (SELECT (awa.claim('busy', 1)).job_id FROM generate_series(1, 5)) x}), '3', 'the rest is claimed');
}

my $keys = 40;
p1(qq{SELECT awa.configure_queue('kq', fairness => 'key');
  SELECT awa.set_key_weight('kq', 'k1', 2);
  SELECT count(*) FROM (SELECT awa.enqueue('k', jsonb_build_object('key', 'k' || k, 'n', n), 'kq',
                                           opts => jsonb_build_object('concurrency_key', 'k' || k))
                          FROM generate_series(1, $keys) k, generate_series(1, 5) n) x;
  SELECT count(*) FROM (SELECT awa.enqueue('k', jsonb_build_object('key', '-', 'n', n), 'kq')
                          FROM generate_series(1, 5) n) y;});
is(p1(q{SELECT count(*) FROM awa.queue_lanes WHERE queue = 'kq'}), $keys + 1, 'a lane per key, and one without a key');

# Claims before the crash: some committed (their jobs are done), one left open.
my $taken = p1(q{CREATE TABLE taken AS SELECT args->>'key' AS key, (args->>'n')::int AS n, job_id
  FROM awa.claim('kq', 1, async_commit => false) UNION ALL
  SELECT args->>'key', (args->>'n')::int, job_id FROM awa.claim('kq', 1, async_commit => false);
  SELECT count(*) FROM taken});
is($taken, '2', 'two jobs claimed and committed before the crash');
my $open = $primary->background_psql('postgres');
$open->query_safe('BEGIN');
is($open->query_safe(q{SELECT count(*) FROM awa.claim('kq', 3)}), '3', 'a claim open at the crash holds 3 jobs');

$primary->stop('immediate');
eval { $open->quit; };
$primary->start;

# Drains the queue one job a claim; returns the keys in claim order.
sub drain
{
	my ($node, $queue) = @_;
	my @keys;
	while (1)
	{
		my $row = $node->safe_psql('postgres',
			qq{INSERT INTO taken SELECT args->>'key', (args->>'n')::int, job_id FROM awa.claim('$queue', 1) RETURNING key});
		last if $row eq '';
		push @keys, $row;
		die 'runaway drain' if @keys > 10000;
	}
	return @keys;
}

my @after_crash = drain($primary, 'kq');
is(scalar(@after_crash), $keys * 5 + 5 - 2, 'after the crash every job not claimed before it is claimed: the open claim gave its jobs back');
is(p1(q{SELECT count(*) FROM (SELECT job_id FROM taken GROUP BY job_id HAVING count(*) > 1) d}), '0', 'none twice');
my %first;
for my $i (0 .. $keys)    # the first keys+1 claims: each key with work once
{
	$first{ $after_crash[$i] }++;
}
is(scalar(keys %first), $keys + 1, 'fair share right after the start: the first claims take every key (and the jobs without one) once')
  or diag(join(',', @after_crash[0 .. $keys]));
my %count;
$count{$_}++ for @after_crash[0 .. 2 * $keys];
cmp_ok($count{k1}, '>', $count{k2}, 'the weight of 2 came back with the tables: k1 leads k2') or diag(join(',', @after_crash[0 .. 2 * $keys]));

# A clean restart with work in some keys only.
p1(q{SELECT count(*) FROM (SELECT awa.enqueue('k', jsonb_build_object('key', 'k' || k, 'n', 100 + n), 'kq',
                                           opts => jsonb_build_object('concurrency_key', 'k' || k))
                          FROM generate_series(1, 3) k, generate_series(1, 2) n) x});
$primary->restart;
my @after_restart = drain($primary, 'kq');
is(join(',', sort @after_restart), 'k1,k1,k2,k2,k3,k3', 'after a clean restart the 6 new jobs are claimed, and only they');
is(join(',', sort @after_restart[0 .. 2]), 'k1,k2,k3', 'their first three claims take the three keys once each');

# Promotion: keyed jobs enqueued on the primary are claimed on the promoted standby.
my $standby = start_streaming_standby($primary, 'keysstandby');
p1(q{SELECT count(*) FROM (SELECT awa.enqueue('k', jsonb_build_object('key', 'p' || k, 'n', n), 'kq',
                                           opts => jsonb_build_object('concurrency_key', 'p' || k))
                          FROM generate_series(1, 4) k, generate_series(1, 3) n) x});
$primary->wait_for_catchup($standby);
$primary->stop('immediate');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'the standby was not promoted';
my @promoted = drain($standby, 'kq');
is(scalar(@promoted), 12, 'the promoted standby claims the 12 keyed jobs enqueued on the old primary');
my %seen;
$seen{$_}++ for @promoted[0 .. 3];
is(scalar(keys %seen), 4, 'fairly: its first four claims take the four keys');
is($standby->safe_psql('postgres', q{SELECT available FROM awa.queue_counts('kq')}), '0', 'nothing is left available');

$standby->stop;
done_testing();
