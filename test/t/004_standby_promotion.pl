# 004_standby_promotion.pl
#
# Failover to a streaming standby. A walsender ships WAL only up to the
# primary's flush position, so an asynchronously committed claim whose commit
# record has not been flushed yet has not reached any standby:
#   - standby1, promoted while the claim is still unflushed on the primary,
#     never saw the claim: the job is claimable there with run_lease 1 and the
#     cursor is not past it;
#   - standby2, promoted after a later synchronous commit on the primary
#     (which flushed the claim) and after it replayed that commit, has the
#     claim: the job is not handed out again and the original receipt
#     completes it.
#
# Determinism: the primary's WAL writer is paused (SIGSTOP) before the claim,
# its bgwriter does no LRU writes, no checkpoint is due and no backend evicts a
# dirty buffer (shared_buffers = 128MB instead of the 1MB that allows_streaming
# sets; an eviction flushes all WAL inserted so far), so nothing but a
# backend's own synchronous commit flushes WAL (see 001). The test checks that
# the claim is unflushed before promoting standby1.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $primary = start_awa_node('primary', init => { allows_streaming => 1 }, conf => $QUIET_WAL_CONF);

$primary->backup('base');
my $standby1 = PostgreSQL::Test::Cluster->new('standby1');
$standby1->init_from_backup($primary, 'base', has_streaming => 1);
$standby1->start;
my $standby2 = PostgreSQL::Test::Cluster->new('standby2');
$standby2->init_from_backup($primary, 'base', has_streaming => 1);
$standby2->start;

# A durable job, replayed on both standbys.
my $job = $primary->safe_psql('postgres', "SELECT awa.enqueue('k', '{}', 'q')");
like($job, qr/^\d+$/, 'enqueued one job on the primary');
$primary->wait_for_catchup($standby1, 'replay', $primary->lsn('flush'));
$primary->wait_for_catchup($standby2, 'replay', $primary->lsn('flush'));
for my $standby ($standby1, $standby2)
{
	is( $standby->safe_psql(
			'postgres', "SELECT job_id FROM awa.ready_entries WHERE queue = 'q'"),
		$job,
		$standby->name . ' has the job');
}

my $ww = pause_wal_writer($primary, 'primary WAL writer');

# The claim on the primary: an implicit transaction, committed asynchronously.
my ($c_job, $c_lease, $c_receipt) = split /\|/,
  $primary->safe_psql('postgres',
	"SELECT job_id, run_lease, receipt_id FROM awa.claim('q')");
is($c_job,   $job, 'the primary claimed the job');
is($c_lease, '1',  'run_lease 1');

my $claim_end = $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
is( $primary->safe_psql(
		'postgres', "SELECT pg_current_wal_flush_lsn() < '$claim_end'::pg_lsn"),
	't',
	'the claim commit is not flushed on the primary');
is( $standby1->safe_psql(
		'postgres', "SELECT pg_last_wal_receive_lsn() < '$claim_end'::pg_lsn"),
	't',
	'standby1 has not received the claim commit');

# Failover to standby1 now.
$standby1->promote;
is($standby1->safe_psql('postgres', 'SELECT pg_is_in_recovery()'),
	'f', 'standby1 promoted');
is(claim_cursor($standby1, 'q'), '0',
	'standby1: the cursor is not past the job');
my ($s1_job, $s1_lease, $s1_receipt, $s1_attempt) = split /\|/,
  $standby1->safe_psql('postgres',
	"SELECT job_id, run_lease, receipt_id, attempt FROM awa.claim('q')");
is($s1_job,     $job, 'standby1: the job is claimable');
is($s1_lease,   '1',  'standby1: run_lease 1 (the primary claim never reached it)');
is($s1_attempt, '1',  'standby1: attempt 1');
is( $standby1->safe_psql(
		'postgres', "SELECT awa.complete($s1_job, $s1_lease, $s1_receipt)"),
	't',
	'standby1: the new attempt completes');

# On the primary, a later synchronous commit flushes the claim.
my $other = $primary->safe_psql('postgres',
	"SELECT awa.enqueue('k', '{}', 'other')");
like($other, qr/^\d+$/, 'synchronous enqueue on another queue');
is( $primary->safe_psql(
		'postgres', "SELECT pg_current_wal_flush_lsn() >= '$claim_end'::pg_lsn"),
	't',
	'the claim commit is flushed on the primary now');
is(kill('CONT', $ww), 1, 'primary WAL writer resumed');

$primary->wait_for_catchup($standby2, 'replay', $primary->lsn('flush'));
$standby2->promote;
is($standby2->safe_psql('postgres', 'SELECT pg_is_in_recovery()'),
	'f', 'standby2 promoted');
is($standby2->safe_psql('postgres', "SELECT awa.claim('q')"),
	'', 'standby2: the claimed job is not handed out again');
is(claim_cursor($standby2, 'q'), '1',
	'standby2: the cursor moved past the job on its replicated evidence');
is( $standby2->safe_psql(
		'postgres', "SELECT awa.complete($c_job, $c_lease, $c_receipt)"),
	't',
	'standby2: the original receipt completes the job');
is($standby2->safe_psql('postgres', "SELECT job_id FROM awa.claim('other')"),
	$other, 'standby2: has the flushing enqueue');

# The lanes' cursors are rewritten in place under generic WAL (no sequence),
# the enqueue cursor logged 32 positions ahead (docs/architecture.md, "The
# enqueue cursor is logged ahead"): the logged values reached the standby with
# the rest, and a promoted standby reads the enqueue cursor as the logged
# value, at or past every position the primary handed out. So after promotion
# a new enqueue takes a position past the lane's, never one handed out before.
# (The claim cursors differ by design: standby2's claim above moved its own.)
my $lanes = q{SELECT string_agg(queue || ':' || enqueue_cursor, ' ' ORDER BY queue)
  FROM awa.lanes WHERE queue IN ('q', 'other')};
my $logged = q{SELECT string_agg(queue || ':' || enqueue_logged, ' ' ORDER BY queue)
  FROM awa.queue_lanes WHERE queue IN ('q', 'other')};
is($primary->safe_psql('postgres', $lanes), 'other:1 q:1', 'the primary handed out position 1 of each lane');
is($standby2->safe_psql('postgres', $lanes), $primary->safe_psql('postgres', $logged),
	'standby2: the enqueue cursors are the primary\'s logged values');
is($standby2->safe_psql('postgres', $lanes), 'other:33 q:33', 'standby2: 32 past the positions handed out');
my $reserved = $standby2->safe_psql('postgres', "SELECT enqueue_cursor FROM awa.lanes WHERE queue = 'q'");
my $next = $standby2->safe_psql('postgres', "SELECT awa.enqueue('k', '{}', 'q')");
is($standby2->safe_psql('postgres', "SELECT c.job_id || ':' || r.lane_seq FROM awa.claim('q') c
  JOIN awa.ready_entries r USING (job_id)"),
	$next . ':' . ($reserved + 1),
	'standby2: a new enqueue takes the lane position after the replicated cursor and is claimed');

$standby2->stop;
$standby1->stop;
$primary->stop;
done_testing();
