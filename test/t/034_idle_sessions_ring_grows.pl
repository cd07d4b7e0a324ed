# 034_idle_sessions_ring_grows.pl
#
# The ring grows instead of stalling (issue 19 §3): sessions left idle in
# transaction hold ring slots, and the rings keep turning around them, on a
# stock server with the background worker at its default cadence and a steady
# load of producers and consumers (AwaLoad.pm) on another queue.
#
# Outside testing found `BEGIN; SELECT awa.claim(...)` left open stopping the
# rings of the whole database: its claim evidence holds RowExclusiveLock on a
# claim-ring child and its reads hold AccessShareLock on queue-ring children,
# so the prune of that slot was `blocked` and every rotation `skipped_busy`
# until it ended; every new job then landed in the current slot. Now a slot
# another session holds is left out of reuse and the ring takes a spare one
# (docs/maintenance.md §2).
#
# Held open for three wraps of each ring's width (48 queue and 24 claim
# generations), while the worker and this script (awa.run_maintenance) both
# drive the rings:
#   - A: idle after an enqueue (which holds no ring slot since issue 19 §1);
#   - B: idle after a claim of two jobs (its claim and queue slots are held);
#   - C: idle after a plain SELECT on the queue-ring child of the slot that
#     was current (any reader of ring tables left idle);
#   - D-G: idle after awa.get_job, awa.list_jobs, awa.queue_counts_exact and
#     awa.bulk_count (which hold no slot once they return).
# Asserted:
#   - both rings moved three wraps; no rotation reported the cap reached; no
#     prune was refused for a held slot (`blocked`) since spare slots remained;
#   - the slots B and C hold are reported in storage_status().held_slots;
#   - storage stays bounded: at every sample the slots with rows (read from the
#     children's sizes) are at most the width plus the held slots plus the
#     rotations a prune has not caught up with yet (2: the worker's and this
#     script's), and no row is older than its ring's live slots;
#   - after the commits, B's jobs complete with their receipts (their claim
#     slot was never reused), A's job is claimed once, the held slots are
#     pruned and each ring is back to its width;
#   - the load's jobs were claimed and completed once each; queue_counts =
#     queue_counts_exact; no ERROR and no cap WARNING in the server log.
# On main before this change, the queue ring stopped within one wrap (prune
# `blocked`, rotation `skipped_busy`) and the first assertion failed.
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

my $node = start_awa_node('ringgrow', maintenance => 1, conf => "max_connections = 30\n");

sub q1 { return $node->safe_psql('postgres', $_[0]); }

# Slots with rows, per ring, read from the children's sizes (works on any
# version of the schema): a slot is in use while a child has a block.
sub slots_in_use
{
	my ($family) = @_;
	return q1(qq{
		SELECT count(DISTINCT substring(c.relname FROM '_([0-9]+)\$'))
		  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		 WHERE i.inhparent = 'awa.$family'::regclass AND pg_relation_size(c.oid) > 0});
}

q1(q{SELECT count(*) FROM awa.enqueue_many(array_fill('rg.held'::text, ARRAY[4]), NULL, 'rg_held')});

my $idle_enqueue = $node->background_psql('postgres');
$idle_enqueue->query_safe('BEGIN');
my $held_job = $idle_enqueue->query_safe(q{SELECT awa.enqueue('rg.open', '{}', 'rg_open')});

my $idle_claim = $node->background_psql('postgres');
$idle_claim->query_safe('BEGIN');
my $claimed = $idle_claim->query_safe(
	q{SELECT string_agg(job_id || ':' || run_lease || ':' || receipt_id, ',' ORDER BY job_id) FROM awa.claim('rg_held', 2)});
my @claimed = split /,/, $claimed;
is(scalar @claimed, 2, 'the idle claimer holds two claimed jobs');

my $idle_reader = $node->background_psql('postgres');
$idle_reader->query_safe('BEGIN');
my $reader_slot = $idle_reader->query_safe(
	q{SELECT slot FROM awa.queue_ring_rotations ORDER BY generation DESC LIMIT 1});
$idle_reader->query_safe(qq{SELECT count(*) FROM awa.ready_entries_$reader_slot});

