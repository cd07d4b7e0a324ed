# 020_await_durable.pl
#
# awa.await_durable() (issue 11 §2): after an asynchronous claim, it waits
# until the claim is flushed, and confirmed by a synchronous standby when one
# is configured. The WAL writer is paused (SIGSTOP) and the server otherwise
# quiet ($QUIET_WAL_CONF), so nothing but the call itself flushes the claim:
# part 1 fails if the call does not flush (test 001 shows the same claim lost
# in the same crash without it); part 2 shows the claim on the standby at the
# return and after a promotion (a walsender sends only flushed WAL, test
# 004); part 3 shows that the call waits for the synchronous standby.
#
# 1. One server: claim, await_durable, crash (immediate stop). After
#    recovery the claim is there: nothing to claim again, and the original
#    receipt completes the job.
# 2. A primary with a synchronous standby: claim, await_durable; at its
#    return the standby has received (flushed) the returned position. The
#    primary crashes and the standby is promoted: the job is running there,
#    nothing is claimed twice, and the original receipt completes it.
# 3. The synchronous standby is down: await_durable waits (wait event
#    SyncRep) holding no snapshot and no lock but its virtual xid;
#    pg_cancel_backend ends it with 57014 and the standby message, and so
#    does statement_timeout. The session stays usable.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $claim_sql = "SELECT job_id, run_lease, receipt_id FROM awa.claim('%s')";

# ---------------------------------------------------------------------------
# 1. A crash right after await_durable loses nothing.
# ---------------------------------------------------------------------------
{
	my $node = start_awa_node('single', conf => $QUIET_WAL_CONF . "wal_writer_delay = '10s'\n");
	my $job = $node->safe_psql('postgres', "SELECT awa.enqueue('k', '{}', 'q')");
	pause_wal_writer($node);
	# Two statements sent one by one: the claim is an implicit transaction of
	# its own (asynchronous commit), then the call.
	my ($claimed, $lsn) = split /\n/,
	  $node->safe_psql('postgres', sprintf($claim_sql, 'q') . ";\nSELECT awa.await_durable();");
	my ($c_job, $c_lease, $c_receipt) = split /\|/, $claimed;
	is($c_job, $job, '1: the job was claimed (asynchronous commit)');
	like($lsn, qr{^[0-9A-F]+/[0-9A-F]+$}, "1: await_durable returned an LSN ($lsn)");
	is($node->safe_psql('postgres', "SELECT pg_current_wal_flush_lsn() >= '$lsn'::pg_lsn"),
		't', '1: the WAL is flushed up to it, with the WAL writer paused');
	$node->stop('immediate');
	$node->start;
	is($node->safe_psql('postgres', sprintf($claim_sql, 'q')), '',
		'1: after the crash the claim is still there: nothing to claim again');
	is($node->safe_psql('postgres', "SELECT awa.complete($c_job, $c_lease, $c_receipt)"),
		't', '1: the original receipt completes the job');
	$node->stop;
}

# ---------------------------------------------------------------------------
# 2. With a synchronous standby, the claim is on the standby at the return.
# ---------------------------------------------------------------------------
my $primary = start_awa_node('primary', init => { allows_streaming => 1 },
	conf => $QUIET_WAL_CONF . "wal_writer_delay = '10s'\n");
my $standby = start_streaming_standby($primary, 'standby');
# Set after the backup, so the standby, once promoted, has no synchronous
# standby of its own to wait for.
make_standby_synchronous($primary);
my $job = $primary->safe_psql('postgres', "SELECT awa.enqueue('k', '{}', 'q')");
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('flush'));
is($primary->safe_psql('postgres', "SELECT sync_state FROM pg_stat_replication"),
	'sync', '2: the standby is synchronous');

pause_wal_writer($primary, 'primary WAL writer');
my ($claimed, $lsn) = split /\n/,
  $primary->safe_psql('postgres', sprintf($claim_sql, 'q') . ";\nSELECT awa.await_durable();");
my ($c_job, $c_lease, $c_receipt) = split /\|/, $claimed;
is($c_job, $job, '2: the primary claimed the job');
is($standby->safe_psql('postgres', "SELECT pg_last_wal_receive_lsn() >= '$lsn'::pg_lsn"),
	't', '2: when await_durable returned, the standby had flushed its position');
$primary->stop('immediate');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';
is($standby->safe_psql('postgres', "SELECT awa.get_job($job) ->> 'state'"),
	'running', '2: on the promoted standby the job is running (the claim survived the failover)');
is($standby->safe_psql('postgres', sprintf($claim_sql, 'q')), '',
	'2: nothing to claim again there');
is($standby->safe_psql('postgres', "SELECT awa.complete($c_job, $c_lease, $c_receipt)"),
	't', '2: the original receipt completes the job there');

# ---------------------------------------------------------------------------
# 3. The synchronous standby is gone: the call waits, and a cancel ends it.
# ---------------------------------------------------------------------------
# The promoted standby is a primary now; give it a synchronous standby name
# that no standby has.
$standby->safe_psql('postgres', "ALTER SYSTEM SET synchronous_standby_names = 'nobody'");
$standby->reload;
$standby->poll_query_until('postgres', "SELECT current_setting('synchronous_standby_names') = 'nobody'")
  or die 'the setting was not reloaded';
# Whether commits wait for a synchronous standby at all is shared state that
# the checkpointer sets when it processes the reload (a new session sees the
# setting before): a CHECKPOINT returns after it has. (Without it, on a busy
# machine the waiter below sometimes did not wait: CI found it.)
$standby->safe_psql('postgres', 'CHECKPOINT');
# An asynchronous write, so there is something for the standbys to confirm
# (a synchronous commit would itself wait for them).
$standby->safe_psql('postgres',
	"SET synchronous_commit = local; SELECT awa.enqueue('k', '{}', 'q3')");
my $waiter = $standby->background_psql('postgres', on_error_stop => 0);
my $pid = $waiter->query_safe('SELECT pg_backend_pid()');
$waiter->query_until(qr/start/, "\\echo start\nSELECT awa.await_durable();\n");
ok($standby->poll_query_until('postgres',
		"SELECT wait_event = 'SyncRep' FROM pg_stat_activity WHERE pid = $pid"),
	'3: await_durable waits for the synchronous standby');
is($standby->safe_psql('postgres', "SELECT backend_xmin IS NULL FROM pg_stat_activity WHERE pid = $pid"),
	't', '3: while it waits it advertises no snapshot');
is($standby->safe_psql('postgres', "SELECT string_agg(locktype, ',') FROM pg_locks WHERE pid = $pid"),
	'virtualxid', '3: and holds no lock but its virtual transaction id');
$standby->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
my $out = $waiter->query('SELECT 1');
like($waiter->{stderr}, qr/57014|canceled the wait for the synchronous standbys/,
	'3: pg_cancel_backend ends the wait with the standby message');
is($out, '1', '3: the session stays usable');
$waiter->quit;

my ($rc, $stdout, $stderr) = $standby->psql('postgres',
	"SET statement_timeout = '1s'; SET synchronous_commit = local; SELECT awa.enqueue('k', '{}', 'q3');"
	  . " SELECT awa.await_durable();");
isnt($rc, 0, '3: with statement_timeout the call fails');
like($stderr, qr/canceled the wait for the synchronous standbys to confirm/,
	'3: with the standby message (57014)');
$standby->stop;

done_testing();
