# 039_limits_ledger.pl
#
# Flow-control limits are exact under races (issue 21 §5): 64 pgbench
# claimers, the maintenance worker on at its default cadence, against
#   la: max_running 5;
#   lb: rate_limit '50 per 1 second', burst 10;
#   lc: max_running 3 and rate_limit '50 per 1 second', burst 10.
# Each transaction of a consumer picks a queue and up to 10 jobs, then at
# random: completes them, retries them (delay 0), claims them in a
# transaction it rolls back, or claims them with its 2-second deadline and
# never ends them (the worker rescues them); the test kills some consumers
# (pg_terminate_backend) while they run, and crashes the server
# ($node->stop('immediate')) between two chaotic phases. Then calm consumers
# (complete only) drain the queues.
#
# The ledger (plain tables, written by the consumers in the transactions
# whose effect they record, so a rolled-back or lost transaction takes its
# ledger row with it):
#   lstart(queue, job_id, run_lease, attempt, b, s): one row per job a claim
#     returned, in the claim's statement; b = statement_timestamp() (taken
#     before the claim ran), s = clock_timestamp() (taken after awa.claim
#     returned: its result is materialized before the first row is read).
#   lend(job_id, run_lease, e, how): one row per accepted complete or retry,
#     in the statement that ends the attempt; e = clock_timestamp() before
#     that transaction commits.
#   lrb(queue, n, b, e): a claim that was rolled back: how many jobs it got,
#     b and e as above, written after the ROLLBACK (a consumer killed in
#     between leaves no row: the ledger then holds fewer starts, never more).
#   Rescues: awa's own record, the job's error history (awa.get_job ->
#     'errors': {"attempt", "error", "at"}, "at" = clock_timestamp() in the
#     worker's rescue transaction, before its commit).
#
# Why a broken limit shows in the ledger:
#   Concurrency. A claim reserves its slots (running_limits.hpp) before s is
#   taken, and the slot is held (reserved, then running) until the counters
#   take the attempt out of running, after the commit of its end, after e.
#   So each ledger interval [s, e] lies inside the time the attempt held its
#   slot, and at any instant the intervals that contain it are at most the
#   slots held then: max_running. A claim that gets a slot it should not
#   (the limit not reserved, or freed early) makes one more interval overlap
#   the others for as long as it runs (milliseconds to seconds here). Ties
#   are counted ends first (an end's e precedes the next start's s in real
#   time).
#   Rate. A claim takes its tokens at one instant t inside [b, s] (under the
#   bucket's spinlock, then gives back what it did not use before awa.claim
#   returns); rolled-back claims keep theirs, so lrb counts them too. Over
#   any window [x, y] the claims that used tokens in it are at most
#   rate * (y - x) + burst; the ledger counts, for every window from a b to an
#   s or e, the jobs whose whole [b, s] lies inside it, which can only be
#   fewer. So a check of every such window (x at every b, y at every end)
#   fails as soon as the claims start more than the bucket allows over any
#   stretch. A restart starts the bucket empty, so windows that span it obey
#   the same bound (the docs' promise).
#   No lost slot. Every job ends up completed exactly once and the queues
#   drain to nothing available, running, scheduled or retryable, polled
#   (no timing assertion); every started attempt has exactly one end (an
#   accepted completion or retry, or a rescue), every rescue one start.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time usleep);

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('ledger', maintenance => 1);
sub q1 { return $node->safe_psql('postgres', $_[0]); }

my %jobs = (la => 1200, lb => 700, lc => 700);
my %limit = (la => 5, lc => 3);
my ($rate, $burst) = (50, 10);    # per second, both rate-limited queues

q1(q{
  CREATE TABLE lstart (queue text, job_id bigint, run_lease bigint, attempt int, b timestamptz, s timestamptz);
  CREATE TABLE lend (job_id bigint, run_lease bigint, e timestamptz, how text);
  CREATE TABLE lrb (queue text, n bigint, b timestamptz, e timestamptz);
  SELECT awa.configure_queue('la', max_running => 5);
  SELECT awa.configure_queue('lb', rate_limit => '50 per 1 second', burst => 10);
  SELECT awa.configure_queue('lc', max_running => 3, rate_limit => '50 per 1 second', burst => 10);
});
for my $q (sort keys %jobs)
{
	q1("SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[$jobs{$q}]), NULL, '$q')");
}

