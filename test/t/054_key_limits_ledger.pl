# 054_key_limits_ledger.pl
#
# Limits per concurrency key are exact under races (issue 21 §2, §4, §5): 64
# pgbench claimers, the maintenance worker on at its default cadence, against
# one queue with fairness 'key', key_max_running 2, key_rate_limit
# '25 per 1 second' and key_burst 5, holding jobs of eight keys (k1..k4 at
# priority 2; k5..k8 half at priority 1 and half at priority 3, so one key's
# running attempts must be counted over two priorities) and jobs without a
# key (no key limit). Each consumer transaction claims up to 10 jobs (a claim
# takes the jobs of one key), then at random completes them, retries them
# (delay 0), claims them in a transaction it rolls back, or abandons them
# with its 2-second deadline (the worker rescues them); consumers are killed
# (pg_terminate_backend) mid-run, and the server crashes
# ($node->stop('immediate')) between two chaotic phases. Then calm consumers
# drain the queue.
#
# The ledger and why a broken limit shows in it are 039_limits_ledger.pl's,
# per key instead of per queue: a claim reserves its key's slots and takes
# its key's tokens (src/pg/key_limits.hpp) inside [b, s] of its ledger row,
# and a slot is held until the counters take the attempt out of the key's
# running, after the commit of its end (after e). So at any instant the
# ledger intervals [s, e] of one key that contain it are at most
# key_max_running, and over any window the token takers of one key are at
# most rate x length + burst. A slot lost for good stops its key: the calm
# phase would not drain.
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

my $node = start_awa_node('keyledger', maintenance => 1);
sub q1 { return $node->safe_psql('postgres', $_[0]); }

my $per_key = 120;
my $unkeyed = 200;
my ($limit, $rate, $burst) = (2, 25, 5);

q1(qq{
  CREATE TABLE lstart (key text, job_id bigint, run_lease bigint, attempt int, b timestamptz, s timestamptz);
  CREATE TABLE lend (job_id bigint, run_lease bigint, e timestamptz, how text);
  CREATE TABLE lrb (key text, n bigint, b timestamptz, e timestamptz);
  SELECT awa.configure_queue('kq', fairness => 'key', key_max_running => $limit,
                             key_rate_limit => '$rate per 1 second', key_burst => $burst);
  SELECT count(*) FROM (
    SELECT awa.enqueue('k', jsonb_build_object('key', 'k' || k), 'kq',
                       priority => CASE WHEN k <= 4 THEN 2 WHEN i % 2 = 0 THEN 1 ELSE 3 END,
                       opts => jsonb_build_object('concurrency_key', 'k' || k))
      FROM generate_series(1, 8) k, generate_series(1, $per_key) i) x;
  SELECT count(*) FROM (SELECT awa.enqueue('k', '{"key": "-"}', 'kq') FROM generate_series(1, $unkeyed)) y;
});

# The consumer. $chaos 1: the random endings above; 0: claim and complete.
sub consumer_script
{
	my ($chaos) = @_;
	my $act = $chaos ? 'random(1, 100)' : '100';
	return <<"SQL";
\\set act $act
\\set mj random(1, 10)
\\set hold random(0, 10)
\\if :act <= 4
BEGIN;
SELECT count(*) AS rbn, coalesce(max(nullif(substr(args ->> 'key', 2), '')::int), 0) AS rbk,
       statement_timestamp() AS rbb,
       clock_timestamp() AS rbe
  FROM awa.claim('kq', :mj, '2 seconds') \\gset
\\sleep :hold ms
ROLLBACK;
INSERT INTO lrb SELECT CASE WHEN :rbk = 0 THEN '-' ELSE 'k' || :rbk END, :rbn, :rbb, :rbe WHERE :rbn > 0;
\\else
WITH c AS (SELECT * FROM awa.claim('kq', :mj, '2 seconds')),
     logged AS (INSERT INTO lstart SELECT args ->> 'key', job_id, run_lease, attempt, statement_timestamp(),
                                          clock_timestamp()
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
		'-c', $clients, '-T', 600, 'dbname=postgres application_name=key_ledger_consumer');
	my $h = IPC::Run::start(\@cmd, '>', \$out, '2>', \$err);
	return { h => $h, out => \$out, err => \$err };
}

sub stop_consumers
{
	my ($run) = @_;
	$run->{h}->signal('TERM');
	eval { $run->{h}->finish; };
	note(join "\n", grep { /error|abort/i } split /\n/, ${ $run->{err} });
	return;
}

# A chaotic phase: 64 consumers until the keyed jobs have seen $until more
# starts (or 60 s), killing $kills of them on the way.
sub chaotic_phase
{
	my ($name, $until, $kills) = @_;
	my $progress = sub { return q1(q{SELECT count(*) FROM lstart WHERE key <> '-'}); };
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
			  WHERE application_name = 'key_ledger_consumer' ORDER BY random() LIMIT 1) p});
		}
	}
	return ($run, $killed);
}

my ($run1, $killed1) = chaotic_phase('chaos1', 250, 4);
my $crash_at = q1('SELECT clock_timestamp()');
$node->stop('immediate');
stop_consumers($run1);
$node->start;
my ($run2, $killed2) = chaotic_phase('chaos2', 400, 4);
stop_consumers($run2);
cmp_ok($killed1 + $killed2, '>', 0, 'consumers were killed mid-run (' . ($killed1 + $killed2) . ')');

