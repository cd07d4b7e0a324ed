# 002_sync_commit_makes_claim_durable.pl
#
# An asynchronously committed claim is durable once any later synchronous
# commit has flushed the WAL: a synchronous enqueue (on another queue) after
# the claim flushes the WAL up to its own commit record, which includes the
# claim's commit record. After an immediate shutdown and crash recovery the
# claimed job is not handed out again, and the claim's original
# (job_id, run_lease, receipt_id) still completes it.
#
# As in 001, the WAL writer is paused (SIGSTOP), and bgwriter LRU writes,
# dirty-buffer evictions (shared_buffers = 128MB) and checkpoints are ruled
# out, so the synchronous enqueue is the only thing that can write the claim's
# commit record to the WAL files. Without it the claim would be lost (001
# shows that with the same setup).
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
	'on', 'synchronous_commit = on');
is($node->safe_psql('postgres', 'SHOW awa.async_claim_commit'),
	'on', 'awa.async_claim_commit = on');

my $job = $node->safe_psql('postgres', "SELECT awa.enqueue('k', '{}', 'q')");
like($job, qr/^\d+$/, 'enqueued one job on q');

pause_wal_writer($node);

# The claim: its own implicit transaction, committed asynchronously.
my $claimed = $node->safe_psql('postgres',
	"SELECT job_id, run_lease, receipt_id FROM awa.claim('q')");
my ($c_job, $c_lease, $c_receipt) = split /\|/, $claimed;
is($c_job,   $job, 'claim returned the job');
is($c_lease, '1',  'run_lease 1');

# A later synchronous commit, in another session, on another queue.
my $other = $node->safe_psql('postgres',
	"SELECT awa.enqueue('k', '{}', 'other')");
like($other, qr/^\d+$/, 'synchronous enqueue on another queue');

$node->stop('immediate');
$node->start;

is($node->safe_psql('postgres', "SELECT awa.claim('q')"),
	'', 'the claimed job is not handed out again after the crash');
is(claim_cursor($node, 'q'), '1',
	'the cursor of q moved past the job on the claim evidence that survived');
is( $node->safe_psql(
		'postgres', "SELECT awa.complete($c_job, $c_lease, $c_receipt)"),
	't',
	'the original (job_id, run_lease, receipt_id) completes the job');
is( $node->safe_psql(
		'postgres', "SELECT awa.complete($c_job, $c_lease, $c_receipt)"),
	'f',
	'a second completion of the same attempt is refused');

# The flushing enqueue itself survived too.
is($node->safe_psql('postgres', "SELECT job_id FROM awa.claim('other')"),
	$other, 'the synchronous enqueue survived the crash');

$node->stop;
done_testing();
