# 003_advance_requires_evidence.pl
#
# The claim cursor moves past a lane only on visible claim evidence (a
# ready_claim_attempt_batches row covering it). Deleting a claim's evidence
# (its attempt batch and its compact claim batch) as superuser simulates a
# server that never saw that claim: the next claim must not advance over the
# job but hand it out again with the same run_lease. After that second claim
# and a clean restart, the lane state is consistent: the next claim takes the
# following job and advances over the first, and then the lane is empty.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('main', conf => "autovacuum = off\n");

my $claim_sql =
  "SELECT job_id, run_lease, receipt_id, attempt FROM awa.claim('q')";

my $ids = $node->safe_psql('postgres',
	"SELECT string_agg(id::text, ',') FROM awa.enqueue_many(ARRAY['k','k'], NULL, 'q') AS id");
my ($job_a, $job_b) = split /,/, $ids;
like($job_a, qr/^\d+$/, 'enqueued job A');
like($job_b, qr/^\d+$/, 'enqueued job B');
is( $node->safe_psql(
		'postgres',
		"SELECT enqueue_cursor, claim_cursor FROM awa.lanes WHERE queue = 'q'"),
	'2|0',
	'lane q: two lanes reserved, none spent');

# First claim: job A.
my ($a1_job, $a1_lease, $a1_receipt, $a1_attempt) = split /\|/,
  $node->safe_psql('postgres', $claim_sql);
is($a1_job,     $job_a, 'first claim returns A');
is($a1_lease,   '1',    'first claim of A: run_lease 1');
is($a1_attempt, '1',    'first claim of A: attempt 1');
is(claim_cursor($node, 'q'), '0', 'the claim does not move the cursor past A');

# Remove A's claim evidence: the server "never saw" that claim.
is( $node->safe_psql(
		'postgres', q{
WITH d AS (DELETE FROM awa.ready_claim_attempt_batches WHERE queue = 'q' RETURNING 1)
SELECT count(*) FROM d}),
	'1',
	"deleted A's attempt batch (one row)");
is( $node->safe_psql(
		'postgres', q{
WITH d AS (DELETE FROM awa.lease_claim_batches WHERE queue = 'q' RETURNING 1)
SELECT count(*) FROM d}),
	'1',
	"deleted A's claim batch (one row)");

# Second claim: without evidence the cursor may not pass A, so A comes again.
my ($a2_job, $a2_lease, $a2_receipt, $a2_attempt) = split /\|/,
  $node->safe_psql('postgres', $claim_sql);
is($a2_job,     $job_a, 'without evidence the next claim returns A again, not B');
is($a2_lease,   '1',    'A again with run_lease 1');
is($a2_attempt, '1',    'A again with attempt 1');
is(claim_cursor($node, 'q'), '0', 'the cursor is still before A');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*), min(coalesce(lane_ranges, int8multirange(int8range(first_lane_seq, next_lane_seq)))::text) FROM awa.ready_claim_attempt_batches WHERE queue = 'q'}),
	'1|{[1,2)}',
	"the second claim wrote A's evidence: one attempt batch covering lane 1");

is( $node->safe_psql(
		'postgres', "SELECT awa.complete($a1_job, $a1_lease, $a1_receipt)"),
	'f',
	'the receipt of the claim without evidence is refused');

$node->restart;    # fast

is(claim_cursor($node, 'q'), '0', 'after the restart the cursor is still 0');

my ($b_job, $b_lease, $b_receipt, $b_attempt) = split /\|/,
  $node->safe_psql('postgres', $claim_sql);
is($b_job,     $job_b, 'after the restart the next claim returns B');
is($b_lease,   '1',    'B with run_lease 1');
is($b_attempt, '1',    'B with attempt 1');
is(claim_cursor($node, 'q'), '1',
	"B's claim moved the cursor past A (A's second claim has evidence)");

is($node->safe_psql('postgres', $claim_sql), '', 'then nothing is left');
is(claim_cursor($node, 'q'), '2', 'and the cursor is past B');

is( $node->safe_psql(
		'postgres', "SELECT awa.complete($a2_job, $a2_lease, $a2_receipt)"),
	't',
	"A's live attempt completes");
is( $node->safe_psql(
		'postgres', "SELECT awa.complete($b_job, $b_lease, $b_receipt)"),
	't',
	'B completes');

$node->stop;
done_testing();
