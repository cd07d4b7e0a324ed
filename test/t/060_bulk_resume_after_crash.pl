# 060_bulk_resume_after_crash.pl
#
# A bulk operation resumed after a crash (issue 22 §2): 300 dead-lettered jobs
# retried by awa.bulk_step, 50 per step, the maintenance worker on at its
# cadence. A step is open (its page retried, its cursor moved, not committed)
# when its backend is killed with SIGKILL; after the crash recovery the operation is
# where its last committed step left it, the open step's jobs are still in the
# DLQ, and stepping on retries every job exactly once: each job is available
# (and then claimed and completed) once, none is left in the DLQ, and the
# counters agree with the tables. A second operation is cancelled from
# another session while steps run; no step acts after the cancel. A third
# moves 300 jobs (240 available, 60 scheduled) to another queue, crashed the
# same way in its third step: resumed, it moves every job exactly once, each
# available job is claimed once and only in its new queue, and the counters
# agree with the tables.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('bulk', maintenance => 1);

# 300 dead-lettered jobs of queue bq, each with its number.
$node->safe_psql('postgres', q{
  SELECT awa.configure_queue('bq', dlq_enabled => true);
  SELECT count(*) FROM (SELECT awa.enqueue('k', jsonb_build_object('n', g), 'bq') FROM generate_series(1, 300) g) x;
});
for (1 .. 3)
{
	$node->safe_psql('postgres',
		q{SELECT count(*) FROM awa.claim('bq', 100) c, LATERAL awa.fail(c.job_id, c.run_lease, c.receipt_id, 'boom') f});
}
is($node->safe_psql('postgres', q{SELECT count(*) FROM awa.dlq WHERE queue = 'bq'}), '300', '300 jobs dead-lettered');
is($node->safe_psql('postgres', q{SELECT awa.bulk_count('dlq_retry', queue => 'bq')}), '300', 'the dry run counts 300');

my $op = $node->safe_psql('postgres', q{SELECT awa.bulk_start('dlq_retry', queue => 'bq')});

# Two steps committed, a third open when the server is killed.
$node->safe_psql('postgres', "SELECT awa.bulk_step($op, 50)") for 1 .. 2;
my $s = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $s->query_safe('SELECT pg_backend_pid()');
$s->query_safe('BEGIN');
is($s->query_safe("SELECT acted || '/' || steps FROM awa.bulk_step($op, 50)"), '150/3', 'the open third step retried its page');
is($node->safe_psql('postgres', q{SELECT count(*) FROM awa.dlq WHERE queue = 'bq'}), '200',
	'others see the two committed steps only');
# SIGKILL of the backend: the postmaster ends every backend (and, with the
# test clusters' restart_after_crash = off, itself); it starts again with
# crash recovery.
kill 'KILL', $pid;
eval { $s->quit };
my $started = 0;
for (1 .. 60)
{
	sleep 1;
	$node->{_pid} = undef;
	last if ($started = $node->start(fail_ok => 1));
}
ok($started, 'the server starts again after the kill');

is($node->safe_psql('postgres', "SELECT state || ' ' || acted || ' ' || passed || ' ' || steps FROM awa.bulk_operations WHERE op_id = $op"),
	'running 100 0 2', 'after the crash the operation is where its last committed step left it');
is($node->safe_psql('postgres', q{SELECT count(*) FROM awa.dlq WHERE queue = 'bq'}), '200',
	'the open step retried nothing');

# Step on to the end.
my $state = 'running';
my $steps = 0;
while ($state eq 'running' && $steps < 20)
{
	$state = $node->safe_psql('postgres', "SELECT state FROM awa.bulk_step($op, 50)");
	$steps++;
}
is($node->safe_psql('postgres', "SELECT state || ' ' || acted || ' ' || passed FROM awa.bulk_operations WHERE op_id = $op"),
	'done 300 0', 'the operation ends having retried 300 jobs, none passed over');
is($node->safe_psql('postgres', q{SELECT count(*) FROM awa.dlq WHERE queue = 'bq'}), '0', 'none is left in the DLQ');

# Every job is claimable exactly once: claim and complete all.
my $claimed = '';
my %seen;
my $dups = 0;
for (1 .. 20)
{
	my $out = $node->safe_psql('postgres', q{
	  SELECT string_agg((c.args->>'n') || ':' || awa.complete(c.job_id, c.run_lease, c.receipt_id), ',')
	    FROM awa.claim('bq', 50) c});
	last if $out eq '';
	for my $pair (split /,/, $out)
	{
		my ($n, $done) = split /:/, $pair;
		$dups++ if $seen{$n}++;
	}
}
is(scalar(keys %seen), 300, 'all 300 jobs were claimed after the retry');
is($dups, 0, 'none twice');
is($node->safe_psql('postgres', q{
  SELECT c.completed || '/' || c.available || '/' || c.dlq || ' ' || (row(c.*)::text = (SELECT row(e.*)::text FROM awa.queue_counts_exact('bq') e))
    FROM awa.queue_counts('bq') c}),
	'300/0/0 true', 'the counters say 300 completed and agree with the tables');

