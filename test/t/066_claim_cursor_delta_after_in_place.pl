# 066_claim_cursor_delta_after_in_place.pl
#
# Reviewer's reproduction (branch cursor-review): a generic WAL record is a
# byte delta between the buffer page as it is when the record is written and
# the page after the change (generic_xlog.c, computeDelta: only the bytes that
# differ, a leading run of equal bytes is left out). An in-place claim cursor
# move (AdvanceClaimCursor with the WAL flushed) changes the buffer without a
# record, so the next logged move's delta is computed against the in-place
# value. Redo (crash recovery, a standby) applies that delta to the page as
# the WAL knows it, which holds the last *logged* value instead: the cursor
# comes out as a mix of the bytes of the two values, and it can be AHEAD of
# the value the primary wrote. Here:
#   logged (with a full-page image after a CHECKPOINT)   255 = 0x00FF
#   in place (WAL flushed)                               256 = 0x0100
#   logged, delta against 0x0100 (WAL not flushed)       512 = 0x0200
# The delta carries only byte 1 (0x01 -> 0x02); replayed on 0x00FF it gives
# 0x02FF = 767. A standby, a crash-restarted primary and a promoted standby
# then read claim cursor 767 and never hand out the committed, unclaimed
# jobs at lane positions 514..767.
#
# Determinism: as 065 ($QUIET_WAL_CONF: no checkpoint due, nothing evicts the
# lanes page; the WAL writer is paused where WAL must stay unflushed).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('cursordelta', init => { allows_streaming => 1 }, conf => $QUIET_WAL_CONF);
$node->safe_psql('postgres', 'CREATE EXTENSION pageinspect');
my $standby = start_streaming_standby($node, 'cursordelta_standby');

is( $node->safe_psql('postgres', q{SELECT count(awa.enqueue('k', '{}', 'mx')) FROM generate_series(1, 800)}),
	'800', '800 jobs enqueued in one lane (positions 1..800)');


sub claim
{
	my ($n) = @_;
	return "SELECT count(*) FROM awa.claim('mx', $n, async_commit => false)";
}

is($node->safe_psql('postgres', claim(255)), '255', 'positions 1..255 claimed durably');
is(claim_cursor($node, 'mx'), '0', 'cursor still 0');

# 1. A logged move to 255 (0x00FF), with a full-page image: the first change
#    of the page after the checkpoint.
$node->safe_psql('postgres', 'CHECKPOINT');
my ($how, $out) = lanes_page_write($node, claim(1));
is($out, '1', 'position 256 claimed');
is(claim_cursor($node, 'mx'), '255', 'cursor moved to 255 (0x00FF)');
is($how, 'logged', 'after the checkpoint the move is a record (full-page image)');

# 2. An in-place move to 256 (0x0100): the WAL is flushed.
$node->safe_psql('postgres', 'VACUUM');
$node->safe_psql('postgres', 'CREATE TABLE unflushed (i int)');
is($node->safe_psql('postgres', q{SELECT d = 0 OR (d IN (24, 40) AND pg_wal_lsn_diff(f, '0/0') % 8192 = 0)
  FROM (SELECT pg_current_wal_flush_lsn() AS f, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), pg_current_wal_flush_lsn()) AS d) x}),
	't', 'the WAL is flushed');
($how, $out) = lanes_page_write($node, claim(256));
is($out, '256', 'positions 257..512 claimed');
is(claim_cursor($node, 'mx'), '256', 'cursor moved to 256 (0x0100)');
is($how, 'in place', 'the move is written in place');

# 3. A logged move to 512 (0x0200), as a delta: some WAL is not flushed (an
#    asynchronous commit of another session, WAL writer paused).
my $walwriter = pause_wal_writer($node);
$node->safe_psql('postgres', q{SET synchronous_commit = off; INSERT INTO unflushed VALUES (1)});
is($node->safe_psql('postgres', q{SELECT pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn()}),
	't', 'some WAL is not flushed');
($how, $out) = lanes_page_write($node, claim(1));
is($out, '1', 'position 513 claimed (durably: its commit flushes all the WAL)');
is(claim_cursor($node, 'mx'), '512', 'cursor moved to 512 (0x0200) on the primary');
is($how, 'logged', 'the move is a record (a delta: the page was logged since the checkpoint)');
kill 'CONT', $walwriter;

# The standby replays the WAL: it must not read a cursor past 512.
$node->wait_for_catchup($standby);
my $on_standby = claim_cursor($standby, 'mx');
ok($on_standby <= 512, "standby's claim cursor ($on_standby) is not past the primary's (512)");

# A crash: redo replays the same records.
$node->stop('immediate');
$node->start;
my $after_crash = claim_cursor($node, 'mx');
ok($after_crash <= 512, "after a crash the claim cursor ($after_crash) is not past 512");
is($node->safe_psql('postgres', claim(1000)), '287',
	'after the crash the next claims hand out the 287 jobs never claimed (514..800)');
$node->stop;

# A promoted standby.
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'no promotion';
is($standby->safe_psql('postgres', claim(1000)), '287',
	'the promoted standby hands out the 287 jobs never claimed (514..800)');
$standby->stop;

done_testing();
