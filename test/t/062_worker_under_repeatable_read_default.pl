# 062_worker_under_repeatable_read_default.pl
#
# The maintenance worker runs its steps under READ COMMITTED whatever the
# database's default_transaction_isolation. awa.run_maintenance refuses to run
# under a transaction snapshot (a prune under REPEATABLE READ truncated claims
# and completions that committed after its snapshot: found by adversarial
# testing, test/specs/maintenance_isolation.spec); a worker that took the
# database's REPEATABLE READ default would then fail every step, and before
# that refusal it would have lost jobs.
#
# Asserted, with ALTER DATABASE ... SET default_transaction_isolation =
# 'repeatable read' and the worker at its default cadence: while jobs are
# enqueued, claimed and completed, the worker rotates and prunes the queue ring
# (an outcome 'pruned') with no step error; every job is completed, in the
# history ring once its slot was pruned; a session of that database still
# gets the refusal from awa.run_maintenance.
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

my $node = start_awa_node('rrworker', maintenance => 1);
$node->safe_psql('postgres', "ALTER DATABASE postgres SET default_transaction_isolation = 'repeatable read'");
# The worker reads the database's settings when it connects.
$node->restart;
is($node->safe_psql('postgres', 'SHOW default_transaction_isolation'), 'repeatable read',
	'sessions of the database run under REPEATABLE READ by default');

my ($rc, $out, $err) = $node->psql('postgres', "SELECT * FROM awa.run_maintenance('rotate_queue')");
like($err, qr/awa maintenance cannot run under REPEATABLE READ isolation/,
	'awa.run_maintenance refuses a session under REPEATABLE READ');

# Work until the worker has pruned the queue ring at least once.
my $pruned = 0;
my $jobs = 0;
for my $round (1 .. 1800)
{
	$node->safe_psql('postgres',
		"SELECT awa.enqueue('rr.k', '{}', 'rr_w'); SELECT count(awa.complete(c.job_id, c.run_lease, c.receipt_id)) FROM awa.claim('rr_w', 10) c");
	$jobs++;
	$pruned = $node->safe_psql('postgres',
		"SELECT count(*) FROM awa.maintenance_status() WHERE task = 'prune_queue' AND last_outcome = 'pruned'");
	last if $pruned;
	select(undef, undef, undef, 0.1);
}
is($pruned, '1', 'the worker pruned the queue ring');
is($node->safe_psql('postgres', 'SELECT coalesce(sum(errors), 0) FROM awa.maintenance_status()'),
	'0', 'no maintenance step failed');
$node->safe_psql('postgres',
	"SELECT count(awa.complete(c.job_id, c.run_lease, c.receipt_id)) FROM awa.claim('rr_w', 1000) c");
is($node->safe_psql('postgres', "SELECT completed, available, running FROM awa.queue_counts_exact('rr_w')"),
	"$jobs|0|0", 'every job completed, none lost');
ok($node->safe_psql('postgres', "SELECT count(*) FROM awa.job_history WHERE queue = 'rr_w'") > 0,
	'the pruned slot\'s completed jobs are in the history ring');

$node->stop;
done_testing();
