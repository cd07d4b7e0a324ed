# 061_standby_repeatable_read_reader.pl
#
# A REPEATABLE READ reader of jobs on a hot standby keeps its ring locks to the
# end of its transaction (src/pg/ring_truncations.hpp). awa's readers
# (awa.get_job, awa.list_jobs, ...) release their locks as they return, and a
# REPEATABLE READ reader on the primary is protected by the truncations that
# prunes publish there (40001 after one its snapshot did not see). On a
# standby the truncations are replayed, never published: a reader that
# released its locks would let the replay truncate the slot its snapshot
# still reads, and its next get_job in the same transaction would return NULL
# for a live job (found in review of stop 34). Kept, the locks make the
# replay of the prune wait (max_standby_streaming_delay = -1 here; with a
# finite delay the reader is cancelled by a recovery conflict instead).
#
# Asserted: on the standby, READ COMMITTED get_job holds no ring child once it
# returns; REPEATABLE READ get_job holds them; while it does, the replay of a
# prune that carried the job waits for it (an ungranted AccessExclusiveLock of
# the startup process) and its next get_job sees the job; after its commit the
# replay goes on and get_job finds the job where the prune carried it.
#
# Nothing here depends on the machine's speed: the waits are polls bounded
# only to stop a hung run.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $primary = start_awa_node('rrprimary', init => { allows_streaming => 1 });
my $standby = start_streaming_standby($primary, 'rrstandby');
$standby->append_conf('postgresql.conf', "max_standby_streaming_delay = -1\n");
$standby->reload;

my $job = $primary->safe_psql('postgres', "SELECT awa.enqueue('rr.k', '{}', 'rr_q')");
# 15 rotations, each after a prune: the job's slot is the next prune's target.
$primary->safe_psql('postgres', q{
	DO $$ BEGIN
	  FOR i IN 1 .. 15 LOOP
	    PERFORM * FROM awa.run_maintenance('prune_queue');
	    IF (SELECT outcome FROM awa.run_maintenance('rotate_queue')) <> 'rotated' THEN
	      RAISE EXCEPTION 'rotation % did not rotate', i;
	    END IF;
	  END LOOP;
	END $$});
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

my $ring_locks = q{
	SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
	 WHERE l.pid = pg_backend_pid() AND c.relnamespace = 'awa'::regnamespace AND c.relname ~ '_[0-9]+$'};

my $rc = $standby->background_psql('postgres');
$rc->query_safe('BEGIN');
is($rc->query_safe("SELECT awa.get_job($job) ->> 'state'"), 'available', 'READ COMMITTED on the standby: get_job');
is($rc->query_safe($ring_locks), '0', 'READ COMMITTED on the standby: no ring child locked once it returned');
$rc->query_safe('COMMIT');
$rc->quit;

my $rr = $standby->background_psql('postgres');
$rr->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
is($rr->query_safe("SELECT awa.get_job($job) ->> 'state'"), 'available', 'REPEATABLE READ on the standby: get_job');
cmp_ok($rr->query_safe($ring_locks), '>', 0, 'REPEATABLE READ on the standby: the ring children stay locked');

# The primary prunes the job's slot: the job is carried into the newest generation.
my $pruned = $primary->safe_psql('postgres',
	q{SELECT outcome || ' ' || (detail -> 'carried' ->> 'rows') FROM awa.run_maintenance('prune_queue')});
is($pruned, 'pruned 1', 'the primary pruned the slot and carried the job');
my $target = $primary->lsn('insert');
$standby->poll_query_until('postgres', "SELECT pg_last_wal_receive_lsn() >= '$target'::pg_lsn")
  or die 'the standby did not receive the prune';
$standby->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_locks WHERE NOT granted AND mode = 'AccessExclusiveLock'})
  or die 'the replay of the prune never waited for the reader';
is($standby->safe_psql('postgres', "SELECT pg_last_wal_replay_lsn() < '$target'::pg_lsn"), 't',
	'the replay of the prune waits for the REPEATABLE READ reader');
is($rr->query_safe("SELECT awa.get_job($job) ->> 'state'"), 'available',
	'the reader still sees the job (its slot was not truncated under it)');
$rr->query_safe('COMMIT');
$rr->quit;

$primary->wait_for_catchup($standby, 'replay', $target);
is($standby->safe_psql('postgres', "SELECT awa.get_job($job) ->> 'state'"), 'available',
	'after the replay, get_job finds the job where the prune carried it');
is($standby->safe_psql('postgres', "SELECT count(*) FROM awa.ready_entries WHERE job_id = $job"), '1',
	'one ready row of the job on the standby');

$standby->stop;
$primary->stop;
done_testing();
