# 001_async_claim_lost_in_crash.pl
#
# A claim that runs as its own (implicit) transaction commits with
# synchronous_commit = off (awa.async_claim_commit = on, the default). If the
# server crashes before that commit record reaches the WAL files, the claim
# never happened: after crash recovery the job is claimable again with the
# same run_lease and the lane's claim cursor is not past it.
#
# Control: the identical sequence with awa.async_claim_commit = off commits the
# claim synchronously, so it survives the same crash. This proves the first
# half can fail (it would, if the claim were durable).
#
# Determinism: an async commit record can still reach the WAL files through the
# WAL writer (every wal_writer_delay, or when woken), through any XLogFlush
# (the bgwriter or a backend writing out a dirty buffer flushes all WAL
# inserted so far) or a checkpoint. So:
#   - the WAL writer is paused with SIGSTOP between the (synchronous) enqueue
#     and the immediate shutdown;
#   - bgwriter_lru_maxpages = 0: the bgwriter writes no buffers;
#   - shared_buffers = 128MB: no backend has to evict a dirty buffer;
#   - checkpoint_timeout = 1h, max_wal_size = 1GB: no checkpoint is due.
# The immediate shutdown then discards the unwritten WAL buffers (the
# postmaster SIGKILLs the stopped WAL writer after 5 s).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('main', conf => $QUIET_WAL_CONF . "wal_writer_delay = '10s'\n");

is($node->safe_psql('postgres', 'SHOW synchronous_commit'),
	'on', 'enqueues commit synchronously (synchronous_commit = on)');
is($node->safe_psql('postgres', 'SHOW awa.async_claim_commit'),
	'on', 'awa.async_claim_commit defaults to on');

my $claim_sql = "SELECT job_id, run_lease, receipt_id, attempt FROM awa.claim('%s')";

# ---------------------------------------------------------------------------
# 1. Asynchronous claim, lost in the crash.
# ---------------------------------------------------------------------------
my $job = $node->safe_psql('postgres', "SELECT awa.enqueue('k', '{}', 'q')");
like($job, qr/^\d+$/, 'enqueued one job on q');

pause_wal_writer($node);

# One psql statement in autocommit mode: an implicit transaction, so the claim
# commits asynchronously.
my $claimed = $node->safe_psql('postgres', sprintf($claim_sql, 'q'));
my ($c_job, $c_lease, $c_receipt, $c_attempt) = split /\|/, $claimed;
is($c_job,     $job, 'claim returned the job');
is($c_lease,   '1',  'first claim: run_lease 1');
is($c_attempt, '1',  'first claim: attempt 1');

my $claim_end = $node->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
is( $node->safe_psql(
		'postgres', "SELECT pg_current_wal_flush_lsn() < '$claim_end'::pg_lsn"),
	't',
	'the claim commit has not been flushed');

$node->stop('immediate');
$node->start;

is(claim_cursor($node, 'q'), '0',
	'after the crash the claim cursor of q is not past the lost claim');

my $reclaimed = $node->safe_psql('postgres', sprintf($claim_sql, 'q'));
my ($r_job, $r_lease, $r_receipt, $r_attempt) = split /\|/, $reclaimed;
is($r_job,     $job, 'the job whose claim was lost is claimable again');
is($r_lease,   '1',  'run_lease is 1 again (the lost attempt never happened)');
is($r_attempt, '1',  'attempt is 1 again');
is(claim_cursor($node, 'q'), '0',
	'the new claim does not move the cursor past its own job');

is( $node->safe_psql(
		'postgres', "SELECT awa.complete($r_job, $r_lease, $r_receipt)"),
	't',
	'the new attempt completes');
is($node->safe_psql('postgres', sprintf($claim_sql, 'q')),
	'', 'nothing more to claim on q');
is(claim_cursor($node, 'q'), '1',
	'the next claim moved the cursor past the completed job');

# The crash may leave a hole in the lane (the enqueue sequence is WAL-logged
# ahead); a new job enqueued after it is still reached.
my $job3 = $node->safe_psql('postgres', "SELECT awa.enqueue('k', '{}', 'q')");
is( $node->safe_psql(
		'postgres', "SELECT job_id, run_lease FROM awa.claim('q')"),
	"$job3|1",
	'a job enqueued after the crash is claimed next');
is( $node->safe_psql(
		'postgres',
		"SELECT enqueue_cursor - claim_cursor FROM awa.lanes WHERE queue = 'q'"),
	'1',
	'the cursor is right before that job');

# ---------------------------------------------------------------------------
# 2. Control: the same sequence with a synchronous claim commit survives.
# ---------------------------------------------------------------------------
my $job2 = $node->safe_psql('postgres', "SELECT awa.enqueue('k', '{}', 'c')");
like($job2, qr/^\d+$/, 'enqueued one job on c');

pause_wal_writer($node);

# psql sends the two statements separately: the SET lasts for the session and
# the claim is again an implicit transaction of its own.
my $claimed2 = $node->safe_psql('postgres',
	"SET awa.async_claim_commit = off;\n" . sprintf($claim_sql, 'c'));
my ($c2_job, $c2_lease, $c2_receipt, $c2_attempt) = split /\|/, $claimed2;
is($c2_job,   $job2, 'control: claim returned the job');
is($c2_lease, '1',   'control: run_lease 1');

$node->stop('immediate');
$node->start;

is(claim_cursor($node, 'c'), '0',
	'control: the claim itself never moves the cursor past its job');
is($node->safe_psql('postgres', sprintf($claim_sql, 'c')),
	'', 'control: the synchronously committed claim survived the crash');
is(claim_cursor($node, 'c'), '1',
	'control: the next claim moved the cursor past the claimed job');
is( $node->safe_psql(
		'postgres', "SELECT awa.complete($c2_job, $c2_lease, $c2_receipt)"),
	't',
	'control: the surviving claim completes with its original receipt');

$node->stop;
done_testing();
