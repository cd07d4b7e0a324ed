# 050_probe_never_waits.pl
#
# The launcher runs at most two probes at once (workers started only to see
# whether a database has awa; docs/maintenance.md §1). A probe looks awa up in
# pg_extension; while a session of its database holds a lock on pg_extension
# that conflicts (LOCK TABLE, VACUUM FULL, REINDEX of the catalog) the lookup
# used to wait for it, and two such probes took both probe places for as long
# as the locks were held: no other database was probed, so a database that has
# awa without having run CREATE EXTENSION since the launcher started (created
# from a template that has awa, or any database after a restart) got no
# maintenance worker. Found in review: the database made from the template
# was served only once one of the locks went away.
#
# Now a probe only tries the lock: if pg_extension is busy it leaves at once,
# and its database is looked at again after awa.launcher_naptime.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('probe_never_waits', maintenance => 1, conf => qq{
awa.launcher_naptime = '1s'
});

sub workers_in
{
	my ($db) = @_;
	return "SELECT count(*) >= 1 FROM pg_stat_activity
	         WHERE backend_type = 'awa maintenance worker' AND datname = '$db'";
}

# A template that has awa (its worker leaves once it is a template: CREATE
# DATABASE from it needs it alone).
$node->safe_psql('postgres', 'CREATE DATABASE awa_template');
$node->safe_psql('awa_template', 'CREATE EXTENSION awa');
$node->safe_psql('postgres', 'ALTER DATABASE awa_template IS_TEMPLATE true');

# Two databases without awa whose pg_extension stays locked.
my @holders;
for my $db ('busy_1', 'busy_2') {
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	my $session = $node->background_psql($db);
	$session->query_safe('BEGIN');
	$session->query_safe('LOCK TABLE pg_catalog.pg_extension IN ACCESS EXCLUSIVE MODE');
	push @holders, $session;
}

# Each busy database is probed again and again (naptime 1 s) while its lock is
# held. Wait until a probe has met the lock in each: before the fix it then
# waits there (wait_event_type Lock), now it leaves and says so in the log.
for my $db ('busy_1', 'busy_2') {
	my $oid = $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = '$db'");
	my $met = 0;
	for (my $i = 0; $i < 10 * $PostgreSQL::Test::Utils::timeout_default && !$met; $i++) {
		$met = 1
		  if slurp_file($node->logfile) =~ /database $oid: pg_extension is locked/
		  || $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity
			  WHERE backend_type = 'awa maintenance worker' AND datname = '$db' AND wait_event_type = 'Lock'") > 0;
		usleep(100_000) unless $met;
	}
	ok($met, "a probe of $db met the lock on pg_extension");
}

# A database with awa that no CREATE EXTENSION announced: only a probe finds it.
$node->safe_psql('postgres', 'CREATE DATABASE from_template TEMPLATE awa_template');
ok($node->poll_query_until('postgres', workers_in('from_template')),
	'a database created from a template that has awa gets its worker while two others lock pg_extension');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity
		  WHERE backend_type = 'awa maintenance worker' AND datname IN ('busy_1', 'busy_2')
		    AND wait_event_type = 'Lock'"),
	'0', 'no probe waits for the lock on pg_extension');

# The locks gone, a busy database that then creates awa gets its worker as
# any other.
$_->query_safe('ROLLBACK') for @holders;
$_->quit for @holders;
$node->safe_psql('busy_1', 'CREATE EXTENSION awa');
ok($node->poll_query_until('postgres', workers_in('busy_1')), 'a busy database is served once it has awa');

my $log = slurp_file($node->logfile);
unlike($log, qr/^.*(PANIC):/m, 'no PANIC in the log');

$node->stop;
done_testing();
