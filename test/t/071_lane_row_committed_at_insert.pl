# 071_lane_row_committed_at_insert.pl
#
# A lane's row is committed when it is inserted (docs/architecture.md, "A
# lane's row is committed when it is inserted"): the row goes in as an
# ordinary insert with its index entries, then one generic WAL record marks
# it committed for every snapshot. So a producer that created a lane by
# writing its jobs early (a transaction that reads them back) and stays open
# makes no other producer of that lane wait, and what it leaves is crash-safe
# and reaches standbys: there the lane is visible while its creator is still
# open, after an immediate stop the lane is still there, found through its
# unique index (amcheck's heapallindexed agrees), the other producer's
# committed job is claimed once, and the same holds on the promoted standby.
# Before, the second producer's enqueue waited for the creator's end (here it
# fails on lock_timeout instead of waiting). And a standby session's cache of
# a queue's lanes learns of a lane whose creator rolled back (tests 2-3 fail
# when the invalidation is not logged for standbys).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $primary = start_awa_node('lanerowprimary', maintenance => 1, init => { allows_streaming => 1 }, conf => $QUIET_WAL_CONF);
my $standby = start_streaming_standby($primary, 'lanerowstandby');
$primary->safe_psql('postgres', 'CREATE EXTENSION amcheck');

sub lane_state
{
	my ($node) = @_;
	# Through the unique index on (queue, priority, concurrency_key), then
	# through the heap: the same one row.
	return $node->safe_psql('postgres', q{
		SET enable_seqscan = off; SET enable_bitmapscan = off;
		SELECT count(*) FROM awa.queue_lanes WHERE queue = 'lr' AND priority = 2 AND concurrency_key IS NULL;
		SET enable_seqscan = on; SET enable_indexscan = off; SET enable_bitmapscan = off;
		SELECT count(*) FROM awa.queue_lanes WHERE queue = 'lr';
	});
}

# A standby session that knows a queue has no lane (its claim found none, and
# the per-backend cache keeps that) learns of a lane committed at insert by a
# creator that then rolled back: the invalidation is logged for standbys as it
# is sent (LogStandbyInvalidations), since no commit record will carry it. It
# then sees the lane a later producer filled: its claim walks it and is
# refused with 25006 (a standby cannot move a cursor), where with a stale
# cache it returned no row.
my $reader = $standby->background_psql('postgres', on_error_stop => 0);
is($reader->query_safe(q{SELECT count(*) FROM awa.claim('lr2', 1)}), '0', 'a standby session finds no lane of lr2');
$primary->safe_psql('postgres', q{
	BEGIN;
	SELECT awa.get_job(awa.enqueue('lr2.early', '{}', 'lr2')) IS NOT NULL;
	ROLLBACK;
	SELECT awa.enqueue('lr2.after', '{}', 'lr2');
});
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
my ($claimed, $failed) = $reader->query(q{SELECT count(*) FROM awa.claim('lr2', 1)});
is($failed, 1, 'the standby session\'s claim of lr2 fails') or diag "it returned $claimed";
like($reader->{stderr}, qr/cannot move a lane cursor during recovery/,
	'the same session then walks the lane that a rolled-back creator left and a producer filled');
$reader->quit;

# The creator writes its job early (it reads it back) and stays open.
my $creator = $primary->background_psql('postgres');
$creator->query_safe(q{BEGIN});
my $early = $creator->query_safe(q{SELECT awa.enqueue('lr.early', '{}', 'lr')});
is($creator->query_safe(qq{SELECT awa.get_job($early) ->> 'state'}), 'available', 'the creator wrote its job early');

# Another producer's first enqueue into the lane waits for no lock.
my ($rc, $job, $err) = $primary->psql('postgres',
	q{SET lock_timeout = '2s'; SELECT awa.enqueue('lr.other', '{}', 'lr')});
is($rc, 0, 'a second producer of the new lane commits while the creator is open') or diag $err;
is(lane_state($primary), "1\n1", 'one lane row, found through the unique index and in the heap');

$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
is(lane_state($standby), "1\n1", 'the standby has the lane while its creator is open');

# An immediate stop with the creator still open.
$primary->stop('immediate');
$creator->quit;
$primary->start;
is(lane_state($primary), "1\n1", 'after the crash the lane is still one row, indexed');
is($primary->safe_psql('postgres',
		q{SELECT 'checked' FROM bt_index_check('awa.queue_lanes_identity', true) a,
		                        bt_index_check('awa.queue_lanes_lane_id_key', true) b}),
	'checked', 'amcheck: every heap row of awa.queue_lanes is in both unique indexes');
is($primary->safe_psql('postgres', q{SELECT awa.enqueue('lr.after', '{}', 'lr') IS NOT NULL}), 't',
	'an enqueue after the crash uses the lane');
is(lane_state($primary), "1\n1", 'and makes no second lane');
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

# The standby, promoted, hands out the committed jobs (the creator's was never
# committed) once each.
$primary->stop('immediate');
$standby->promote;
is($standby->safe_psql('postgres', q{SELECT string_agg(kind, ' ' ORDER BY job_id) FROM awa.claim('lr', 10)}),
	'lr.other lr.after', 'the promoted standby hands out both committed jobs');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM awa.claim('lr', 10)}), '0', 'and nothing more');
is(lane_state($standby), "1\n1", 'one lane row on the promoted standby');
$standby->stop;
done_testing();