# A second operation, cancelled from another session while it runs.
$node->safe_psql('postgres', q{
  SELECT count(*) FROM (SELECT awa.enqueue('k', jsonb_build_object('m', g), 'bq') FROM generate_series(1, 100) g) x;
});
$node->safe_psql('postgres',
	q{SELECT count(*) FROM awa.claim('bq', 100) c, LATERAL awa.fail(c.job_id, c.run_lease, c.receipt_id, 'boom') f});
my $op2 = $node->safe_psql('postgres', q{SELECT awa.bulk_start('dlq_purge', queue => 'bq')});
$node->safe_psql('postgres', "SELECT awa.bulk_step($op2, 10)");
is($node->safe_psql('postgres', "SELECT awa.bulk_cancel($op2)"), 't', 'the purge is cancelled after one step');
is($node->safe_psql('postgres', "SELECT state || ' ' || acted FROM awa.bulk_step($op2, 10)"), 'cancelled 10',
	'a step after the cancel acts on nothing');
is($node->safe_psql('postgres', q{SELECT count(*) FROM awa.dlq WHERE queue = 'bq'}), '90', '90 jobs stay in the DLQ');

# A move resumed after a crash: 240 available jobs and 60 scheduled ones of
# queue mq (numbered), moved to mq2, 50 per step.
$node->safe_psql('postgres', q{
  SELECT count(*) FROM (SELECT awa.enqueue('m', jsonb_build_object('n', g), 'mq',
                                           run_at => CASE WHEN g % 5 = 0 THEN now() + interval '1 day' END)
                          FROM generate_series(1, 300) g) x;
});
is($node->safe_psql('postgres', q{SELECT awa.bulk_count('move', queue => 'mq', to_queue => 'mq2')}), '300',
	'the dry run of the move counts 300');
my $op3 = $node->safe_psql('postgres', q{SELECT awa.bulk_start('move', queue => 'mq', to_queue => 'mq2')});
$node->safe_psql('postgres', "SELECT awa.bulk_step($op3, 50)") for 1 .. 2;
$s = $node->background_psql('postgres', on_error_stop => 0);
$pid = $s->query_safe('SELECT pg_backend_pid()');
$s->query_safe('BEGIN');
is($s->query_safe("SELECT acted || '/' || steps FROM awa.bulk_step($op3, 50)"), '150/3',
	'the open third step of the move moved its page');
kill 'KILL', $pid;
eval { $s->quit };
$started = 0;
for (1 .. 60)
{
	sleep 1;
	$node->{_pid} = undef;
	last if ($started = $node->start(fail_ok => 1));
}
ok($started, 'the server starts again after the second kill');
is($node->safe_psql('postgres', "SELECT state || ' ' || acted || ' ' || steps FROM awa.bulk_operations WHERE op_id = $op3"),
	'running 100 2', 'after the crash the move is where its last committed step left it');
is($node->safe_psql('postgres', q{SELECT count(*) FROM awa.list_jobs(queue => 'mq2', max_rows => 1000)}), '100',
	'the open step moved nothing');
$state = 'running';
$steps = 0;
while ($state eq 'running' && $steps < 20)
{
	$state = $node->safe_psql('postgres', "SELECT state FROM awa.bulk_step($op3, 50)");
	$steps++;
}
is($node->safe_psql('postgres', "SELECT state || ' ' || acted || ' ' || passed FROM awa.bulk_operations WHERE op_id = $op3"),
	'done 300 0', 'the move ends having moved 300 jobs, none passed over');
is($node->safe_psql('postgres', q{
  SELECT string_agg(queue || ' ' || state || ' ' || n, ', ' ORDER BY queue, state)
    FROM (SELECT queue, state, count(*) AS n FROM awa.list_jobs(kind => 'm', max_rows => 1000) GROUP BY 1, 2) x}),
	'mq2 available 240, mq2 scheduled 60', 'every job is in mq2, in its state');
is($node->safe_psql('postgres', q{SELECT count(*) FROM awa.claim('mq', 1000)}), '0', 'mq hands out none of them');
%seen = ();
$dups = 0;
for (1 .. 20)
{
	my $out = $node->safe_psql('postgres', q{
	  SELECT string_agg((c.args->>'n') || ':' || awa.complete(c.job_id, c.run_lease, c.receipt_id), ',')
	    FROM awa.claim('mq2', 50) c});
	last if $out eq '';
	for my $pair (split /,/, $out)
	{
		my ($n, $done) = split /:/, $pair;
		$dups++ if $seen{$n}++;
	}
}
is(scalar(keys %seen), 240, 'all 240 available jobs were claimed in mq2');
is($dups, 0, 'none twice');
is($node->safe_psql('postgres', q{
  SELECT string_agg(c.queue || ' ' || c.available || '/' || c.scheduled || '/' || c.completed || ' '
                    || (row(c.*)::text = (SELECT row(e.*)::text FROM awa.queue_counts_exact(c.queue) e)), ', '
                    ORDER BY c.queue)
    FROM awa.queue_counts() c WHERE c.queue IN ('mq', 'mq2')}),
	'mq 0/0/0 true, mq2 0/60/240 true', 'the counters agree with the tables in both queues');

$node->stop;
done_testing();