# D-G: idle after awa's own reads of the ring tables (get_job, list_jobs,
# queue_counts_exact, bulk_count), under READ COMMITTED. They lock every ring
# child while they read (a parent's scan cannot prune by job id) and release
# those locks as they return, so they hold no slot. Before, they kept them to
# the end of the transaction: every slot, spares included, was held, and the
# rings stopped at once (found in review of stop 33).
my @idle_api;
for my $read (
	qq{SELECT awa.get_job($held_job) IS NULL},
	q{SELECT count(*) FROM awa.list_jobs(queue => 'rg_held')},
	q{SELECT count(*) FROM awa.queue_counts_exact()},
	q{SELECT awa.bulk_count('cancel', queue => 'rg_held')})
{
	my $session = $node->background_psql('postgres');
	$session->query_safe('BEGIN');
	$session->query_safe($read);
	push @idle_api, $session;
}

# The default widths (slots in use while none is held). The queries below
# read the new storage_status() columns through to_jsonb, so that this test
# runs, and fails on its assertions, against the schema before this change.
my ($queue_width, $claim_width) = (16, 8);

my ($start_queue, $start_claim) = split /\|/, q1(q{
	SELECT (SELECT max(generation) FROM awa.queue_ring_rotations), (SELECT max(generation) FROM awa.claim_ring_rotations)});
create_load_log($node, 'rg');
my $producers = start_producers($node, 'rg', clients => 2, rate => 40);
my $consumers = start_consumers($node, 'rg', clients => 2);

