# 010_standby_starts_maintenance.pl
#
# A streaming standby runs no awa maintenance; once promoted, it does.
#
# - On the standby no 'awa maintenance%' backend runs, and
#   awa.run_maintenance raises 25006 (read_only_sql_transaction).
# - After the base backup, the primary's maintenance is switched off
#   (ALTER SYSTEM, not copied to the standby), so a job scheduled there 1 s
#   ahead is due but still scheduled when the primary stops; only the new
#   primary's worker can promote it.
# - After promotion: the launcher and a worker for postgres start, the worker
#   makes the counters trusted (queue_counts = queue_counts_exact), promotes
#   the due job, and the queue ring rotates (its generation grows after new
#   enqueues and claims).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $ring_conf = qq{
awa.queue_rotate_interval = '200ms'
awa.claim_rotate_interval = '200ms'
};
my $primary = start_awa_node('primary', maintenance => 1, init => { allows_streaming => 1 },
	conf => $ring_conf);
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

sub awa_backends
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(string_agg(backend_type, ',' ORDER BY backend_type), '') FROM pg_stat_activity
		  WHERE backend_type LIKE 'awa maintenance%'");
}

ok($primary->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type LIKE 'awa maintenance%'"),
	'primary: launcher and worker run');
is(awa_backends($primary), 'awa maintenance launcher,awa maintenance worker',
	'primary: they are the launcher and one worker');

# The primary stops promoting (its worker idles).
$primary->safe_psql('postgres', "ALTER SYSTEM SET awa.maintenance_enabled = off");
$primary->reload;
ok($primary->poll_query_until('postgres',
		"SELECT current_setting('awa.maintenance_enabled') = 'off'"),
	'primary: maintenance switched off');

# A job due 1 s from now, and a finished job, replayed on the standby.
my $job = $primary->safe_psql('postgres',
	"SELECT awa.enqueue('k', '{}', 'sb', run_at => now() + interval '1 s')");
is( $primary->safe_psql('postgres',
		"SELECT awa.complete(job_id, run_lease, receipt_id) FROM awa.enqueue('k', '{}', 'done') e, awa.claim('done')"),
	't', 'primary: one job completed on queue done');
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'standby: in recovery');
is(awa_backends($standby), '', 'standby: no awa maintenance backend runs');
my ($rc, $out, $err) = $standby->psql('postgres',
	"SELECT * FROM awa.run_maintenance()", extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($rc, 0, 'standby: run_maintenance fails');
like($err, qr/25006.*awa maintenance cannot run during recovery/s,
	'standby: run_maintenance raises 25006');
is($standby->safe_psql('postgres', "SELECT awa.get_job($job) ->> 'state'"), 'scheduled',
	'standby: the job is scheduled');
my $gen_before = $standby->safe_psql('postgres',
	"SELECT generation FROM awa.storage_status() WHERE ring = 'queue'");
like($gen_before, qr/^\d+$/, "standby: queue ring generation $gen_before");

# Failover once the job is due.
ok($primary->poll_query_until('postgres',
		"SELECT (awa.get_job($job) ->> 'run_at')::timestamptz < now()"),
	'primary: the job is due');
is($primary->safe_psql('postgres', "SELECT awa.get_job($job) ->> 'state'"), 'scheduled',
	'primary: the job is due and still scheduled (its maintenance is off)');
$primary->stop;
$standby->promote;
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 'f', 'standby promoted');
ok($standby->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type LIKE 'awa maintenance%'"),
	'promoted: launcher and worker start');
is(awa_backends($standby), 'awa maintenance launcher,awa maintenance worker',
	'promoted: they are the launcher and one worker');
is( $standby->safe_psql('postgres',
		"SELECT worker_pid = (SELECT pid FROM pg_stat_activity WHERE backend_type = 'awa maintenance worker')
		   FROM awa.maintenance_status() LIMIT 1"),
	't', 'promoted: maintenance_status().worker_pid is that worker');
ok($standby->poll_query_until('postgres',
		"SELECT last_outcome = 'trusted' FROM awa.maintenance_status() WHERE task = 'counters'"),
	'promoted: the worker made the counters trusted');
is( $standby->safe_psql('postgres',
		"SELECT count(*) FROM ((SELECT * FROM awa.queue_counts(NULL) EXCEPT ALL SELECT * FROM awa.queue_counts_exact(NULL))
		    UNION ALL (SELECT * FROM awa.queue_counts_exact(NULL) EXCEPT ALL SELECT * FROM awa.queue_counts(NULL))) x"),
	'0', 'promoted: queue_counts = queue_counts_exact');
ok($standby->poll_query_until('postgres', "SELECT awa.get_job($job) ->> 'state' = 'available'"),
	'promoted: the worker promoted the job scheduled on the old primary');
is( $standby->safe_psql('postgres',
		"SELECT attempt || '/' || awa.complete(job_id, run_lease, receipt_id) FROM awa.claim('sb')"),
	'1/true', 'promoted: the job is claimed and completed');

# Rings rotate on the new primary.
$standby->safe_psql('postgres',
	"SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[20]), NULL, 'sb')");
$standby->safe_psql('postgres',
	"SELECT count(awa.complete(job_id, run_lease, receipt_id)) FROM awa.claim('sb', 10)");
ok($standby->poll_query_until('postgres',
		"SELECT generation > $gen_before FROM awa.storage_status() WHERE ring = 'queue'"),
	'promoted: the queue ring rotates');
ok($standby->poll_query_until('postgres',
		"SELECT generation > 0 FROM awa.storage_status() WHERE ring = 'claim'"),
	'promoted: the claim ring rotates');
is($standby->safe_psql('postgres', "SELECT coalesce(sum(errors), 0) FROM awa.maintenance_status()"),
	'0', 'promoted: no maintenance step failed');

$standby->stop;
done_testing();
