# 011_dead_tuple_contract.pl
#
# The dead-tuple contract, short version (the long one is bench/'s): under a
# steady load of producers and consumers (test/t/AwaLoad.pm), with rotation
# every 200 ms and autovacuum on (for the cluster; the ring partitions are
# never autovacuumed, docs/architecture.md), awa's ring tables never hold a dead tuple,
# also while another session holds the xmin horizon back, and the rings keep
# rotating and pruning meanwhile (TRUNCATE does not depend on the horizon).
#
# Phase 1 (~10 s): load only. Phase 2: a session sits idle in a transaction
# that holds an xid (BEGIN; SELECT txid_current()) until the queue ring has
# rotated more than one wrap and pruned (at least 15 s; as long as that
# takes on a slow or busy machine, up to 10 minutes). Phase 3 (~10 s): that
# session commits; the load goes on. No check depends on the machine's
# speed: phases end on what happened, not on a rate.
#
# In every phase, at samples taken ~1 s apart once the phase is 2 s old:
#   - every child of the queue-ring families (ready_entries,
#     ready_tombstones, ready_claim_attempt_batches, done_entries,
#     receipt_completion_batches) and of the claim-ring families
#     (lease_claims, lease_claim_batches, lease_claim_closures,
#     lease_claim_closure_batches) has n_dead_tup = 0;
#   - the ring ledgers (*_ring_rotations) have n_tup_upd = n_tup_del = 0.
# Phase 2: the queue ring's generation advanced by more than one wrap (16)
# and its prune reported 'pruned' while the xid was held.
# Phase 3: jobs are still completed after the horizon is released.
# At the end: every job was claimed once and completed once; after the worker
# exits (which flushes its statistics, see 008), the ledgers show its
# inserts and still no update or delete.
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

my $node = start_awa_node('contract', maintenance => 1, conf => qq{
awa.queue_rotate_interval = '200ms'
awa.claim_rotate_interval = '200ms'
autovacuum = on
autovacuum_naptime = '1s'
max_connections = 30
});

sub q1 { return $node->safe_psql('postgres', $_[0]); }

my @ring_families = qw(ready_entries ready_tombstones ready_claim_attempt_batches done_entries
  receipt_completion_batches lease_claims lease_claim_batches lease_claim_closures lease_claim_closure_batches);

create_load_log($node, 'ct');
my $producers = start_producers($node, 'ct', clients => 2, rate => 100);
my $consumers = start_consumers($node, 'ct', clients => 2);

my @problems;    # every violation seen at any sample: "phase: what"
my %samples;     # phase => number of stat samples taken

