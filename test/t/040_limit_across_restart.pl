# 040_limit_across_restart.pl
#
# A queue's concurrency limit holds across a server restart (found by the
# adversary round). After a start the shared memory has no counters entry
# for any queue until the counters are rebuilt or a transaction that moves
# the queue's jobs commits. A claim of a limited queue that found no entry
# reserved under the queue's limit lock, counting exactly, and recorded its
# reservation nowhere else; once the entry existed (here made by an enqueue's
# commit; the maintenance worker's rebuild or any awa.queue_counts does the
# same), the next claim reserved optimistically against the entry's claims in
# flight, which did not include the first claim, still open: both got a job
# under max_running 1, and two attempts ran. The worker is off so that no
# rebuild makes the entry before the first claim (with it on, the window is
# from the start to its first counters task).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('limitrestart');
sub q1 { return $node->safe_psql('postgres', $_[0]); }

q1(q{SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[5]), NULL, 'lr');
  SELECT awa.configure_queue('lr', max_running => 1)});
$node->stop('immediate');
$node->start;

my $a = $node->background_psql('postgres');
$a->query_safe('BEGIN');
my $first = $a->query_safe(q{SELECT job_id || ',' || run_lease || ',' || receipt_id FROM awa.claim('lr', 1)});
like($first, qr/^\d+,\d+,\d+$/, 'the first claim after the start takes the slot');
# An enqueue commits: the queue's counters entry is made.
q1(q{SELECT awa.enqueue('k', queue => 'lr')});
my $c = $node->background_psql('postgres');
$c->query_safe('BEGIN');
is($c->query_safe(q{SELECT count(*) FROM awa.claim('lr', 1)}), '0',
	'a second claim, while the first is open, finds the queue at its limit');
$c->query_safe('COMMIT');
$c->quit;
$a->query_safe('COMMIT');
$a->quit;
is(q1(q{SELECT running FROM awa.queue_counts_exact('lr')}), '1', 'one attempt running');
is(q1(qq{SELECT count(*) FROM awa.claim('lr', 5)}), '0', 'the queue is at its limit');

# The slot is free again once the attempt ends: the queue drains one job at a
# time, and the counters match the exact count.
is(q1(qq{SELECT awa.complete($first)}), 't', 'the first attempt completes');
for my $i (1 .. 5)
{
	is(q1(q{SELECT count(*) FILTER (WHERE awa.complete(job_id, run_lease, receipt_id)) || '/' || count(*)
	  FROM awa.claim('lr', 5)}), '1/1', "claim $i takes one job, under the limit, and completes it");
}
is(q1(q{SELECT count(*) FROM awa.claim('lr', 5)}), '0', 'the queue is drained');
is(q1(q{SELECT row(c.*)::text = row(e.*)::text FROM awa.queue_counts('lr') c, awa.queue_counts_exact('lr') e}),
	't', 'the counters match the exact count');
is(q1(q{SELECT completed || '/' || running FROM awa.queue_counts_exact('lr')}), '6/0', 'all six completed, none running');
done_testing();
