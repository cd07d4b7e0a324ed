# 065_claim_cursor_in_place.pl
#
# A claim cursor move is written in place, with no WAL record, only when
# every claim whose evidence it passes is durable: its commit was synchronous
# (flushed before it was visible), or the WAL is flushed past its
# asynchronous commit (src/pg/lane_cursors.cpp, AdvanceClaimCursor;
# docs/architecture.md, "A claim cursor move waits only for the commits it
# passes"). WAL that other transactions left unflushed, or unflushed claims
# above the move, do not matter. Otherwise, with a passed asynchronous claim
# not yet flushed, the move is a record after that claim's commit in the
# WAL, so no crash can keep the move and lose the claim
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

# WAL is inserted that is not flushed yet.
sub wal_unflushed
{
	my ($node, $what) = @_;
	is($node->safe_psql('postgres', q{SELECT pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn()}),
		't', $what);
}

my $node = start_awa_node('cursorinplace', conf => $QUIET_WAL_CONF . "wal_writer_delay = '10s'\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pageinspect');

my @jobs = split /\n/,
  $node->safe_psql('postgres', q{SELECT awa.enqueue('k', '{}', 'cc') FROM generate_series(1, 8)});
is(scalar(@jobs), 8, 'eight jobs enqueued');

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

# WAL another transaction left unflushed (an asynchronous commit that is no
# claim): a move past synchronous claims is still written in place.
# (Its xid 32 or more after the second job's claim's: the commit status of a
# group of 32 transactions carries the latest asynchronous commit among them,
# which would hold back a move past any of them, as it should. Each of the 32
# writes a row, so its commit is synchronous: one with an xid that wrote
# nothing before its commit record commits asynchronously.)
$node->safe_psql('postgres', 'CREATE TABLE burn (i int)');
$node->safe_psql('postgres', "INSERT INTO burn VALUES (1);\n" x 32);
pause_wal_writer($node);
$node->safe_psql('postgres', q{SET synchronous_commit = off; CREATE TABLE unflushed_other ()});
wal_unflushed($node, 'another transaction left its commit unflushed');
($how, $out) = lanes_page_write($node, $claim_and_complete);
is($out, $jobs[2], 'the third job is claimed and completed');
is(claim_cursor($node, 'cc'), '2', 'its walk moved the cursor past the second');
is($how, 'in place', 'past a synchronous claim, the move is written in place although WAL is unflushed');

# Asynchronous claims, left unflushed.
my $async_claim = q{SELECT job_id FROM awa.claim('cc', async_commit => true);};
($how, $out) = lanes_page_write($node, $async_claim);
is($out, $jobs[3], 'the fourth job is claimed asynchronously');
is(claim_cursor($node, 'cc'), '3', 'its walk moved the cursor past the third');
is($how, 'in place', 'in place: the third job\'s claim was synchronous');
wal_unflushed($node, 'the fourth job\'s claim is not flushed');
($how, $out) = lanes_page_write($node, $async_claim);
is($out, $jobs[4], 'the fifth job is claimed asynchronously');
is(claim_cursor($node, 'cc'), '4', 'the cursor moved past the fourth job, whose claim is visible');
is($how, 'logged', 'past an asynchronous claim not flushed yet, the move is a record');

# A crash loses the unflushed claims and the in-place moves.
$node->stop('immediate');
$node->start;
is(claim_cursor($node, 'cc'), '0', 'after the crash the cursor is back where the last record left it');
is( $node->safe_psql('postgres',
		q{SELECT string_agg(job_id::text, ',' ORDER BY job_id) FROM awa.claim('cc', 10, async_commit => false)}),
	join(',', @jobs[3 .. 7]),
	'the next claim hands out the five jobs not claimed durably, and none of the three completed');
is($node->safe_psql('postgres', q{SELECT count(*) FROM awa.claim('cc', 10)}), '0', 'and nothing more');

# The walk reads claims above the move too: the move stops at the first lane
# still held by an open claim. An unflushed asynchronous claim above that
# lane does not hold the move back (it passes only durable claims), and
# nothing is written past the open lane, whose job a rollback gives back.
my @d = split /\n/,
  $node->safe_psql('postgres', q{SELECT awa.enqueue('k', '{}', 'dd') FROM generate_series(1, 4)});
my $walwriter = pause_wal_writer($node, 'WAL writer after the restart');
my $s0 = $node->background_psql('postgres');
my $s1 = $node->background_psql('postgres');
my $s2 = $node->background_psql('postgres');
is($s0->query_safe(q{BEGIN; SELECT job_id FROM awa.claim('dd', async_commit => false);}), $d[0],
	'an open synchronous claim takes the first job of dd');
is($s1->query_safe(q{BEGIN; SELECT job_id FROM awa.claim('dd');}), $d[1], 'another open claim takes the second');
$node->safe_psql('postgres', "INSERT INTO burn VALUES (1);\n" x 32);
is( $s2->query_safe(q{BEGIN; SET LOCAL synchronous_commit = off; SELECT job_id FROM awa.claim('dd');}),
	$d[2], 'an open asynchronous claim takes the third');
$s0->query_safe('COMMIT');
$s2->query_safe('COMMIT');
wal_unflushed($node, 'the asynchronous claim is not flushed');
($how, $out) = lanes_page_write($node, q{SELECT job_id FROM awa.claim('dd', async_commit => true)});
is($out, $d[3], 'a claim takes the fourth job');
is(claim_cursor($node, 'dd'), '1', 'its walk moved the cursor past the first job only');
is($how, 'in place', 'in place: the claim not flushed lies above the move');
$s1->query_safe('ROLLBACK');
is($node->safe_psql('postgres', q{SELECT job_id FROM awa.claim('dd', async_commit => false)}), $d[1],
	'the second job, whose claim rolled back, is handed out again');
$s0->quit;
$s1->quit;
$s2->quit;
is(kill('CONT', $walwriter), 1, 'the WAL writer resumes');

$node->stop;
done_testing();
