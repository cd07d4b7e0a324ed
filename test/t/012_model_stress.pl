# 012_model_stress.pl
#
# A seeded, randomized, model-checked stress run (issue 9, section 4). Four
# sessions, driven from this one process and interleaved by a seeded PRNG,
# enqueue (single and batch, some rolled back, some scheduled, priorities
# 1-4, some with unique keys, half of those with on_conflict "skip"; in
# producer transactions, some held open across many other ops, which no claim
# may wait behind, some ended by pg_terminate_backend), claim (autocommit, and in transactions that
# commit, roll back, are cut short by statement_timeout or by
# pg_terminate_backend), complete, retry, snooze, fail, heartbeat, send stale
# endings that must be refused, cancel, pause and resume queues, on three
# queues. Admin ops: awa.retry_jobs of failed and cancelled jobs (from the
# maintenance connection), and, from it or in admin transactions that
# commit, roll back or are terminated, awa.move_jobs and awa.set_priority (a
# moved available job is claimable exactly once, in its new lane, at its
# tail, with run_lease + 1; a rollback puts it back; an admin transaction
# that wrote lane positions ends in the op that wrote them half the time,
# see AwaModel.pm end_admin_now), and the DLQ (switched
# on and off per queue, qc starts with it on: a fail or an exhausted retry
# there dead-letters the job; awa.dlq_retry makes it available with attempt 0
# and its run_lease, awa.dlq_purge deletes it). The op mix is in AwaModel.pm,
# sub step. A maintenance connection forces rotations, prunes, promotions and
# whole maintenance runs, and quiet spells of rotations and prunes with
# nothing between them, after which the queue ring stands still on what it
# carried (the background worker is off; the queue ring has
# four slots so several generations are live at once), and the server is
# stopped with mode 'immediate' and started again at random points (claims
# made after the last WAL flush are in doubt; the oracle resolves them).
# test/t/AwaModel.pm holds the model and the ops.
#
# The model predicts every call's result. Every 200 ops (and at the end) the
# open transactions are ended and the oracle checks every job's state,
# run_lease and attempt (awa.get_job), queue_counts = queue_counts_exact =
# the model, and that claiming everything (in a transaction rolled back
# afterwards) returns exactly the model's available jobs, each lane in FIFO
# order. At the end every queue is drained with claims and completions. A
# second, shorter run of the same seed follows in a database with
# awa.history_retention = 0, where the model must say which finished jobs each
# prune drops (STRESS_NO_HISTORY_OPS).
#
# Environment:
#   STRESS_SEED=<n>     replay a seed (default: time-based, printed)
#   STRESS_OPS=<n>      ops per run (default 3000)
#   STRESS_SKIP=<list>  ops to skip, e.g. "1-40,45,50-60" (a shrunk case)
#   STRESS_SHRINK=1     on a failure, shrink it: the shortest failing prefix,
#                       then drop chunks of ops while the failure persists;
#                       prints the ops that remain and the command to replay
#   STRESS_SHRINK_SECS  time budget of the shrink (default 900)
#   STRESS_HISTORY_RETENTION=0  run with awa.history_retention = 0: a prune
#                       then drops its generation's finished jobs (default:
#                       the server's default, 1 hour, so they stay visible)
#   STRESS_OPEN_MOVES=1 admin transactions that moved available jobs or retried
#                       dead letters always stay open across other sessions'
#                       ops (by default half of them end in the op that wrote
#                       their lane positions)
#   STRESS_NO_HISTORY_OPS=<n>  after a run with the history ring, a second run
#                       of n ops (default 1000; 0: none) of the same seed in a
#                       database with awa.history_retention = 0, which replays
#                       with STRESS_OPS=<n> STRESS_HISTORY_RETENTION=0
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

use FindBin;
use lib $FindBin::Bin;
use AwaTap;
use AwaModel;

