# 038_rate_limit.pl
#
# A queue's rate limit (awa.configure_queue(queue, rate_limit => '50 per 1
# second', burst => 5)) holds over many sessions, with the maintenance worker
# on at its default cadence: 8 pgbench consumers (claim up to 10, complete;
# every claim logged in its statement) run for a few seconds against a queue
# with far more jobs than the limit lets through. Checked, with the elapsed
# time measured around the whole run (a slower machine only claims less):
#   - the claims never started more than 50 x elapsed + 5 attempts;
#   - they started some;
#   - after a server restart the bucket starts empty (what was used just
#     before is not kept): the first claim gets nothing, later ones get jobs;
#   - a claim with `wait` that finds no token looks again when the next one
#     is due.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

use FindBin;
use lib $FindBin::Bin;
use AwaLoad;
use AwaTap;

my $node = start_awa_node('ratelimit', maintenance => 1);
sub q1 { return $node->safe_psql('postgres', $_[0]); }

create_load_log($node, 'rl');
q1(q{INSERT INTO rl_enq SELECT j FROM awa.enqueue_many(array_fill('k'::text, ARRAY[20000]), NULL, 'rl') j;
  SELECT awa.configure_queue('rl', rate_limit => '50 per 1 second', burst => 5);});

my $started = time;
my $consumers = start_consumers($node, 'rl', clients => 8);
# Run until the limit has let a few hundred through (or 60 s).
while (q1('SELECT count(*) FROM rl_claim') < 150 && time - $started < 60)
{
	usleep(200_000);
}
stop_load($consumers);
drain_load($node, 'rl');
my $elapsed = time - $started;
my $claimed = q1('SELECT count(*) FROM rl_claim');
cmp_ok($claimed, '>', 0, "claims started attempts ($claimed in " . sprintf('%.1f', $elapsed) . ' s)');
cmp_ok($claimed, '<=', 50 * $elapsed + 5,
	'no more than 50 per second plus the burst of 5 over the run');
is(q1(q{SELECT count(*) || '/' || count(DISTINCT job_id) FROM rl_claim}), "$claimed/$claimed",
	'every claimed job was claimed once');

# A restart: the bucket starts empty.
$node->restart;
is(q1(q{SELECT count(*) FROM awa.claim('rl', 10)}), '0', 'the first claim after a restart gets nothing');
$node->poll_query_until('postgres', q{SELECT count(*) > 0 FROM awa.claim('rl', 1)})
  or die 'no claim got a job after the restart';
pass('a later claim gets a job');

# A claim out of tokens that waits looks again when the next token is due: a
# token every 2 s, a wait of an hour. Nothing else wakes it (no enqueue, no
# end of an attempt; the maintenance worker, whose steps can wake waiting
# claims, is turned off for this part), so without that look it would not
# return while the test runs (the harness's timeout would end it, and the
# test would fail; checked by removing the look).
$node->append_conf('postgresql.conf', "awa.maintenance_enabled = off\n");
$node->reload;
q1(q{SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[3]), NULL, 'rl_wait');
  SELECT awa.configure_queue('rl_wait', rate_limit => '1 per 2 seconds', burst => 1);});
is(q1(q{SELECT count(*) FROM awa.claim('rl_wait', 3)}), '1', 'the burst of 1, then no token');
is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM awa.claim('rl_wait', 3, wait => '1 hour')},
		timeout => $PostgreSQL::Test::Utils::timeout_default),
	'1',
	'a waiting claim got the next token when it was due');

$node->stop;
done_testing();
