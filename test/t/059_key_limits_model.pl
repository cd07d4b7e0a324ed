# 059_key_limits_model.pl
#
# A seeded, model-checked run of limits per key (issue 21 §2, §5): random
# keyed enqueues (some rolled back), claims of random sizes (some rolled back,
# some in a savepoint rolled back), completions, changes of key_max_running,
# rotations, prunes, counters passes (which free idle keys' entries) and
# restarts, with the worker on at its cadence. The model knows each key's
# available jobs and running attempts, so it bounds every claim: the jobs of
# one key (a key at its limit holds back no other key's jobs), none beyond the
# key's room, and something whenever something is claimable; fewer than the
# key could give, or a less urgent priority, is allowed (a lane walk may stop
# short, a busy lane is passed) and counted. A restart may lose claims
# committed asynchronously: the model takes their jobs back as available, as
# awa does.
#
#   KEYMODEL_SEED=<n>  replay a seed (default: time-based, printed)
#   KEYMODEL_OPS=<n>   operations per run (default 500)
#   KEYMODEL_SHARE=<n> awa.max_queues_per_database (default: 1000 or 24, by the seed)
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $seed = $ENV{KEYMODEL_SEED} // (int(time * 1000) % 1_000_000_007);
my $nops = $ENV{KEYMODEL_OPS} // 500;
diag("replay: KEYMODEL_SEED=$seed KEYMODEL_OPS=$nops");
srand($seed);

# KEYMODEL_SHARE: awa.max_queues_per_database (default, by the seed: 1000,
# every key with its counters entry, or 24, below the 40 keys, so that keys
# go without entries, are counted exactly and get entries again as idle ones
# are freed: the runs that found the defects of docs/flow-control.md, "Beyond
# the share").
my $share = $ENV{KEYMODEL_SHARE} // (rand() < 0.5 ? 1000 : 24);
diag("share $share");
my $node = start_awa_node('keymodel', maintenance => 1, conf => "awa.max_queues_per_database = $share\n");
my $fairness = rand() < 0.5 ? 'key' : 'none';
my $limit = 1 + int(rand(3));
$node->safe_psql('postgres', "SELECT awa.configure_queue('m', key_max_running => $limit, fairness => '$fairness')");
diag("fairness $fairness, key_max_running $limit");

my $s;    # the session (reconnected after a restart)
sub connect_session { $s = $node->background_psql('postgres', on_error_stop => 0); }
connect_session();

