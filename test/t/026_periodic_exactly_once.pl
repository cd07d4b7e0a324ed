# 026_periodic_exactly_once.pl
#
# Periodic jobs (docs/periodic.md; issue 12 §4): the maintenance worker, at
# its default cadence, enqueues each due tick exactly once, across a clean
# restart, a crash restart (immediate stop) and the promotion of a
# synchronous standby, while two other sessions call
# awa.run_maintenance('periodic') in a loop the whole time (racing the worker).
#
# Two schedules, every second:
#   pf: opts.backfill, so its ticks must form one unbroken run, each tick
#       once: a tick missed while the server was down is enqueued after it;
#   pq: no backfill, so its ticks must be distinct and on the grid, and the
#       three seconds the server is kept down leave a gap of at least three
#       seconds (missed ticks are skipped, the latest due one is enqueued).
# For each, the schedule's last_run_at is the greatest tick enqueued and
# next_run_at the tick after it (read in one snapshot). The ticks are read
# from the jobs' metadata.periodic, claimed through awa.claim.
#
# Nothing depends on the machine's speed: each phase waits for ticks to
# appear, however long that takes, and the checks hold for any timing.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('periodic', maintenance => 1, init => { allows_streaming => 1 });
$node->safe_psql('postgres', q{
	SELECT awa.schedule_periodic('pf', 'every 1 second', 'p.fill', queue => 'pf', opts => '{"backfill": true}');
	SELECT awa.schedule_periodic('pq', 'every 1 second', 'p.skip', queue => 'pq');
});

# Two sessions run the periodic step in a loop, racing the worker.
my @racers;
sub start_racers
{
	my ($on) = @_;
	my $script = $on->basedir . '/race.sql';
	PostgreSQL::Test::Utils::append_to_file($script, "SELECT count(*) FROM awa.run_maintenance('periodic');\n")
	  unless -e $script;
	my ($out, $err) = ('', '');
	push @racers, IPC::Run::start(
		[ 'pgbench', '-n', '-c', '2', '-T', '600', '-f', $script, '-h', $on->host, '-p', $on->port, 'postgres' ],
		'<', \undef, '>', \$out, '2>', \$err);
}
sub stop_racers
{
	$_->kill_kill for @racers;
	@racers = ();
}
END { stop_racers(); }

# Waits until each schedule has enqueued $n more ticks (its queue has $n
# more available jobs: nothing claims them until the end).
sub wait_for_ticks
{
	my ($on, $n, $label) = @_;
	for my $queue (qw(pf pq)) {
		my $count = "SELECT available FROM awa.queue_counts('$queue')";
		my $before = $on->safe_psql('postgres', $count);
		$on->poll_query_until('postgres', "SELECT ($count) >= $before + $n")
		  or die "$queue did not tick $label";
	}
}

# Stops the node ('fast': a clean restart, 'immediate': a crash), keeps it
# down for three seconds, starts it and the racers again, and waits for ticks.
sub restart_after_downtime
{
	my ($mode, $label) = @_;
	stop_racers();
	$node->stop($mode);
	sleep 3;
	$node->start;
	start_racers($node);
	wait_for_ticks($node, 3, $label);
}

start_racers($node);
wait_for_ticks($node, 3, 'at the start');
restart_after_downtime('fast', 'after the restart');
restart_after_downtime('immediate', 'after the crash restart');

# A synchronous standby is promoted after the primary crashed.
my $standby = start_streaming_standby($node, 'periodic_standby');
make_standby_synchronous($node);
wait_for_ticks($node, 3, 'with a synchronous standby');
stop_racers();
$node->stop('immediate');
sleep 3;
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'the standby was not promoted';
my $primary = $standby;
start_racers($primary);
wait_for_ticks($primary, 3, 'after the promotion');
stop_racers();

# Stop the schedules, then read every tick from the jobs, claiming them all.
# (The delete waits for a step that holds a schedule, and returns its state
# as that step left it.)
my $state = $primary->safe_psql('postgres',
	'DELETE FROM awa.periodic_schedules RETURNING name, last_run_at, next_run_at');