# Runs a phase of at least $secs seconds: samples the queue ring every 0.2 s
# and the statistics every ~1 s once the phase is 2 s old. With $wraps, the
# phase also lasts until the queue ring's generation has advanced by more
# than 16 and its prune reported 'pruned' (at most 600 s). Returns
# { gen_start, gen_end, pruned, done, seconds }.
sub run_phase
{
	my ($phase, $secs, $wraps) = @_;
	my $t0 = time;
	my $done0 = q1("SELECT count(*) FROM ct_done");
	my $gen0 = q1("SELECT generation FROM awa.storage_status() WHERE ring = 'queue'");
	my $phase_start = q1('SELECT clock_timestamp()');
	my ($pruned, $next_stats) = (0, $t0 + 2);
	my $wrapped = sub {
		return 1 unless $wraps;
		return $pruned > 0
		  && q1("SELECT generation FROM awa.storage_status() WHERE ring = 'queue'") - $gen0 > 16;
	};
	while (time - $t0 < $secs || (!$wrapped->() && time - $t0 < 600))
	{
		# A prune of this phase (not the last outcome of the one before).
		$pruned++ if q1("SELECT last_prune = 'pruned' AND last_prune_at > '$phase_start'
		                   FROM awa.storage_status() WHERE ring = 'queue'") eq 't';
		if (time >= $next_stats)
		{
			check_stats($phase);
			$next_stats = time + 1;
		}
		usleep(200_000);
	}
	my $t1 = time;
	return {
		gen_start => $gen0,
		gen_end   => q1("SELECT generation FROM awa.storage_status() WHERE ring = 'queue'"),
		pruned    => $pruned,
		done      => q1("SELECT count(*) FROM ct_done") - $done0,
		seconds   => $t1 - $t0
	};
}

sub check_stats
{
	my ($phase) = @_;
	$samples{$phase}++;
	my $s = family_stats($node);
	for my $f (@ring_families)
	{
		push @problems, "$phase: $f has $s->{$f}{dead} dead tuples (most in $s->{$f}{worst}: $s->{$f}{max_dead})"
		  if $s->{$f}{dead} != 0;
	}
	for my $ring (qw(queue claim lease))
	{
		my $l = $s->{"${ring}_ring_rotations"};
		push @problems, "$phase: ${ring}_ring_rotations n_tup_upd $l->{upd}, n_tup_del $l->{del}"
		  if $l->{upd} != 0 || $l->{del} != 0;
	}
}

# Phase 1
my $p1 = run_phase('phase 1', 10);

# Phase 2: an xid held idle in transaction.
my $holder = $node->background_psql('postgres', on_error_stop => 0);
$holder->query("BEGIN");
my $xid = $holder->query("SELECT txid_current()");
like($xid, qr/^\d+$/, "phase 2: a session holds xid $xid, idle in transaction");
is( q1("SELECT backend_xid IS NOT NULL AND backend_xmin IS NULL AND state = 'idle in transaction'
          FROM pg_stat_activity WHERE backend_xid = '$xid'"),
	't', 'phase 2: pg_stat_activity shows it idle in transaction with its xid');
my $p2 = run_phase('phase 2', 15, 1);
is( q1("SELECT age(backend_xid) > 100 FROM pg_stat_activity WHERE backend_xid = '$xid'"), 't',
	'phase 2: the horizon was held back across the load (xid age > 100)');
$holder->query("COMMIT");
$holder->quit;

# Phase 3
my $p3 = run_phase('phase 3', 10);

note sprintf("phase %d: %.1f s, %d completed, queue generation %d -> %d, 'pruned' seen %d times",
	$_->[0], $_->[1]{seconds}, $_->[1]{done}, $_->[1]{gen_start}, $_->[1]{gen_end}, $_->[1]{pruned})
  for ([ 1, $p1 ], [ 2, $p2 ], [ 3, $p3 ]);

ok($samples{$_} >= 3, "$_: statistics sampled $samples{$_} times") for ('phase 1', 'phase 2', 'phase 3');
is_deeply(\@problems, [], 'every sample: no dead tuple in a ring family, no ledger update or delete');
ok($p2->{gen_end} - $p2->{gen_start} > 16,
	"phase 2: the queue ring rotated more than one wrap while the xid was held ($p2->{gen_start} -> $p2->{gen_end})");
ok($p2->{pruned} > 0, 'phase 2: the queue ring\'s prune reported pruned while the xid was held');
ok($p1->{done} > 0, "phase 1: $p1->{done} jobs completed");
ok($p3->{done} > 0, "phase 3: $p3->{done} jobs completed after the horizon was released");

# End: stop, drain, exactly once.
stop_load($producers);
wait_producers_done($node);
ok($node->poll_query_until('postgres', "SELECT available = 0 FROM awa.queue_counts_exact('ct')"),
	'consumers drained the backlog');
stop_load($consumers);
drain_load($node, 'ct');
check_exactly_once($node, 'ct', 'end');

# After every client exited, once more; then the worker's own statistics.
check_stats('end');
my $worker = q1("SELECT pid FROM pg_stat_activity WHERE backend_type = 'awa maintenance worker' AND datname = 'postgres'");
my $gen = q1("SELECT generation FROM awa.storage_status() WHERE ring = 'queue'");
is(q1("SELECT coalesce(sum(errors), 0) FROM awa.maintenance_status()"), '0', 'no maintenance step counted an error');
q1("SELECT pg_terminate_backend($worker)");
ok($node->poll_query_until('postgres',
		"SELECT n_tup_ins >= $gen FROM pg_stat_all_tables WHERE relid = 'awa.queue_ring_rotations'::regclass"),
	'once the worker exited, pg_stat shows its ledger inserts');
check_stats('after the worker exited');
is_deeply(\@problems, [], 'at the end too: no dead tuple in a ring family, no ledger update or delete');

$node->stop;
done_testing();
