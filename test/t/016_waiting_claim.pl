# 016_waiting_claim.pl
#
# awa.claim(queue, max_jobs, deadline, wait): a claim that finds nothing
# sleeps until work arrives (docs/sql-reference.md). Each case starts a
# waiter in a background psql, waits until it sleeps (pg_stat_activity:
# wait_event Extension, inside awa.claim), makes one event happen, and checks
# exactly which job the waiter returned. Waits are 300 s, far beyond the
# test's own time, so a waiter that is not woken makes its case fail (it
# would return no row only when the harness times out), and no case depends
# on the machine's speed.
#
# Events that must wake a waiter: an enqueue's commit, a claim's rollback, a
# resumed queue, a scheduled job's and a retried job's run_at (promoted by the
# maintenance worker, which runs at its default cadence). Events that must
# not end the wait: an enqueue that rolls back. While it sleeps, the waiter
# holds no lock but its virtual xid, and no snapshot (backend_xmin is NULL)
# when its statement is awa.claim alone outside a transaction block; a prune
# can truncate meanwhile. A waiter honours pg_cancel_backend and
# statement_timeout, and returns no row once its wait has passed.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

# The worker runs, but its periodic promotion only every hour: a scheduled or
# retried job reaches a waiter at its run_at only through the worker's own
# wake-up (its earliest run_at, and the latch set by the deferred job's commit).
my $node = start_awa_node('waiting', maintenance => 1, conf => "awa.promote_interval = '1h'\n");
sub q1 { return $node->safe_psql('postgres', $_[0]); }

my $LONG = "'300 seconds'";

