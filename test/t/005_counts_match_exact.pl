# 005_counts_match_exact.pl
#
# awa.queue_counts (shared-memory counters, applied at commit, rebuilt by one
# exact pass on first use after a restart) must always equal
# awa.queue_counts_exact (counted from the tables).
#
# A seeded random mix (srand(42)) of every operation over three queues (qa,
# qb, and qd with dlq_enabled): enqueue, enqueue_many (some with a future
# run_at), claim (max_jobs 1..5), complete, complete_many, heartbeat,
# heartbeat_many, retry (delay 0 and NULL), snooze, fail, cancel (available,
# scheduled, retryable, running, finished), promote_due (also with a small
# max_jobs), dlq_retry, dlq_purge, pause/resume, move_jobs and set_priority
# (available, scheduled, retryable and other jobs), retry_jobs (failed,
# cancelled and other jobs) and calls with ended attempts.
# Some steps run inside explicit transactions that roll back or commit, some
# with a SAVEPOINT rolled back.
#
# A Perl model tracks every job's state, attempt and run_lease and every live
# attempt (job_id, run_lease, receipt_id). At each check point:
#   - queue_counts(NULL) = queue_counts_exact(NULL), row for row;
#   - queue_counts_exact of qa, qb, qd = the model's counts;
#   - awa.get_job's state of every tracked job = the model's;
#   - queue_metrics' oldest available job (kept in shared memory, see
#     src/pg/counters.hpp) = the SQL walk awa._oldest_available_at;
#   - every call returned what the model predicted (collected, one assertion).
# Inside open transactions (including after ROLLBACK TO SAVEPOINT) the first
# two hold as well: queue_counts includes the caller's uncommitted changes.
#
# Phases: random mix; clean restart (first use of the counters is
# queue_counts itself); more steps; crash (stop -m immediate) and restart
# (first use of the counters is a write); two background sessions claiming
# and ending attempts on queue qc while the main session enqueues on qc and
# goes on with the mix, then the main session drains qc; top-up steps until
# every listed operation and outcome has been exercised (timing decides when
# retries with delay NULL come due, so runs differ slightly); final checks.
# Before the crash, a synchronous commit makes the earlier asynchronous claim
# commits durable, so the model still holds after recovery.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Storable qw(dclone);

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

srand(42);

my $node = start_awa_node('main', conf => "autovacuum = off\n");

my @Q = qw(qa qb qd);
my %dlq_q = (qd => 1);

# ---------------------------------------------------------------------------
# Main session
# ---------------------------------------------------------------------------
my $s;
my $in_tx = 0;    # the main session is inside BEGIN ... COMMIT/ROLLBACK
sub open_main
{
	$s = $node->background_psql('postgres', on_error_stop => 0);
	$s->set_query_timer_restart();
	sq("SET client_min_messages = warning");
}

# One statement (or several) on the main session; dies on any SQL error.
sub sq
{
	my ($sql) = @_;
	my $out = $s->query($sql);
	if ($s->{stderr} ne '')
	{
		my $err = $s->{stderr};
		$s->{stderr} = '';
		die "query failed: $sql\n$err";
	}
	return $out;
}

# The same, returning (output, error text or undef) instead of dying. Inside a
# transaction the call runs in a savepoint, so an error leaves the
# transaction usable.
sub sq_try
{
	my ($sql) = @_;
	sq("SAVEPOINT try_call") if $in_tx;
	my $out = $s->query($sql);
	my $err = $s->{stderr};
	$s->{stderr} = '';
	if ($err ne '')
	{
		sq("ROLLBACK TO SAVEPOINT try_call") if $in_tx;
		return (undef, $err);
	}
	sq("RELEASE SAVEPOINT try_call") if $in_tx;
	return ($out, undef);
}

