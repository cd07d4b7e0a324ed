# 065_claim_cursor_in_place.pl
#
# A claim cursor move is written in place, with no WAL record, only when the
# WAL is flushed up to the insert position: every claim whose evidence the
# move passes is then durable (src/pg/lane_cursors.cpp, AdvanceClaimCursor;
# docs/architecture.md, "The enqueue cursor is logged ahead"). Otherwise,
# with an asynchronous claim not yet flushed, the move is a record after that
# claim's commit in the WAL, so no crash can keep the move and lose the claim
# (test/t/001_async_claim_lost_in_crash.pl shows the lost claim's job comes
# back). A cursor that goes back in a crash is safe: the next claims read the
# claims' evidence again and hand out only the jobs nobody claimed.
#
# Determinism: the WAL writer is paused where the test needs WAL left
# unflushed, and nothing else flushes WAL, evicts the lanes page or
# checkpoints ($QUIET_WAL_CONF; see 001).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('cursorinplace', conf => $QUIET_WAL_CONF . "wal_writer_delay = '10s'\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pageinspect');

my @jobs = split /\n/,
  $node->safe_psql('postgres', q{SELECT awa.enqueue('k', '{}', 'cc') FROM generate_series(1, 6)});
is(scalar(@jobs), 6, 'six jobs enqueued');

# Each claim and its completion, one durable transaction (the claim commits
# with the completion's synchronous commit).
my $claim_and_complete = q{SELECT c.job_id FROM awa.claim('cc', async_commit => false) c,
  LATERAL awa.complete(c.job_id, c.run_lease, c.receipt_id) done};
my ($how, $out) = lanes_page_write($node, $claim_and_complete);
is($out, $jobs[0], 'the first job is claimed and completed');
is(claim_cursor($node, 'cc'), '0', 'its walk had nothing to pass');
# Nothing else may leave WAL unflushed before the next claim: the catalog rows
# CREATE EXTENSION left dead would be pruned by the next reads (a record each),
# so VACUUM removes them; then a transaction that writes WAL flushes it all
# at its synchronous commit (one that writes none does not flush).
$node->safe_psql('postgres', 'VACUUM');
$node->safe_psql('postgres', 'CREATE TABLE flushed ()');
# (Flushed: the insert position is the flush position, or the first byte
# after the header of the page that starts there, where nothing is written yet.)
is( $node->safe_psql('postgres', q{SELECT d = 0 OR (d IN (24, 40) AND pg_wal_lsn_diff(f, '0/0') % 8192 = 0)
  FROM (SELECT pg_current_wal_flush_lsn() AS f, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), pg_current_wal_flush_lsn()) AS d) x}),
	't', 'the WAL is flushed');
($how, $out) = lanes_page_write($node, $claim_and_complete);
is($out, $jobs[1], 'the second job is claimed and completed');
is(claim_cursor($node, 'cc'), '1', 'its walk moved the cursor past the first');
is($how, 'in place', 'with the WAL flushed, the move is written in place: no record');

# An asynchronous claim, left unflushed; the move past it is a record.
pause_wal_writer($node);
is( $node->safe_psql('postgres', q{SELECT job_id FROM awa.claim('cc', async_commit => true)}),
	$jobs[2], 'the third job is claimed asynchronously');
is( $node->safe_psql('postgres',
		q{SELECT pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn()}),
	't', 'its commit is not flushed');
($how, $out) = lanes_page_write($node, q{SELECT job_id FROM awa.claim('cc', async_commit => true)});
is($out, $jobs[3], 'the fourth job is claimed asynchronously');
is(claim_cursor($node, 'cc'), '3', 'the cursor moved past the third job, whose claim is visible');
is($how, 'logged', 'with the WAL unflushed, the move is a record');

# A crash loses both unflushed claims and the in-place moves.
$node->stop('immediate');
$node->start;
is(claim_cursor($node, 'cc'), '0', 'after the crash the cursor is back where the last record left it');
is( $node->safe_psql('postgres',
		q{SELECT string_agg(job_id::text, ',' ORDER BY job_id) FROM awa.claim('cc', 10, async_commit => false)}),
	join(',', @jobs[2 .. 5]),
	'the next claim hands out the four jobs not claimed durably, and neither completed job');
is($node->safe_psql('postgres', q{SELECT count(*) FROM awa.claim('cc', 10)}), '0', 'and nothing more');

$node->stop;
done_testing();
