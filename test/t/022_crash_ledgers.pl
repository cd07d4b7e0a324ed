# 022_crash_ledgers.pl
#
# Acknowledged work survives a crash and a failover under load (issue 11 §3).
# 4 producers and 4 workers, each its own process and psql session, write
# every acknowledgement to a ledger file only after the call returned (its
# COMMIT done): a producer 'E job_id' per enqueue, a worker 'C job_id' per
# completion that returned true. The rings rotate and prune every 100 ms, so
# several generations are live when it happens; claims commit asynchronously
# (the default) and take a 2 s deadline, so attempts lost with their worker
# are rescued soon.
#
# 1. kill -9 of the postmaster mid-load, then a restart.
# 2. A synchronous standby promoted mid-load (the primary stopped in
#    immediate mode).
#
# After each: 0 acknowledged enqueues missing, 0 acknowledged completions
# undone (each such job is completed), every job enqueued is completed once a
# drain (claim and complete until nothing is left, on the server that
# survived, with its maintenance worker rescuing and promoting) is done, no
# job is claimable or running afterwards (none skipped), and queue_counts
# equals queue_counts_exact. In 2 the new primary's maintenance worker runs.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use Time::HiRes qw(usleep time);

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

# Acknowledged enqueues to wait for before the break (AWA_LEDGER_ENQUEUES;
# more for a longer run).
my $want_enqueues = $ENV{AWA_LEDGER_ENQUEUES} // 300;

my $conf = qq{
awa.queue_rotate_interval = '100ms'
awa.claim_rotate_interval = '100ms'
awa.lease_rotate_interval = '100ms'
awa.rescue_interval = '200ms'
awa.promote_interval = '100ms'
restart_after_crash = on
};

# One client process: a producer or a worker, until its session fails (the
# crash) or $stop exists. Appends its acknowledgements to $ledger.
sub client
{
	my ($node, $role, $ledger, $stop) = @_;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	return $pid if $pid;
	my $session = eval { $node->background_psql('postgres', on_error_stop => 0) };
	POSIX::_exit(0) unless $session;
	open my $fh, '>>', $ledger or POSIX::_exit(1);
	$fh->autoflush(1);
	while (!-e $stop)
	{
		if ($role eq 'producer')
		{
			my ($out, $failed) = eval { $session->query("SELECT awa.enqueue('k', '{}', 'cq')") };
			last if !defined $out || $failed || $out !~ /^\d+$/;
			print $fh "E $out\n";
		}
		else
		{
			my ($out, $failed) = eval {
				$session->query("SELECT job_id, run_lease, receipt_id FROM awa.claim('cq', 5, '2 seconds')");
			};
			last if !defined $out || $failed;
			for my $row (grep { /\|/ } split /\n/, $out)
			{
				my ($job, $lease, $receipt) = split /\|/, $row;
				my ($ok, $f2) = eval { $session->query("SELECT awa.complete($job, $lease, $receipt)") };
				POSIX::_exit(0) if !defined $ok || $f2;
				print $fh "C $job\n" if $ok eq 't';
			}
			usleep(5_000) if $out eq '';
		}
	}
	close $fh;
	eval { $session->quit };
	POSIX::_exit(0);
}

sub ledger_lines
{
	my ($dir, $kind) = @_;
	my %jobs;
	for my $file (glob("$dir/*.ledger"))
	{
		open my $fh, '<', $file or next;
		while (<$fh>) { $jobs{$1} = 1 if /^$kind (\d+)$/; }
		close $fh;
	}
	return \%jobs;
}

# Starts the load, waits until enough is acknowledged, runs $break, waits for
# the clients to end. Returns the ledger directory.
sub load_then
{
	my ($node, $label, $break) = @_;
	my $dir = $node->basedir . "/ledgers_$label";
	mkdir $dir;
	my $stop = "$dir/stop";
	my @pids;
	push @pids, client($node, 'producer', "$dir/p$_.ledger", $stop) for 1 .. 4;
	push @pids, client($node, 'worker', "$dir/w$_.ledger", $stop) for 1 .. 4;
	my $t0 = time;
	my $generation = sub {
		return $node->safe_psql('postgres', "SELECT generation FROM awa.storage_status() WHERE ring = 'queue'");
	};
	my $gen0 = $generation->();
	# Until enough is acknowledged and the queue ring has moved on by three
	# generations (several are live at the break).
	until ((keys %{ ledger_lines($dir, 'E') }) >= $want_enqueues
		  && (keys %{ ledger_lines($dir, 'C') }) >= $want_enqueues / 3
		  && $generation->() >= $gen0 + 3)
	{
		die "$label: the load acknowledged too little in 600 s" if time - $t0 > 600;
		usleep(100_000);
	}
	note "$label: queue ring generation $gen0 -> " . $generation->() . ' before the break';
	$break->();
	open my $fh, '>', $stop;
	close $fh;
	waitpid($_, 0) for @pids;
	return $dir;
}