# Calm consumers drain the queue; a key slot lost for good would stop a key.
my $calm = start_consumers('calm', 0, 16);
my $drained = $node->poll_query_until('postgres', q{
  SELECT available = 0 AND running = 0 AND scheduled = 0 AND retryable = 0
    FROM awa.queue_counts_exact('kq')});
stop_consumers($calm);
ok($drained, 'the queue drained to nothing available, running, scheduled or retryable');
$node->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'key_ledger_consumer'})
  or die 'pgbench backends did not exit';

q1(q{CREATE TABLE lrescue AS
  SELECT s.key, s.job_id, s.run_lease, (x ->> 'at')::timestamptz AS e
    FROM (SELECT DISTINCT job_id FROM lstart) j
    CROSS JOIN LATERAL jsonb_array_elements(awa.get_job(j.job_id) -> 'errors') x
    LEFT JOIN lstart s ON s.job_id = j.job_id AND s.attempt = (x ->> 'attempt')::int
   WHERE x ->> 'error' <> 'ledger retry'});
q1(q{CREATE TABLE lrun AS
  SELECT s.key, s.job_id, s.run_lease, s.s, coalesce(d.e, r.e) AS e, (d.e IS NOT NULL)::int + (r.e IS NOT NULL)::int AS ends
    FROM lstart s LEFT JOIN lend d USING (job_id, run_lease) LEFT JOIN lrescue r USING (job_id, run_lease)});

my $total = 8 * $per_key + $unkeyed;
is(q1(q{SELECT count(*) || '/' || count(DISTINCT job_id) FROM lend WHERE how = 'complete'}), "$total/$total",
	'every job completed exactly once');
my ($attempts, $rescues, $retries, $rolled) = split /\|/, q1(q{SELECT (SELECT count(*) FROM lstart),
  (SELECT count(*) FROM lrescue), (SELECT count(*) FROM lend WHERE how = 'retry'), (SELECT coalesce(sum(n), 0) FROM lrb)});
note("ledger: $attempts attempts started, $rescues rescued, $retries retried, $rolled jobs claimed in rolled-back claims");
cmp_ok($rescues, '>', 0, 'the worker rescued attempts');
cmp_ok($retries, '>', 0, 'attempts were retried');
cmp_ok($rolled, '>', 0, 'claims were rolled back');
is(q1(q{SELECT count(*) FROM lrun WHERE ends <> 1}), '0', 'every started attempt has exactly one end');
is(q1(q{SELECT count(*) FROM lrescue WHERE run_lease IS NULL}), '0', 'every rescue ended a started attempt');
my ($across, $after) = split /\|/, q1(qq{SELECT count(*) FILTER (WHERE s < '$crash_at' AND e > '$crash_at'),
  count(*) FILTER (WHERE s > '$crash_at') FROM lrun WHERE key <> '-'});
cmp_ok($across, '>', 0, "keyed attempts were open across the crash ($across)");
cmp_ok($after, '>', 0, "keyed attempts started after the restart ($after)");

# Concurrency per key: the most ledger intervals of one key open at once.
my $worst_key = q1(qq{SELECT key || ':' || open FROM (
  SELECT key, max(open) AS open FROM (
    SELECT key, sum(d) OVER (PARTITION BY key ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS open
      FROM (SELECT key, s AS t, 1 AS d FROM lrun UNION ALL SELECT key, e, -1 FROM lrun) ev) x
   WHERE key <> '-' GROUP BY key) y ORDER BY open DESC, key LIMIT 1});
my ($wk, $wmax) = split /:/, $worst_key;
cmp_ok($wmax, '<=', $limit, "no key ever had more than $limit attempts running (most: $wmax, key $wk)");
is(q1(q{SELECT count(DISTINCT key) FROM lstart WHERE key <> '-'}), '8', 'every key ran attempts');
# The jobs without a key have no key limit: more of them ran at once.
my $unkeyed_max = q1(q{SELECT coalesce(max(open), 0) FROM (
  SELECT sum(d) OVER (ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS open
    FROM (SELECT s AS t, 1 AS d FROM lrun WHERE key = '-' UNION ALL SELECT e, -1 FROM lrun WHERE key = '-') ev) x});
cmp_ok($unkeyed_max, '>', $limit, "jobs without a key ran more than $limit at once ($unkeyed_max)");

# Rate per key: over every window from a b to a later end, the token takers
# of one key whose [b, end] lies inside it.
my ($worst, $n) = split /\|/, q1(qq{
  WITH t AS (SELECT key, b, s AS e, 1::bigint AS n FROM lstart WHERE key <> '-'
             UNION ALL SELECT key, b, e, n FROM lrb WHERE key <> '-'),
       x AS (SELECT DISTINCT key, b AS x FROM t),
       w AS (SELECT x.key, x.x, t.e, sum(t.n) OVER (PARTITION BY x.key, x.x ORDER BY t.e) AS taken
               FROM x JOIN t ON t.key = x.key AND t.b >= x.x)
  SELECT round(max(taken - $rate * extract(epoch FROM e - x))::numeric, 3), (SELECT sum(n) FROM t) FROM w});
cmp_ok($worst, '<=', $burst + 0.000001,
	"no key's window started more than $rate per second + burst $burst ($n started; worst: rate x length + $worst)");

$node->stop;
done_testing();