my %schedule;
for my $line (split /\n/, $state) {
	my ($name, $last, $next) = split /\|/, $line;
	$schedule{$name} = { last => $last, next => $next } if defined $next;
}
$primary->safe_psql('postgres', q{
	CREATE TABLE ticks (queue text, tick timestamptz);
	DO $$
	DECLARE
	    n int;
	BEGIN
	    FOR q IN 1 .. 2 LOOP
	        LOOP
	            INSERT INTO ticks
	            SELECT c.queue, (c.metadata #>> '{periodic,tick}')::timestamptz
	              FROM awa.claim(CASE q WHEN 1 THEN 'pf' ELSE 'pq' END, 1000) c;
	            GET DIAGNOSTICS n = ROW_COUNT;
	            EXIT WHEN n = 0;
	        END LOOP;
	    END LOOP;
	END
	$$;
});

for my $queue (qw(pf pq)) {
	my ($count, $distinct, $off_grid, $min_gap, $max_gap, $span, $max_tick) = split /\|/,
	  $primary->safe_psql('postgres', qq{
		WITH t AS (SELECT tick, tick - lag(tick) OVER (ORDER BY tick) AS gap FROM ticks WHERE queue = '$queue')
		SELECT count(*), count(DISTINCT tick),
		       count(*) FILTER (WHERE extract(microseconds FROM tick)::bigint % 1000000 <> 0),
		       extract(epoch FROM min(gap)), extract(epoch FROM max(gap)),
		       extract(epoch FROM max(tick) - min(tick)), max(tick)
		  FROM t});
	ok($count >= 15, "$queue: $count ticks were enqueued");
	is($distinct, $count, "$queue: no tick was enqueued twice");
	is($off_grid, 0, "$queue: every tick is on the schedule's whole seconds");
	ok($min_gap >= 1, "$queue: consecutive ticks are at least a second apart");
	if ($queue eq 'pf') {
		is($span + 0, $count - 1, 'pf (backfill): the ticks form one unbroken run, across restarts, a crash and a promotion');
		is($max_gap + 0, 1, 'pf (backfill): no tick is missing');
	} else {
		ok($max_gap >= 3, "pq: the missed ticks were skipped, not backfilled (largest gap $max_gap s)");
	}
	is($primary->safe_psql('postgres', "SELECT '$schedule{$queue}{last}'::timestamptz = '$max_tick'::timestamptz"), 't',
		"$queue: last_run_at is the last tick enqueued");
	is($primary->safe_psql('postgres',
			"SELECT '$schedule{$queue}{next}'::timestamptz = '$schedule{$queue}{last}'::timestamptz + interval '1 second'"),
		't', "$queue: next_run_at is the tick after it");
}

# A due schedule that another transaction holds is skipped without a busy
# loop: the worker waits for awa.periodic_interval (1 s) between steps, so
# over 3 s it runs a handful of steps, not thousands (a slower machine runs
# fewer).
$primary->safe_psql('postgres', q{SELECT awa.schedule_periodic('held', 'every 1 second', 'p.held', queue => 'held')});
my $holder = $primary->background_psql('postgres');
$holder->query_safe(q{BEGIN; SELECT 1 FROM awa.periodic_schedules WHERE name = 'held' FOR UPDATE});
$primary->poll_query_until('postgres', q{SELECT next_run_at < now() - interval '1 second' FROM awa.periodic_jobs WHERE name = 'held'})
  or die 'the held schedule did not fall due';
my $runs = q{SELECT runs FROM awa.maintenance_status() WHERE task = 'periodic'};
my $runs_before = $primary->safe_psql('postgres', $runs);
sleep 3;
my $runs_after = $primary->safe_psql('postgres', $runs);
ok($runs_after - $runs_before <= 30, 'while a due schedule is held, the periodic step runs ' . ($runs_after - $runs_before) . ' times in 3 s');
$holder->query_safe('ROLLBACK');
$holder->quit;
$primary->poll_query_until('postgres', q{SELECT count(*) > 0 FROM awa.claim('held', 10)})
  or die 'the held schedule did not tick once released';
pass('once released, the held schedule ticks');

# The periodic task ran without an error on the final primary.
is($primary->safe_psql('postgres', q{SELECT errors FROM awa.maintenance_status() WHERE task = 'periodic'}), '0',
	'the periodic step had no error');

$primary->stop;
done_testing();