# Completes everything claimable on $node (the worker there rescues the
# attempts of dead workers after their 2 s deadline and promotes them).
sub drain
{
	my ($node) = @_;
	my $t0 = time;
	while (time - $t0 < 300)
	{
		my $left = $node->safe_psql('postgres',
			"SELECT available + scheduled + retryable + running FROM awa.queue_counts_exact('cq')");
		last if $left eq '0';
		my $out = $node->safe_psql('postgres', "SELECT job_id, run_lease, receipt_id FROM awa.claim('cq', 50)");
		for my $row (grep { /\|/ } split /\n/, $out)
		{
			my ($job, $lease, $receipt) = split /\|/, $row;
			$node->safe_psql('postgres', "SELECT awa.complete($job, $lease, $receipt)");
		}
		usleep(100_000) if $out eq '';
	}
}

sub check
{
	my ($node, $label, $dir) = @_;
	my $enq = ledger_lines($dir, 'E');
	my $done = ledger_lines($dir, 'C');
	note sprintf('%s: %d enqueues and %d completions acknowledged before the break', $label,
		scalar(keys %$enq), scalar(keys %$done));
	my $state = sub {
		my ($ids) = @_;
		return {} unless @$ids;
		my %s = map { split /\|/ } split /\n/, $node->safe_psql('postgres',
			'SELECT j, coalesce(awa.get_job(j) ->> \'state\', \'missing\') FROM unnest(ARRAY[' . join(',', @$ids) . ']::bigint[]) j');
		return \%s;
	};
	my $before = $state->([ keys %$done ]);
	my @undone = grep { $before->{$_} ne 'completed' } keys %$done;
	is(scalar(@undone), 0, "$label: 0 acknowledged completions undone (of " . scalar(keys %$done) . ')')
	  or diag("undone: @undone[0 .. ($#undone < 9 ? $#undone : 9)]");
	drain($node);
	my $after = $state->([ keys %$enq ]);
	my @missing = grep { $after->{$_} eq 'missing' } keys %$enq;
	is(scalar(@missing), 0, "$label: 0 acknowledged enqueues missing (of " . scalar(keys %$enq) . ')')
	  or diag("missing: @missing[0 .. ($#missing < 9 ? $#missing : 9)]");
	my @open = grep { $after->{$_} ne 'completed' && $after->{$_} ne 'missing' } keys %$enq;
	is(scalar(@open), 0, "$label: after the drain every acknowledged enqueue is completed")
	  or diag("not completed: " . join(' ', map { "$_=$after->{$_}" } @open[0 .. ($#open < 9 ? $#open : 9)]));
	is($node->safe_psql('postgres',
			"SELECT available + scheduled + retryable + running FROM awa.queue_counts_exact('cq')"),
		'0', "$label: nothing is left to claim or running (no job skipped)");
	is($node->safe_psql('postgres',
			"SELECT (SELECT row(c.*)::text FROM awa.queue_counts('cq') c) = (SELECT row(e.*)::text FROM awa.queue_counts_exact('cq') e)"),
		't', "$label: queue_counts equals queue_counts_exact");
}

# ---------------------------------------------------------------------------
# 1. kill -9 of the postmaster
# ---------------------------------------------------------------------------
{
	my $node = start_awa_node('crash', maintenance => 1, conf => $conf);
	my $dir = load_then($node, 'kill9', sub { $node->kill9; });
	# Orphaned backends notice the postmaster's death and exit; then it starts.
	# (A start that failed leaves the node thinking it runs: forget that.)
	my $started = 0;
	for (1 .. 60)
	{
		sleep 1;
		$node->{_pid} = undef;
		last if ($started = $node->start(fail_ok => 1));
	}
	ok($started, '1: the server starts again after kill -9 of the postmaster');
	check($node, '1 (kill -9)', $dir);
	$node->stop;
}

# ---------------------------------------------------------------------------
# 2. A synchronous standby promoted mid-load
# ---------------------------------------------------------------------------
{
	my $primary = start_awa_node('primary', maintenance => 1, init => { allows_streaming => 1 }, conf => $conf);
	my $standby = start_streaming_standby($primary, 'standby');
	make_standby_synchronous($primary);
	my $dir = load_then($primary, 'failover', sub { $primary->stop('immediate'); $standby->promote; });
	$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'not promoted';
	ok($standby->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'awa maintenance worker'"),
		'2: the maintenance worker starts on the promoted standby');
	check($standby, '2 (failover)', $dir);
	$standby->stop;
}

done_testing();
