# 051_open_claims_frontier.pl
#
# Claims past open claims (docs/architecture.md, "Claims past an open claim"),
# seeded and random, with the queue as oracle. Claims after a claim held open
# start at the lane's in-flight frontier; an open claim that rolls back (or
# whose backend is terminated) must leave its job claimable again, and the
# frontier must never pass it. Each round, with the worker on at its default
# cadence:
#   - 1 to 3 holders each BEGIN and claim 1 to 3 jobs, and stay open;
#   - a stream of 1,100 to 1,500 single-job claims, each committed, runs past
#     them (so that walks start at the lane's frontier, kFrontierMinLag);
#   - each holder then commits, rolls back or is terminated, in random order,
#     with more committed claims in between.
# At the end every job is drained. Asserted: every job was claimed by exactly
# one committed claim (the rolled-back and terminated holders' jobs by a later
# one), none twice, none left; queue_counts = queue_counts_exact; no ERROR in
# the server log but the terminations'. The seed is printed; STRESS_SEED
# replays a run. Without the abort lowering the frontier, a rolled-back
# holder's job is never claimed again while other claims stay in flight.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $seed = $ENV{STRESS_SEED} // int(rand(1_000_000_000));
srand($seed);
note("STRESS_SEED=$seed; replay: STRESS_SEED=$seed make tapcheck PROVE_TESTS=test/t/051_open_claims_frontier.pl");

my $node = start_awa_node('frontier', maintenance => 1, conf => "max_connections = 30\n");
sub q1 { return $node->safe_psql('postgres', $_[0]); }

my $total = 30_000;
q1(qq{SELECT count(*) FROM awa.enqueue_many(array_fill('f'::text, ARRAY[$total]), NULL, 'fr')});
q1(q{CREATE TABLE delivered (job_id bigint, run_lease bigint)});
q1(q{GRANT ALL ON delivered TO PUBLIC});

# One committed single-job claim per statement; returns how many were claimed.
sub stream
{
	my ($n) = @_;
	return q1(qq{
		DO \$\$ DECLARE r record; BEGIN
		  FOR i IN 1..$n LOOP
		    INSERT INTO delivered SELECT job_id, run_lease FROM awa.claim('fr', 1);
		    COMMIT;
		  END LOOP;
		END \$\$;});
}

my %outcomes = (commit => 0, rollback => 0, terminate => 0);
for my $round (1 .. 12)
{
	my @holders;
	for (1 .. 1 + int(rand(3)))
	{
		my $h = $node->background_psql('postgres', on_error_stop => 0);
		my $pid = $h->query_safe('SELECT pg_backend_pid()');
		$h->query_safe('BEGIN');
		my $k = 1 + int(rand(3));
		my $jobs = $h->query_safe(qq{
			WITH c AS (INSERT INTO delivered SELECT job_id, run_lease FROM awa.claim('fr', $k) RETURNING job_id)
			SELECT string_agg(job_id::text, ',' ORDER BY job_id) FROM c});
		push @holders, [ $h, $pid, $k, $jobs ];
		stream(int(rand(100)));
	}
	# More than kFrontierMinLag (1,024) lanes past the holders, so that the
	# walks after them start at the frontier.
	stream(1100 + int(rand(400)));
	my @order = sort { rand() <=> 0.5 } @holders;
	while (my $held = shift @order)
	{
		my ($h, $pid, $k, $jobs) = @$held;
		my $end = (qw(commit rollback terminate))[ int(rand(3)) ];
		$outcomes{$end}++;
		if ($end eq 'commit') { $h->query_safe('COMMIT'); $h->quit; }
		elsif ($end eq 'rollback') { $h->query_safe('ROLLBACK'); $h->quit; }
		else
		{
			q1("SELECT pg_terminate_backend($pid, 10000)");
			eval { $h->quit; };
		}
		# An aborted holder's jobs are the lowest unclaimed ones: the next
		# claim takes exactly them, also while other holders stay open
		# (the walk may start at the frontier then; it must not pass them).
		if ($end ne 'commit')
		{
			my $next = q1(qq{
				WITH c AS (INSERT INTO delivered SELECT job_id, run_lease FROM awa.claim('fr', $k) RETURNING job_id)
				SELECT string_agg(job_id::text, ',' ORDER BY job_id) FROM c});
			is($next, $jobs, "round $round: the $end holder's jobs are claimed next (" . scalar(@order) . " holders still open)");
		}
		stream(int(rand(150)));
	}
}
note(join(' ', map { "$_=$outcomes{$_}" } sort keys %outcomes));

# Drain the rest (batches of 100, each committed).
for (1 .. 200)
{
	last if q1(q{SELECT available FROM awa.queue_counts('fr')}) == 0;
	q1(q{INSERT INTO delivered SELECT job_id, run_lease FROM awa.claim('fr', 100)});
}

is(q1(q{SELECT available FROM awa.queue_counts('fr')}), '0', 'every job was claimed');
is(q1(q{SELECT count(DISTINCT job_id) FROM delivered}), $total, "each of the $total jobs was delivered");
is(q1(q{SELECT count(*) FROM (SELECT job_id FROM delivered GROUP BY job_id HAVING count(*) > 1) d}),
	'0', 'no job was delivered to two committed claims');
# The rolled-back and terminated holders' rows are in `delivered` too (their
# inserts rolled back with them): only committed claims count.
is(q1(q{SELECT count(*) FROM delivered WHERE run_lease <> 1}), '0',
	'each was claimed once: its first run lease');
is(q1(q{SELECT (SELECT row(c.*)::text FROM awa.queue_counts('fr') c) = (SELECT row(e.*)::text FROM awa.queue_counts_exact('fr') e)}),
	't', 'queue_counts = queue_counts_exact');
my $log = slurp_file($node->logfile);
my @errors = grep { !/terminating connection due to administrator command/ && !/connection to client lost/ }
  ($log =~ /^.*(?:ERROR|PANIC|FATAL):.*$/mg);
is(scalar(@errors), 0, 'no ERROR in the server log') or diag(join("\n", @errors[ 0 .. ($#errors < 9 ? $#errors : 9) ]));

$node->stop;
done_testing();
