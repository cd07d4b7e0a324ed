# 047_lock_table_bounded.pl
#
# No transaction can run the cluster's shared lock table out through awa.
# PostgreSQL's heavyweight lock table is shared by every database of the
# cluster (max_locks_per_transaction x (max_connections +
# max_prepared_transactions) entries, about 7,800 with stock settings). An
# enqueue took, for each lane it wrote, a lane reserve lock and, for a new
# lane, a lane create lock, both held to the transaction's end: one producer
# transaction that enqueued into ~10,000 new queues failed with "out of shared
# memory" (53200), and while it held them every other database's sessions
# that needed a lock failed too. Now a transaction takes at most 16 lane
# reserve locks and then one wide reserve lock per database
# (src/pg/lane_locks.hpp), and holds a lane create lock only while it inserts
# the lane's row (src/pg/lanes.cpp).
#
# 1. One transaction enqueues one job into each of 20,000 new queues (so
#    10,000 are written early, the bulk-load bound, and the rest by
#    awa._flush_enqueues) and stays open holding every lane position: it holds
#    16 lane reserve locks, one wide lock, no lane create lock. Meanwhile a
#    session of another database runs a query that takes 300+ locks, and a
#    claim of another queue of the first database returns its job. After the
#    commit every one of the 20,000 jobs is claimed exactly once.
# 2. The same with awa.enqueue_many (two jobs per call, 20,000 queues).
# 3. The maintenance worker runs throughout. A producer holding the wide lock
#    (40 queues) keeps its rows in a queue-ring slot while twenty rotations
#    and prunes run: no prune truncates that slot while the producer is open
#    (it still sees its rows there), and once it commits a prune carries its
#    rows forward and every job is claimed exactly once.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('lockbounded', maintenance => 1);
sub q1 { return $node->safe_psql('postgres', $_[0]); }

# Another database, with a query that takes a lock per partition.
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', q{
  CREATE TABLE parted (a int) PARTITION BY LIST (a);
  DO $$ BEGIN
    FOR i IN 1 .. 300 LOOP
      EXECUTE format('CREATE TABLE parted_%s PARTITION OF parted FOR VALUES IN (%s)', i, i);
    END LOOP;
  END $$;});
my $other_locks = q{BEGIN;
  SELECT count(*) FROM parted;
  SELECT count(*) > 300 FROM pg_locks WHERE pid = pg_backend_pid();
  COMMIT;};

q1(q{
  CREATE TABLE enq (job_id bigint NOT NULL);
  CREATE TABLE got (job_id bigint NOT NULL);
  -- Claims (and completes) every job of queues prefix1 .. prefixN, a
  -- hundred queues per transaction.
  CREATE PROCEDURE drain(prefix text, n int) LANGUAGE plpgsql AS $$
  BEGIN
    FOR i IN 1 .. n LOOP
      INSERT INTO got SELECT c.job_id FROM awa.claim(prefix || i, 10) c
        WHERE awa.complete(c.job_id, c.run_lease, c.receipt_id);
      IF i % 100 = 0 THEN COMMIT; END IF;
    END LOOP;
  END $$;
  SELECT awa.enqueue('side', queue => 'side') > 0;});

