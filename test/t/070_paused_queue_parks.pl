# 070_paused_queue_parks.pl
#
# A paused queue parks its jobs outside the queue ring (docs/architecture.md
# §6, "A paused queue parks its jobs"), on a stock server with the
# maintenance worker at its default cadence. Asserted here:
#   - a paused queue that keeps receiving enqueues (20 rounds of 500 jobs,
#     each followed by at least one rotation of the worker) puts no row into
#     the queue ring: every job is a parked deferred row, available to
#     queue_counts and get_job; and the ring keeps rotating and pruning for
#     another queue's work all the while (on the code before, every job of
#     the paused queue was a ready row carried or kept by the prunes);
#   - a scheduled job of the paused queue that falls due is parked by the
#     worker's promotion;
#   - the parked jobs survive a restart and an immediate shutdown;
#   - a producer that saw the queue paused and commits after the resume
#     leaves a parked job in a queue that is not paused: the worker appends
#     it by itself (its sweep for such jobs runs every 5 s);
#   - after the resume every job is claimed exactly once, in enqueue order
#     within the lane; queue_counts = queue_counts_exact; no ERROR in the
#     server log.
# Waits are bounded only to stop a hung run; every assertion is about states.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('parks', maintenance => 1);

sub q1 { return $node->safe_psql('postgres', $_[0]); }

sub wait_until { return wait_until_true($node, @_); }

sub generation { return q1(q{SELECT max(generation) FROM awa.queue_ring_rotations}); }

q1(q{SELECT awa.pause_queue('parked')});

# 1. A paused queue that keeps receiving enqueues, beside a live queue.
my $rounds = 20;
for my $r (1 .. $rounds) {
	q1(qq{SELECT count(*) FROM awa.enqueue_many(ARRAY(SELECT 'p' FROM generate_series(1, 500)),
	                                            ARRAY(SELECT jsonb_build_object('r', $r, 'i', i) FROM generate_series(1, 500) i),
	                                            'parked')});
	q1(q{SELECT count(*) FROM awa.enqueue_many(ARRAY['l', 'l'], NULL, 'live')});
	q1(q{SELECT count(*) FROM (SELECT awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('live', 10) c) x});
	my $g = generation();
	wait_until("the queue ring rotates after round $r", "SELECT max(generation) > $g FROM awa.queue_ring_rotations");
}
is(q1(q{SELECT count(*) FROM awa.ready_entries WHERE queue = 'parked'}), '0',
	'a paused queue that keeps receiving enqueues puts no row into the queue ring');
is(q1(q{SELECT count(*) || ' ' || count(*) FILTER (WHERE state = 'available') FROM awa.deferred_jobs WHERE queue = 'parked'}),
	'10000 10000', 'its 10,000 jobs are parked deferred rows');
is(q1(q{SELECT available FROM awa.queue_counts('parked')}), '10000', 'queue_counts counts them available');
ok(q1(q{SELECT awa.get_job(min(job_id)) ->> 'state' = 'available' FROM awa.deferred_jobs WHERE queue = 'parked'}) eq 't',
	'get_job shows a parked job available');
is(q1(q{SELECT count(*) FROM awa.maintenance_status() WHERE task IN ('prune_queue', 'rotate_queue') AND runs > 0}), '2',
	'the worker pruned and rotated the queue ring meanwhile');

# 2. A scheduled job of the paused queue falls due: the worker parks it.
my $sched = q1(q{SELECT awa.enqueue('s', '{}', 'parked', run_at => clock_timestamp() + interval '1 second')});
wait_until('the worker parks the due scheduled job',
	"SELECT coalesce((SELECT state = 'available' FROM awa.deferred_jobs WHERE job_id = $sched), false)");
is(q1(qq{SELECT awa.get_job($sched) ->> 'state'}), 'available', 'the due job of the paused queue is available, parked');

# 3. Restart and immediate shutdown: the parked jobs are plain rows.
$node->restart;
$node->stop('immediate');
$node->start;
is(q1(q{SELECT count(*) FROM awa.deferred_jobs WHERE queue = 'parked' AND state = 'available'}), '10001',
	'the parked jobs survive a restart and an immediate shutdown');

# 4. A producer that saw the pause commits after the resume.
my $producer = $node->background_psql('postgres');
$producer->query_safe('BEGIN');
my $late = $producer->query_safe(q{SELECT awa.enqueue('late', '{}', 'parked')});
$late =~ s/\s+//g;
q1(q{SELECT awa.resume_queue('parked')});
is(q1(q{SELECT count(*) FROM awa.deferred_jobs WHERE queue = 'parked'}), '0', 'the resume appended every committed parked job');
$producer->query_safe('COMMIT');
$producer->quit;
is(q1(qq{SELECT state FROM awa.deferred_jobs WHERE job_id = $late}), 'available',
	'a producer that saw the pause and committed after the resume left a parked job');
wait_until('the worker appends the late parked job', "SELECT NOT EXISTS (SELECT FROM awa.deferred_jobs WHERE job_id = $late)");

# 5. Every job once, in enqueue order within the lane.
my $claimed = q1(q{
	CREATE TEMP TABLE got (ord serial, job_id bigint, kind text, args jsonb);
	DO $$
	DECLARE n int;
	BEGIN
	    LOOP
	        INSERT INTO got (job_id, kind, args) SELECT job_id, kind, args FROM awa.claim('parked', 1000);
	        GET DIAGNOSTICS n = ROW_COUNT;
	        EXIT WHEN n = 0;
	    END LOOP;
	END $$;
	SELECT count(*) || ' ' || count(DISTINCT job_id) || ' '
	       || (SELECT bool_and(o.rn = o.expected)
	             FROM (SELECT row_number() OVER (ORDER BY ord) AS rn,
	                          row_number() OVER (ORDER BY (args ->> 'r')::int, (args ->> 'i')::int) AS expected
	                     FROM got WHERE kind = 'p') o)
	  FROM got});
is($claimed, '10002 10002 true', 'after the resume every job is claimed once, the enqueued ones in enqueue order');
wait_until('the counters agree with the exact pass',
	q{SELECT NOT EXISTS (SELECT * FROM awa.queue_counts() EXCEPT SELECT * FROM awa.queue_counts_exact())
	     AND NOT EXISTS (SELECT * FROM awa.queue_counts_exact() EXCEPT SELECT * FROM awa.queue_counts())});
pass('queue_counts = queue_counts_exact');

my $log = slurp_file($node->logfile);
unlike($log, qr/\bERROR:|TRAP:|PANIC:/, 'no ERROR in the server log');

$node->stop;
done_testing();
