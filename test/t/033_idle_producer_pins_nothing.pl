# 033_idle_producer_pins_nothing.pl
#
# An idle-in-transaction producer holds back nothing (issue 19 §1, §3, §4), on
# a stock server with the background worker at its default cadence (1 s
# rotations) and a steady load of producers and consumers (AwaLoad.pm) on
# another queue.
#
# Outside testing found `BEGIN; SELECT awa.enqueue(...)` left open stopping
# the rings of the whole database (prune `blocked`, rotation `skipped_busy`
# until it ended) and holding back every job enqueued after it on its lane.
# Since a due job's lane position and ready row are written at its
# transaction's commit (src/pg/pending_enqueues.hpp), such a session has
# nothing in any ring slot. Three sessions stay idle in transaction while the
# queue ring moves 20 generations (more than one wrap of its 16 slots), then
# commit:
#   - one enqueued a due job into queue ip_shared, where other producers go on;
#   - one enqueued the first job of a queue that did not exist (ip_new);
#   - one enqueued 200 due jobs with enqueue_many (ip_bulk).
# Asserted:
#   - the queue ring moves 20 generations while they are open (on the old
#     design it stood still: prune `blocked`, rotation `skipped_busy`), and
#     no prune reports `skipped_active`;
#   - no ring row is older than the ring's live window (storage bounded by
#     what is live);
#   - the jobs committed behind the open one on ip_shared are claimed while
#     it is open, each once; a second producer of ip_new is not held up;
#   - after the commits every held job is claimed exactly once; the load's
#     jobs were claimed and completed once each; queue_counts =
#     queue_counts_exact; no ERROR in the server log.
# On the design that reserved at enqueue, the ring stopped (prune `blocked`)
# and the claims behind the open job returned nothing.
#
# Nothing here depends on the machine's speed: waits are bounded only to stop
# a hung run, and every assertion is about states and counts.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

use FindBin;
use lib $FindBin::Bin;
use AwaTap;
use AwaLoad;

my $node = start_awa_node('idlep', maintenance => 1, conf => "max_connections = 30\n");

sub q1 { return $node->safe_psql('postgres', $_[0]); }

q1(q{SELECT awa.enqueue('ip.seed', '{}', 'ip_shared')});
q1(q{SELECT count(*) FROM awa.claim('ip_shared', 10)});

my $held_shared = $node->background_psql('postgres');
$held_shared->query_safe('BEGIN');
my $held_shared_id = $held_shared->query_safe(q{SELECT awa.enqueue('ip.held', '{}', 'ip_shared')});
my $held_new = $node->background_psql('postgres');
$held_new->query_safe('BEGIN');
my $held_new_id = $held_new->query_safe(q{SELECT awa.enqueue('ip.held', '{}', 'ip_new')});
my $held_bulk = $node->background_psql('postgres');
$held_bulk->query_safe('BEGIN');
$held_bulk->query_safe(
	q{SELECT count(*) FROM awa.enqueue_many(array_fill('ip.bulk'::text, ARRAY[200]), NULL, 'ip_bulk')});

# Behind the open job: committed jobs of the same lane, and a second producer
# of the queue whose first job is still open. Claimed while all three are open.
my @behind = map { q1(qq{SELECT awa.enqueue('ip.behind', '{"n": $_}', 'ip_shared')}) } 1 .. 5;
my $second_new = q1(q{SELECT awa.enqueue('ip.second', '{}', 'ip_new')});
is(q1(q{SELECT string_agg(job_id::text, ',' ORDER BY job_id) FROM awa.claim('ip_shared', 10)}),
	join(',', @behind), 'the jobs committed behind the open one are claimed while it is open');
is(q1(q{SELECT string_agg(job_id::text, ',') FROM awa.claim('ip_new', 10)}), $second_new,
	"a new queue's second producer was not held up, and its job is claimed while the first is open");

my $start_queue = q1(q{SELECT generation FROM awa.storage_status() WHERE ring = 'queue'});
create_load_log($node, 'ip');
my $producers = start_producers($node, 'ip', clients => 2, rate => 40);
my $consumers = start_consumers($node, 'ip', clients => 2);

my (@stale_rows, %prune_outcomes);
my $deadline = time + 240;
my $queue_gen = $start_queue;
while ($queue_gen < $start_queue + 20 && time < $deadline)
{
	my $stale = q1(q{
		SELECT count(*) FROM awa.ready_entries e, awa.storage_status() s
		 WHERE s.ring = 'queue' AND e.ready_generation <= s.generation - s.width - 4});
	push @stale_rows, "$queue_gen: $stale" if $stale != 0;
	my ($qg, $prune) = split /\|/,
	  q1(q{SELECT generation, last_prune FROM awa.storage_status() WHERE ring = 'queue'});
	$prune_outcomes{$prune // ''}++;
	$queue_gen = $qg;
	usleep(1_000_000);
}
cmp_ok($queue_gen, '>=', $start_queue + 20,
	"the queue ring moved 20 generations beside three idle producers ($start_queue -> $queue_gen)");
ok(!exists $prune_outcomes{skipped_active}, 'no queue prune was refused for an enqueue in flight')
  or diag explain \%prune_outcomes;
is_deeply(\@stale_rows, [], 'no ready row outlived its generation: storage is what is live');
is(q1(q{SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'}), '3',
	'the three producers were idle in transaction all along');

$held_shared->query_safe('COMMIT');
$held_new->query_safe('COMMIT');
$held_bulk->query_safe('COMMIT');
$_->quit for $held_shared, $held_new, $held_bulk;
is(q1(q{SELECT string_agg(job_id::text, ',') FROM awa.claim('ip_shared', 10)}), $held_shared_id,
	'the held job of ip_shared is claimed after its commit, once');
is(q1(q{SELECT string_agg(job_id::text, ',') FROM awa.claim('ip_new', 10)}), $held_new_id,
	'the held first job of ip_new is claimed after its commit, once');
is(q1(q{SELECT count(*) FROM awa.claim('ip_bulk', 1000)}), '200', 'the 200 held bulk jobs are claimed, once');
is(q1(q{SELECT count(*) FROM awa.claim('ip_bulk', 1000)}) . q1(q{SELECT count(*) FROM awa.claim('ip_shared', 10)}),
	'00', 'nothing is handed out twice');

stop_load($producers);
wait_producers_done($node);
stop_load($consumers);
drain_load($node, 'ip');
check_exactly_once($node, 'ip');
is(q1(q{SELECT count(*) FROM (SELECT * FROM awa.queue_counts() EXCEPT SELECT * FROM awa.queue_counts_exact()) d}),
	'0', 'queue_counts = queue_counts_exact');
my $log = slurp_file($node->logfile);
my @errors = grep { /ERROR/ && !/canceling statement due to statement timeout/ } split /\n/, $log;
is_deeply(\@errors, [], 'no ERROR in the server log');

$node->stop;
done_testing();
