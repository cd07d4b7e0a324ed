# 073_lane_reclaim_under_load.pl
#
# The maintenance worker reclaims drained, idle lanes (their rows deleted:
# docs/architecture.md, "A drained, idle lane's row is reclaimed") while
# producers keep enqueuing into the same lanes and workers keep claiming.
# With awa.lane_reclaim_after = 0 and a queue ring that turns every 100 ms, a
# key's lane is reclaimed as soon as its last job has left the ring, so lanes
# are reclaimed and made again throughout the run, under producers that have
# them cached and claimers that are walking them. Producers write some of their
# jobs early and roll some back (each committed job is recorded in the same
# transaction), workers claim and complete in one transaction (each completion
# recorded in it): every committed job is completed exactly once, none is
# lost in a lane that went away, and at the end every lane of the queue is
# reclaimed and the schema has the relations it had at the start.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('lanereclaim', maintenance => 1, conf => q{
awa.lane_reclaim_after = 0
awa.queue_rotate_interval = 100ms
awa.claim_rotate_interval = 100ms
});
$node->safe_psql('postgres', q{
	CREATE TABLE produced (job_id bigint PRIMARY KEY);
	CREATE TABLE completed (job_id bigint);
});
my $relations_at_start = $node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_class WHERE relnamespace = 'awa'::regnamespace});

# Keys of one queue that come and go: the key of a job is the current second
# modulo 20 (each key busy for a second, then idle for 19), or one of 4 steady
# keys, or none (the queue's lane without a key). A twentieth of the
# transactions write their job early (as one that reads it back does) and half
# of those roll back.
my $produce = $node->basedir . '/produce.sql';
PostgreSQL::Test::Utils::append_to_file($produce, q{
\set k random(0, 9)
\set early random(1, 40)
BEGIN;
INSERT INTO produced
  SELECT awa.enqueue('rl.job', queue => 'rq',
                     opts => CASE WHEN :k = 0 THEN '{}'::jsonb
                                  WHEN :k <= 4 THEN jsonb_build_object('concurrency_key', 'steady' || :k)
                                  ELSE jsonb_build_object('concurrency_key',
                                                          'moving' || (extract(epoch FROM clock_timestamp())::bigint % 20))
                             END);
\if :early = 1
SELECT awa._flush_enqueues();
ROLLBACK;
\elif :early = 2
SELECT awa._flush_enqueues();
COMMIT;
\else
COMMIT;
\endif
SELECT pg_sleep(0.002);
});
my $consume = $node->basedir . '/consume.sql';
PostgreSQL::Test::Utils::append_to_file($consume, q{
INSERT INTO completed
  SELECT c.job_id FROM awa.claim('rq', 5) c WHERE awa.complete(c.job_id, c.run_lease, c.receipt_id);
SELECT pg_sleep(0.005);
});

sub pgbench
{
	my ($script, $clients, $opts) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'pgbench', '-n', '-c', $clients, '-j', $clients, @$opts, '-f', $script, '-h', $node->host,
			'-p', $node->port, 'postgres' ],
		'>', \$out, '2>', \$err);
	return { h => $h, out => \$out, err => \$err };
}

my $producers = pgbench($produce, 4, [ '-T', '30' ]);
my $workers = pgbench($consume, 2, [ '-T', '600' ]);
$producers->{h}->finish;
is($producers->{h}->result(0), 0, 'the producers ran') or diag ${ $producers->{err} };

my $produced = $node->safe_psql('postgres', 'SELECT count(*) FROM produced');
ok($produced > 1000, "the producers committed $produced jobs");
ok( wait_until_true($node, 'the workers complete every committed job',
		q{SELECT (SELECT count(*) FROM completed) >= (SELECT count(*) FROM produced)}),
	'the workers completed as many jobs as were committed');
$workers->{h}->kill_kill;
$workers->{h}->finish;

is($node->safe_psql('postgres', q{
		SELECT count(*) FROM (SELECT job_id FROM produced EXCEPT SELECT job_id FROM completed) lost}),
	'0', 'every committed job was completed');
is($node->safe_psql('postgres', q{
		SELECT count(*) FROM (SELECT job_id FROM completed GROUP BY job_id HAVING count(*) > 1) twice}),
	'0', 'no job was completed twice');
is($node->safe_psql('postgres', q{
		SELECT count(*) FROM (SELECT job_id FROM completed EXCEPT SELECT job_id FROM produced) unknown}),
	'0', 'no job of a rolled-back transaction was completed');

# 25 lane identities were used; every lane made again took a new lane_id.
my $lanes_made = $node->safe_psql('postgres', 'SELECT last_value FROM awa.queue_lane_id_seq');
ok($lanes_made > 25, "lanes were reclaimed and made again during the run ($lanes_made lane_ids for 25 lanes)");

ok(wait_until_true($node, 'every lane is reclaimed', q{SELECT count(*) = 0 FROM awa.queue_lanes WHERE queue = 'rq'}),
	'once idle, every lane of the queue is reclaimed by the worker');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relnamespace = 'awa'::regnamespace}),
	$relations_at_start, 'the schema has the relations it had at the start');
ok( wait_until_true($node, 'the reclaim step has nothing left',
		q{SELECT last_outcome = 'nothing_due' AND errors = 0 FROM awa.maintenance_status() WHERE task = 'reclaim_lanes'}),
	'the reclaim step ran without an error and has nothing left to do');

# A job enqueued now makes its lane again and is claimed once.
$node->safe_psql('postgres', q{SELECT awa.enqueue('rl.last', queue => 'rq', opts => '{"concurrency_key": "key7"}')});
is($node->safe_psql('postgres', q{SELECT string_agg(kind, ',') FROM awa.claim('rq', 10)}),
	'rl.last', 'a job enqueued after the reclaim is claimed');

$node->stop;
done_testing();
