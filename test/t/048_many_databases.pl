# 048_many_databases.pl
#
# The launcher serves any number of databases (docs/maintenance.md §1, "Any
# number of databases"). It used to keep 256 entries, one per connectable
# database with awa or without, for as long as the database existed: in a
# cluster of more, a database created later got no maintenance worker ever.
#
# (a) 300 databases without awa, then a database with awa (its OID above
#     all of theirs): it gets a worker, which promotes a scheduled job.
# (b) While the launcher probes the 300 (awa.launcher_naptime 1 s here, so it
#     probes them again and again), it never runs out of worker slots
#     (max_worker_processes 16): at most two probes run at once, so no
#     "could not start the maintenance worker" WARNING. (Sampling
#     pg_stat_activity would miss probes: each lives milliseconds.)
# (c) Dropping half of the databases without awa leaves the launcher
#     serving: a second database with awa gets its worker.
# (d) No ERROR or PANIC in the log; the WARNING of a full table is gone.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('many_databases', maintenance => 1, conf => qq{
awa.launcher_naptime = '1s'
awa.promote_interval = '100ms'
max_worker_processes = 16
});

# Waits until one maintenance worker serves database $db.
sub served
{
	my ($db) = @_;
	return $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity
		  WHERE backend_type = 'awa maintenance worker' AND datname = '$db'");
}

my $n = 300;
# CREATE DATABASE cannot run in a transaction block: one statement each.
$node->safe_psql('postgres', join('', map { "CREATE DATABASE plain_$_;\n" } 1 .. $n));
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_database WHERE datname LIKE 'plain\\_%'"),
	$n, "$n databases without awa");

# (b) Let the launcher probe them all a few times over.
sleep(5);

# (a) A database with awa, created after all of them.
$node->safe_psql('postgres', 'CREATE DATABASE late');
$node->safe_psql('late', 'CREATE EXTENSION awa');
ok(served('late'),
	'the database with awa created after 300 without it gets a maintenance worker');
my $job = $node->safe_psql('late', "SELECT awa.enqueue('k', '{}', 'q', run_at => now() + interval '1 second')");
ok( $node->poll_query_until('late', "SELECT awa.get_job($job) ->> 'state' = 'available'"),
	'its worker promotes a scheduled job');


# (c) Half of them dropped; another database with awa is served.
$node->safe_psql('postgres', join('', map { "DROP DATABASE plain_$_;\n" } 1 .. $n / 2));
$node->safe_psql('postgres', 'CREATE DATABASE later');
$node->safe_psql('later', 'CREATE EXTENSION awa');
ok(served('later'),
	'after dropping 150 of them, a new database with awa gets its worker');
ok(served('late'),
	'the first one is still served');

# (d)
my $log = slurp_file($node->logfile);
unlike($log, qr/more than \d+ databases/, 'no database was left without an entry');
unlike($log, qr/could not start the maintenance worker/, '(b) probes never took every worker slot');
unlike($log, qr/^.*(ERROR|PANIC):/m, 'no ERROR or PANIC in the log');

$node->stop;
done_testing();
