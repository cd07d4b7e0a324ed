# 027_clock_jumps.pl
#
# Setting the system clock neither stops maintenance nor makes every task due
# at once (docs/maintenance.md §1, "Clocks"). awa.debug_clock_offset stands in
# for the system clock: it is added to the maintenance worker's readings of the
# wall clock (SQL run by its steps still reads the real one). The worker runs at
# the default cadences, except awa.lease_rotate_interval and
# awa.cleanup_interval, which are 1 h: prune_lease, rotate_lease and
# dlq_retention run once when the worker starts and not again during the test.
#
# (a) The worker starts: each 1 h task has run exactly once.
# (b) The clock is set forward by an hour (offset 0 -> +1 h, reload). Once the
#     worker logged the new offset, two more queue rotations are awaited (the
#     tick that followed the reload has then ended, so it has looked at every
#     task): the 1 h tasks still ran exactly once (a wall-fed task clock runs
#     all three again at once), and a job due in 30 min by the real clock is
#     still scheduled.
# (c) The clock is set back by two hours (offset -1 h, reload): maintenance
#     goes on. Every task of a short cadence runs at least twice more
#     (counters once more: its cadence is 5 s), a job due 2 s after the jump is
#     promoted, a claim whose 1 s deadline expires is rescued (retryable, "hard
#     deadline exceeded"); the 1 h tasks still ran exactly once. (A wall-fed
#     task clock runs nothing for two hours: the polls time out.)
# (d) No step counted an error.
#
# Deterministic: every wait is wait_for_log or poll_query_until on a count
# that only grows; every assertion is an exact count or state that no
# machine's speed changes (a 1 h task cannot come due again within the test,
# which ends long before an hour on any machine that passes it).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('clock', maintenance => 1, conf => qq{
awa.launcher_naptime = '1h'
awa.lease_rotate_interval = '1h'
awa.cleanup_interval = '1h'
});

sub q1 { return $node->safe_psql('postgres', $_[0]); }

sub runs { return q1("SELECT runs FROM awa.maintenance_status() WHERE task = '$_[0]'"); }


my @hourly = qw(prune_lease rotate_lease dlq_retention);
my @short = qw(promote periodic rescue prune_queue rotate_queue prune_claim rotate_claim history);

sub hourly_ran_once
{
	my ($label) = @_;
	is(runs($_), '1', "$label: $_ (1 h cadence) ran exactly once") for @hourly;
}

# Sets the offset by ALTER SYSTEM and a reload, and waits until the worker
# logged it (it logs a new offset right after it reloaded).
sub set_clock_offset
{
	my ($setting, $seconds) = @_;
	my $log_offset = -s $node->logfile;
	q1("ALTER SYSTEM SET awa.debug_clock_offset = '$setting'");
	q1("SELECT pg_reload_conf()");
	$node->wait_for_log(qr/awa: maintenance worker of database \d+ reads the wall clock \Q$seconds\E s off/,
		$log_offset);
}

# Waits until every task in @$tasks has run at least $more times since $base.
sub wait_runs
{
	my ($base, $more, @tasks) = @_;
	my $cond = join(' AND ', map { "sum(runs) FILTER (WHERE task = '$_') >= $base->{$_} + $more" } @tasks);
	return $node->poll_query_until('postgres', "SELECT $cond FROM awa.maintenance_status()");
}

sub all_runs { return { map { $_ => runs($_) } (@hourly, @short, 'counters') }; }

# ---------------------------------------------------------------------------
# (a)
# ---------------------------------------------------------------------------
ok($node->poll_query_until('postgres',
		"SELECT bool_and(runs >= 1) FROM awa.maintenance_status()
		  WHERE task IN ('prune_lease', 'rotate_lease', 'dlq_retention', 'rotate_queue')"),
	'(a) the worker ran its first tick');
hourly_ran_once('(a)');

# ---------------------------------------------------------------------------
# (b) forward by an hour
# ---------------------------------------------------------------------------
set_clock_offset('1h', 3600);
pass('(b) the worker reads its wall clock an hour ahead');
my $base = all_runs();
ok(wait_runs($base, 2, 'rotate_queue'), '(b) the queue ring rotates twice more after the jump');
hourly_ran_once('(b) after the forward jump');

# ---------------------------------------------------------------------------
# (c) back by two hours: an hour behind
# ---------------------------------------------------------------------------
set_clock_offset('-1h', -3600);
pass('(c) the worker reads its wall clock an hour behind');
$base = all_runs();
my $soon = q1("SELECT awa.enqueue('k', '{}', 'clock', run_at => now() + interval '2 s')");
q1("SELECT awa.enqueue('k', '{}', 'clock_deadline')");
my $claimed = q1("SELECT job_id FROM awa.claim('clock_deadline', 1, interval '1 s')");
like($claimed, qr/^\d+$/, '(c) a job claimed with a 1 s deadline');
ok($node->poll_query_until('postgres', "SELECT awa.get_job($soon) ->> 'state' = 'available'"),
	'(c) a job due 2 s after the jump is promoted');
ok($node->poll_query_until('postgres', "SELECT awa.get_job($claimed) ->> 'state' = 'retryable'"),
	'(c) the claim whose deadline expired is rescued: retryable');
is(q1("SELECT awa.get_job($claimed) -> 'errors' -> -1 ->> 'error'"), 'hard deadline exceeded',
	'(c) closed for its deadline');
ok(wait_runs($base, 2, @short), '(c) every short-cadence task runs at least twice more: ' . join(', ', @short));
ok(wait_runs($base, 1, 'counters'), '(c) counters (5 s cadence) runs again');
hourly_ran_once('(c) after the backward jump');

# ---------------------------------------------------------------------------
# (d)
# ---------------------------------------------------------------------------
is(q1("SELECT coalesce(sum(errors), 0) FROM awa.maintenance_status()"), '0', '(d) no maintenance step failed');

$node->stop;
done_testing();