my $my_locks = q{SELECT count(*) FILTER (WHERE objsubid = 16646) || '|' ||
    count(*) FILTER (WHERE objsubid = 16648) || '|' || count(*) FILTER (WHERE objsubid = 16645) || '|' ||
    CASE WHEN count(*) < 300 THEN 't' ELSE 'f' END
  FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory'};

# Every job of enq was claimed exactly once, and nothing else.
sub exactly_once
{
	my ($label, $expected) = @_;
	is( q1(q{SELECT (SELECT count(*) FROM enq) || '|' || (SELECT count(*) FROM got) || '|' ||
	         (SELECT count(*) FROM (SELECT job_id FROM enq EXCEPT SELECT job_id FROM got) x) || '|' ||
	         (SELECT count(*) FROM (SELECT job_id FROM got GROUP BY job_id HAVING count(*) > 1) y) || '|' ||
	         (SELECT count(*) FROM got WHERE job_id NOT IN (SELECT job_id FROM enq))}),
		"$expected|$expected|0|0|0", "$label: all $expected jobs claimed exactly once");
}

sub bulk
{
	my ($label, $prefix, $enqueue, $jobs) = @_;
	q1('TRUNCATE enq, got');
	my $producer = $node->background_psql('postgres');
	$producer->query_safe('BEGIN');
	$producer->query_safe("INSERT INTO enq $enqueue");
	$producer->query_safe('SELECT awa._flush_enqueues()');
	is($producer->query_safe('SELECT count(*) FROM enq'), $jobs, "$label: $jobs jobs enqueued in one open transaction");
	is($producer->query_safe($my_locks), '16|1|0|t',
		"$label: it holds 16 lane reserve locks, one wide reserve lock, no lane create lock");
	is($node->safe_psql('other', $other_locks), "0\nt",
		"$label: meanwhile a query of another database takes its 300+ locks");
	is(q1(q{SELECT count(*) FROM awa.claim('side', 1) c WHERE awa.complete(c.job_id, c.run_lease, c.receipt_id)}), '1',
		"$label: and a claim of another queue returns its job");
	q1(q{SELECT awa.enqueue('side', queue => 'side') > 0});
	$producer->query_safe('COMMIT');
	$producer->quit;
	q1("CALL drain('$prefix', 20000)");
	exactly_once($label, $jobs);
	q1("CALL drain('$prefix', 20000)");
	exactly_once("$label, drained again", $jobs);
}

bulk('enqueue', 'bulk', q{SELECT awa.enqueue('k', jsonb_build_object('i', i), 'bulk' || i) FROM generate_series(1, 20000) i},
	20000);
bulk('enqueue_many', 'many',
	q{SELECT awa.enqueue_many(ARRAY['k', 'k'], NULL, 'many' || i) FROM generate_series(1, 20000) i}, 40000);

# 3. A producer under the wide lock while rotations and prunes run (the
# worker's and these).
q1('TRUNCATE enq, got');
my $producer = $node->background_psql('postgres');
$producer->query_safe('BEGIN');
$producer->query_safe(q{INSERT INTO enq SELECT awa.enqueue('k', '{}', 'wp' || i) FROM generate_series(1, 40) i});
$producer->query_safe('SELECT awa._flush_enqueues()');
is($producer->query_safe($my_locks), '16|1|0|t', 'prune: the producer holds the wide reserve lock');
my $slot = $producer->query_safe(q{SELECT DISTINCT ready_slot FROM awa.ready_entries WHERE queue LIKE 'wp%'});
like($slot, qr/^\d+$/, "prune: its rows are in queue slot $slot");

# Twenty rotations, each followed by a prune with a short lock timeout, while
# the producer is open (the worker rotates and prunes too): a prune never
# takes a slot one of whose children a session holds, and none truncates the
# producer's rows.
my @outcomes;
for (1 .. 20)
{
	q1("SELECT outcome FROM awa.run_maintenance('rotate_queue')");
	push @outcomes,
	  q1("SET awa.prune_lock_timeout = '50ms';
	      SELECT outcome || ':' || coalesce(detail ->> 'slot', '-') FROM awa.run_maintenance('prune_queue')");
}
is(scalar(grep { /^pruned:$slot$/ } @outcomes), 0, "prune: no prune of slot $slot while the producer is open (@outcomes)");
is($producer->query_safe(qq{SELECT count(*) FROM awa.ready_entries WHERE queue LIKE 'wp%' AND ready_slot = $slot}),
	'40', 'prune: the producer still sees its 40 rows in their slot');
$producer->query_safe('COMMIT');
$producer->quit;
is(q1(q{SELECT count(*) FROM awa.ready_entries WHERE queue LIKE 'wp%'}), '40', 'prune: its 40 rows are committed');
# A job enqueued into a queue of its own before each rotation keeps the ring
# turning: a ring whose current slot holds only what prunes carried stands
# still (docs/maintenance.md §3.6, "An idle backlog stays put"), and the
# producer's slot would then wait for the next enqueue to become due.
my $pruned = 0;
for (my $i = 0; $i < 64 && !$pruned; $i++)
{
	$pruned = q1("SELECT count(*) FROM awa.ready_entries WHERE ready_slot = $slot AND queue LIKE 'wp%'") eq '0';
	last if $pruned;
	q1(q{SELECT awa.enqueue('tick', '{}', 'tick_wp')});
	q1("SELECT outcome FROM awa.run_maintenance('rotate_queue')");
	q1("SELECT outcome FROM awa.run_maintenance('prune_queue')");
}
ok($pruned, "prune: once it committed, a prune carried its rows out of slot $slot");
q1("CALL drain('wp', 40)");
exactly_once('prune', 40);

$node->stop;
done_testing();