my (@over_bound, @stale_rows, %outcomes, %held_seen);
my ($queue_moved, $claim_moved) = (0, 0);
# Stops a stalled run: 100 rounds in a row of this script's own prunes and
# rotations that moved neither ring (a count, not a time).
my ($stalled_rounds, $last_moved) = (0, '');
my $deadline = time + 600;
while (($queue_moved < 3 * $queue_width || $claim_moved < 3 * $claim_width) && time < $deadline
	&& $stalled_rounds < 100)
{
	for my $task (qw(prune_queue rotate_queue prune_claim rotate_claim))
	{
		my $outcome = q1(qq{SELECT outcome FROM awa.run_maintenance('$task')});
		$outcomes{"$task=$outcome"}++;
	}
	# The worker's own outcomes, with the cap flag of a rotation.
	for my $row (split /\n/, q1(q{
		SELECT ring || ':' || coalesce(last_rotate, '') || ':' || coalesce(last_prune, '') || ':'
		       || coalesce((SELECT string_agg(h, ' ') FROM jsonb_array_elements_text(to_jsonb(s) -> 'held_slots') h), '')
		  FROM awa.storage_status() s WHERE ring IN ('queue', 'claim')}))
	{
		my ($ring, $rotate, $prune, $held) = split /:/, $row, 4;
		$outcomes{"$ring last_prune=$prune"}++;
		$held_seen{"$ring:$_"} = 1 for split / /, ($held // '');
	}
	my ($queue_used, $claim_used) = (slots_in_use('ready_entries'), slots_in_use('lease_claim_batches'));
	my ($queue_held, $claim_held) = split /\|/, q1(q{
		SELECT (SELECT coalesce(jsonb_array_length(to_jsonb(s) -> 'held_slots'), 0) FROM awa.storage_status() s WHERE ring = 'queue'),
		       (SELECT coalesce(jsonb_array_length(to_jsonb(s) -> 'held_slots'), 0) FROM awa.storage_status() s WHERE ring = 'claim')});
	push @over_bound, "queue $queue_used > $queue_width + $queue_held + 2" if $queue_used > $queue_width + $queue_held + 2;
	push @over_bound, "claim $claim_used > $claim_width + $claim_held + 2" if $claim_used > $claim_width + $claim_held + 2;
	my $stale = q1(q{
		SELECT count(*) FROM awa.ready_entries e
		 WHERE e.ready_generation < (SELECT min(g) FROM unnest(awa._queue_live_generations()) g)});
	push @stale_rows, $stale if $stale != 0;
	# Rotations (ledger rows), not generation numbers: those of slots passed
	# over are skipped.
	($queue_moved, $claim_moved) = split /\|/, q1(qq{
		SELECT (SELECT count(*) FROM awa.queue_ring_rotations WHERE generation > $start_queue),
		       (SELECT count(*) FROM awa.claim_ring_rotations WHERE generation > $start_claim)});
	$stalled_rounds = "$queue_moved|$claim_moved" eq $last_moved ? $stalled_rounds + 1 : 0;
	$last_moved = "$queue_moved|$claim_moved";
	usleep(200_000);
}
cmp_ok($queue_moved, '>=', 3 * $queue_width, "the queue ring moved three wraps beside the idle sessions ($queue_moved)");
cmp_ok($claim_moved, '>=', 3 * $claim_width, "the claim ring moved three wraps beside the idle sessions ($claim_moved)");
ok(!exists $outcomes{'queue last_prune=blocked'} && !exists $outcomes{'claim last_prune=blocked'}
	  && !exists $outcomes{'prune_queue=blocked'} && !exists $outcomes{'prune_claim=blocked'},
	'no prune waited for a held slot') or diag explain \%outcomes;
is_deeply(\@over_bound, [], 'slots in use stayed within width + held slots + rotations not yet pruned')
  or diag explain \%outcomes;
is_deeply(\@stale_rows, [], 'no ready row outlived the live generations');
ok($held_seen{"queue:$reader_slot"}, "the reader's queue slot $reader_slot was reported held")
  or diag explain \%held_seen;
ok(scalar(grep { /^claim:/ } keys %held_seen) >= 1, "the claimer's claim slot was reported held")
  or diag explain \%held_seen;
is(q1(q{SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'}), '7',
	'the seven sessions were idle in transaction all along');

$_->query_safe('COMMIT'), $_->quit for @idle_api;
$idle_reader->query_safe('COMMIT');
$idle_enqueue->query_safe('COMMIT');
my @completions;
for my $c (@claimed)
{
	my ($job, $lease, $receipt) = split /:/, $c;
	push @completions, $idle_claim->query_safe(qq{SELECT awa.complete($job, $lease, $receipt)});
}
$idle_claim->query_safe('COMMIT');
$_->quit for $idle_reader, $idle_enqueue, $idle_claim;
is(join(',', @completions), 't,t', "the idle claimer's jobs complete with their receipts after three wraps");
is(q1(q{SELECT string_agg(job_id::text, ',') FROM awa.claim('rg_open', 10)}), $held_job,
	'the idle producer\'s job is claimed after its commit, once');
is(q1(q{SELECT count(*) FROM awa.claim('rg_open', 10)}), '0', 'and not again');

stop_load($producers);
wait_producers_done($node);
stop_load($consumers);
drain_load($node, 'rg');
check_exactly_once($node, 'rg');

# The freed slots return: one pass prunes up to four slots per ring.
for (1 .. 4)
{
	q1(q{SELECT count(*) FROM awa.run_maintenance('prune_queue')});
	q1(q{SELECT count(*) FROM awa.run_maintenance('prune_claim')});
}
is(q1(q{SELECT string_agg(ring || ':' || coalesce(jsonb_array_length(to_jsonb(s) -> 'held_slots'), -1), ',' ORDER BY ring)
          FROM awa.storage_status() s WHERE ring IN ('queue', 'claim')}),
	'claim:0,queue:0', 'no slot is held once the sessions ended');
cmp_ok(slots_in_use('ready_entries'), '<=', $queue_width, 'the queue ring is back within its width');
cmp_ok(slots_in_use('lease_claim_batches'), '<=', $claim_width, 'the claim ring is back within its width');
is(q1(q{SELECT count(*) FROM (SELECT * FROM awa.queue_counts() EXCEPT SELECT * FROM awa.queue_counts_exact()) d}),
	'0', 'queue_counts = queue_counts_exact');
my $log = slurp_file($node->logfile);
my @errors = grep { /ERROR|uses all/ && !/canceling statement due to statement timeout/ } split /\n/, $log;
is_deeply(\@errors, [], 'no ERROR and no cap WARNING in the server log');

$node->stop;
done_testing();
