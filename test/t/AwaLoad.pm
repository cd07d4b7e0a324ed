# AwaLoad.pm: producer and consumer load for awa's TAP tests (008, 011), with
# a log that shows every claim and every accepted completion.
#
# For queue Q, three plain tables (insert-only) in database postgres:
#   Q_enq(job_id)                         one row per enqueued job (same statement as the enqueue)
#   Q_claim(job_id, run_lease, receipt)   one row per job handed out by a claim (same statement as the claim)
#   Q_done(job_id)                        one row per completion accepted (same statement as complete_many)
# So a job claimed twice has two Q_claim rows and a job completed twice two
# Q_done rows. Each statement is its own implicit transaction: a pgbench
# client stopped at any point leaves either both the awa change and its log
# row or neither. A consumer stopped between its claim and its completion
# leaves a logged open attempt; drain_load completes it with the logged
# receipt.
package AwaLoad;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

our @EXPORT = qw(create_load_log start_producers start_consumers stop_load drain_load check_exactly_once
  family_stats wait_producers_done);

sub create_load_log
{
	my ($node, $q) = @_;
	$node->safe_psql('postgres', qq{
		CREATE TABLE ${q}_enq (job_id bigint NOT NULL);
		CREATE TABLE ${q}_claim (job_id bigint NOT NULL, run_lease bigint NOT NULL, receipt_id bigint NOT NULL);
		CREATE TABLE ${q}_done (job_id bigint NOT NULL);
	});
}

sub _start_pgbench
{
	my ($node, $name, $script, %opts) = @_;
	my $file = $node->basedir . "/$name.sql";
	open my $fh, '>', $file or die "cannot write $file: $!";
	print $fh $script;
	close $fh;
	my ($out, $err) = ('', '');
	my @cmd = (
		$node->installed_command('pgbench'), '-n', '-M', 'prepared',
		'-h', $node->host, '-p', $node->port, '-f', $file,
		'-c', $opts{clients} // 1, '-T', $opts{seconds} // 600,
		(defined $opts{rate} ? ('-R', $opts{rate}) : ()), 'postgres');
	my $h = IPC::Run::start(\@cmd, '>', \$out, '2>', \$err);
	return { h => $h, out => \$out, err => \$err, name => $name };
}

# Producers: each transaction enqueues $opts{batch} (5) jobs on $q.
# $opts{rate}: transactions per second over all clients (pgbench -R).
sub start_producers
{
	my ($node, $q, %opts) = @_;
	my $batch = $opts{batch} // 5;
	return _start_pgbench($node, "${q}_producer", <<"SQL", %opts);
INSERT INTO ${q}_enq SELECT j FROM awa.enqueue_many(array_fill('k'::text, ARRAY[$batch]), NULL, '$q') j;
SQL
}

# Consumers: claim up to 10 jobs, complete them all in one complete_many.
sub start_consumers
{
	my ($node, $q, %opts) = @_;
	return _start_pgbench($node, "${q}_consumer", <<"SQL", %opts);
WITH c AS (SELECT job_id, run_lease, receipt_id FROM awa.claim('$q', 10)),
     logged AS (INSERT INTO ${q}_claim SELECT job_id, run_lease, receipt_id FROM c)
SELECT count(*) AS n, coalesce(array_agg(job_id), '{}') AS j, coalesce(array_agg(run_lease), '{}') AS l,
       coalesce(array_agg(receipt_id), '{}') AS r FROM c \\gset
\\if :n > 0
INSERT INTO ${q}_done SELECT job_id FROM awa.complete_many(:j, :l, :r) WHERE accepted;
\\else
\\sleep 5 ms
\\endif
SQL
}

# Stops a pgbench run (SIGTERM to pgbench; the server finishes and commits
# the statement in progress). Returns its stderr.
sub stop_load
{
	my ($run) = @_;
	$run->{h}->signal('TERM');
	eval { $run->{h}->finish; };
	return ${ $run->{err} };
}

# After the producers' pgbench was stopped: waits until no backend still runs
# an enqueue (a producer whose client was killed finishes and commits its
# statement in progress), so that "nothing available" afterwards is final.
sub wait_producers_done
{
	my ($node) = @_;
	$node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity
		  WHERE pid <> pg_backend_pid() AND state <> 'idle' AND query LIKE '%awa.enqueue%'")
	  or die 'producer backends did not finish';
	return;
}