# Starts a waiting claim on $queue in a new background session; returns
# (session, pid) once it sleeps.
sub start_waiter
{
	my ($queue, %opts) = @_;
	my $session = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $session->query_safe('SELECT pg_backend_pid()');
	my $pre = $opts{pre} // '';
	$session->query_until(qr/waiting\n/,
		"\\echo waiting\n${pre}SELECT 'got:' || coalesce(string_agg(job_id::text, ',' ORDER BY job_id), '') "
		  . "FROM awa.claim('$queue', " . ($opts{max} // 1) . ", NULL, $LONG);\n");
	wait_until_sleeping($pid);
	return ($session, $pid);
}

sub wait_until_sleeping
{
	my ($pid) = @_;
	$node->poll_query_until('postgres', qq{
SELECT wait_event_type = 'Extension' AND wait_event = 'Extension' AND query LIKE '%awa.claim%'
  FROM pg_stat_activity WHERE pid = $pid}) or die "waiter $pid never slept";
}

# What the waiter's claim returned ("got:<ids>"), once it has returned.
sub result_of
{
	my ($session) = @_;
	my ($out) = $session->query("SELECT 'end'");
	my ($got) = $out =~ /(got:[0-9,]*)/;
	return $got // "no result: $out";
}

sub enqueue { return q1("SELECT awa.enqueue('k', '{}', queue => '$_[0]')"); }

# 1. An enqueue's commit wakes the waiter; while asleep it holds nothing.
{
	my ($w, $pid) = start_waiter('w1');
	is(q1("SELECT backend_xmin IS NULL AND backend_xid IS NULL FROM pg_stat_activity WHERE pid = $pid"), 't',
		'a sleeping claim advertises no snapshot and no xid');
	is(q1("SELECT string_agg(locktype, ',') FROM pg_locks WHERE pid = $pid"), 'virtualxid',
		'a sleeping claim holds no lock but its virtual xid');
	my $job = enqueue('w1');
	is(result_of($w), "got:$job", 'the commit of an enqueue wakes the waiter with that job');
	$w->quit;
}

# 1b. The same where the waiter's look could move the lane's claim cursor (a
# committed claim's evidence lies beyond it): a look that finds nothing
# leaves no xid, lock or cursor write behind.
{
	q1("SELECT awa.enqueue_many(ARRAY['a', 'b'], NULL, queue => 'w1b')");
	q1("SELECT awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('w1b', 2) c");
	my ($w, $pid) = start_waiter('w1b');
	is(q1("SELECT backend_xmin IS NULL AND backend_xid IS NULL FROM pg_stat_activity WHERE pid = $pid"), 't',
		'a waiter whose look walked claimed lanes sleeps with no snapshot and no xid');
	is(q1("SELECT string_agg(locktype, ',') FROM pg_locks WHERE pid = $pid"), 'virtualxid',
		'and holds no lock but its virtual xid');
	# What a prune's TRUNCATE takes, on the very ring children the waiter's
	# look read (the queue ring's current slot), without waiting. (Moved here
	# from case 4, where the open claim's own locks would refuse it.)
	my $slot = q1("SELECT current_slot FROM awa.storage_status() WHERE ring = 'queue'");
	is(q1(qq{BEGIN;
LOCK TABLE awa.ready_entries_$slot, awa.ready_claim_attempt_batches_$slot,
           awa.ready_tombstones_$slot IN ACCESS EXCLUSIVE MODE NOWAIT;
SELECT 'locked';
ROLLBACK;}), 'locked', 'a prune is not blocked by a sleeping claim: the ring children it looked at lock at once');
	my $job = enqueue('w1b');
	is(result_of($w), "got:$job", 'and gets the next job');
	$w->quit;
}

# 2. A rolled-back enqueue does not end the wait; the next commit does.
{
	my ($w, $pid) = start_waiter('w2');
	q1("BEGIN; SELECT awa.enqueue('k', '{}', queue => 'w2'); ROLLBACK;");
	wait_until_sleeping($pid);
	my $job = enqueue('w2');
	is(result_of($w), "got:$job", 'after a rolled-back enqueue the waiter sleeps on and gets the next job');
	$w->quit;
}

# 3. Two waiters, one job at a time: each job goes to exactly one of them.
{
	my ($a, $pa) = start_waiter('w3');
	my ($b, $pb) = start_waiter('w3');
	my $j1 = enqueue('w3');
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE pid IN ($pa, $pb) AND wait_event = 'Extension'")
	  or die 'neither waiter returned';
	my $j2 = enqueue('w3');
	my @got = sort (result_of($a), result_of($b));
	is_deeply(\@got, [ sort("got:$j1", "got:$j2") ], 'two waiters and two jobs: one job each');
	$a->quit;
	$b->quit;
}

# 4. A claim that rolls back gives its job to a waiter.
{
	my $job = enqueue('w4');
	my $holder = $node->background_psql('postgres');
	$holder->query_safe("BEGIN; SELECT job_id FROM awa.claim('w4', 1);");
	my ($w, $pid) = start_waiter('w4');
	is(q1("SELECT string_agg(locktype, ',') FROM pg_locks WHERE pid = $pid"), 'virtualxid',
		'a waiter that looked at a lane with claimed jobs released every lock before it slept');
	$holder->query_safe('ROLLBACK');
	is(result_of($w), "got:$job", 'the rollback of a claim wakes a waiter with the job');
	$holder->quit;
	$w->quit;
}

# 5. A paused queue: its waiter sleeps on; resuming wakes it.
{
	q1("SELECT awa.pause_queue('w5')");
	my $job = enqueue('w5');
	my ($w, $pid) = start_waiter('w5');
	q1("SELECT awa.resume_queue('w5')");
	is(result_of($w), "got:$job", 'resume_queue wakes the waiter of a paused queue');
	$w->quit;
}

# 6. A scheduled job is promoted by the worker at its run_at, which wakes the waiter.
{
	my ($w, $pid) = start_waiter('w6');
	my $job = q1("SELECT awa.enqueue('k', '{}', queue => 'w6', run_at => now() + interval '1 second')");
	is(result_of($w), "got:$job", 'the promotion of a scheduled job wakes the waiter');
	$w->quit;
}

# 7. A retried job comes back at its run_at to a waiter.
{
	my $job = enqueue('w7');
	q1(qq{SELECT awa.retry(c.job_id, c.run_lease, c.receipt_id, 'boom', interval '1 second')
	        FROM awa.claim('w7', 1) c});
	my ($w, $pid) = start_waiter('w7');
	is(result_of($w), "got:$job", 'the promotion of a retried job wakes the waiter');
	$w->quit;
}

# 8. The wait passes with nothing to claim: no row, no error.
is(q1("SELECT count(*) FROM awa.claim('w8', 1, NULL, '200 milliseconds')"), '0',
	'a waiting claim with nothing to claim returns no row once its wait has passed');

# 9. Cancel and statement_timeout end a sleeping claim with 57014.
{
	my ($w, $pid) = start_waiter('w9');
	q1("SELECT pg_cancel_backend($pid)");
	my ($out, $ret) = $w->query("SELECT 'end'");
	like($w->{stderr}, qr/canceling statement due to user request/, 'pg_cancel_backend ends a sleeping claim');
	$w->quit;
	my ($rc, $stdout, $stderr) = $node->psql('postgres',
		"SET statement_timeout = '300ms'; SELECT * FROM awa.claim('w9', 1, NULL, $LONG)",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($stderr, qr/57014/, 'statement_timeout ends a sleeping claim (SQLSTATE 57014)');
}

# 10. Inside a transaction block the waiter works too; its snapshot stays
# (a later statement of the block may read with it).
{
	my ($w, $pid) = start_waiter('w10', pre => "BEGIN;\n");
	is(q1("SELECT backend_xmin IS NOT NULL FROM pg_stat_activity WHERE pid = $pid"), 't',
		'inside a transaction block the sleeping claim keeps its snapshot');
	my $job = enqueue('w10');
	is(result_of($w), "got:$job", 'a waiter inside a transaction block is woken by an enqueue');
	$w->query_safe('COMMIT');
	$w->quit;
}

# 11. A batch waiter returns every job of the enqueue that woke it.
{
	my ($w, $pid) = start_waiter('w11', max => 10);
	my $ids = q1("SELECT string_agg(id::text, ',' ORDER BY id) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[3]), array_fill('{}'::jsonb, ARRAY[3]), queue => 'w11') id");
	is(result_of($w), "got:$ids", 'a waiter for up to 10 jobs gets the 3 of the enqueue that woke it');
	$w->quit;
}

# 12. A claimer that finds every lane busy waits for the lane (awa.lane_wait_timeout)
# instead of returning nothing: here the first claim keeps its lane lock until
# it commits (awa.early_lane_release = off), and the second claimer, asleep
# meanwhile, gets the next two jobs once it does.
{
	q1("SELECT awa.enqueue_many(ARRAY['j1', 'j2', 'j3', 'j4'], NULL, queue => 'w12')");
	my $holder = $node->background_psql('postgres');
	$holder->query_safe("SET awa.early_lane_release = off; BEGIN; SELECT job_id FROM awa.claim('w12', 2);");
	my $second = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $second->query_safe('SELECT pg_backend_pid()');
	$second->query_until(qr/waiting\n/,
		"\\echo waiting\nSET awa.lane_wait_timeout = '1min';\nSELECT 'got:' || string_agg(kind, ',' ORDER BY kind) FROM awa.claim('w12', 2);\n");
	wait_until_sleeping($pid);
	is(q1("SELECT count(*) FROM pg_locks WHERE pid = $pid AND NOT granted"), '0',
		'a claimer waiting for a busy lane waits in no lock queue (it sleeps until the lane is released)');
	$holder->query_safe('COMMIT');
	my ($out) = $second->query("SELECT 'end'");
	like($out, qr/got:j3,j4/, 'the claimer waiting for the lane gets the next jobs once the holder commits');
	$holder->quit;
	$second->quit;
}

# 13. An error inside a look (here statement_timeout while the look waits for a
# lane another transaction keeps) ends the claim with that error, and leaves
# the session usable: the look's subtransaction is rolled back first.
{
	q1("SELECT awa.enqueue_many(ARRAY['x1', 'x2'], NULL, queue => 'w13')");
	my $holder = $node->background_psql('postgres');
	$holder->query_safe("SET awa.early_lane_release = off; BEGIN; SELECT job_id FROM awa.claim('w13', 1);");
	my ($rc, $stdout, $stderr) = $node->psql('postgres', qq{
SET awa.lane_wait_timeout = '1min';
SET statement_timeout = '300ms';
SELECT * FROM awa.claim('w13', 1, NULL, '1 minute');
RESET statement_timeout;
SELECT 'usable:' || count(*) FROM pg_class WHERE relname = 'pg_class';}, on_error_stop => 0, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($stderr, qr/57014/, 'an error inside a look is raised with its SQLSTATE (57014)');
	like($stdout, qr/usable:1/, 'and the session goes on (no aborted transaction block is left behind)');
	$holder->query_safe('ROLLBACK');
	$holder->quit;
}

$node->stop;
done_testing();
