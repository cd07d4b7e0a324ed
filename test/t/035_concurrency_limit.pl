# 035_concurrency_limit.pl
#
# A queue's concurrency limit (awa.configure_queue(queue, max_running => 3))
# holds over many sessions, with the maintenance worker on at its default
# cadence: 16 pgbench consumers (claim up to 10, hold them 20 ms, complete
# them; every claim and completion logged in the same statement, as
# test/t/AwaLoad.pm's consumers do) drain 3,000 jobs while the test kills some
# of them (pg_terminate_backend: an open claim rolls back). Checked:
#   - no snapshot ever sees more than 3 attempts of the queue running (a claim
#     and its evidence commit together, so every snapshot's count of open
#     attempts is an instant of the queue's history; sampled throughout);
#   - no slot is lost: the consumers drain the queue to the last job, every
#     job is completed exactly once (claimed again only after the worker
#     rescued a killed consumer's attempt), nothing is left running;
#   - after a crash (kill -9 of a backend with an open claim at the limit)
#     the state is rebuilt from the open attempts: the lost claim's slots are
#     free;
#   - a claim that waits at the limit is woken when an attempt ends.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaLoad;
use AwaTap;

my $node = start_awa_node('conclimit', maintenance => 1, conf => "restart_after_crash = on\n");
sub q1 { return $node->safe_psql('postgres', $_[0]); }

my $jobs = 3000;
create_load_log($node, 'cl');
q1(qq{INSERT INTO cl_enq SELECT j FROM awa.enqueue_many(array_fill('k'::text, ARRAY[$jobs]), NULL, 'cl') j;
  SELECT awa.configure_queue('cl', max_running => 3);});

my $consumers = AwaLoad::_start_pgbench($node, 'cl_consumer', <<'SQL', clients => 16);
WITH c AS (SELECT job_id, run_lease, receipt_id FROM awa.claim('cl', 10)),
     logged AS (INSERT INTO cl_claim SELECT job_id, run_lease, receipt_id FROM c)
SELECT count(*) AS n, coalesce(array_agg(job_id), '{}') AS j, coalesce(array_agg(run_lease), '{}') AS l,
       coalesce(array_agg(receipt_id), '{}') AS r FROM c \gset
\if :n > 0
\sleep 20 ms
INSERT INTO cl_done SELECT job_id FROM awa.complete_many(:j, :l, :r) WHERE accepted;
\else
\sleep 5 ms
\endif
SQL
my $sampler = $node->background_psql('postgres');
my $max = 0;
my $killed = 0;
my $samples = 0;
while ($sampler->query_safe('SELECT count(*) FROM cl_done') < $jobs && $samples < 100000)
{
	$samples++;
	my $running = $sampler->query_safe("SELECT running FROM awa.queue_counts_exact('cl')");
	$max = $running if $running > $max;
	if ($samples % 50 == 0 && $killed < 4)
	{
		$killed += q1(q{SELECT count(pg_terminate_backend(pid)) FROM (SELECT pid FROM pg_stat_activity
		  WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND query LIKE '%awa.claim(''cl''%'
		  ORDER BY random() LIMIT 1) p});
	}
}
$sampler->quit;
stop_load($consumers);
drain_load($node, 'cl');
cmp_ok($killed, '>', 0, "consumers were killed mid-run ($killed)");
cmp_ok($max, '<=', 3, "no snapshot saw more than 3 running (max seen: $max, $samples samples)");
cmp_ok($max, '>', 0, 'attempts were running while sampled');
# Every job completed exactly once. A job is claimed more than once only when
# the maintenance worker rescued the attempt of a killed consumer (its
# session died with the job claimed), so the re-deliveries (run_lease > 1)
# are no more than the rescues; how many there are depends on timing.
is(q1(q{SELECT count(*) || '/' || count(DISTINCT job_id) FROM cl_done}), "$jobs/$jobs",
	'every job completed exactly once');
is(q1(q{SELECT count(*) FROM ((SELECT job_id FROM cl_enq EXCEPT SELECT job_id FROM cl_done)
  UNION ALL (SELECT job_id FROM cl_done EXCEPT SELECT job_id FROM cl_enq)) x}), '0',
	'the completed jobs are the enqueued jobs');
is(q1(q{SELECT count(DISTINCT job_id) FROM cl_claim}), $jobs, 'every job was claimed');
my ($again, $rescued) = split /\|/, q1(q{SELECT (SELECT count(*) FROM cl_claim WHERE run_lease > 1),
  (SELECT coalesce(sum(rescued), 0) FROM awa.job_event_totals() WHERE queue = 'cl')});
cmp_ok($again, '<=', $rescued, "claimed again only after a rescue ($again re-deliveries, $rescued rescues)");
is(q1(q{SELECT available || '/' || running || '/' || scheduled || '/' || retryable FROM awa.queue_counts_exact('cl')}),
	'0/0/0/0', 'nothing is left available, running, scheduled or retryable');

# A crash with a claim open at the limit: the slots come back.
q1(q{SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[4]), NULL, 'cl2');
  SELECT awa.configure_queue('cl2', max_running => 2);});
my $open = $node->background_psql('postgres');
$open->query_safe('BEGIN');
is($open->query_safe(q{SELECT count(*) FROM awa.claim('cl2', 5)}), '2', 'an open claim takes the 2 slots');
is(q1(q{SELECT count(*) FROM awa.claim('cl2', 5)}), '0', 'another claim finds the queue at its limit');
my $pid = $open->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $pid;
eval { $open->quit; };
$node->poll_query_until('postgres', 'SELECT true') or die 'the server did not come back';
is(q1(q{SELECT count(*) FROM awa.claim('cl2', 5)}), '2', 'after the crash the lost claim\'s slots are free');
is(q1(q{SELECT count(*) FROM awa.claim('cl2', 5)}), '0', 'and the limit holds again');

# A claim that waits at the limit is woken by the end of an attempt: its wait
# is an hour, so without the wake-up it would not return while the test runs
# (the harness's timeout would end it, and the test would fail).
q1(q{SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[2]), NULL, 'cl3');
  SELECT awa.configure_queue('cl3', max_running => 1);});
my ($job, $lease, $receipt) = split /\|/, q1(q{SELECT job_id || '|' || run_lease || '|' || receipt_id FROM awa.claim('cl3', 1)});
my $waiter = $node->background_psql('postgres');
$waiter->query_until(qr/waiting/, q{\echo waiting
SELECT count(*) AS woken FROM awa.claim('cl3', 1, wait => '1 hour');
});
$node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM awa.waiting_claims() WHERE queue = 'cl3'})
  or die 'the claim did not wait';
is(q1(qq{SELECT accepted FROM awa.complete_many(ARRAY[$job]::bigint[], ARRAY[$lease]::bigint[], ARRAY[$receipt]::bigint[])}),
	't', 'the running attempt completes');
is($waiter->query_safe(q{SELECT 'done'}), "1\ndone", 'the waiting claim woke at the completion and took the job');
$waiter->quit;

$node->stop;
done_testing();
