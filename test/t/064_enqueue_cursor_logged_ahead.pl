# 064_enqueue_cursor_logged_ahead.pl
#
# A lane reservation logs the enqueue cursor 32 positions ahead, as nextval
# does, and the reservations within that write the cursor in place with no
# WAL record (src/pg/lane_cursors.cpp; docs/architecture.md, "The enqueue
# cursor is logged ahead"). What this must keep: no position handed out to a
# committed job is handed out again, after a crash restart (where the
# in-place writes since the last record are lost) or on a promoted standby
# (which never received them). The row's enqueue_logged is read there instead.
#
# Determinism: no checkpoint is due and nothing evicts the lanes page
# ($QUIET_WAL_CONF), so which reservation writes a record is exact: the first
# after the lane is made, the first after a CHECKPOINT (the page has not been
# logged since the checkpoint began), the first after a restart (the row is
# not this server run's), and one that passes the logged value.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('loggedahead', init => { allows_streaming => 1 }, conf => $QUIET_WAL_CONF);
$node->safe_psql('postgres', 'CREATE EXTENSION pg_walinspect');
my $standby = start_streaming_standby($node, 'loggedahead_standby');

my @jobs;
sub enqueue_jobs
{
	my ($on, $count) = @_;
	for (1 .. $count)
	{
		push @jobs, $on->safe_psql('postgres', q{SELECT awa.enqueue('k', '{}', 'ahead')});
	}
}

# The row as stored (enqueue_cursor|enqueue_logged) and as read (awa.lanes).
sub stored
{
	my ($on) = @_;
	return $on->safe_psql('postgres',
		q{SELECT enqueue_cursor || '|' || enqueue_logged FROM awa.queue_lanes WHERE queue = 'ahead'});
}
sub read_cursor
{
	my ($on) = @_;
	return $on->safe_psql('postgres', q{SELECT enqueue_cursor FROM awa.lanes WHERE queue = 'ahead'});
}

# Generic WAL records (the lane cursors' only record type) written by $code.
sub generic_records
{
	my ($code) = @_;
	my $start = $node->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
	$code->();
	my $end = $node->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_get_wal_records_info('$start', '$end') WHERE resource_manager = 'Generic'");
}

# The lane is made by the first enqueue, which logs 32 ahead.
enqueue_jobs($node, 1);
is(stored($node), '1|33', 'the first reservation logs the cursor 32 positions ahead');
is(generic_records(sub { enqueue_jobs($node, 9) }), '0', 'nine single-job enqueues within it write no cursor record');
is(stored($node), '10|33', 'their positions are 2 to 10, written in place');
is(read_cursor($node), '10', 'awa.lanes reads the cursor itself on the primary');

# After a checkpoint begins, the page's next change is logged (with its full
# image), then the ones after it are in place again.
$node->safe_psql('postgres', 'CHECKPOINT');
is(generic_records(sub { enqueue_jobs($node, 5) }), '1', 'after a checkpoint, one record for five enqueues');
is(stored($node), '15|43', 'the record logged position 11 and 32 ahead; 12 to 15 in place');

# A standby has only what was logged: it reads the logged value.
$node->wait_for_catchup($standby, 'replay', $node->lsn('flush'));
is(stored($standby), '11|43', 'the standby replayed the record, not the in-place writes');
is(read_cursor($standby), '43', 'awa.lanes on the standby reads the logged value');

# A crash loses the in-place writes since the record.
$node->stop('immediate');
$node->start;
is(stored($node), '11|43', 'after the crash the row holds the record\'s values');
is(read_cursor($node), '43', 'awa.lanes reads the logged value: the row is not this run\'s');
enqueue_jobs($node, 1);
is( $node->safe_psql('postgres', "SELECT lane_seq FROM awa.ready_entries WHERE job_id = $jobs[-1]"),
	'44', 'the first job after the crash takes position 44, past every position handed out');
is(stored($node), '44|76', 'and logs 32 ahead again');

# A promoted standby: three more jobs in place on the primary, replicated by
# their commits; then the primary stops and the standby is promoted.
enqueue_jobs($node, 3);
$node->wait_for_catchup($standby, 'replay', $node->lsn('flush'));
is( $standby->safe_psql('postgres', q{SELECT count(*) FROM awa.ready_entries WHERE queue = 'ahead'}),
	'19', 'the standby has all nineteen jobs');
$node->stop('immediate');
$standby->promote;
enqueue_jobs($standby, 1);
is( $standby->safe_psql('postgres', "SELECT lane_seq FROM awa.ready_entries WHERE job_id = $jobs[-1]"),
	'77', 'the promoted standby hands out position 77, past the primary\'s 47');

# Every job, each once, at its own position.
my $claimed = $standby->safe_psql('postgres',
	q{SELECT string_agg(job_id::text, ',' ORDER BY job_id) FROM awa.claim('ahead', 100)});
is($claimed, join(',', sort { $a <=> $b } @jobs), 'all 20 jobs are claimed, each once');
is( $standby->safe_psql('postgres',
		q{SELECT count(DISTINCT lane_seq) FROM awa.ready_entries WHERE queue = 'ahead'}),
	'20', 'at 20 distinct positions');

$standby->stop;
done_testing();