sub rows { return grep { $_ ne '' } split /\n/, ($_[0] // ''); }

# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------
# job_id => { q, prio, state, used (attempts used), max, lease (last run_lease), due }
#   state: available scheduled retryable running completed failed cancelled dlq purged
#   due (scheduled/retryable only): now | never | unknown
my %job;
my %live;      # job_id => { lease, receipt } for every running job
my @dead;      # [job_id, run_lease, receipt_id, heartbeat answer] of ended attempts
my %paused;    # queue => 1
my @problems;  # every call whose result differed from the model's prediction
my $step = 0;
my $concurrent = 0;    # other sessions are running (promote_due counts their jobs)

sub problem { push @problems, "step $step: $_[0]"; }

# What the mix exercised: operation and outcome => times (checked at the end).
my %seen;
sub seen { $seen{ $_[0] }++; }

sub pick { return $_[ int(rand(scalar @_)) ]; }

sub ids_in
{
	my (@states) = @_;
	my %want = map { $_ => 1 } @states;
	return grep { $want{ $job{$_}{state} } } sort { $a <=> $b } keys %job;
}

sub snapshot
{
	return dclone({ job => \%job, live => \%live, dead => \@dead, paused => \%paused });
}

# Rollback (of a transaction or to a savepoint): back to the snapshot. Every
# attempt claimed in the rolled-back part is dead: its receipt must be refused.
sub restore
{
	my ($snap) = @_;
	my %rolled = %live;
	%job    = %{ $snap->{job} };
	%live   = %{ $snap->{live} };
	@dead   = @{ $snap->{dead} };
	%paused = %{ $snap->{paused} };
	for my $id (sort { $a <=> $b } keys %rolled)
	{
		my $old = $live{$id};
		next if $old && $old->{receipt} == $rolled{$id}{receipt};
		push @dead, [ $id, $rolled{$id}{lease}, $rolled{$id}{receipt}, 'stale' ];
	}
}

# The live attempt of $id ends; the job goes to $state.
sub finish
{
	my ($id, $state, $hb) = @_;
	my $a = delete $live{$id};
	push @dead, [ $id, $a->{lease}, $a->{receipt}, $hb // 'stale' ];
	$job{$id}{state} = $state;
}

sub model_rows
{
	my @out;
	for my $q (@Q)
	{
		my %n = map { $_ => 0 }
		  qw(available scheduled retryable running completed failed cancelled dlq);
		for my $j (values %job)
		{
			$n{ $j->{state} }++ if $j->{q} eq $q && $j->{state} ne 'purged';
		}
		push @out, join '|', $q,
		  @n{qw(available scheduled retryable running completed failed cancelled dlq)};
	}
	return \@out;
}

# After promote_due or dlq_retry: jobs the model has as scheduled/retryable
# and that left awa.deferred_jobs are available now.
sub resync
{
	my ($promoted, $all_due) = @_;
	my %def = map { split /\|/ } rows(sq("SELECT job_id, state FROM awa.deferred_jobs"));
	my $moved = 0;
	for my $id (sort { $a <=> $b } keys %job)
	{
		my $j = $job{$id};
		if (($j->{state} eq 'scheduled' || $j->{state} eq 'retryable') && ($def{$id} // '') eq 'available')
		{
			# Due while its queue is paused: parked, available.
			problem("job $id parked although queue $j->{q} is not paused") if !$concurrent && !$paused{ $j->{q} };
			$j->{state} = 'available';
			delete $j->{due};
			$moved++;
		}
		elsif ($j->{state} eq 'scheduled' || $j->{state} eq 'retryable')
		{
			if (exists $def{$id})
			{
				problem("job $id: deferred_jobs state $def{$id}, model $j->{state}")
				  if $def{$id} ne $j->{state};
				problem("job $id ($j->{q}) is due but promote_due left it deferred")
				  if $all_due && $j->{due} eq 'now' && !$paused{ $j->{q} };
			}
			else
			{
				problem("job $id promoted although queue $j->{q} is paused")
				  if defined $promoted && $paused{ $j->{q} };
				problem("job $id promoted although its run_at is an hour away")
				  if $j->{due} eq 'never';
				$j->{state} = 'available';
				delete $j->{due};
				$moved++;
			}
		}
		elsif (exists $def{$id})
		{
			# An available job of a paused queue is parked there.
			problem("job $id is in deferred_jobs ($def{$id}) but the model has $j->{state}")
			  unless $def{$id} eq 'available' && $j->{state} eq 'available' && ($concurrent || $paused{ $j->{q} });
		}
	}
	problem("promote_due returned $promoted but $moved tracked jobs left deferred_jobs")
	  if defined $promoted && !$concurrent && $promoted != $moved;
}

# ---------------------------------------------------------------------------
# Operations
# ---------------------------------------------------------------------------
my @RUN_AT = (
	[ 0.70, 'NULL', 'available' ],
	[ 0.85, "now() + interval '1 hour'", 'scheduled', 'never' ],
	[ 0.95, "now() - interval '10 minutes'", 'available' ],
	[ 1.00, "now() + interval '2 seconds'", 'scheduled', 'unknown' ]);

sub random_run_at
{
	my $r = rand;
	for my $c (@RUN_AT) { return @$c[ 1 .. 3 ] if $r < $c->[0]; }
}

sub add_job
{
	my ($id, $q, $prio, $max, $state, $due) = @_;
	problem("enqueue returned an id already used: $id") if exists $job{$id};
	$job{$id} = { q => $q, prio => $prio, state => $state, used => 0, max => $max, lease => 0 };
	$job{$id}{due} = $due if $state eq 'scheduled';
}

sub op_enqueue
{
	my $q = pick(@Q);
	my $prio = 1 + int(rand(4));
	my $max = pick(1, 1, 2, 3, 25);
	my ($run_at, $state, $due) = random_run_at();
	my $id = sq("SELECT awa.enqueue('k', '{\"step\": $step}', '$q', $prio, $run_at, $max)");
	add_job($id, $q, $prio, $max, $state, $due);
	seen("enqueue $state");
	return 1;
}

sub op_enqueue_many
{
	my $q = pick(@Q);
	my $n = 1 + int(rand(6));
	my $max = pick(1, 1, 2, 25);
	my (@prio, @run_at, @state);
	for (1 .. $n)
	{
		push @prio, 1 + int(rand(4));
		my @r = random_run_at();
		push @run_at, $r[0];
		push @state,  [ @r[ 1, 2 ] ];
	}
	my $kinds = join ',', map { "'k$_'" } 1 .. $n;
	my $args  = join ',', map { "'{\"step\": $step, \"i\": $_}'" } 1 .. $n;
	my $out = sq(
		    "SELECT ord, id FROM awa.enqueue_many(ARRAY[$kinds], ARRAY[$args]::jsonb[], '$q', "
		  . "ARRAY[" . join(',', @prio) . "], ARRAY[" . join(',', @run_at) . "]::timestamptz[], $max) "
		  . "WITH ORDINALITY AS t(id, ord) ORDER BY ord");
	my @r = rows($out);
	problem("enqueue_many of $n jobs returned " . scalar(@r) . " ids") if @r != $n;
	for my $row (@r)
	{
		my ($ord, $id) = split /\|/, $row;
		add_job($id, $q, $prio[ $ord - 1 ], $max, @{ $state[ $ord - 1 ] });
		seen("enqueue_many $state[$ord - 1][0]");
	}
	return 1;
}

sub op_claim
{
	my $q = pick(@Q);
	my $m = 1 + int(rand(5));
	my @avail = grep { $job{$_}{q} eq $q } ids_in('available');
	my @r = rows(sq(
		"SELECT job_id, run_lease, receipt_id, attempt, max_attempts FROM awa.claim('$q', $m)"));
	problem("claim('$q', $m) returned " . scalar(@r) . " rows") if @r > $m;
	if ($paused{$q})
	{
		problem("claim on paused queue $q returned " . scalar(@r) . " rows") if @r;
		seen('claim on a paused queue');
	}
	elsif (@avail && !@r)
	{
		problem("claim('$q', $m) returned nothing, the model has " . scalar(@avail) . " available");
	}
	for my $row (@r)
	{
		my ($id, $lease, $receipt, $attempt, $max) = split /\|/, $row;
		my $j = $job{$id};
		if (!$j || $j->{q} ne $q || $j->{state} ne 'available')
		{
			problem("claim('$q') returned job $id, model: "
				  . ($j ? "$j->{q} $j->{state}" : 'unknown'));
			next unless $j;
		}
		problem("claim of job $id: attempt $attempt, expected " . ($j->{used} + 1))
		  if $attempt != $j->{used} + 1;
		problem("claim of job $id: run_lease $lease, expected " . ($j->{lease} + 1))
		  if $lease != $j->{lease} + 1;
		problem("claim of job $id: max_attempts $max, expected $j->{max}")
		  if $max != $j->{max};
		$j->{state} = 'running';
		$j->{used}  = $attempt;
		$j->{lease} = $lease;
		$live{$id} = { lease => $lease, receipt => $receipt };
	}
	seen('claim of ' . (@r > 1 ? 'several jobs' : @r ? 'one job' : 'no job'));
	seen("claim max_jobs $m");
	return 1;
}

sub pick_live
{
	my @ids = sort { $a <=> $b } keys %live;
	return @ids ? pick(@ids) : undef;
}

sub triple { my $a = $live{ $_[0] }; return "$_[0], $a->{lease}, $a->{receipt}"; }

sub op_complete
{
	my $id = pick_live() // return 0;
	my $r = sq("SELECT awa.complete(" . triple($id) . ")");
	problem("complete of live job $id returned $r") if $r ne 't';
	finish($id, 'completed');
	seen('complete');
	return 1;
}

sub op_complete_many
{
	my @ids = sort { $a <=> $b } keys %live;
	return 0 unless @ids;
	my $n = 1 + int(rand(4));
	my (%chosen, @j, @l, @r, @exp);
	for (1 .. $n)
	{
		my $id = pick(@ids);
		next if $chosen{$id}++;
		push @j, $id;
		push @l, $live{$id}{lease};
		push @r, $live{$id}{receipt};
		push @exp, "$id|t";
	}
	if (@dead && rand() < 0.5)
	{
		my $d = pick(@dead);
		push @j, $d->[0];
		push @l, $d->[1];
		push @r, $d->[2];
		push @exp, "$d->[0]|f";
	}
	my @got = rows(sq(
		    "SELECT job_id, accepted FROM awa.complete_many(ARRAY["
		  . join(',', @j) . "]::bigint[], ARRAY[" . join(',', @l)
		  . "]::bigint[], ARRAY[" . join(',', @r) . "]::bigint[]) ORDER BY job_id, accepted"));
	my @want = sort { (split /\|/, $a)[0] <=> (split /\|/, $b)[0] || $a cmp $b } @exp;
	problem("complete_many: got [@got], expected [@want]")
	  if join(' ', @got) ne join(' ', @want);
	finish($_, 'completed') for grep { $live{$_} } keys %chosen;
	seen('complete_many' . (@exp > keys %chosen ? ' with a stale attempt' : ''));
	return 1;
}

sub op_heartbeat
{
	if (rand() < 0.7)
	{
		my $id = pick_live() // return 0;
		my $r = sq("SELECT awa.heartbeat(" . triple($id) . ", '{\"step\": $step}')");
		problem("heartbeat of live job $id returned $r") if $r ne 'alive';
		seen('heartbeat');
		return 1;
	}
	# heartbeat_many: some live attempts and, maybe, one ended attempt
	my @ids = sort { $a <=> $b } keys %live;
	my (%seen, @t, @exp);
	for (1 .. 1 + int(rand(3)))
	{
		last unless @ids;
		my $id = pick(@ids);
		next if $seen{$id}++;
		push @t,   [ $id, $live{$id}{lease}, $live{$id}{receipt} ];
		push @exp, "$id|$live{$id}{lease}|alive";
	}
	if (@dead)
	{
		my $d = pick(@dead);
		push @t,   [ @$d[ 0 .. 2 ] ];
		push @exp, "$d->[0]|$d->[1]|$d->[3]";
	}
	return 0 unless @t;
	my @got = rows(sq(
		    "SELECT job_id, run_lease, status FROM awa.heartbeat_many("
		  . join(', ', map { my $i = $_; 'ARRAY[' . join(',', map { $_->[$i] } @t) . ']::bigint[]' } 0 .. 2)
		  . ") ORDER BY job_id, run_lease, status"));
	my @want = sort { (split /\|/, $a)[0] <=> (split /\|/, $b)[0] || $a cmp $b } @exp;
	problem("heartbeat_many: got [@got], expected [@want]")
	  if join(' ', @got) ne join(' ', @want);
	seen('heartbeat_many');
	return 1;
}

sub op_retry
{
	my $id = pick_live() // return 0;
	my $j = $job{$id};
	my $zero = rand() < 0.5;
	my $delay = $zero ? "interval '0'" : 'NULL';
	my $exp =
	    $j->{used} < $j->{max} ? 'retryable'
	  : $dlq_q{ $j->{q} }      ? 'dlq'
	  :                          'failed';
	my $r = sq("SELECT awa.retry(" . triple($id) . ", 'error at step $step', $delay)");
	problem("retry of job $id (attempt $j->{used} of $j->{max}) returned $r, expected $exp")
	  if $r ne $exp;
	finish($id, $exp);
	$j->{due} = $zero ? 'now' : 'unknown' if $exp eq 'retryable';
	seen("retry -> $exp" . ($exp eq 'retryable' ? ($zero ? ' (delay 0)' : ' (delay NULL)') : ''));
	return 1;
}

sub op_snooze
{
	my $id = pick_live() // return 0;
	my $zero = rand() < 0.6;
	my $r = sq("SELECT awa.snooze(" . triple($id) . ", interval '" . ($zero ? '0' : '1 hour') . "')");
	problem("snooze of job $id returned $r") if $r ne 'scheduled';
	finish($id, 'scheduled');
	$job{$id}{used}--;    # a snooze gives the attempt back
	$job{$id}{due} = $zero ? 'now' : 'never';
	seen('snooze');
	return 1;
}

sub op_fail
{
	my $id = pick_live() // return 0;
	my $exp = $dlq_q{ $job{$id}{q} } ? 'dlq' : 'failed';
	my $r = sq("SELECT awa.fail(" . triple($id) . ", 'fatal at step $step')");
	problem("fail of job $id returned $r, expected $exp") if $r ne $exp;
	finish($id, $exp);
	seen("fail -> $exp");
	return 1;
}

sub op_cancel
{
	my ($forced) = @_;    # a state to cancel a job in (top-up), else random
	my $what = $forced // pick(qw(available scheduled retryable running running finished));
	if ($what eq 'finished')
	{
		my @states = grep { my $st = $_; grep { $_->{state} eq $st } values %job }
		  qw(completed failed cancelled dlq purged);
		return 0 unless @states;
		$what = pick(@states);
	}
	my @ids = ids_in($what);
	return 0 unless @ids;
	my $id = pick(@ids);
	my $state = $job{$id}{state};
	seen("cancel of a $state job");
	my ($r, $err) = sq_try("SELECT awa.cancel($id)");
	if (defined $err)
	{
		$err =~ s/\s+/ /g;
		problem("cancel of $state job $id raised an error: $err");
		return 1;
	}
	if ($state eq 'running')
	{
		problem("cancel of running job $id returned $r") if $r ne 'cancel_requested';
		finish($id, 'cancelled', 'cancel_requested');
	}
	elsif ($state =~ /^(available|scheduled|retryable)$/)
	{
		problem("cancel of $state job $id returned $r") if $r ne 'cancelled';
		$job{$id}{state} = 'cancelled';
	}
	elsif ($state eq 'purged')
	{
		problem("cancel of purged job $id returned $r") if $r !~ /^(not_found|already_finished)$/;
	}
	else
	{
		problem("cancel of $state job $id returned $r") if $r ne 'already_finished';
	}
	return 1;
}

sub op_promote
{
	my $small = rand() < 0.2;
	my $max = $small ? 1 + int(rand(3)) : undef;
	my $n = sq("SELECT awa.promote_due(" . ($max // '') . ")");
	problem("promote_due($max) returned $n") if $small && $n > $max;
	resync($n, !$small && !$concurrent);
	seen('promote_due' . ($small ? ' (small max_jobs)' : '') . ($n > 0 ? ' moving jobs' : ''));
	return 1;
}

sub op_dlq_retry
{
	my @d = ids_in('dlq');
	return 0 unless @d;
	my (%c, @ids);
	for (1 .. 1 + int(rand(3))) { my $id = pick(@d); push @ids, $id unless $c{$id}++; }
	my @extra = rand() < 0.3 ? (pick(sort { $a <=> $b } keys %job)) : ();
	my $exp = scalar(@ids) + scalar(grep { !$c{$_} && $job{$_}{state} eq 'dlq' } @extra);
	my $n = sq("SELECT awa.dlq_retry(ARRAY[" . join(',', @ids, @extra) . "]::bigint[])");
	problem("dlq_retry of [@ids] + [@extra] returned $n, expected $exp") if $n != $exp;
	for my $id (@ids, grep { !$c{$_} && $job{$_}{state} eq 'dlq' } @extra)
	{
		@{ $job{$id} }{qw(state used due)} = ('scheduled', 0, 'now');
	}
	resync(undef, 0);
	for my $id (@ids)
	{
		problem("dlq_retry: job $id is $job{$id}{state}, not available")
		  if !$paused{ $job{$id}{q} } && $job{$id}{state} ne 'available';
	}
	seen('dlq_retry');
	return 1;
}

sub op_dlq_purge
{
	my @d = ids_in('dlq');
	return 0 unless @d;
	my (%c, @ids);
	for (1 .. 1 + int(rand(2))) { my $id = pick(@d); push @ids, $id unless $c{$id}++; }
	my @extra = rand() < 0.3 ? (pick(sort { $a <=> $b } keys %job)) : ();
	@extra = grep { !$c{$_} } @extra;
	my @all = (@ids, grep { $job{$_}{state} eq 'dlq' } @extra);
	my $n = sq("SELECT awa.dlq_purge(ARRAY[" . join(',', @ids, @extra) . "]::bigint[])");
	problem("dlq_purge of [@ids] + [@extra] returned $n, expected " . scalar(@all))
	  if $n != @all;
	$job{$_}{state} = 'purged' for @all;
	seen('dlq_purge');
	return 1;
}

# awa.move_jobs to another of the queues, or awa.set_priority, of a few
# waiting jobs (and now and then of any job): the waiting ones not yet at the
# target change (an available one gets run_lease + 1, so its next claim's
# lease is 2 more than its last); the others are left alone.
sub op_move
{
	my @w = ids_in(qw(available scheduled retryable));
	return 0 unless @w;
	my (%c, @ids);
	for (1 .. 1 + int(rand(3))) { my $id = pick(@w); push @ids, $id unless $c{$id}++; }
	if (rand() < 0.3)
	{
		my $id = pick(sort { $a <=> $b } keys %job);
		push @ids, $id unless $c{$id}++;
	}
	my $prio = rand() < 0.4 ? 1 + int(rand(4)) : undef;
	my $q = defined $prio ? undef : pick(@Q);
	my @moved = grep {
		my $j = $job{$_};
		$j->{state} =~ /^(available|scheduled|retryable)$/
		  && (defined $prio ? $j->{prio} != $prio : $j->{q} ne $q)
	} @ids;
	my $list = 'ARRAY[' . join(',', @ids) . ']::bigint[]';
	my $sql = defined $prio ? "SELECT awa.set_priority($list, $prio)" : "SELECT awa.move_jobs($list, '$q')";
	my $n = sq($sql);
	problem("$sql returned $n, expected " . scalar(@moved)) if $n != @moved;
	for my $id (@moved)
	{
		my $j = $job{$id};
		seen((defined $prio ? 'set_priority' : 'move_jobs') . " of a $j->{state} job");
		$j->{lease}++ if $j->{state} eq 'available';
		if (defined $prio) { $j->{prio} = $prio; }
		else               { $j->{q}    = $q; }
	}
	seen(defined $prio ? 'set_priority' : 'move_jobs');
	return 1;
}

# awa.retry_jobs of a few failed or cancelled jobs (and now and then of any
# job): those become available, attempt 0, run_lease one above their
# record's (the model's lease); the others are left alone.
sub op_retry_finished
{
	my @f = ids_in(qw(failed cancelled));
	return 0 unless @f;
	my (%c, @ids);
	for (1 .. 1 + int(rand(3))) { my $id = pick(@f); push @ids, $id unless $c{$id}++; }
	if (rand() < 0.3)
	{
		my $id = pick(sort { $a <=> $b } keys %job);
		push @ids, $id unless $c{$id}++;
	}
	my @retried = grep { $job{$_}{state} =~ /^(failed|cancelled)$/ } @ids;
	my $sql = 'SELECT awa.retry_jobs(ARRAY[' . join(',', @ids) . ']::bigint[])';
	my $n = sq($sql);
	problem("$sql returned $n, expected " . scalar(@retried)) if $n != @retried;
	for my $id (@retried)
	{
		my $j = $job{$id};
		seen("retry_jobs of a $j->{state} job");
		$j->{state} = 'available';
		$j->{used} = 0;
		$j->{lease}++;
		delete $j->{due};
	}
	seen('retry_jobs');
	return 1;
}

sub op_pause_resume
{
	# At most one queue paused at a time: resume it, or pause one.
	my ($q) = sort keys %paused;
	$q //= pick(@Q);
	if ($paused{$q})
	{
		sq("SELECT awa.resume_queue('$q')");
		delete $paused{$q};
		seen('resume_queue');
	}
	else
	{
		sq("SELECT awa.pause_queue('$q')");
		$paused{$q} = 1;
		seen('pause_queue');
	}
	return 1;
}

# A call with an attempt that has ended: refused, nothing changes.
sub op_stale
{
	return 0 unless @dead;
	my ($id, $lease, $receipt, $hb) = @{ pick(@dead) };
	my $t = "$id, $lease, $receipt";
	my $call = pick(qw(complete heartbeat retry snooze fail));
	my ($sql, $exp) =
	    $call eq 'complete'  ? ("SELECT awa.complete($t)", 'f')
	  : $call eq 'heartbeat' ? ("SELECT awa.heartbeat($t)", $hb)
	  : $call eq 'retry'     ? ("SELECT awa.retry($t, 'late', interval '0')", 'stale')
	  : $call eq 'snooze'    ? ("SELECT awa.snooze($t, interval '0')", 'stale')
	  :                        ("SELECT awa.fail($t, 'late')", 'stale');
	my $r = sq($sql);
	problem("$call with ended attempt ($t) returned $r, expected $exp") if $r ne $exp;
	seen("$call with an ended attempt");
	return 1;
}

my @OPS = (
	[ \&op_enqueue,      14 ], [ \&op_enqueue_many, 8 ], [ \&op_claim,        17 ],
	[ \&op_complete,     8 ],  [ \&op_complete_many, 5 ], [ \&op_heartbeat,   5 ],
	[ \&op_retry,        7 ],  [ \&op_snooze,       4 ], [ \&op_fail,         4 ],
	[ \&op_cancel,       8 ],  [ \&op_promote,      7 ], [ \&op_dlq_retry,    5 ],
	[ \&op_dlq_purge,    3 ],  [ \&op_pause_resume, 3 ], [ \&op_stale,        4 ],
	[ \&op_move,         4 ],  [ \&op_retry_finished, 3 ]);
my $OPS_WEIGHT = 0;
$OPS_WEIGHT += $_->[1] for @OPS;

sub random_op
{
	my $r = rand($OPS_WEIGHT);
	for my $o (@OPS)
	{
		if ($r < $o->[1]) { $o->[0]->() or op_claim(); return; }
		$r -= $o->[1];
	}
}

# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------
sub counts_rows
{
	my ($fn) = @_;
	return [ rows(sq("SELECT * FROM awa.$fn(NULL) ORDER BY queue")) ];
}

sub exact_rows_for_model
{
	return [ rows(sq(
		"SELECT * FROM awa.queue_counts_exact(NULL) WHERE queue IN ('qa', 'qb', 'qd') ORDER BY queue")) ];
}

# Counters and model, valid inside a transaction too.
sub check_counts
{
	my ($label) = @_;
	my $exact = counts_rows('queue_counts_exact');
	is_deeply(counts_rows('queue_counts'), $exact,
		"$label: queue_counts(NULL) rows = queue_counts_exact(NULL) rows");
	is_deeply(exact_rows_for_model(), model_rows(),
		"$label: queue_counts_exact of qa, qb, qd = the Perl model's counts");
	check_oldest($label, "('qa', 'qb', 'qd')");
}

# queue_metrics' oldest available job (lane heads kept in shared memory,
# walked when not kept) = the SQL walk awa._oldest_available_at, for the
# queues listed (only this session writes qa, qb, qd; qc only while no
# worker runs).
sub check_oldest
{
	my ($label, $queues) = @_;
	my $where = defined $queues ? "AND m.queue IN $queues" : '';
	my @differ = rows(sq(
		"SELECT m.queue, m.oldest_available_at, awa._oldest_available_at(m.queue) FROM awa.queue_metrics() m
		  WHERE m.oldest_available_at IS DISTINCT FROM awa._oldest_available_at(m.queue) $where"));
	is(scalar(@differ), 0, "$label: queue_metrics' oldest available job = the SQL walk")
	  or diag(join "\n", @differ);
}

# Full check point (outside transactions).
sub check_all
{
	my ($label) = @_;
	check_counts($label);
	check_oldest("$label (every queue)");
	is_deeply([ rows(sq("SELECT * FROM awa.queue_counts('qd')")) ],
		[ rows(sq("SELECT * FROM awa.queue_counts_exact('qd')")) ],
		"$label: queue_counts('qd') = queue_counts_exact('qd')");
	my @ids = sort { $a <=> $b } keys %job;
	my @got = rows(sq(
		"SELECT j, coalesce(awa.get_job(j) ->> 'state', 'purged') FROM unnest(ARRAY["
		  . join(',', @ids) . "]::bigint[]) AS j ORDER BY j"));
	my %model = map { $_ => $job{$_}{state} } @ids;
	my @wrong;
	for my $row (@got)
	{
		my ($id, $state) = split /\|/, $row;
		push @wrong, "job $id: get_job state $state, model " . (delete $model{$id} // 'none')
		  if ($model{$id} // '') ne $state;
		delete $model{$id};
	}
	push @wrong, "job $_: not returned" for sort { $a <=> $b } keys %model;
	is(scalar(@wrong), 0,
		"$label: awa.get_job state of every tracked job (" . scalar(@ids) . ") = the model's")
	  or diag(join "\n", @wrong);
	is(scalar(@problems), 0, "$label: every call returned what the model predicts")
	  or diag(join "\n", @problems);
	@problems = ();
}

# ---------------------------------------------------------------------------
# Transaction blocks
# ---------------------------------------------------------------------------
sub tx_block
{
	my $label = "step $step";
	sq("BEGIN");
	$in_tx = 1;
	my $snap = snapshot();
	random_op() for 1 .. 2 + int(rand(4));
	my $commit = rand() < 0.3;
	if (rand() < 0.5)
	{
		check_counts("$label, inside a transaction before " . ($commit ? 'COMMIT' : 'ROLLBACK'));
	}
	if ($commit) { sq("COMMIT"); }
	else { sq("ROLLBACK"); restore($snap); }
	seen('transaction ' . ($commit ? 'committed' : 'rolled back'));
	$in_tx = 0;
	check_counts("$label, after " . ($commit ? 'COMMIT' : 'ROLLBACK'));
}

sub savepoint_block
{
	my $label = "step $step";
	sq("BEGIN");
	$in_tx = 1;
	my $snap = snapshot();
	random_op() for 1 .. 1 + int(rand(3));
	sq("SAVEPOINT s1");
	my $snap2 = snapshot();
	random_op() for 1 .. 1 + int(rand(4));
	check_counts("$label, inside a savepoint before ROLLBACK TO SAVEPOINT") if rand() < 0.3;
	sq("ROLLBACK TO SAVEPOINT s1");
	restore($snap2);
	check_counts("$label, after ROLLBACK TO SAVEPOINT (transaction open)");
	random_op() for 1 .. 1 + int(rand(3));
	my $commit = rand() < 0.7;
	if ($commit) { sq("COMMIT"); }
	else { sq("ROLLBACK"); restore($snap); }
	seen('savepoint rolled back, transaction ' . ($commit ? 'committed' : 'rolled back'));
	$in_tx = 0;
	check_counts("$label, savepoint block after " . ($commit ? 'COMMIT' : 'ROLLBACK'));
}

sub random_steps
{
	my ($n) = @_;
	for (1 .. $n)
	{
		$step++;
		my $r = rand();
		if    ($r < 0.08) { tx_block(); }
		elsif ($r < 0.13) { savepoint_block(); }
		else              { random_op(); }
	}
}

# ---------------------------------------------------------------------------
# Phase 1: random mix
# ---------------------------------------------------------------------------
my $t0 = time;
open_main();
sq("SELECT awa.configure_queue('qd', dlq_enabled => true)");
# Every queue gets committed jobs first.
for my $q (@Q)
{
	my $id = sq("SELECT awa.enqueue('k', '{}', '$q')");
	add_job($id, $q, 2, 25, 'available');
}
check_all('start');

random_steps(90);
check_all('phase 1, after 90 steps');
random_steps(90);
check_all('phase 1, after 180 steps');
random_steps(90);
check_all('phase 1, after 270 steps');

# ---------------------------------------------------------------------------
# Phase 2: clean restart; the first use of the counters is queue_counts.
# ---------------------------------------------------------------------------
# Some attempts are live across the restart (and the crash below).
for (1 .. 20) { last if %live; $step++; op_claim(); }
my $live_before = scalar keys %live;
ok($live_before > 0, "before the restart some attempts are live ($live_before)");
$s->quit;
$node->restart;
open_main();
check_all('after a clean restart (first counter use: queue_counts)');

random_steps(120);
check_all('after the restart and 120 more steps');

# ---------------------------------------------------------------------------
# Phase 3: crash. A last synchronous commit makes every earlier commit
# (asynchronous claim commits included) durable, so the model holds after
# crash recovery.
# ---------------------------------------------------------------------------
for (1 .. 20) { last if %live; $step++; op_claim(); }
ok(scalar(keys %live) > 0, 'before the crash some attempts are live (' . scalar(keys %live) . ')');
$step++;
sq("BEGIN");
op_enqueue();
sq("COMMIT");
$s->quit;
$node->stop('immediate');
$node->start;
open_main();
# First counter use after the crash: writes, first in a transaction rolled
# back, then committed.
$step++;
sq("BEGIN");
$in_tx = 1;
{
	my $snap = snapshot();
	op_enqueue();
	op_claim();
	op_complete();
	sq("ROLLBACK");
	restore($snap);
}
$in_tx = 0;
op_enqueue();
op_claim();
check_all('after a crash (first counter use: writes)');

random_steps(60);
check_all('after the crash and 60 more steps');

# ---------------------------------------------------------------------------
# Phase 4: two background sessions claim and end attempts on qc (dlq on)
# while the main session enqueues on qc and goes on with the mix.
# Fate of a job claimed by a worker, by job_id: job_id % 10 = 0 -> fail (dlq);
# job_id % 10 = 1 on attempt 1 -> retry with delay 0; otherwise complete.
# ---------------------------------------------------------------------------
sq("SELECT awa.configure_queue('qc', dlq_enabled => true)");
my $qc_total = 0;
sub enqueue_qc
{
	my ($n) = @_;
	my $got = sq("SELECT count(*) FROM awa.enqueue_many(array_fill('c'::text, ARRAY[$n]), NULL, 'qc')");
	is($got, $n, "enqueued $n jobs on qc") if $got != $n;
	$qc_total += $got;
}
enqueue_qc(100);

my $dir = PostgreSQL::Test::Utils::tempdir();
my @workers;
for my $w (1 .. 2)
{
	my $script = "$dir/worker$w.sql";
	open my $fh, '>', $script or die "cannot write $script: $!";
	print $fh "\\o $dir/worker$w.out\n";
	for (1 .. 150)
	{
		print $fh <<'SQL';
SELECT coalesce(array_agg(job_id), '{}') AS j, coalesce(array_agg(run_lease), '{}') AS l, coalesce(array_agg(receipt_id), '{}') AS r, coalesce(array_agg(attempt), '{}') AS a FROM awa.claim('qc', 4) \gset
SELECT 'heartbeat', status, count(*) FROM awa.heartbeat_many(:'j'::bigint[], :'l'::bigint[], :'r'::bigint[]) GROUP BY status;
SELECT coalesce(array_agg(j), '{}') AS cj, coalesce(array_agg(l), '{}') AS cl, coalesce(array_agg(r), '{}') AS cr FROM unnest(:'j'::bigint[], :'l'::bigint[], :'r'::bigint[], :'a'::int[]) AS t(j, l, r, a) WHERE NOT (j % 10 = 0 OR (j % 10 = 1 AND a = 1)) \gset
SELECT 'complete', accepted, count(*) FROM awa.complete_many(:'cj'::bigint[], :'cl'::bigint[], :'cr'::bigint[]) GROUP BY accepted;
SELECT 'end', CASE WHEN j % 10 = 0 THEN awa.fail(j, l, r, 'boom') ELSE awa.retry(j, l, r, 'again', interval '0') END, count(*) FROM unnest(:'j'::bigint[], :'l'::bigint[], :'r'::bigint[], :'a'::int[]) AS t(j, l, r, a) WHERE j % 10 = 0 OR (j % 10 = 1 AND a = 1) GROUP BY 2;
SQL
	}
	print $fh "\\o\n";
	close $fh;
	my $bg = $node->background_psql('postgres', on_error_stop => 0);
	$bg->query_until(qr/worker $w started/, "\\echo worker $w started\n\\i $script\n");
	push @workers, $bg;
}

$concurrent = 1;
for my $round (1 .. 40)
{
	$step++;
	enqueue_qc(10);
	op_promote();
	random_op() for 1 .. 2;
}
my %tally;
for my $w (1 .. 2)
{
	my $bg = $workers[ $w - 1 ];
	$bg->query("SELECT 'worker done'");
	is($bg->{stderr}, '', "worker session $w: no SQL error");
	$bg->quit;
	open my $fh, '<', "$dir/worker$w.out" or die "cannot read worker output: $!";
	for my $line (<$fh>)
	{
		chomp $line;
		next if $line eq '';
		my ($what, $result, $n) = split /\|/, $line;
		$tally{"$what $result"} += $n;
	}
	close $fh;
}
$concurrent = 0;
note explain \%tally;
ok(($tally{'complete t'} // 0) > 0, 'the workers completed jobs on qc');
ok(($tally{'end dlq'} // 0) > 0,    'the workers dead-lettered jobs on qc');
ok(($tally{'end retryable'} // 0) > 0, 'the workers retried jobs on qc');
is_deeply([ sort grep { !/^(complete t|end dlq|end retryable|heartbeat alive)$/ } keys %tally ],
	[], 'every worker call succeeded (heartbeats alive, completions accepted, no stale)');

# Right after the workers: counters = exact pass, model still right.
check_all('after the concurrent phase');

# The list of operations and outcomes the mix must exercise.
my @expected_seen = (
	'enqueue available', 'enqueue scheduled', 'enqueue_many available', 'enqueue_many scheduled',
	'claim of no job', 'claim of one job', 'claim of several jobs', 'claim on a paused queue',
	(map { "claim max_jobs $_" } 1 .. 5),
	'complete', 'complete_many', 'complete_many with a stale attempt', 'heartbeat', 'heartbeat_many',
	'retry -> retryable (delay 0)', 'retry -> retryable (delay NULL)', 'retry -> failed', 'retry -> dlq',
	'snooze', 'fail -> failed', 'fail -> dlq',
	'cancel of a available job', 'cancel of a scheduled job', 'cancel of a retryable job',
	'cancel of a running job', 'cancel of a completed job', 'cancel of a failed job',
	'cancel of a cancelled job', 'cancel of a dlq job', 'cancel of a purged job',
	'promote_due moving jobs', 'promote_due (small max_jobs) moving jobs',
	'dlq_retry', 'dlq_purge', 'pause_queue', 'resume_queue',
	'move_jobs of a available job', 'move_jobs of a scheduled job', 'set_priority of a available job',
	'set_priority of a scheduled job', 'retry_jobs of a failed job', 'retry_jobs of a cancelled job',
	(map { "$_ with an ended attempt" } qw(complete heartbeat retry snooze fail)),
	'transaction committed', 'transaction rolled back',
	'savepoint rolled back, transaction committed', 'savepoint rolled back, transaction rolled back');


# Drain qc from the main session: promote, claim, complete.
# promote_due also promotes due jobs of qa, qb, qd: the model follows.
my $drained = 0;
$concurrent = 1;    # promote_due's count includes qc's jobs
for (1 .. 100)
{
	resync(sq("SELECT awa.promote_due()"), 0);
	my @r = rows(sq("SELECT job_id, run_lease, receipt_id FROM awa.claim('qc', 100)"));
	last if !@r && sq("SELECT available + scheduled + retryable + running FROM awa.queue_counts_exact('qc')") == 0;
	next unless @r;
	my @t = map { [ split /\|/ ] } @r;
	$drained += sq(
		    "SELECT count(*) FROM awa.complete_many("
		  . join(', ', map { my $i = $_; 'ARRAY[' . join(',', map { $_->[$i] } @t) . ']::bigint[]' } 0 .. 2)
		  . ") WHERE accepted");
}
$concurrent = 0;
my $dlq = $tally{'end dlq'} // 0;
is( sq("SELECT * FROM awa.queue_counts_exact('qc')"),
	"qc|0|0|0|0|" . ($qc_total - $dlq) . "|0|0|$dlq",
	"qc drained: queue_counts_exact shows $qc_total jobs, $dlq in the DLQ, the rest completed");
is(sq("SELECT * FROM awa.queue_counts('qc')"), sq("SELECT * FROM awa.queue_counts_exact('qc')"),
	'qc drained: queue_counts = queue_counts_exact');
is(($tally{'complete t'} // 0) + $drained, $qc_total - $dlq,
	'qc: completions accepted by workers and main session = jobs completed');
is(sq("SELECT count(*) FROM awa.dlq WHERE queue = 'qc' AND job_id % 10 <> 0"), '0',
	'qc: only jobs with job_id % 10 = 0 are in the DLQ');

# Top-up: more random steps until the mix has exercised everything listed
# (timing decides when retries with delay NULL come due, so the exact
# sequence varies a little between runs).
my $extra = 0;
while (grep { !$seen{$_} } @expected_seen)
{
	last if $extra >= 2000;
	# A cancel outcome not seen yet is tried as soon as a job is in that
	# state (random cancels pick among states and may keep missing a rare one).
	for my $want (grep { !$seen{$_} } @expected_seen)
	{
		next unless $want =~ /^cancel of a (\w+) job$/;
		my $state = $1;
		next unless ids_in($state);
		$step++;
		op_cancel($state);
	}
	random_steps(10);
	$extra += 10;
}
note "top-up: $extra more steps";

check_all('final');

is_deeply([ grep { !$seen{$_} } @expected_seen ], [],
	'the random mix exercised every operation and outcome listed');
note join "\n", map { "$_: $seen{$_}" } sort keys %seen;
$s->quit;
$node->stop;

note "test body took " . (time - $t0) . " s";
done_testing();