# After producers and consumers have stopped: waits until no pgbench backend
# is left, then completes the attempts consumers left open (logged claims
# without an accepted completion).
sub drain_load
{
	my ($node, $q) = @_;
	# Every other client backend gone (not only those still named pgbench):
	# a consumer whose client was killed finishes and commits its last
	# statement (a claim and its log row) before it exits, and the open
	# claims are read only after that.
	$node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity
		  WHERE (application_name = 'pgbench' OR backend_type = 'client backend') AND pid <> pg_backend_pid()")
	  or die 'pgbench backends did not exit';
	# Complete what is open; once more after a pause, for a claim whose
	# commit raced the poll above (seen once: its claim committed as the
	# backend exited). A completion awa refuses stays open and fails
	# check_exactly_once.
	my $completed = 0;
	for my $round (1 .. 3)
	{
		$completed += $node->safe_psql('postgres', qq{
		WITH open AS (SELECT c.* FROM ${q}_claim c WHERE NOT EXISTS (SELECT 1 FROM ${q}_done d WHERE d.job_id = c.job_id)),
		     done AS (INSERT INTO ${q}_done
		              SELECT job_id FROM awa.complete_many((SELECT coalesce(array_agg(job_id), '{}') FROM open),
		                                                   (SELECT coalesce(array_agg(run_lease), '{}') FROM open),
		                                                   (SELECT coalesce(array_agg(receipt_id), '{}') FROM open))
		               WHERE accepted RETURNING 1)
		SELECT count(*) FROM done});
		usleep(500_000);
	}
	return $completed;
}

# Every enqueued job was claimed exactly once (run_lease 1) and completed
# exactly once; nothing is left available or running on $q.
sub check_exactly_once
{
	my ($node, $q, $label) = @_;
	my $n = $node->safe_psql('postgres', "SELECT count(*) FROM ${q}_enq");
	ok($n > 0, "$label: $n jobs enqueued");
	is($node->safe_psql('postgres', "SELECT count(DISTINCT job_id) FROM ${q}_enq"), $n,
		"$label: distinct job ids");
	is( $node->safe_psql('postgres',
			"SELECT count(*) || '/' || count(DISTINCT job_id) || '/' || count(*) FILTER (WHERE run_lease <> 1) FROM ${q}_claim"),
		"$n/$n/0", "$label: every claim log row is a distinct job, run_lease 1 ($n rows)");
	is( $node->safe_psql('postgres',
			"SELECT count(*) || '/' || count(DISTINCT job_id) FROM ${q}_done"),
		"$n/$n", "$label: every job completed exactly once ($n accepted completions)");
	is( $node->safe_psql('postgres', qq{
			SELECT count(*) FROM ((SELECT job_id FROM ${q}_enq EXCEPT SELECT job_id FROM ${q}_done)
			                      UNION ALL (SELECT job_id FROM ${q}_done EXCEPT SELECT job_id FROM ${q}_enq)) x}),
		'0', "$label: the completed jobs are the enqueued jobs");
	is( $node->safe_psql('postgres',
			"SELECT available || '/' || running || '/' || scheduled || '/' || retryable FROM awa.queue_counts_exact('$q')"),
		'0/0/0/0', "$label: queue_counts_exact: nothing available, running, scheduled or retryable");
	# The worker keeps pruning: a prune that commits between the counter read
	# and the exact pass moves completions out of one and not yet the other,
	# so the two are compared until they agree (a real drift never does).
	ok( $node->poll_query_until('postgres', qq{
			SELECT count(*) = 0 FROM ((SELECT * FROM awa.queue_counts(NULL) EXCEPT ALL SELECT * FROM awa.queue_counts_exact(NULL))
			  UNION ALL (SELECT * FROM awa.queue_counts_exact(NULL) EXCEPT ALL SELECT * FROM awa.queue_counts(NULL))) x}),
		"$label: queue_counts = queue_counts_exact");
}

# pg_stat_all_tables per awa table family (children summed):
# { family => { ins, upd, del, dead, max_dead, worst } } (worst: the child with most dead tuples).
sub family_stats
{
	my ($node) = @_;
	my %s;
	for my $row (split /\n/, $node->safe_psql('postgres', q{
		SELECT regexp_replace(relname, '_[0-9]+$', ''), sum(n_tup_ins), sum(n_tup_upd), sum(n_tup_del),
		       sum(n_dead_tup), max(n_dead_tup), (array_agg(relname ORDER BY n_dead_tup DESC))[1]
		  FROM pg_stat_all_tables WHERE schemaname = 'awa' GROUP BY 1}))
	{
		my ($f, $ins, $upd, $del, $dead, $max, $worst) = split /\|/, $row;
		$s{$f} = { ins => $ins, upd => $upd, del => $del, dead => $dead, max_dead => $max, worst => $worst };
	}
	return \%s;
}

1;
