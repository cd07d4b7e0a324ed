# 021_lost_claim_fenced.pl
#
# A lost claim's worker is fenced (issue 11 §1, src/pg/claim_fence.hpp).
# An asynchronous claim lost in a crash, or not yet replicated when a standby
# is promoted, is handed out again. Before the fence, the new attempt got
# the same (job_id, run_lease, receipt_id) as the lost one (claim_batch_id_seq
# lost its advance too), and the worker still running the lost attempt could
# heartbeat or complete the new one. Now every call with the lost triple is
# refused and the new attempt's calls are accepted.
#
# As in 001 and 004, the WAL writer is paused (SIGSTOP) and nothing else
# flushes, so the claim is certainly lost. The claim before the pause makes
# the run's fence (it flushes it itself); then a setval of
# claim_batch_id_seq to its own value (flushed) makes the lost claim's nextval
# the one that WAL-logs the sequence's next values, so that record is lost
# with the claim: without the fence, the re-claim draws the same batch id and
# the lost triple is the new attempt's (this test fails then).
#
# 1. Crash restart: the lost triple's heartbeat answers 'stale', its
#    complete false, its retry, snooze and fail 'stale'; the new triple's
#    heartbeat 'alive', and its complete true. The job is completed once.
# 2. Standby promotion: the same on the promoted standby.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $claim_sql = "SELECT job_id, run_lease, receipt_id FROM awa.claim('%s')";

# The claim made before the pause: it fences this server run.
sub warm_up
{
	my ($node) = @_;
	$node->safe_psql('postgres', "SELECT awa.enqueue('warm', '{}', 'warm')");
	my ($j, $l, $r) = split /\|/, $node->safe_psql('postgres', sprintf($claim_sql, 'warm'));
	$node->safe_psql('postgres', "SELECT awa.complete($j, $l, $r)");
	$node->safe_psql('postgres',
		"SELECT setval('awa.claim_batch_id_seq', (SELECT last_value FROM awa.claim_batch_id_seq))");
}

# Every call of the lost attempt is refused; the new attempt's are accepted.
sub check_fence
{
	my ($node, $label, $lost, $new) = @_;
	my ($job, $lease, $receipt) = @$lost;
	my ($n_job, $n_lease, $n_receipt) = @$new;
	is($n_job, $job, "$label: the lost claim's job is claimed again");
	is($n_lease, $lease, "$label: with the same run_lease (the lost attempt never happened)");
	isnt($n_receipt, $receipt, "$label: but another receipt id");
	my $q = sub { $node->safe_psql('postgres', $_[0]) };
	is($q->("SELECT awa.heartbeat($job, $lease, $receipt)"), 'stale', "$label: the lost attempt's heartbeat is stale");
	is($q->("SELECT awa.complete($job, $lease, $receipt)"), 'f', "$label: its complete is refused");
	is($q->("SELECT awa.retry($job, $lease, $receipt, 'late')"), 'stale', "$label: its retry is refused");
	is($q->("SELECT awa.snooze($job, $lease, $receipt, '1 hour')"), 'stale', "$label: its snooze is refused");
	is($q->("SELECT awa.fail($job, $lease, $receipt, 'late')"), 'stale', "$label: its fail is refused");
	is($q->("SELECT awa.get_job($job) ->> 'state'"), 'running', "$label: the job is still running the new attempt");
	is($q->("SELECT awa.heartbeat($n_job, $n_lease, $n_receipt)"), 'alive', "$label: the new attempt's heartbeat is alive");
	is($q->("SELECT awa.complete($n_job, $n_lease, $n_receipt)"), 't', "$label: the new attempt completes");
	is($q->("SELECT awa.get_job($job) ->> 'state'"), 'completed', "$label: the job is completed");
}

# ---------------------------------------------------------------------------
# 1. Crash restart
# ---------------------------------------------------------------------------
{
	my $node = start_awa_node('crash', conf => $QUIET_WAL_CONF . "wal_writer_delay = '10s'\n");
	warm_up($node);
	my $job = $node->safe_psql('postgres', "SELECT awa.enqueue('k', '{}', 'q')");
	pause_wal_writer($node);
	my @lost = split /\|/, $node->safe_psql('postgres', sprintf($claim_sql, 'q'));
	is($lost[0], $job, '1: claimed the job (asynchronous commit)');
	$node->stop('immediate');
	$node->start;
	my @new = split /\|/, $node->safe_psql('postgres', sprintf($claim_sql, 'q'));
	check_fence($node, '1 (crash)', \@lost, \@new);
	$node->stop;
}

# ---------------------------------------------------------------------------
# 2. Standby promotion
# ---------------------------------------------------------------------------
{
	my $primary = start_awa_node('primary', init => { allows_streaming => 1 },
		conf => $QUIET_WAL_CONF . "wal_writer_delay = '10s'\n");
	my $standby = start_streaming_standby($primary, 'standby');
	warm_up($primary);
	my $job = $primary->safe_psql('postgres', "SELECT awa.enqueue('k', '{}', 'q')");
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('flush'));
	pause_wal_writer($primary, 'primary WAL writer');
	my @lost = split /\|/, $primary->safe_psql('postgres', sprintf($claim_sql, 'q'));
	is($lost[0], $job, '2: the primary claimed the job (asynchronous commit)');
	$primary->stop('immediate');
	$standby->promote;
	$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die 'the standby was not promoted';
	my @new = split /\|/, $standby->safe_psql('postgres', sprintf($claim_sql, 'q'));
	check_fence($standby, '2 (promotion)', \@lost, \@new);
	$standby->stop;
}

done_testing();
