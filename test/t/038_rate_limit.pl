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
#   - the tokens a claim holds while it runs count against the burst, and a
#     claim cancelled while it holds them holds them no longer (below);
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

# Tokens a claim holds while it runs count against the burst: the refill
# meanwhile cannot top the bucket up to the full burst and then take the
# holder's unused tokens on top (which let more than the burst start at once).
# Queue rh, 50 per second, burst 10, set in this run (full). A claims its one
# job of lane priority 2 and keeps the lane locked (early_lane_release off,
# transaction open); B asks for 9, takes 9 tokens and waits for that lane.
# While B holds them the bucket holds at most 1, however long C waits before
# it claims from lane priority 1. After A commits, B finds nothing and gives
# its 9 back: the next claim gets them. None of this depends on timing: a
# pg_sleep only makes sure the refill could have filled the bucket.
q1(q{SELECT awa.enqueue('k', '{}', 'rh') IS NOT NULL;
  SELECT awa.configure_queue('rh', rate_limit => '50 per 1 second', burst => 10);});
my $a = $node->background_psql('postgres');
$a->query_safe('BEGIN');
$a->query_safe('SET LOCAL awa.early_lane_release = off');
is($a->query_safe(q{SELECT count(*) FROM awa.claim('rh', 1)}), '1', 'A claims the one job and keeps its lane');
my $b = $node->background_psql('postgres');
$b->query_safe(q{SET awa.lane_wait_timeout = '60s'});
my $bpid = $b->query_safe('SELECT pg_backend_pid()');
$b->query_until(qr/started/, "\\echo started\nSELECT 'b:' || count(*) FROM awa.claim('rh', 9);\n");
$node->poll_query_until('postgres', "SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $bpid")
  or die 'B did not wait for the lane';
q1(q{SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[30]), NULL, 'rh', array_fill(1, ARRAY[30]))});
is(q1(q{DO $$ BEGIN PERFORM pg_sleep(0.3); END $$; SELECT count(*) FROM awa.claim('rh', 10)}), '1',
	'while B holds 9 tokens, another claim gets at most the tenth');
$a->query_safe('COMMIT');
like($b->query_until(qr/b:\d+/, ''), qr/b:0/, 'B found nothing in its lane');
cmp_ok(q1(q{SELECT count(*) FROM awa.claim('rh', 10)}), '>=', 9, 'B gave its 9 tokens back');
$a->quit;
$b->quit;

# A claim cancelled while it holds tokens (waiting for a lane, as above)
# holds them no longer: they count as used, and the bucket refills to the
# full burst again (held for good, they would cap it at 1).
q1(q{SELECT awa.enqueue('k', '{}', 'rh2') IS NOT NULL;
  SELECT awa.configure_queue('rh2', rate_limit => '50 per 1 second', burst => 10);});
$a = $node->background_psql('postgres');
$a->query_safe('BEGIN');
$a->query_safe('SET LOCAL awa.early_lane_release = off');
is($a->query_safe(q{SELECT count(*) FROM awa.claim('rh2', 1)}), '1', 'A claims the one job of rh2 and keeps its lane');
$b = $node->background_psql('postgres', on_error_stop => 0);
$b->query_safe(q{SET awa.lane_wait_timeout = '60s'});
$bpid = $b->query_safe('SELECT pg_backend_pid()');
$b->query_until(qr/started/, "\\echo started\nSELECT count(*) FROM awa.claim('rh2', 9);\n\\echo finished\n");
$node->poll_query_until('postgres', "SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $bpid")
  or die 'B did not wait for the lane';
q1("SELECT pg_cancel_backend($bpid)");
$b->query_until(qr/finished/, '');
like($b->{stderr}, qr/canceling statement/, 'B was cancelled while it held 9 tokens');
q1(q{SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[30]), NULL, 'rh2', array_fill(1, ARRAY[30]))});
is(q1(q{DO $$ BEGIN PERFORM pg_sleep(0.3); END $$; SELECT count(*) FROM awa.claim('rh2', 10)}), '10',
	'the cancelled claim holds no token: the bucket refilled to the burst');
$a->query_safe('COMMIT');
$a->quit;
$b->quit;

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
