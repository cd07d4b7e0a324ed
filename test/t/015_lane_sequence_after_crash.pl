# 015_lane_sequence_after_crash.pl
#
# A lane's enqueue cursor never hands out a position twice after a crash, also
# with wal_level = minimal (the test framework's default, and a valid
# production setting). The cursor is rewritten in place in the lane's row with
# a generic WAL record per reservation (src/pg/lane_cursors.cpp); this test
# was written when it was a sequence per lane. A lane is created by the first
# enqueue into it, which also takes its first positions with nextval: PostgreSQL then kept the 32
# values nextval pre-logs as logged, and with wal_level = minimal a sequence
# created in the transaction is not WAL-logged at all, so later nextvals (in
# other transactions, writing no WAL) were forgotten by a crash and the lane's
# next enqueue failed on a duplicate key or hid its job behind an old claim
# (found by test/t/012_model_stress.pl, seed 3). Checked for lanes created by
# a single enqueue and by an enqueue_many, and for a lane created by a
# scheduled enqueue and first filled by a promotion.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('seqcrash');
is($node->safe_psql('postgres', 'SHOW wal_level'), 'minimal', 'the server runs with wal_level = minimal');

# Each lane is created by the first statement, then used by two more
# transactions (with sequences, their nextval wrote no WAL of its own).
$node->safe_psql('postgres', q{
	SELECT awa.enqueue('k', '{"n": 1}', 'single');
	SELECT count(*) FROM awa.enqueue_many(ARRAY['k', 'k'], ARRAY['{"n": 1}', '{"n": 2}']::jsonb[], 'many');
	SELECT awa.enqueue('k', '{"n": 1}', 'promoted', run_at => clock_timestamp() + interval '10 ms');
});
$node->safe_psql('postgres', "SELECT pg_sleep(0.05); SELECT awa.promote_due()");
$node->safe_psql('postgres', q{
	SELECT awa.enqueue('k', '{"n": 2}', 'single');
	SELECT count(*) FROM awa.enqueue_many(ARRAY['k'], ARRAY['{"n": 3}']::jsonb[], 'many');
	SELECT awa.enqueue('k', '{"n": 2}', 'promoted');
});
$node->safe_psql('postgres', q{
	SELECT awa.enqueue('k', '{"n": 3}', 'single');
	SELECT count(*) FROM awa.enqueue_many(ARRAY['k'], ARRAY['{"n": 4}']::jsonb[], 'many');
	SELECT awa.enqueue('k', '{"n": 3}', 'promoted');
});
# A synchronous commit of something else flushes everything so far.
$node->safe_psql('postgres', 'CREATE TABLE flushed AS SELECT 1 AS one');
$node->stop('immediate');
$node->start;

my ($rc, $out, $err) = $node->psql('postgres', q{
	SELECT awa.enqueue('k', '{"n": 4}', 'single');
	SELECT count(*) FROM awa.enqueue_many(ARRAY['k'], ARRAY['{"n": 5}']::jsonb[], 'many');
	SELECT awa.enqueue('k', '{"n": 4}', 'promoted');
});
is($rc, 0, 'enqueues after the crash succeed') or diag $err;
for my $q (qw(single many promoted))
{
	my $n = $q eq 'many' ? 5 : 4;
	is($node->safe_psql('postgres', "SELECT string_agg(args ->> 'n', ',') FROM awa.claim('$q', 10)"),
		join(',', 1 .. $n), "queue $q: every job is claimable, in order, once");
	is($node->safe_psql('postgres', "SELECT count(*) FROM awa.claim('$q', 10)"), '0', "queue $q: nothing more");
}
$node->stop;
done_testing();
