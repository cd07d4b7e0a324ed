# 063_claim_floor_shared_exactly_once.pl
#
# The shared head-generation floors (src/pg/claim_head_cache.cpp,
# ApplyCursorAdvance) lose no job: a floor too high would make claims skip
# generations that hold committed jobs. Written by an adversarial tester of
# stop 35 (who found no defect). Every job enqueued by a committed
# transaction is claimed exactly once while
#   - claims come from new connections (cold per-backend cache, shared floor
#     only) and from one long-lived connection,
#   - enqueues stay open across rotations and prunes, then commit or roll back,
#   - rotations and prunes run by hand, each in a READ COMMITTED transaction,
#   - the queue is paused under a backlog above awa.carry_max_rows,
#   - two databases use the same lane ids,
#   - one database's extension is dropped and created again while the
#     long-lived connection stays, and the server restarts (immediate) once.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('floorshared');
$node->safe_psql('postgres', 'CREATE DATABASE db2');
$node->safe_psql('db2', 'CREATE EXTENSION awa');

my $helpers = q{
CREATE TABLE IF NOT EXISTS rec(job_id bigint);
CREATE TABLE IF NOT EXISTS got(job_id bigint);
CREATE OR REPLACE PROCEDURE claim_once(q text, n int) LANGUAGE plpgsql AS $$
DECLARE ids bigint[]; leases bigint[]; recs bigint[];
BEGIN
  SELECT array_agg(job_id), array_agg(run_lease), array_agg(receipt_id) INTO ids, leases, recs
    FROM awa.claim(q, n);
  IF ids IS NULL THEN RETURN; END IF;
  INSERT INTO got SELECT unnest(ids);
  PERFORM * FROM awa.complete_many(ids, leases, recs);
END $$;
};
$node->safe_psql($_, $helpers) for ('postgres', 'db2');

sub q1 { my ($db, $sql) = @_; return $node->safe_psql($db, $sql); }
sub enqueue_sql
{
	my ($n) = @_;
	return "INSERT INTO rec SELECT awa.enqueue('k', '{}', 'fq', priority => 1 + g % 2) FROM generate_series(1, $n) g";
}

my %long;
sub long_session
{
	my ($db) = @_;
	$long{$db} //= $node->background_psql($db, on_error_stop => 0);
	return $long{$db};
}

sub round
{
	my ($db, $r) = @_;
	my $open = $node->background_psql($db, on_error_stop => 0);
	$open->query_safe('BEGIN');
	$open->query_safe(enqueue_sql(1 + $r % 7));
	q1($db, enqueue_sql(3 + $r % 5));
	q1($db, enqueue_sql(1200)) if $r % 9 == 4;    # a backlog above carry_max_rows
	q1($db, "SELECT awa.pause_queue('fq')") if $r % 6 == 1;
	q1($db, "SELECT * FROM awa.run_maintenance('rotate_queue')");
	q1($db, "SELECT * FROM awa.run_maintenance('prune_queue')");
	q1($db, "CALL claim_once('fq', 1 + $r % 4)");               # a new connection
	long_session($db)->query("CALL claim_once('fq', 2)");    # a long-lived one
	q1($db, "SELECT * FROM awa.run_maintenance('all')") if $r % 3 == 0;
	q1($db, "SELECT awa.resume_queue('fq')") if $r % 6 == 3;
	$open->query_safe($r % 3 == 2 ? 'ROLLBACK' : 'COMMIT');
	$open->quit;
	q1($db, "CALL claim_once('fq', 3)");
}

sub drain_and_check
{
	my ($db, $when) = @_;
	q1($db, "SELECT awa.resume_queue('fq')");
	for my $i (1 .. 400)
	{
		last if q1($db, "SELECT available FROM awa.queue_counts_exact('fq')") == 0;
		q1($db, "CALL claim_once('fq', 1000)");
	}
	is(q1($db, 'SELECT count(*) FROM rec WHERE job_id NOT IN (SELECT job_id FROM got)'), '0',
		"$db $when: every committed job claimed");
	is(q1($db, 'SELECT count(*) FROM (SELECT job_id FROM got GROUP BY 1 HAVING count(*) > 1) d'), '0',
		"$db $when: none claimed twice");
	is(q1($db, "SELECT available || '/' || running FROM awa.queue_counts_exact('fq')"), '0/0',
		"$db $when: nothing left");
}

for my $r (1 .. 20) { round($_, $r) for ('postgres', 'db2'); }

# db2's extension again, its jobs gone (rec/got are not its members); the
# long-lived session of db2 stays connected.
q1('db2', 'DROP EXTENSION awa CASCADE');
q1('db2', 'CREATE EXTENSION awa');
q1('db2', 'TRUNCATE rec, got');
for my $r (21 .. 40) { round($_, $r) for ('postgres', 'db2'); }

$_->quit for values %long;
%long = ();
$node->stop('immediate');
$node->start;
for my $r (41 .. 50) { round($_, $r) for ('postgres', 'db2'); }
$_->quit for values %long;

drain_and_check($_, 'at the end') for ('postgres', 'db2');
done_testing();