# Runs SQL in the session; dies on an ERROR (warnings of a full share are expected).
sub sql
{
	my ($q) = @_;
	my $out = $s->query($q);
	die "seed $seed: ERROR from <$q>: $s->{stderr}" if ($s->{stderr} // '') =~ /ERROR|FATAL|PANIC/;
	return $out;
}

my @keys = map { "k$_" } 1 .. 40;
my %available;    # key -> available jobs
my %running;      # "job_id run_lease receipt_id" -> key
my ($claims, $claimed_total, $limited_claims, $lost_claims, $short_claims, $out_of_order) = (0, 0, 0, 0, 0, 0);
my @log;

sub running_of { my ($k) = @_; return scalar grep { $running{$_} eq $k } keys %running; }

# A claim takes the jobs of one key (one lane), at the most urgent priority
# that has a claimable job (no aging in a queue with keyed jobs): of a key
# with room, min(n, its available jobs there, its room); nothing only when no
# key has both at any priority.
sub room_of { my ($k) = @_; my $r = $limit - running_of($k); return $r < 0 ? 0 : $r; }

sub claimable_of
{
	my ($k, $p) = @_;
	my $a = $available{"$k $p"} // 0;
	my $r = room_of($k);
	return $a < $r ? $a : $r;
}

sub first_priority
{
	for my $p (1 .. 3)
	{
		return $p if grep { claimable_of($_, $p) > 0 } @keys;
	}
	return 0;
}

# Claims n in the session; returns the claimed rows [job, lease, receipt, key].
sub claim_rows
{
	my ($n) = @_;
	my $out = sql(qq{SELECT c.job_id || ' ' || c.run_lease || ' ' || c.receipt_id || ' ' || (c.args->>'key') || ' ' || c.priority
	                   FROM awa.claim('m', $n) c});
	return map { [split / /] } grep { length } split /\n/, $out;
}

my $ok = 1;
OP: for my $op (1 .. $nops)
{
	my $r = rand();
	if ($r < 0.25)
	{
		my $k = $keys[int(rand(@keys))];
		my $n = 1 + int(rand(3));
		my $prio = 1 + int(rand(3));
		my $rollback = rand() < 0.2;
		sql('BEGIN');
		sql(qq{SELECT count(*) FROM (SELECT awa.enqueue('t', jsonb_build_object('key', '$k'), 'm', priority => $prio,
		         opts => jsonb_build_object('concurrency_key', '$k')) FROM generate_series(1, $n)) x});
		sql($rollback ? 'ROLLBACK' : 'COMMIT');
		$available{"$k $prio"} += $n unless $rollback;
		push @log, "$op enqueue $k x$n p$prio" . ($rollback ? ' rolled back' : '');
	}
	elsif ($r < 0.60)
	{
		my $n = 1 + int(rand(6));
		my $mode = rand();
		my $want_prio = first_priority();
		if ($op % 10 == 0)
		{
			# The model agrees with the claim ring on every key's running
			# attempts, read while no ring step runs (the ring lock shared, as
			# awa's own exact counts take it: TRUNCATE is not MVCC-safe).
			sql('BEGIN');
			sql('SELECT pg_advisory_xact_lock_shared(4708303813097377351)');
			my %ring = map { split /\|/ } grep { length } split /\n/, sql(q{
			  SELECT l.concurrency_key || '|' || (SELECT running FROM awa._key_running_scan('m', l.concurrency_key))
			    FROM (SELECT DISTINCT concurrency_key FROM awa.queue_lanes WHERE queue = 'm' AND concurrency_key IS NOT NULL) l});
			sql('COMMIT');
			for my $k (@keys)
			{
				next if running_of($k) == ($ring{$k} // 0);
				# An attempt the model holds that awa no longer runs, its job
				# available again, is a lost claim (at least once): taken back.
				for my $id (grep { $running{$_} eq $k } sort keys %running)
				{
					my ($job) = split / /, $id;
					my ($st, $p) = split / /, sql(qq{SELECT (awa.get_job($job)->>'state') || ' ' || (awa.get_job($job)->>'priority')});
					next unless $st eq 'available';
					$available{"$k $p"}++;
					delete $running{$id};
					$lost_claims++;
					push @log, "$op job $job: its claim lost, available again";
				}
				next if running_of($k) == ($ring{$k} // 0);
				$ok = 0;
				diag("seed $seed op $op: key $k runs " . ($ring{$k} // 0) . " attempts in the claim ring, " . running_of($k)
					  . ' in the model: '
					  . join(', ', map { my ($j) = split / /; "job $j " . sql(qq{SELECT awa.get_job($j)->>'state'}) }
						  grep { $running{$_} eq $k } sort keys %running));
			}
			$want_prio = first_priority();
		}
		my @rows;
		if ($mode < 0.15)
		{
			sql('BEGIN');
			@rows = claim_rows($n);
			sql('ROLLBACK');
		}
		elsif ($mode < 0.25)
		{
			sql('BEGIN');
			sql('SAVEPOINT s');
			@rows = claim_rows($n);
			sql('ROLLBACK TO SAVEPOINT s');
			sql('COMMIT');
		}
		else
		{
			@rows = claim_rows($n);
		}
		my $kept = $mode >= 0.25;
		my %per_key;
		$per_key{ $_->[3] }++ for @rows;
		my ($key) = keys %per_key;
		my $got_prio = @rows ? $rows[0]->[4] : 0;
		my $want = 0;
		$want = claimable_of($key, $got_prio) if defined $key;
		$want = $n if $want > $n;
		push @log, "$op claim $n: got " . scalar(@rows) . " want " . ($want_prio ? "$want (priority $want_prio)" : 0)
		  . ($kept ? '' : ' (rolled back)') . ' [' . join(' ', map { "$_->[3]/p$_->[4]/j$_->[0]" } @rows) . ']';
		if (keys(%per_key) > 1)
		{
			$ok = 0;
			diag("seed $seed op $op: one claim took jobs of " . join(', ', sort keys %per_key));
		}
		# Of one lane (one key, one priority). A less urgent priority than the
		# model's most urgent claimable one is allowed when that lane was busy
		# (docs/sql-reference.md, "Which jobs"): counted, not failed.
		for my $row (@rows)
		{
			next if $row->[4] == $got_prio;
			$ok = 0;
			diag("seed $seed op $op: one claim took jobs of priorities $got_prio and $row->[4]");
		}
		$out_of_order++ if @rows && $got_prio != $want_prio;
		if (!@rows && $want_prio)
		{
			$ok = 0;
			diag("seed $seed op $op: claim($n) returned nothing, the model has claimable jobs at priority $want_prio");
		}
		# Fewer is allowed (a lane walk may stop short of waiting jobs:
		# docs/sql-reference.md, "Which jobs"); more never.
		$short_claims++ if @rows && scalar(@rows) < $want;
		if (@rows && scalar(@rows) > $want)
		{
			$ok = 0;
			diag("seed $seed op $op: claim($n) returned " . scalar(@rows) . " of key $key, the model allows at most $want"
				  . ' (room ' . room_of($key) . ', the claim ring counts '
				  . sql(qq{SELECT running FROM awa._key_running_scan('m', '$key')}) . ' running now, the model '
				  . running_of($key) . ' before)');
		}
		$claims++;
		$limited_claims++ if @rows && $want < $n && $want == room_of($key);
		if ($kept)
		{
			for my $row (@rows)
			{
				$running{"$row->[0] $row->[1] $row->[2]"} = $row->[3];
				$available{"$row->[3] $row->[4]"}--;
			}
			$claimed_total += @rows;
		}
		last OP unless $ok;
	}
	elsif ($r < 0.85)
	{
		next OP unless %running;
		my @ids = sort keys %running;
		my $id = $ids[int(rand(@ids))];
		my ($job, $lease, $receipt) = split / /, $id;
		my $done = sql("SELECT awa.complete($job, $lease, $receipt) IS NOT NULL");
		push @log, "$op complete $job ($running{$id})";
		delete $running{$id};
	}
	elsif ($r < 0.90)
	{
		$limit = 1 + int(rand(3));
		sql("SELECT awa.configure_queue('m', key_max_running => $limit)");
		push @log, "$op key_max_running $limit";
	}
	elsif ($r < 0.97)
	{
		my $task = ('rotate', 'prune', 'counters')[int(rand(3))];
		sql("SELECT count(*) FROM awa.run_maintenance('$task')");
		push @log, "$op run_maintenance $task";
	}
	else
	{
		$s->quit;
		$node->restart;
		connect_session();
		# A claim committed asynchronously may be lost with the restart
		# (docs/architecture.md): its job is available again, whole.
		my $lost = 0;
		for my $id (sort keys %running)
		{
			my ($job, $lease) = split / /, $id;
			my $state = sql(qq{SELECT (awa.get_job($job)->>'state') || ' ' || (awa.get_job($job)->>'run_lease')
			                     || ' ' || (awa.get_job($job)->>'priority')});
			my ($st, $l, $p) = split / /, $state;
			next if $st eq 'running' && $l == $lease;
			die "seed $seed op $op: job $job is $state after the restart" unless $st eq 'available';
			$available{"$running{$id} $p"}++;
			delete $running{$id};
			$lost++;
		}
		push @log, "$op restart ($lost asynchronous claims lost)";
	}
}
ok($ok, "seed $seed: no claim of $claims took more than the model allows, none nothing while it had work ($limited_claims cut by the limit, "
	  . "$claimed_total claimed, $short_claims short of what they could take, $out_of_order of a less urgent priority, "
	  . "$lost_claims claims lost and taken back, fairness $fairness)")
  or do
{
	my $file = "$PostgreSQL::Test::Utils::tmp_check/keymodel_oplog_$seed.txt";
	open my $fh, '>', $file or die;
	print $fh join("\n", @log), "\n";
	close $fh;
	diag("the operations: $file; the last ones:\n" . join("\n", grep { defined } @log[-30 .. -1]));
};

# The end: everything drains, the counts agree.
sql("SELECT count(*) FROM awa.complete(" . join(', ', split / /, $_) . ")") for keys %running;
%running = ();
sql("SELECT awa.configure_queue('m', key_max_running => 3)");
$limit = 3;
my $left = 0;
$left += $_ for values %available;
my $drained = 0;
for (1 .. 1000)
{
	my @rows = claim_rows(10);
	last unless @rows;
	sql("SELECT count(*) FROM awa.complete($_->[0], $_->[1], $_->[2])") for @rows;
	$drained += @rows;
}
is($drained, $left, "seed $seed: the $left jobs left drain at the end");
is(sql(q{SELECT available || '/' || running FROM awa.queue_counts_exact('m')}), '0/0', 'none available or running');
$s->quit;
$node->stop;
done_testing();
