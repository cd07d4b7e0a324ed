# 008_ring_wrap_under_load.pl
#
# The rings wrap under concurrent load and no job is lost or handed out
# twice. Rotation every 100 ms (queue and claim rings); producers (pgbench,
# 5 jobs per enqueue_many) and consumers (pgbench, claim 10 + complete_many)
# run until the queue ring is past generation 40 (more than two wraps of its
# 16 slots) and the claim ring past 16 (two wraps of 8), then stop, and the
# backlog is drained. Every claim and accepted completion is logged in the
# statement that made it (test/t/AwaLoad.pm), so a double claim or double
# completion would show as two log rows.
#
# Asserts:
#   - both rings reached those generations while the load ran, and their
#     prunes reported 'pruned' during the load (a full ring rotates only into
#     a truncated slot, so generation > 16 already implies pruning);
#   - every enqueued job was claimed exactly once (run_lease 1) and completed
#     exactly once; nothing is available or running; queue_counts =
#     queue_counts_exact;
#   - no child of a queue-ring or claim-ring family has a dead tuple once
#     every client has exited, and the ring ledgers were only ever inserted into
#     (n_tup_upd = n_tup_del = 0, n_tup_ins >= the generation reached);
#   - no maintenance step counted an error.
# The ledger counts include the worker's own inserts: the worker flushes its
# statistics after its steps (at most once a second), so they show while it
# runs; terminating it flushes the rest before the final ledger check.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use FindBin;
use lib $FindBin::Bin;
use AwaTap;
use AwaLoad;

my $node = start_awa_node('wrap', maintenance => 1, conf => qq{
awa.queue_rotate_interval = '100ms'
awa.claim_rotate_interval = '100ms'
max_connections = 30
});

sub q1 { return $node->safe_psql('postgres', $_[0]); }

create_load_log($node, 'wrap');
my $producers = start_producers($node, 'wrap', clients => 2, rate => 150);
my $consumers = start_consumers($node, 'wrap', clients => 2);

# Load until both rings have wrapped; note what the prunes report.
my (%pruned_seen, $qgen, $cgen);
my $deadline = time + 120;
while (time < $deadline)
{
	my $row = q1("SELECT string_agg(ring || ':' || generation || ':' || coalesce(last_prune, ''), ',' ORDER BY ring)
	                FROM awa.storage_status() WHERE ring IN ('queue', 'claim')");
	my %g;
	for (split /,/, $row)
	{
		my ($ring, $gen, $prune) = split /:/;
		$g{$ring} = $gen;
		$pruned_seen{$ring}++ if $prune eq 'pruned';
	}
	($qgen, $cgen) = ($g{queue}, $g{claim});
	last if $qgen > 40 && $cgen > 16 && $pruned_seen{queue} && $pruned_seen{claim};
	usleep(100_000);
}
my $enqueued_during = q1("SELECT count(*) FROM wrap_enq");
my $p_err = stop_load($producers);
wait_producers_done($node);
ok($qgen > 40, "the queue ring passed generation 40 under load ($qgen)");
ok($cgen > 16, "the claim ring passed generation 16 under load ($cgen)");
ok($pruned_seen{queue}, 'queue-ring prune reported pruned during the load');
ok($pruned_seen{claim}, 'claim-ring prune reported pruned during the load');
ok($enqueued_during > 0, "producers enqueued $enqueued_during jobs meanwhile");
unlike($p_err, qr/ERROR/, 'producers: no SQL error');

# Consumers drain the backlog, then stop; open attempts they left are
# completed with their logged receipts.
ok($node->poll_query_until('postgres', "SELECT available = 0 FROM awa.queue_counts_exact('wrap')"),
	'consumers drained the backlog');
my $c_err = stop_load($consumers);
unlike($c_err, qr/ERROR/, 'consumers: no SQL error');
my $leftover = drain_load($node, 'wrap');
note "attempts left open by stopped consumers, completed after: $leftover";

check_exactly_once($node, 'wrap', 'after the load');

# Dead tuples and ledger writes (every client backend has exited, so their
# statistics are flushed).
my $families_with_no_dead = [
	qw(ready_entries ready_tombstones ready_claim_attempt_batches done_entries
	  receipt_completion_batches lease_claims lease_claim_batches lease_claim_closures lease_claim_closure_batches)
];
my $s = family_stats($node);
for my $f (@$families_with_no_dead)
{
	is($s->{$f}{dead}, 0, "$f: no dead tuple in any child")
	  or diag("$f: $s->{$f}{dead} dead tuples, most in $s->{$f}{worst} ($s->{$f}{max_dead})");
}
# The running worker's statistics reach pg_stat within about a second.
ok($node->poll_query_until('postgres',
		"SELECT n_tup_ins >= $qgen FROM pg_stat_all_tables WHERE relid = 'awa.queue_ring_rotations'::regclass"),
	"pg_stat shows the running worker's ledger inserts (>= $qgen)");

# The worker's exit flushes its statistics.
my $worker = q1("SELECT pid FROM pg_stat_activity WHERE backend_type = 'awa maintenance worker' AND datname = 'postgres'");
is(q1("SELECT errors FROM awa.maintenance_status() WHERE task = 'prune_queue'"), '0', 'no prune_queue error');
is(q1("SELECT coalesce(sum(errors), 0) FROM awa.maintenance_status()"), '0', 'no maintenance step counted an error');
q1("SELECT pg_terminate_backend($worker)");
ok($node->poll_query_until('postgres',
		"SELECT n_tup_ins >= $qgen FROM pg_stat_all_tables WHERE relid = 'awa.queue_ring_rotations'::regclass"),
	'once the worker exited, pg_stat shows its queue ledger inserts');
for my $ring (qw(queue claim lease))
{
	is( q1("SELECT n_tup_upd || '/' || n_tup_del || '/' || n_dead_tup FROM pg_stat_all_tables
	         WHERE relid = 'awa.${ring}_ring_rotations'::regclass"),
		'0/0/0', "${ring}_ring_rotations: never updated or deleted, no dead tuple");
}
ok(q1("SELECT n_tup_ins FROM pg_stat_all_tables WHERE relid = 'awa.claim_ring_rotations'::regclass") >= $cgen,
	'the claim ledger has one insert per rotation');

$node->stop;
done_testing();