# The consumer. $chaos 1: the random endings above; 0: claim and complete.
# act (1..100): 1-4 a claim rolled back; 5-7 abandon (first attempts only:
# a rescue's backoff is 2^attempt s); 8-17 retry (attempts 1-2); else
# complete, half of those in an explicit transaction that holds the end open
# a moment (a kill there leaves the attempt running until its rescue).
sub consumer_script
{
	my ($chaos) = @_;
	my $act = $chaos ? 'random(1, 100)' : '100';
	return <<"SQL";
\\set qn random(1, 3)
\\set act $act
\\set mj random(1, 10)
\\set hold random(0, 10)
\\if :act <= 4
BEGIN;
SELECT count(*) AS rbn, statement_timestamp() AS rbb, clock_timestamp() AS rbe
  FROM awa.claim((ARRAY['la','lb','lc'])[:qn], :mj, '2 seconds') \\gset
\\sleep :hold ms
ROLLBACK;
INSERT INTO lrb SELECT (ARRAY['la','lb','lc'])[:qn], :rbn, :rbb, :rbe WHERE :rbn > 0;
\\else
WITH c AS (SELECT * FROM awa.claim((ARRAY['la','lb','lc'])[:qn], :mj, '2 seconds')),
     logged AS (INSERT INTO lstart SELECT queue, job_id, run_lease, attempt, statement_timestamp(), clock_timestamp()
                  FROM c RETURNING 1)
SELECT count(*) AS n, coalesce(array_agg(job_id), '{}') AS j, coalesce(array_agg(run_lease), '{}') AS l,
       coalesce(array_agg(receipt_id), '{}') AS r, coalesce(max(attempt), 0) AS att FROM c \\gset
\\if :n > 0
\\sleep :hold ms
\\if :act <= 7 and :att = 1
SELECT 'abandoned';
\\elif :act <= 17 and :att <= 2
INSERT INTO lend SELECT job_id, run_lease, clock_timestamp(), 'retry'
  FROM unnest(:j::bigint[], :l::bigint[], :r::bigint[]) AS u(job_id, run_lease, receipt_id)
 WHERE awa.retry(job_id, run_lease, receipt_id, 'ledger retry', 0) = 'retryable';
\\elif :act <= 58
BEGIN;
INSERT INTO lend SELECT u.job_id, u.run_lease, clock_timestamp(), 'complete'
  FROM awa.complete_many(:j, :l, :r) c JOIN unnest(:j::bigint[], :l::bigint[]) AS u(job_id, run_lease) USING (job_id)
 WHERE c.accepted;
\\sleep :hold ms
COMMIT;
\\else
INSERT INTO lend SELECT u.job_id, u.run_lease, clock_timestamp(), 'complete'
  FROM awa.complete_many(:j, :l, :r) c JOIN unnest(:j::bigint[], :l::bigint[]) AS u(job_id, run_lease) USING (job_id)
 WHERE c.accepted;
\\endif
\\else
\\sleep 5 ms
\\endif
\\endif
SQL
}

sub start_consumers
{
	my ($name, $chaos, $clients) = @_;
	my $file = $node->basedir . "/$name.sql";
	open my $fh, '>', $file or die "cannot write $file: $!";
	print $fh consumer_script($chaos);
	close $fh;
	my ($out, $err) = ('', '');
	my @cmd = (
		$node->installed_command('pgbench'), '-n', '-M', 'prepared',
		'-h', $node->host, '-p', $node->port, '-f', $file,
		'-c', $clients, '-T', 600, 'dbname=postgres application_name=ledger_consumer');
	my $h = IPC::Run::start(\@cmd, '>', \$out, '2>', \$err);
	return { h => $h, out => \$out, err => \$err };
}

sub stop_consumers
{
	my ($run) = @_;
	$run->{h}->signal('TERM');
	eval { $run->{h}->finish; };
	# (A script error shows here; kills and the crash abort clients.)
	note(join "\n", grep { /error|abort/i } split /\n/, ${ $run->{err} });
	return;
}

# A chaotic phase: 64 consumers until each queue has seen $until more starts
# (or 60 s), killing $kills of them on the way. Returns the pgbench run and
# how many were killed.
sub chaotic_phase
{
	my ($name, $until, $kills) = @_;
	my $progress = sub {
		return q1(q{SELECT min((SELECT count(*) FROM lstart s WHERE s.queue = q))
		  FROM unnest(ARRAY['la', 'lb', 'lc']) q});
	};
	my $base = $progress->();
	my $run = start_consumers($name, 1, 64);
	my $started = time;
	my $killed = 0;
	while (time - $started < 60)
	{
		usleep(300_000);
		last if $progress->() - $base >= $until && $killed >= $kills;
		if ($killed < $kills && time - $started > 0.5 * (1 + $killed))
		{
			$killed += q1(q{SELECT count(pg_terminate_backend(pid)) FROM (SELECT pid FROM pg_stat_activity
			  WHERE application_name = 'ledger_consumer' ORDER BY random() LIMIT 1) p});
		}
	}
	return ($run, $killed);
}

# Phase 1, then a crash with attempts open, then phase 2.
my ($run1, $killed1) = chaotic_phase('chaos1', 150, 4);
my $crash_at = q1('SELECT clock_timestamp()');
$node->stop('immediate');
stop_consumers($run1);
$node->start;
my ($run2, $killed2) = chaotic_phase('chaos2', 300, 4);
stop_consumers($run2);
cmp_ok($killed1 + $killed2, '>', 0, 'consumers were killed mid-run (' . ($killed1 + $killed2) . ')');