my $seed = $ENV{STRESS_SEED} // (int(time * 1000) % 1_000_000_007);
my $nops = $ENV{STRESS_OPS} // 3000;
my %skip = parse_skip($ENV{STRESS_SKIP} // '');
my $no_history = defined $ENV{STRESS_HISTORY_RETENTION} && $ENV{STRESS_HISTORY_RETENTION} eq '0';
# The command that replays a run (the same seed draws the same ops).
sub replay_cmd
{
	my ($n, $sk, $nohist) = @_;
	$nohist //= $no_history;
	return "STRESS_SEED=$seed STRESS_OPS=$n"
	  . (%$sk ? ' STRESS_SKIP=' . fmt_skip($sk) : '')
	  . ($ENV{STRESS_NO_CRASH} ? ' STRESS_NO_CRASH=1' : '')
	  . ($nohist ? ' STRESS_HISTORY_RETENTION=0' : '')
	  . ' make tapcheck PROVE_TESTS=test/t/012_model_stress.pl';
}
diag("STRESS_SEED=$seed STRESS_OPS=$nops; replay: " . replay_cmd($nops, \%skip));

# wal_level: the test framework's default is minimal. There, a sequence
# created in a transaction (a lane's enqueue cursor, created by the lane's
# first enqueue) and advanced by nextval in that transaction trusts
# log_cnt values that were never WAL-logged: after an immediate shutdown
# the cursor comes back at its creation-time value and hands out lane
# positions again (a PostgreSQL behaviour, reproduced with a plain
# sequence). Servers run replica, the default; so does this test.
my $node = start_awa_node('stress', conf => $QUIET_WAL_CONF . q{
wal_level = replica
awa.queue_slot_count = 4
awa.claim_slot_count = 4
awa.lease_slot_count = 2
awa.heartbeat_staleness = '1d'
awa.prune_lock_timeout = '50ms'
max_connections = 20
} . ($no_history ? "awa.history_retention = 0\n" : ''));

sub parse_skip
{
	my %s;
	for my $part (split /,/, $_[0])
	{
		if ($part =~ /^(\d+)-(\d+)$/) { $s{$_} = 1 for $1 .. $2; }
		elsif ($part =~ /^(\d+)$/) { $s{$1} = 1; }
	}
	return %s;
}

sub fmt_skip
{
	my @k = sort { $a <=> $b } keys %{ $_[0] };
	my @out;
	while (@k)
	{
		my $a = shift @k;
		my $b = $a;
		$b = shift @k while @k && $k[0] == $b + 1;
		push @out, $a == $b ? $a : "$a-$b";
	}
	return join(',', @out);
}

my $dbno = 0;

# One run in a fresh database; returns (error or undef, model). $nohist: in a
# database with awa.history_retention = 0 (the server has the default).
sub trial
{
	my ($n, $skip, $nohist) = @_;
	my $model = AwaModel->new(node => $node, seed => $seed, nops => $n, skip => $skip, db => 'stress_' . $dbno++,
		keep_history => !($no_history || $nohist),
		db_settings => $nohist ? { 'awa.history_retention' => '0' } : {});
	my $t0 = time;
	eval { $model->run; 1 } or do { my $e = $@; $model->disconnect_all; return ($e, $model); };
	$model->disconnect_all;
	$model->{secs} = time - $t0;
	return (undef, $model);
}

my ($err, $model) = trial($nops, \%skip);
if ($err)
{
	fail("seed $seed: the model and awa agree");
	diag($err);
	diag("last ops:\n" . $model->tail(50));
	my $file = "$PostgreSQL::Test::Utils::tmp_check/stress_oplog_$seed.txt";
	if (open(my $fh, '>', $file)) { print $fh $model->tail(5000), "\n$err"; close $fh; diag("whole op log: $file"); }
	diag("replay: " . replay_cmd($nops, \%skip));
	shrink($err, $model) if $ENV{STRESS_SHRINK};
}
else
{
	pass("seed $seed: the model and awa agree over $nops ops");
	my %st = %{ $model->{stats} };
	diag(sprintf('%.1f s; ', $model->{secs}) . join(' ', map { "$_=$st{$_}" } sort keys %st));
}

# Without the history ring, a prune drops its generation's finished jobs, and
# the model must say which, job by job (with it, it keeps them all). A shorter
# second run covers that in every run of the suite: it found get_job and cancel
# answering from a ready row that a prune had carried with a claim batch still
# open, after the job's own records had been dropped (docs/maintenance.md 3.3).
my $nohist_ops = $ENV{STRESS_NO_HISTORY_OPS} // 1000;
if (!$no_history && $nohist_ops > 0 && !$ENV{STRESS_SKIP})
{
	my ($err2, $model2) = trial($nohist_ops, {}, 1);
	if ($err2)
	{
		fail("seed $seed, awa.history_retention = 0: the model and awa agree");
		diag($err2);
		diag("last ops:\n" . $model2->tail(50));
		my $file = "$PostgreSQL::Test::Utils::tmp_check/stress_oplog_${seed}_no_history.txt";
		if (open(my $fh, '>', $file)) { print $fh $model2->tail(5000), "\n$err2"; close $fh; diag("whole op log: $file"); }
		diag("replay (STRESS_SHRINK=1 shrinks it): " . replay_cmd($nohist_ops, {}, 1));
	}
	else
	{
		pass("seed $seed, awa.history_retention = 0: the model and awa agree over $nohist_ops ops");
		my %st = %{ $model2->{stats} };
		diag(sprintf('%.1f s; ', $model2->{secs}) . join(' ', map { "$_=$st{$_}" } sort keys %st));
	}
}

# Shrinks a failure: the shortest failing prefix, then ddmin-style removal of
# chunks of ops. A candidate counts as failing if it raises any model mismatch.
sub shrink
{
	my ($err0, $m0) = @_;
	my $deadline = time + ($ENV{STRESS_SHRINK_SECS} // 900);
	my ($fail_op) = $err0 =~ /at op (\d+)/;
	$fail_op = $nops if !$fail_op || $fail_op > $nops;
	my %skip0 = %skip;
	# The same failure: the message with its op, numbers and lists blanked.
	my $norm = sub {
		my $e = shift;
		$e =~ s/^MODEL MISMATCH at op \d+: //;
		$e =~ s/^(phase check after op \d+|final|after drain): //;
		$e =~ s/\[[^\]]*\]/[]/g;
		$e =~ s/\(.*?\)//g;
		$e =~ s/\d+/N/g;
		return $e;
	};
	my $want = $norm->($err0);
	diag("shrink: keeping failures like: $want");
	my $fails = sub {
		my ($n, $sk) = @_;
		my ($e, $m) = trial($n, $sk);
		return ($e && $e =~ /MODEL MISMATCH/ && $norm->($e) eq $want) ? ($e, $m) : ();
	};
	# Shortest failing prefix (binary search).
	my ($lo, $hi) = (1, $fail_op);
	my ($best_e, $best_m) = $fails->($hi, \%skip0);
	if (!$best_e) { diag("shrink: the failure did not reproduce with $hi ops"); return; }
	while ($lo < $hi && time < $deadline)
	{
		my $mid = int(($lo + $hi) / 2);
		my ($e, $m) = $fails->($mid, \%skip0);
		if ($e) { ($hi, $best_e, $best_m) = ($mid, $e, $m); } else { $lo = $mid + 1; }
	}
	my $n = $hi;
	diag("shrink: the shortest failing prefix is $n ops");
	# Drop chunks while it still fails.
	my %sk = %skip0;
	my $chunk = int($n / 2) || 1;
	while ($chunk >= 1 && time < $deadline)
	{
		my @active = grep { !$sk{$_} } 1 .. $n;
		my $changed = 0;
		for (my $k = 0; $k < @active && time < $deadline; $k += $chunk)
		{
			my @drop = @active[ $k .. ($k + $chunk - 1 < $#active ? $k + $chunk - 1 : $#active) ];
			my %try = (%sk, map { $_ => 1 } @drop);
			my ($e, $m) = $fails->($n, \%try);
			if ($e) { %sk = %try; ($best_e, $best_m) = ($e, $m); $changed = 1; }
		}
		$chunk = int($chunk / 2) unless $changed;
	}
	my @active = grep { !$sk{$_} } 1 .. $n;
	diag("shrink: " . scalar(@active) . " ops remain: " . join(' ', @active));
	diag("shrunk failure: $best_e");
	diag("shrunk run, every op:\n" . $best_m->tail(400));
	diag("replay: " . replay_cmd($n, \%sk));
}

$node->stop;
done_testing();