# Calm consumers drain every queue; a slot lost for good would stop one.
my $calm = start_consumers('calm', 0, 16);
my $drained = $node->poll_query_until('postgres', q{
  SELECT bool_and(available = 0 AND running = 0 AND scheduled = 0 AND retryable = 0)
    FROM awa.queue_counts_exact(NULL) WHERE queue IN ('la', 'lb', 'lc')});
stop_consumers($calm);
ok($drained, 'every limited queue drained to nothing available, running, scheduled or retryable');
$node->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'ledger_consumer'})
  or die 'pgbench backends did not exit';

# The rescues, from awa's record.
q1(q{CREATE TABLE lrescue AS
  SELECT s.queue, s.job_id, s.run_lease, (x ->> 'at')::timestamptz AS e, x ->> 'error' AS error
    FROM (SELECT DISTINCT queue, job_id FROM lstart) j
    CROSS JOIN LATERAL jsonb_array_elements(awa.get_job(j.job_id) -> 'errors') x
    LEFT JOIN lstart s ON s.job_id = j.job_id AND s.attempt = (x ->> 'attempt')::int
   WHERE x ->> 'error' <> 'ledger retry'});
q1(q{CREATE TABLE lrun AS
  SELECT s.queue, s.job_id, s.run_lease, s.s, coalesce(d.e, r.e) AS e, (d.e IS NOT NULL)::int + (r.e IS NOT NULL)::int AS ends
    FROM lstart s LEFT JOIN lend d USING (job_id, run_lease) LEFT JOIN lrescue r USING (job_id, run_lease)});

for my $q (sort keys %jobs)
{
	is(q1(qq{SELECT count(*) || '/' || count(DISTINCT job_id) FROM lend d JOIN lstart s USING (job_id, run_lease)
	  WHERE s.queue = '$q' AND d.how = 'complete'}), "$jobs{$q}/$jobs{$q}", "$q: every job completed exactly once");
}
my ($attempts, $rescues, $retries, $rolled) = split /\|/, q1(q{SELECT (SELECT count(*) FROM lstart),
  (SELECT count(*) FROM lrescue), (SELECT count(*) FROM lend WHERE how = 'retry'), (SELECT coalesce(sum(n), 0) FROM lrb)});
note("ledger: $attempts attempts started, $rescues rescued, $retries retried, $rolled jobs claimed in rolled-back claims");
cmp_ok($rescues, '>', 0, 'the worker rescued attempts');
cmp_ok($retries, '>', 0, 'attempts were retried');
cmp_ok($rolled, '>', 0, 'claims were rolled back');
is(q1(q{SELECT count(*) FROM lrun WHERE ends <> 1}), '0', 'every started attempt has exactly one end');
is(q1(q{SELECT count(*) FROM lrescue WHERE run_lease IS NULL}), '0', 'every rescue ended a started attempt');
is(q1(q{SELECT count(*) FROM lstart GROUP BY job_id, run_lease HAVING count(*) > 1}), '', 'no attempt started twice');
# The crash came with attempts open (they hold their slots after it, until
# their rescue), and claims started attempts after it: the checks below span
# the restart.
my ($across, $after) = split /\|/, q1(qq{SELECT count(*) FILTER (WHERE s < '$crash_at' AND e > '$crash_at'),
  count(*) FILTER (WHERE s > '$crash_at') FROM lrun});
cmp_ok($across, '>', 0, "attempts were open across the crash ($across)");
cmp_ok($after, '>', 0, "attempts started after the restart ($after)");

# Concurrency: the most ledger intervals open at once (ends first at ties).
for my $q (sort keys %limit)
{
	my $max = q1(qq{SELECT coalesce(max(open), 0) FROM (
	  SELECT sum(d) OVER (ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS open
	    FROM (SELECT s AS t, 1 AS d FROM lrun WHERE queue = '$q' UNION ALL SELECT e, -1 FROM lrun WHERE queue = '$q') ev) x});
	cmp_ok($max, '<=', $limit{$q}, "$q: never more than $limit{$q} attempts running (ledger max $max)");
	cmp_ok($max, '>', 0, "$q: attempts ran");
}

# Rate: for every window from a b to a later end, the token takers whose
# [b, end] lies inside it; the most over rate * length must be at most the burst.
for my $q (qw(lb lc))
{
	my ($worst, $n) = split /\|/, q1(qq{
	  WITH t AS (SELECT b, s AS e, 1::bigint AS n FROM lstart WHERE queue = '$q'
	             UNION ALL SELECT b, e, n FROM lrb WHERE queue = '$q'),
	       x AS (SELECT DISTINCT b AS x FROM t),
	       w AS (SELECT x.x, t.e, sum(t.n) OVER (PARTITION BY x.x ORDER BY t.e) AS taken
	               FROM x JOIN t ON t.b >= x.x)
	  SELECT round(max(taken - $rate * extract(epoch FROM e - x))::numeric, 3), (SELECT sum(n) FROM t) FROM w});
	cmp_ok($worst, '<=', $burst + 0.000001,
		"$q: no window started more than $rate per second + burst $burst ($n started; worst window: rate x length + $worst)");
	cmp_ok($n, '>', $burst, "$q: claims took more than a burst");
}

$node->stop;
done_testing();
