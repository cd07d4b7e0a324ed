# AwaModel.pm: a seeded, randomized, model-checked stress run of awa
# (test/t/012_model_stress.pl).
#
# Four sessions (DBI connections) driven from one Perl process do random work;
# a model kept here predicts every call's result and the state of every job.
# Op i draws its random numbers from srand(f(seed, i)), so a seed replays
# exactly, and an op can be skipped (shrinking) without changing what the
# other ops draw. The only outcomes the model does not predict are the claims
# made between a WAL flush and an immediate shutdown (async commit): after the
# restart the oracle reads those jobs (awa.get_job) and accepts "claim lost"
# or "claim kept" for them, and for nothing else.
#
# Why the run is deterministic:
#   - the maintenance worker is off; rotations, prunes and promotions happen
#     only when an op calls awa.run_maintenance;
#   - claims take a one-day deadline and heartbeat staleness is one day, so
#     rescue never fires;
#   - every deferral (future run_at, retry, snooze) gets a run_at strictly
#     later than every earlier one (a watermark W), so promotion, which orders
#     by run_at, appends jobs to their lanes in the order the ops deferred
#     them; a promotion first waits (bounded) until the clock passes W, so it
#     moves every committed deferred job of the unpaused queues;
#   - aging_interval = 0 (strict priorities), so the priority a claim serves
#     is predictable; jobs may carry a concurrency key (c0..c2), which puts
#     them into their key's lane (queue|priority|key): a claim of a priority
#     with keyed lanes may serve any of that priority's lanes with claimable
#     jobs (fair share or first come, src/pg/key_lanes.hpp), but within the
#     lane it serves it must return the lane's head;
#   - the driver never starts a call that would wait for a lock another
#     session's open transaction holds (claim batch locks, unique keys).
package AwaModel;

use strict;
use warnings;

use DBI;
use DBD::Pg;
use Digest::MD5;
use Time::HiRes qw(time usleep);
use Exporter 'import';

our @EXPORT = qw(run_stress);

my @QUEUES = qw(qa qb qc);
my $NSESS  = 4;

sub new
{
	my ($class, %o) = @_;
	my $self = bless {
		node    => $o{node},
		seed    => $o{seed},
		nops    => $o{nops},
		skip    => $o{skip} // {},
		db      => $o{db},
		phase   => $o{phase} // 200,
		keep_history => $o{keep_history} // 1,    # awa.history_retention > 0
		db_settings  => $o{db_settings} // {},    # ALTER DATABASE ... SET, before any session connects
		log     => [],
		jobs    => {},    # job_id -> model job
		seq     => 0,     # lane order counter
		dseq    => 0,     # deferral order counter
		W       => undef, # deferral watermark (timestamptz text)
		ukey    => {},    # unique key -> holder job_id
		paused  => {},    # queue -> 1
		dlq     => {},    # queue -> 1: dlq_enabled (awa.configure_queue)
		dlq_op  => {},    # queue -> op index of the last DLQ switch
		dead    => [],    # closed or rolled-back attempts (stale probes)
		sess    => [],
		inwindow => [],   # claims made while the WAL writer was stopped
		crashes => 0,
		stats   => {},
	}, $class;
	return $self;
}

# ---------------------------------------------------------------------------
# Logging and failure
# ---------------------------------------------------------------------------
sub logop
{
	my ($self, $who, $what) = @_;
	push @{ $self->{log} }, sprintf('op %5d %-4s %s', $self->{op} // -1, $who, $what);
	shift @{ $self->{log} } while @{ $self->{log} } > 5000;
}

sub tail
{
	my ($self, $n) = @_;
	my @l = @{ $self->{log} };
	@l = @l[ -$n .. -1 ] if @l > $n;
	return join("\n", @l);
}

sub bad
{
	my ($self, $msg) = @_;
	$self->dump_lanes($msg);
	die "MODEL MISMATCH at op $self->{op}: $msg\n";
}

# On a failure: the ring positions, the cursors and the rows of the lanes the
# message names, read on a fresh connection, into the op log.
sub dump_lanes
{
	my ($self, $msg) = @_;
	return if $self->{dumping};
	local $self->{dumping} = 1;
	my %lanes = map { $_ => 1 } $msg =~ /\b(q[abc]\|[1-4])\b/g;
	my $dbh = eval { $self->connect_db } or return;
	my $q = sub {
		my ($title, $sql) = @_;
		my $r = $dbh->selectall_arrayref($sql);
		$self->logop('dump', "$title:" . ($r ? join('', map { "\n      " . join(' | ', map { $_ // 'NULL' } @$_) } @$r) : ' ' . ($dbh->errstr // '?')));
	};
	$q->('rings (ring, current_slot, generation, oldest_live_generation)', "SELECT ring, current_slot, generation, oldest_live_generation FROM awa.storage_status()");
	$q->('lanes (queue, priority, enqueue_cursor, claim_cursor)', "SELECT queue, priority, enqueue_cursor, claim_cursor FROM awa.lanes ORDER BY 1, 2");
	for my $lane (sort keys %lanes)
	{
		my ($qu, $p) = split /\|/, $lane;
		my $w = "queue = '$qu' AND priority = $p";
		$q->("$lane ready rows (lane_seq, job_id, slot, generation, origin, run_lease)", "SELECT lane_seq, job_id, ready_slot, ready_generation, origin_generation, run_lease FROM awa.ready_entries WHERE $w ORDER BY lane_seq");
		$q->("$lane attempt batches (batch, ranges, slot, generation)", "SELECT batch_id, coalesce(lane_ranges, int8multirange(int8range(first_lane_seq, next_lane_seq)))::text, ready_slot, ready_generation FROM awa.ready_claim_attempt_batches WHERE $w ORDER BY next_lane_seq");
		$q->("$lane tombstones (lane_seq, job_id, generation)", "SELECT lane_seq, job_id, ready_generation FROM awa.ready_tombstones WHERE $w ORDER BY lane_seq");
	}
	$q->('sessions', "SELECT pid, state, backend_xid, left(query, 80) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()");
	$dbh->disconnect;
}

# ---------------------------------------------------------------------------
# Connections
# ---------------------------------------------------------------------------
sub connect_db
{
	my ($self) = @_;
	my $cs = $self->{node}->connstr($self->{db});
	my $dbh = DBI->connect("dbi:Pg:$cs", '', '',
		{ AutoCommit => 1, RaiseError => 0, PrintError => 0, PrintWarn => 0 })
	  or die "connect: $DBI::errstr";
	$dbh->do("SET statement_timeout = '60s'");    # a wait we did not foresee fails, not hangs
	$dbh->do("SET client_min_messages = warning");
	return $dbh;
}

sub open_sessions
{
	my ($self) = @_;
	for my $i (0 .. $NSESS - 1)
	{
		my $s = $self->{sess}[$i] //= { id => "s$i", idx => $i };
		$s->{dbh} = $self->connect_db;
		($s->{pid}) = $s->{dbh}->selectrow_array('SELECT pg_backend_pid()');
		$self->reset_txn($s);
	}
	$self->{m} = $self->connect_db;
	# The maintenance connection reclaims a lane as soon as it is drained and
	# no row of it is left in the queue ring (awa.run_maintenance('all') and
	# 'reclaim_lanes' below): lanes go and are made again under the sessions'
	# caches, open transactions and claims throughout a run.
	$self->{m}->do('SET awa.lane_reclaim_after = 0');
}

sub reset_txn
{
	my ($self, $s) = @_;
	$s->{txn}       = undef;
	$s->{saved}     = {};
	$s->{created}   = [];
	$s->{unwritten} = [];
	$s->{ukey_saved} = {};
	$s->{locks}     = {};
	$s->{enq_lanes} = {};
	$s->{written_lanes} = {};
	$s->{claimed}   = [];
	$s->{closed}    = [];
	$s->{nclaims}   = 0;
}

# Runs SQL on a handle; returns (rows arrayref, undef) or (undef, sqlstate:msg).
sub sq
{
	my ($self, $dbh, $sql) = @_;
	my $rows = $dbh->selectall_arrayref($sql);
	if (!$rows)
	{
		my $st = $dbh->state // '';
		my $e  = $dbh->errstr // 'unknown error';
		$e =~ s/\n.*//s;
		return (undef, "$st:$e");
	}
	return ($rows, undef);
}

# SQL that must succeed.
sub qok
{
	my ($self, $dbh, $sql, $who) = @_;
	my ($rows, $err) = $self->sq($dbh, $sql);
	$self->bad("unexpected error from [$sql]: $err") if $err;
	return $rows;
}

sub msql { my ($self, $sql) = @_; return $self->qok($self->{m}, $sql, "m"); }

# ---------------------------------------------------------------------------
# Model helpers
# ---------------------------------------------------------------------------
sub lane { my ($j) = @_; return "$j->{queue}|$j->{prio}" . (defined $j->{ckey} ? "|$j->{ckey}" : ''); }

# The lanes of queue $q at priority $p (with or without a key).
sub lanes_at { my ($by, $q, $p) = @_; return grep { $_ eq "$q|$p" || index($_, "$q|$p|") == 0 } sort keys %$by; }

# Saves a job before an open transaction of $s changes it.
sub touch
{
	my ($self, $s, $j) = @_;
	return unless $s->{txn};
	$s->{saved}{ $j->{id} } //= { %$j };
	$j->{owner} = $s->{idx};
}

sub set_ukey
{
	my ($self, $s, $key, $val) = @_;
	if ($s && $s->{txn} && !exists $s->{ukey_saved}{$key})
	{
		$s->{ukey_saved}{$key} = [ $self->{ukey}{$key} ];
	}
	if (defined $val) { $self->{ukey}{$key} = $val; }
	else { delete $self->{ukey}{$key}; }
}

# A job reached a final state: its unique key is freed.
sub finalize
{
	my ($self, $s, $j, $state) = @_;
	# The terminal rows go to the ready row's slot; a cancel of a deferred job
	# (no ready row: scheduled, retryable, or parked) writes to the current
	# one. A prune of that generation moves them to the history ring, or
	# removes them when awa.history_retention = 0 (maintenance.md 3.3).
	$j->{tgen} = ($j->{state} eq 'scheduled' || $j->{state} eq 'retryable' || $j->{parked}) ? $self->{gen} : $j->{gen};
	delete $j->{parked};
	$j->{state} = $state;
	$j->{att}   = undef;
	if (defined $j->{ukey} && ($self->{ukey}{ $j->{ukey} } // -1) == $j->{id})
	{
		$self->set_ukey($s, $j->{ukey}, undef);
	}
}

sub key_busy_elsewhere
{
	my ($self, $s, $key) = @_;
	for my $t (@{ $self->{sess} })
	{
		next if (defined $s && $t == $s) || !$t->{txn};
		return 1 if exists $t->{ukey_saved}{$key};
		for my $id (@{ $t->{created} }) { return 1 if ($self->{jobs}{$id}{ukey} // '') eq $key; }
	}
	return 0;
}

sub batch_locked_elsewhere
{
	my ($self, $s, $batch) = @_;
	for my $t (@{ $self->{sess} })
	{
		next if defined $s && $t == $s;
		return 1 if $t->{txn} && $t->{locks}{$batch};
	}
	return 0;
}

sub commit_model
{
	my ($self, $s) = @_;
	# Lane positions at commit, in enqueue order, in the generation current now.
	for my $j (@{ $s->{unwritten} })
	{
		$j->{seq} = ++$self->{seq};
		$j->{gen} = $self->{gen};
	}
	for my $id (keys %{ $s->{saved} }) { delete $self->{jobs}{$id}{owner}; }
	for my $id (@{ $s->{created} }) { delete $self->{jobs}{$id}{owner} if $self->{jobs}{$id}; }
	push @{ $self->{dead} }, @{ $s->{closed} };
	$self->reset_txn($s);
}

sub rollback_model
{
	my ($self, $s) = @_;
	for my $id (@{ $s->{created} }) { delete $self->{jobs}{$id}; }
	for my $id (keys %{ $s->{saved} })
	{
		my $copy = $s->{saved}{$id};
		delete $copy->{owner};
		$self->{jobs}{$id} = $copy;
	}
	for my $key (keys %{ $s->{ukey_saved} })
	{
		my ($v) = @{ $s->{ukey_saved}{$key} };
		if (defined $v) { $self->{ukey}{$key} = $v; } else { delete $self->{ukey}{$key}; }
	}
	push @{ $self->{dead} }, map { { %$_, how => 'rolled_back' } } @{ $s->{claimed} };
	$self->reset_txn($s);
}

# Parked jobs (stop 41): a job that becomes available while its queue is
# paused (enqueued, due and promoted, moved or retried into it) waits as a
# deferred row in state available, outside its lane, until awa.resume_queue
# appends it (or, in a queue that is no longer paused, the next promotion).
# Which jobs are parked is read from awa.deferred_jobs (committed rows):
# whether an enqueue in a transaction saw a pause that committed while the
# transaction was open depends on when its backend took the invalidation.
# What the model checks: a parked job is available, it leaves the park only by
# a resume or a promotion (do_pause, do_promote), in their order, and an
# enqueue outside a transaction parks exactly when its queue is paused
# (do_enqueue). Returns the parked job ids.
sub sync_parked
{
	my ($self) = @_;
	my %p = map { $_->[0] => 1 } @{ $self->msql("SELECT job_id FROM awa.deferred_jobs WHERE state = 'available'") };
	for my $j (values %{ $self->{jobs} })
	{
		next if defined $j->{owner};    # (its committed row is the saved copy's)
		if ($p{ $j->{id} })
		{
			$self->bad("job $j->{id} is parked but the model has it $j->{state}") unless $j->{state} eq 'available';
			$self->{stats}{parked}++ unless $j->{parked};
			$j->{parked} = 1;
		}
		elsif ($j->{parked})
		{
			$self->bad("job $j->{id} left the park outside a resume or a promotion") if $j->{state} eq 'available';
			delete $j->{parked};
		}
	}
	return \%p;
}

# Jobs of lane $lane that a claim of another session can take: committed,
# available, not in anyone's open transaction; in lane order.
sub claimable
{
	my ($self, $lane) = @_;
	return sort { $a->{seq} <=> $b->{seq} }
	  grep { $_->{state} eq 'available' && !$_->{parked} && !defined $_->{owner} && lane($_) eq $lane }
	  values %{ $self->{jobs} };
}

sub claimable_by_lane
{
	my ($self) = @_;
	my %l;
	for my $j (values %{ $self->{jobs} })
	{
		next unless $j->{state} eq 'available' && !$j->{parked} && !defined $j->{owner};
		push @{ $l{ lane($j) } }, $j;
	}
	@$_ = sort { $a->{seq} <=> $b->{seq} } @$_ for values %l;
	return \%l;
}

# A lane position held by another session's open transaction can hide a hole
# a claim cannot prove dead: the claim may stop before it. Since lane
# positions are taken at commit, an open producer holds none (its jobs are in
# its memory): no claim may stop short because of it (issue 19 §1; on the
# design that reserved at enqueue, this model failed with "returned [], the
# model's lane head is [...]"). Only a transaction that wrote its jobs early
# (it read them back) would hold one, and the model's producers never do.
sub lane_maybe_blocked
{
	my ($self, $s, $lane) = @_;
	for my $t (@{ $self->{sess} })
	{
		next if $t == $s;
		return 1 if $t->{txn} && $t->{written_lanes} && $t->{written_lanes}{$lane};
	}
	return 0;
}

sub live_attempts_for
{
	my ($self, $s) = @_;
	my @a;
	for my $id (sort { $a <=> $b } keys %{ $self->{jobs} })
	{
		my $j = $self->{jobs}{$id};
		next unless $j->{state} eq 'running' && $j->{att};
		next if defined $j->{owner} && $j->{owner} != $s->{idx};
		next if $self->batch_locked_elsewhere($s, $j->{att}{batch});
		push @a, $j;
	}
	return @a;
}

sub pick { my ($l) = @_; return @$l ? $l->[ int(rand(@$l)) ] : undef; }

sub mk_delay_sql
{
	my ($self) = @_;
	return defined $self->{W}
	  ? "greatest('$self->{W}'::timestamptz + interval '1 ms' - clock_timestamp(), interval '1 ms')"
	  : "interval '1 ms'";
}

sub mk_runat_sql
{
	my ($self) = @_;
	return defined $self->{W}
	  ? "greatest('$self->{W}'::timestamptz + interval '1 ms', clock_timestamp() + interval '150 ms')"
	  : "clock_timestamp() + interval '150 ms'";
}

# After a deferral: W = the job's run_at, read in the deferring session.
sub bump_W
{
	my ($self, $dbh, $ids) = @_;
	my $r = $self->qok($dbh,
		# From the table, not awa.get_job: a read-back in the session's own
		# transaction would write its pending due jobs early (and hold their
		# lane positions), which the model's producers must not do.
		"SELECT max(d.run_at)::text FROM awa.deferred_jobs d WHERE d.job_id = ANY (ARRAY[" . join(',', @$ids) . "]::bigint[])");
	my $w = $r->[0][0];
	$self->bad("deferred job without run_at: @$ids") unless defined $w;
	if (defined $self->{W})
	{
		my $r2 = $self->msql("SELECT '$w'::timestamptz > '$self->{W}'::timestamptz");
		$self->bad("deferral run_at $w is not after the watermark $self->{W}") unless $r2->[0][0];
	}
	$self->{W} = $w;
}

# ---------------------------------------------------------------------------
# Ops
# ---------------------------------------------------------------------------
sub do_enqueue
{
	my ($self, $s, $many) = @_;
	my $queue = $QUEUES[ int(rand(@QUEUES)) ];
	my $n     = $many ? 2 + int(rand(7)) : 1;
	my $maxatt = 1 + int(rand(3));
	my (@prio, @future, @ukey, @skip, @ckey);
	for my $k (1 .. $n)
	{
		my $r = rand();
		push @prio, $r < 0.15 ? 1 : $r < 0.75 ? 2 : $r < 0.9 ? 3 : 4;
		push @ckey, rand() < 0.3 ? 'c' . int(rand(3)) : undef;
		push @future, rand() < 0.15 ? 1 : 0;
		my $key;
		if (rand() < 0.15)
		{
			$key = 'key' . int(rand(8));
			undef $key if $self->key_busy_elsewhere($s, $key);
		}
		push @ukey, $key;
		# unique.on_conflict "skip" for half the keyed jobs
		push @skip, defined $key && rand() < 0.5 ? 1 : 0;
	}
	# Expected, element by element: a key held (by a job, or by an earlier
	# element of the call) -> 23505 for the whole call, or, with skip, that
	# holder's id and no new job.
	my %taken_by; # key -> index of the element of this call that took it
	my @holder;   # skipped element -> {id => holder} or {element => the element that took the key}
	my $conflict = 0;
	for my $k (0 .. $n - 1)
	{
		my $key = $ukey[$k];
		next unless defined $key;
		my $held = exists $taken_by{$key} || exists $self->{ukey}{$key};
		if (!$held) { $taken_by{$key} = $k; next; }
		if (!$skip[$k]) { $conflict = 1; next; }
		$holder[$k] = exists $taken_by{$key} ? { element => $taken_by{$key} } : { id => $self->{ukey}{$key} };
	}
	my $sql;
	my $runat = $self->mk_runat_sql;
	my $kopts = sub {
		my ($k) = @_;
		my @parts;
		push @parts, qq{"unique_key": "$ukey[$k]"} if defined $ukey[$k];
		push @parts, qq{"unique": {"on_conflict": "skip"}} if defined $ukey[$k] && $skip[$k];
		push @parts, qq{"concurrency_key": "$ckey[$k]"} if defined $ckey[$k];
		return '{' . join(', ', @parts) . '}';
	};
	if (!$many)
	{
		my $opts = "'" . $kopts->(0) . "'";
		$sql = "SELECT awa.enqueue('k', '{}', '$queue', $prio[0], "
		  . ($future[0] ? $runat : 'NULL') . ", $maxatt, $opts)";
	}
	else
	{
		my $kinds = "ARRAY[" . join(',', map { "'k'" } 1 .. $n) . "]";
		my $prios = "ARRAY[" . join(',', @prio) . "]";
		my $ra    = "ARRAY[" . join(',', map { $_ ? 'ra.t' : 'NULL::timestamptz' } @future) . "]";
		my $opts  = "ARRAY[" . join(',', map { defined $ukey[$_] || defined $ckey[$_] ? "'" . $kopts->($_) . "'::jsonb" : 'NULL::jsonb' } 0 .. $n - 1) . "]";
		$sql = "SELECT e FROM (SELECT $runat AS t) ra, awa.enqueue_many($kinds, NULL, '$queue', $prios, $ra, $maxatt, $opts) e";
	}
	my ($rows, $err) = $self->sq($s->{dbh}, $sql);
	$self->logop($s->{id}, ($s->{txn} ? '[txn] ' : '') . "$sql => " . ($err // join(',', map { $_->[0] } @$rows)));
	if ($conflict)
	{
		$self->bad("enqueue with a held unique key succeeded: $sql") unless $err;
		$self->bad("enqueue with a held unique key: expected 23505, got $err") unless $err =~ /^23505/;
		if ($s->{txn}) { $s->{dbh}->rollback; $self->logop($s->{id}, 'ROLLBACK (txn aborted by 23505)'); $self->rollback_model($s); }
		$self->{stats}{unique_conflicts}++;
		return;
	}
	$self->bad("enqueue failed: $err") if $err;
	my @ids = map { $_->[0] } @$rows;
	$self->bad("enqueue returned " . scalar(@ids) . " ids, expected $n") unless @ids == $n;
	# Skipped elements: the holder's id, and nothing else.
	my @new = grep { !$holder[$_] } 0 .. $n - 1;
	for my $k (grep { $holder[$_] } 0 .. $n - 1)
	{
		my $want = $holder[$k]{id} // $ids[ $holder[$k]{element} ];
		$self->bad("skipped duplicate of key $ukey[$k] returned $ids[$k], expected holder $want")
		  unless $ids[$k] == $want;
		$self->{stats}{unique_skipped}++;
	}
	# Lane positions: due jobs grouped by priority (priority order), input order within.
	my @order = sort { $prio[$a] <=> $prio[$b] || $a <=> $b } grep { !$future[$_] } @new;
	my %seq;
	$seq{$_} = ++$self->{seq} for @order;
	my $dseq = ++$self->{dseq};
	my @deferred;
	for my $k (@new)
	{
		my $j = {
			id => $ids[$k], queue => $queue, prio => $prio[$k], max => $maxatt,
			lease => 0, attempt => 0, ukey => $ukey[$k], ckey => $ckey[$k],
			state => $future[$k] ? 'scheduled' : 'available',
			seq => $seq{$k}, dseq => $future[$k] ? $dseq : undef, gen => $self->{gen},
		};
		$self->bad("job id $ids[$k] returned twice") if $self->{jobs}{ $ids[$k] };
		$self->{jobs}{ $ids[$k] } = $j;
		if ($s->{txn})
		{
			$j->{owner} = $s->{idx};
			push @{ $s->{created} }, $ids[$k];
			# A due job of an open transaction has no lane position yet: it
			# takes one when the transaction commits (pending_enqueues.hpp).
			if (!$future[$k])
			{
				delete $j->{seq};
				delete $j->{gen};
				push @{ $s->{unwritten} }, $j;
			}
			$s->{enq_lanes}{ lane($j) } = 1;
		}
		$self->set_ukey($s, $ukey[$k], $ids[$k]) if defined $ukey[$k];
		push @deferred, $ids[$k] if $future[$k];
	}
	$self->bump_W($s->{dbh}, \@deferred) if @deferred;
	$self->{stats}{enqueued} += @new;
	# Outside a transaction the enqueue's transaction began after the last
	# pause or resume: its due jobs are parked exactly when the queue is paused.
	if (!$s->{txn} && grep { !$future[$_] } @new)
	{
		my $p = $self->sync_parked;
		for my $k (grep { !$future[$_] } @new)
		{
			my $parked = $p->{ $ids[$k] } ? 1 : 0;
			my $want = $self->{paused}{$queue} ? 1 : 0;
			$self->bad("job $ids[$k] enqueued into " . ($want ? 'paused' : 'unpaused') . " queue $queue is "
				  . ($parked ? '' : 'not ') . 'parked') unless $parked == $want;
		}
	}
}

sub check_claim
{
	my ($self, $s, $queue, $max, $rows) = @_;
	$self->sync_parked;
	my $by = $self->claimable_by_lane;
	my $label = "claim by $s->{id} of $queue (max $max)";
	if ($self->{paused}{$queue})
	{
		$self->bad("$label: the queue is paused but the claim returned jobs") if @$rows;
		return;
	}
	if (!@$rows)
	{
		for my $p (1 .. 4)
		{
			for my $lane (lanes_at($by, $queue, $p))
			{
				my $l = $by->{$lane} // [];
				next unless @$l;
				next if $self->lane_maybe_blocked($s, $lane);
				$self->bad("$label returned nothing although lane $lane has "
					  . scalar(@$l) . " claimable jobs (" . join(',', map { $_->{id} } @$l[0 .. ($#$l < 9 ? $#$l : 9)]) . ")");
			}
		}
		return;
	}
	my $prio = $rows->[0][6];
	my $first = $self->{jobs}{ $rows->[0][0] };
	my $lane = $first ? lane($first) : "$queue|$prio";
	for my $p (1 .. $prio - 1)
	{
		for my $urgent (lanes_at($by, $queue, $p))
		{
			my $l = $by->{$urgent} // [];
			next unless @$l && !$self->lane_maybe_blocked($s, $urgent);
			$self->bad("$label served lane $lane although the more urgent lane $urgent has claimable jobs ("
				  . join(',', map { $_->{id} } @$l) . ")");
		}
	}
	my $l = $by->{$lane} // [];
	my @got = map { $_->[0] } @$rows;
	# A claim batch takes lanes of one queue-ring generation (claim_plan.hpp);
	# a claim with room takes the next generation's in another batch of the
	# same call (src/pg/fn_claim.cpp, ClaimFromLane), so up to $max in lane
	# order.
	my @want;
	for my $j (@$l)
	{
		last if @want == $max;
		push @want, $j->{id};
	}
	if (!$self->lane_maybe_blocked($s, $lane))
	{
		$self->bad("$label returned [@got]; the model's lane $lane head is [@want]") unless "@got" eq "@want";
	}
	else
	{
		my @pre = @want[ 0 .. $#got ];
		$self->bad("$label returned [@got], not a prefix of lane $lane [@want]")
		  unless @got <= @want && "@got" eq "@pre";
	}
}

sub do_claim
{
	my ($self, $s, $inwindow) = @_;
	my $queue = $QUEUES[ int(rand(@QUEUES)) ];
	my $max   = 1 + int(rand(10));
	my $sql = "SELECT job_id, run_lease, receipt_id, attempt, queue, kind, priority FROM awa.claim('$queue', $max, interval '1 day')";
	my ($rows, $err) = $self->sq($s->{dbh}, $sql);
	$self->logop($s->{id}, ($s->{txn} ? '[txn] ' : '') . ($inwindow ? '[wal paused] ' : '') . "$sql => "
		  . ($err // ('[' . join(' ', map { "$_->[0]/$_->[1]/$_->[2]" } @$rows) . ']')));
	$self->bad("claim failed: $err") if $err;
	# A claim takes the settings and lanes other transactions committed
	# before it began, also inside a transaction block begun earlier
	# (awa_claim, AcceptInvalidationMessages): the pause state is certain.
	$self->check_claim($s, $queue, $max, $rows);
	for my $r (@$rows)
	{
		my ($id, $lease, $receipt, $attempt) = @$r;
		my $j = $self->{jobs}{$id};
		$self->bad("claim returned job $id, unknown to the model") unless $j;
		$self->bad("claim handed out job $id, which the model says is $j->{state}" . (defined $j->{owner} ? " (open in s$j->{owner})" : ''))
		  unless $j->{state} eq 'available' && !defined $j->{owner};
		$self->bad("job $id: run_lease $lease, expected " . ($j->{lease} + 1)) unless $lease == $j->{lease} + 1;
		$self->bad("job $id: attempt $attempt, expected " . ($j->{attempt} + 1)) unless $attempt == $j->{attempt} + 1;
		push @{ $self->{inwindow} }, { %$j } if $inwindow;
		$self->touch($s, $j);
		$j->{state} = 'running';
		$j->{lease} = $lease;
		$j->{attempt} = $attempt;
		$j->{att} = { job => $id, lease => $lease, receipt => $receipt, batch => $receipt >> 18 };
		$j->{last_batch} = $receipt >> 18;
		push @{ $s->{claimed} }, { %{ $j->{att} } } if $s->{txn};
	}
	$s->{nclaims}++ if $s->{txn};
	$self->{stats}{claimed} += @$rows;
}

# complete / retry / snooze / fail / heartbeat of a live attempt.
sub do_end
{
	my ($self, $s) = @_;
	my @live = $self->live_attempts_for($s);
	return $self->do_claim($s) unless @live;
	my $j = pick(\@live);
	my $a = $j->{att};
	my $r = rand();
	my $what = $r < 0.55 ? 'complete' : $r < 0.7 ? 'retry' : $r < 0.8 ? 'snooze' : $r < 0.88 ? 'fail' : 'heartbeat';
	my $triple = "$a->{job}, $a->{lease}, $a->{receipt}";
	my ($sql, $expect);
	if ($what eq 'complete') { $sql = "SELECT awa.complete($triple)"; $expect = 1; }
	elsif ($what eq 'retry')
	{
		$sql = "SELECT awa.retry($triple, 'boom', " . $self->mk_delay_sql . ")";
		$expect = $j->{attempt} < $j->{max} ? 'retryable' : 'failed';
	}
	elsif ($what eq 'snooze') { $sql = "SELECT awa.snooze($triple, " . $self->mk_delay_sql . ")"; $expect = 'scheduled'; }
	elsif ($what eq 'fail') { $sql = "SELECT awa.fail($triple, 'bad')"; $expect = 'failed'; }
	else { $sql = "SELECT awa.heartbeat($triple, '{\"p\": 1}')"; $expect = 'alive'; }
	# A terminal failure goes to the DLQ when the job's queue has it on
	# (lifecycle.md 2, "fail ... and an exhausted retry").
	my @ok = $expect eq 'failed' ? $self->failed_outcomes($s, $j->{queue}) : ($expect);
	my ($rows, $err) = $self->sq($s->{dbh}, $sql);
	my $got = $err // $rows->[0][0];
	$self->logop($s->{id}, ($s->{txn} ? '[txn] ' : '') . "$sql => $got");
	$self->bad("$sql: expected " . join('|', @ok) . ", got $got") unless defined $got && grep { $got eq $_ } @ok;
	$expect = $got if $expect eq 'failed';    # failed or dlq
	$self->{stats}{dead_lettered}++ if $got eq 'dlq';
	$s->{locks}{ $a->{batch} } = 1 if $s->{txn};
	$self->{stats}{$what}++;
	return if $what eq 'heartbeat';
	$self->touch($s, $j);
	my $closed = { %$a, how => 'closed' };
	if ($s->{txn}) { push @{ $s->{closed} }, $closed; } else { push @{ $self->{dead} }, $closed; }
	if ($expect eq 'retryable' || $expect eq 'scheduled')
	{
		$j->{state} = $expect;
		$j->{att} = undef;
		$j->{attempt}-- if $expect eq 'scheduled';
		$j->{dseq} = ++$self->{dseq};
		$self->bump_W($s->{dbh}, [ $j->{id} ]);
	}
	else { $self->finalize($s, $j, $expect eq 1 ? 'completed' : $expect); }
}

# What a fail or an exhausted retry of a job of queue $q answers: 'dlq' when
# the queue has its DLQ on, else 'failed'. The setting is read through a
# per-backend cache that the switch's commit empties, so it applies to every
# transaction that starts after the switch (sql-reference.md,
# awa.configure_queue, "When it applies"); a transaction begun before the
# last switch may see either.
sub failed_outcomes
{
	my ($self, $s, $q) = @_;
	my $now = $self->{dlq}{$q} ? 'dlq' : 'failed';
	return ($now) if !$s || !$s->{txn} || $s->{begin_op} > ($self->{dlq_op}{$q} // -1);
	return ('failed', 'dlq');
}

# An ending with an attempt that is not live: refused, nothing written.
sub do_stale
{
	my ($self, $s) = @_;
	my @cand;
	my $dead = $self->{dead};
	for my $d (@$dead[ ($#$dead > 49 ? $#$dead - 49 : 0) .. $#$dead ])
	{
		next if $self->batch_locked_elsewhere($s, $d->{batch});
		my $j = $self->{jobs}{ $d->{job} };
		next if $j && defined $j->{owner} && $j->{owner} != $s->{idx};
		push @cand, $d;
	}
	# A live attempt with a wrong run_lease is stale too.
	for my $j ($self->live_attempts_for($s))
	{
		push @cand, { %{ $j->{att} }, lease => $j->{att}{lease} + 1, how => 'wrong_lease' };
	}
	return $self->do_end($s) unless @cand;
	my $d = pick(\@cand);
	my $triple = "$d->{job}, $d->{lease}, $d->{receipt}";
	my $r = rand();
	my ($sql, @ok);
	if ($r < 0.4) { $sql = "SELECT awa.complete($triple)"; @ok = ('0'); }
	elsif ($r < 0.6) { $sql = "SELECT awa.heartbeat($triple)"; @ok = $d->{how} eq 'cancelled' ? ('cancel_requested', 'stale') : ('stale'); }
	elsif ($r < 0.75) { $sql = "SELECT awa.retry($triple, 'late', interval '0')"; @ok = ('stale'); }
	elsif ($r < 0.9) { $sql = "SELECT awa.snooze($triple, interval '0')"; @ok = ('stale'); }
	else { $sql = "SELECT awa.fail($triple, 'late')"; @ok = ('stale'); }
	my ($rows, $err) = $self->sq($s->{dbh}, $sql);
	my $got = $err // $rows->[0][0];
	$self->logop($s->{id}, ($s->{txn} ? '[txn] ' : '') . "$sql ($d->{how} attempt) => $got");
	$self->bad("$sql on a $d->{how} attempt: expected " . join('|', @ok) . ", got $got")
	  unless defined $got && grep { $_ eq $got } @ok;
	$s->{locks}{ $d->{batch} } = 1 if $s->{txn};
	$self->{stats}{stale}++;
}

sub do_cancel
{
	my ($self) = @_;
	$self->sync_parked;    # (a parked job's cancel writes into the current generation)
	my @c;
	for my $id (sort { $a <=> $b } keys %{ $self->{jobs} })
	{
		my $j = $self->{jobs}{$id};
		next if defined $j->{owner};
		# Cancelling a job whose ready row was claimed (running, or completed
		# and still in the queue ring) goes through its claim batch's lock,
		# which a transaction that ended another attempt of that batch holds.
		next if defined $j->{last_batch} && $self->batch_locked_elsewhere(undef, $j->{last_batch});
		push @c, $j;
	}
	return unless @c;
	my $j = pick(\@c);
	my $sql = "SELECT awa.cancel($j->{id})";
	my $rows = $self->msql($sql);
	my $got = $rows->[0][0];
	$self->logop('m', "$sql => $got");
	my $st = $j->{state};
	my $expect = $st =~ /^(available|scheduled|retryable)$/ ? 'cancelled' : $st eq 'running' ? 'cancel_requested' : 'already_finished';
	my $ok = $got eq $expect || ($st eq 'gone' && $got eq 'not_found');
	$self->bad("$sql: job is $st in the model, expected $expect, got $got") unless $ok;
	push @{ $self->{dead} }, { %{ $j->{att} }, how => 'cancelled' } if $st eq 'running';
	$self->finalize(undef, $j, 'cancelled') unless $expect eq 'already_finished';
	$self->{stats}{cancel}++;
}

# awa.retry_jobs of a failed or cancelled job (or one the model says a prune
# dropped: nothing to retry), from the maintenance connection: the job is
# available again at the end of its lane, with run_lease + 1 and attempt 0,
# and takes its unique key again (23505 and nothing retried if another job
# holds it). A retried job is appended as a promotion appends it, with no
# deferred row (stop 36).
sub do_retry_finished
{
	my ($self) = @_;
	my @c;
	for my $id (sort { $a <=> $b } keys %{ $self->{jobs} })
	{
		my $j = $self->{jobs}{$id};
		next if defined $j->{owner};
		next unless $j->{state} =~ /^(failed|cancelled|gone)$/;
		# A key an open transaction holds or frees would make this wait.
		next if defined $j->{ukey} && $self->key_busy_elsewhere(undef, $j->{ukey});
		push @c, $j;
	}
	return unless @c;
	my $j = pick(\@c);
	my $sql = "SELECT awa.retry_jobs(ARRAY[$j->{id}]::bigint[])";
	my ($rows, $err) = $self->sq($self->{m}, $sql);
	my $got = $err // $rows->[0][0];
	$self->logop('m', "$sql ($j->{state} in the model) => $got");
	my $holder = defined $j->{ukey} ? $self->{ukey}{ $j->{ukey} } : undef;
	my $expect = $j->{state} eq 'gone' ? '0' : (defined $holder && $holder != $j->{id}) ? '23505' : '1';
	$self->bad("$sql: job is $j->{state} in the model, expected $expect, got $got")
	  unless defined $got && ($expect eq '23505' ? $got =~ /^23505:/ : $got eq $expect);
	$self->{stats}{retry_finished}++;
	return unless $expect eq '1';
	$j->{state}   = 'available';
	$j->{lease}  += 1;
	$j->{attempt} = 0;
	$j->{seq}     = ++$self->{seq};
	$j->{gen}     = $self->{gen};
	delete $j->{tgen};
	$self->set_ukey(undef, $j->{ukey}, $j->{id}) if defined $j->{ukey};
}

# ---------------------------------------------------------------------------
# Admin ops: move_jobs, set_priority, the DLQ
# ---------------------------------------------------------------------------
# Where an admin op runs: the maintenance connection (autocommit), or session
# $s in an admin transaction (begun here when $s is idle, 40 %; or the one
# $s has open), which a later op of $s commits, rolls back or ends with
# pg_terminate_backend. Returns the session, or undef for the maintenance
# connection. Admin transactions run admin ops only: a move in a producer
# transaction would write its pending enqueues early (awa._flush_enqueues).
sub admin_ctx
{
	my ($self, $s) = @_;
	return $s if $s && ($s->{txn} // '') eq 'admin';
	if ($s && !$s->{txn} && rand() < 0.4) { $self->do_begin($s, 'admin'); return $s; }
	return undef;
}

# Jobs an admin op of context $c may name without waiting: not in another
# session's open transaction, and (as for a cancel) not of a claim batch whose
# lock another session's open transaction holds.
sub admin_candidates
{
	my ($self, $c) = @_;
	my @c;
	for my $id (sort { $a <=> $b } keys %{ $self->{jobs} })
	{
		my $j = $self->{jobs}{$id};
		next if defined $j->{owner} && !($c && $j->{owner} == $c->{idx});
		next if defined $j->{last_batch} && $self->batch_locked_elsewhere($c, $j->{last_batch});
		push @c, $j;
	}
	return @c;
}

# awa.move_jobs / awa.set_priority of 1 to 4 ids (mostly waiting jobs; also
# running, finished, dead-lettered and purged ones, an unknown id, a NULL and
# repeats, which it must ignore). Expected (lifecycle.md 5a, sql-reference.md
# awa.move_jobs, awa.set_priority): it returns how many distinct waiting jobs
# were not already in the target queue / at the target priority; an
# available one leaves its lane (a tombstone: never claimable there again)
# and is appended to the tail of its new lane as a promotion appends it, in
# (run_at, priority, job_id) order among the call's jobs, with run_lease + 1
# and its attempt, unique key and concurrency key kept; a scheduled or
# retryable one keeps its state and run_lease and is promoted into its new
# lane. The counts move between queues. In an admin transaction the moved
# jobs are the transaction's until it ends: no claim takes them from either
# lane, and a rollback puts them back where they were (run_lease, lane
# position) -- the model's saved copies -- and leaves a dead hole in the new
# lane, which claims must pass. A transaction that moved available jobs
# ends in the same op half the time (end_admin_now); one that moved only
# deferred jobs stays open across other ops. (The new lane position is taken
# at commit, or at a later move of the same transaction, which reads its jobs
# back first; from then on claims of that lane may stop before it:
# written_lanes, flush_unwritten.)
sub do_move
{
	my ($self, $s, $what) = @_;
	$self->sync_parked;    # (a parked job is moved as a deferred row)
	my $c   = $self->admin_ctx($s);
	my $dbh = $c ? $c->{dbh} : $self->{m};
	my $who = $c ? $c->{id} : 'm';
	my @all = $self->admin_candidates($c);
	return unless @all;
	my @wait = grep { $_->{state} =~ /^(available|scheduled|retryable)$/ } @all;
	my $k = rand() < 0.7 ? 1 : 2 + int(rand(3));
	my @pick;
	push @pick, (@wait && rand() < 0.85) ? pick(\@wait) : pick(\@all) for 1 .. $k;
	my @ids = map { $_->{id} } @pick;
	push @ids, $ids[0] if rand() < 0.1;          # a repeat
	push @ids, 'NULL' if rand() < 0.05;          # a NULL
	push @ids, 900000000 + int(rand(1000)) if rand() < 0.05;    # an unknown job
	my $to = $what eq 'queue' ? $QUEUES[ int(rand(@QUEUES)) ] : 1 + int(rand(4));
	my %seen;
	my @moving = grep {
		!$seen{ $_->{id} }++
		  && $_->{state} =~ /^(available|scheduled|retryable)$/
		  && ($what eq 'queue' ? $_->{queue} ne $to : $_->{prio} != $to)
	} @pick;
	# The order the call appends its available jobs in: (run_at, priority,
	# job_id) (fn_promote.cpp); the model does not know run_at, so it reads
	# it, in the calling transaction (a move keeps run_at).
	# (a parked job is a deferred row: updated in place, parked still)
	my @avail = grep { $_->{state} eq 'available' && !$_->{parked} } @moving;
	# The call (and the model's run_at read below) write the transaction's
	# pending jobs first.
	$self->flush_unwritten($c);
	if (@avail > 1)
	{
		my $o = $self->qok($dbh, "SELECT j FROM unnest(ARRAY[" . join(',', map { $_->{id} } @avail)
			  . "]::bigint[]) j ORDER BY (awa.get_job(j) ->> 'run_at')::timestamptz, j");
		@avail = map { $self->{jobs}{ $_->[0] } } @$o;
	}
	my $arr = "ARRAY[" . join(',', @ids) . "]::bigint[]";
	my $sql = $what eq 'queue' ? "SELECT awa.move_jobs($arr, '$to')" : "SELECT awa.set_priority($arr, $to)";
	my ($rows, $err) = $self->sq($dbh, $sql);
	my $got = $err // $rows->[0][0];
	$self->logop($who, ($c ? '[txn] ' : '') . "$sql (" . join(' ', map { "$_->{id}:$_->{state}:" . lane($_) } @pick) . ") => $got");
	$self->bad("$sql: expected " . scalar(@moving) . " (" . join(',', map { $_->{id} } @moving) . "), got $got")
	  unless defined $got && $got eq scalar(@moving);
	$self->{stats}{ $what eq 'queue' ? 'moved' : 'reprioritised' } += @moving;
	$self->{stats}{ $what eq 'queue' ? 'move_calls' : 'set_priority_calls' }++;
	$self->{stats}{moved_available} += @avail;
	$self->{stats}{moved_in_txn} += @moving if $c;
	for my $j (@moving)
	{
		$self->touch($c, $j) if $c;
		if ($what eq 'queue') { $j->{queue} = $to; } else { $j->{prio} = $to; }
	}
	for my $j (@avail)
	{
		$j->{lease}++;
		# Into a paused queue the job is parked (a deferred row), not
		# appended: a later move in the same transaction moves it as a
		# deferred row, with no new run_lease (sync_parked cannot see it
		# before the commit; seed 643741058 moved a job into paused qb and
		# back in one transaction).
		if ($self->{paused}{ $j->{queue} }) { $j->{parked} = 1; next; }
		$self->append_at_commit($c, $j);
	}
	$self->end_admin_now($c) if $c && @avail;
}

# A job an admin op appends to its lane (a move, a DLQ retry) takes its lane
# position as an enqueued one does: at once outside a transaction, at the
# commit of an admin transaction (fn_promote.cpp, ReadyAt::kCommit), unless a
# later op of that transaction reads its jobs back first (flush_unwritten).
sub append_at_commit
{
	my ($self, $c, $j) = @_;
	if ($c)
	{
		delete $j->{seq};
		delete $j->{gen};
		push @{ $c->{unwritten} }, $j;
		return;
	}
	$j->{seq} = ++$self->{seq};
	$j->{gen} = $self->{gen};
}

# An op of session $s that reads the transaction's jobs back first
# (awa._flush_enqueues: move_jobs and set_priority, and the model's own
# awa.get_job reads) writes its pending jobs there: they take their lane
# positions now, in the order they were appended, and hold them until the
# transaction ends, so claims of those lanes may stop before them
# (written_lanes).
sub flush_unwritten
{
	my ($self, $s) = @_;
	return unless $s;
	for my $j (@{ $s->{unwritten} })
	{
		$j->{seq} = ++$self->{seq};
		$j->{gen} = $self->{gen};
		$s->{written_lanes}{ lane($j) } = 1;
	}
	$s->{unwritten} = [];
}

# An admin transaction that appended jobs to lanes (it moved an available job,
# or retried a dead letter) ends in that op half the time (committed, rolled
# back or terminated) and stays open across other sessions' ops the other half
# (always with STRESS_OPEN_MOVES=1). Its jobs take their lane positions at its
# commit, or where a later move of the same transaction reads them back
# (flush_unwritten): from then on it holds those positions, and a rollback
# leaves dead holes. Left open with written positions, it once lost jobs: a
# claim that met a dead hole of a keyed lane (a rolled-back move into it)
# while this transaction held a newer position of the lane took the lane out
# of the key scheduler, and the jobs between them stayed unclaimable until a
# restart (found by this test, seed 3;
# test/specs/keyed_lane_after_aborted_move.spec).
sub end_admin_now
{
	my ($self, $c) = @_;
	return if $ENV{STRESS_OPEN_MOVES} || rand() < 0.5;
	my $r = rand();
	if ($r < 0.45)
	{
		$c->{dbh}->commit or $self->bad('COMMIT failed: ' . $c->{dbh}->errstr);
		$self->logop($c->{id}, 'COMMIT (it wrote lane positions)');
		$self->commit_model($c);
	}
	elsif ($r < 0.9)
	{
		$c->{dbh}->rollback;
		$self->logop($c->{id}, 'ROLLBACK (it wrote lane positions)');
		$self->rollback_model($c);
	}
	else { $self->terminate($c); }
	$self->{stats}{admin_txn_ended_at_once}++;
}

# The DLQ: switch a queue's DLQ on or off (30 %; from the maintenance
# connection), or awa.dlq_retry (80 %) / awa.dlq_purge (20 %) of one job,
# mostly a dead-lettered one. Jobs reach the DLQ by a fail or an exhausted
# retry on a queue with its DLQ on (do_end). Expected (lifecycle.md 1 and 5,
# sql-reference.md awa.dlq_retry, awa.dlq_purge):
#   - dlq_retry of a dead letter returns 1: available at once (also in a
#     paused queue, claimable after the resume) at the tail of its lane, with
#     attempt 0 and the run_lease of its last attempt (its next claim's is
#     one more), taking its unique key again (released when it was
#     dead-lettered), or 23505 and nothing moved when another job holds it;
#   - dlq_purge of a dead letter returns 1 and the job is gone (get_job NULL);
#   - either returns 0 for a job that is not in the DLQ, which it leaves alone.
# In an admin transaction the retried job is the transaction's until it
# ends (in the same op half the time, end_admin_now); a rollback puts it back in the DLQ,
# its key free.
sub do_dlq
{
	my ($self, $s, $no_switch) = @_;
	if (!$no_switch && rand() < 0.3)
	{
		my $q  = $QUEUES[ int(rand(@QUEUES)) ];
		my $on = $self->{dlq}{$q} ? 0 : 1;
		my $sql = "SELECT awa.configure_queue('$q', dlq_enabled => " . ($on ? 'true' : 'false') . ")";
		$self->msql($sql);
		$self->logop('m', $sql);
		if ($on) { $self->{dlq}{$q} = 1; } else { delete $self->{dlq}{$q}; }
		$self->{dlq_op}{$q} = $self->{op};
		$self->{stats}{dlq_switch}++;
		return;
	}
	my $c   = $self->admin_ctx($s);
	my $dbh = $c ? $c->{dbh} : $self->{m};
	my $who = $c ? $c->{id} : 'm';
	my $purge = rand() < 0.2;
	my @all = $self->admin_candidates($c);
	# A retry that takes a key another open transaction holds or frees would wait.
	@all = grep { !defined $_->{ukey} || !$self->key_busy_elsewhere($c, $_->{ukey}) } @all unless $purge;
	my @dlq = grep { $_->{state} eq 'dlq' } @all;
	my $j = (@dlq && rand() < 0.85) ? pick(\@dlq) : pick(\@all);
	return unless $j;
	my $sql = "SELECT awa." . ($purge ? 'dlq_purge' : 'dlq_retry') . "(ARRAY[$j->{id}]::bigint[])";
	my ($rows, $err) = $self->sq($dbh, $sql);
	my $got = $err // $rows->[0][0];
	$self->logop($who, ($c ? '[txn] ' : '') . "$sql ($j->{state} in the model) => $got");
	my $holder = defined $j->{ukey} ? $self->{ukey}{ $j->{ukey} } : undef;
	my $expect = $j->{state} ne 'dlq' ? '0' : (!$purge && defined $holder && $holder != $j->{id}) ? '23505' : '1';
	$self->bad("$sql: job is $j->{state} in the model, expected $expect, got $got")
	  unless defined $got && ($expect eq '23505' ? $got =~ /^23505:/ : $got eq $expect);
	$self->{stats}{ $purge ? 'dlq_purge' : 'dlq_retry' }++;
	if ($expect eq '23505')
	{
		$self->{stats}{dlq_retry_conflicts}++;
		if ($c) { $c->{dbh}->rollback; $self->logop($c->{id}, 'ROLLBACK (txn aborted by 23505)'); $self->rollback_model($c); }
		return;
	}
	return unless $expect eq '1';
	$self->{stats}{ $purge ? 'dlq_purged' : 'dlq_retried' }++;
	$self->touch($c, $j) if $c;
	if ($purge)
	{
		$j->{state} = 'gone';
		$self->set_ukey($c, $j->{ukey}, undef) if defined $j->{ukey} && ($self->{ukey}{ $j->{ukey} } // -1) == $j->{id};
		return;
	}
	$j->{state}   = 'available';
	$j->{attempt} = 0;
	$self->append_at_commit($c, $j);
	delete $j->{tgen};
	$self->set_ukey($c, $j->{ukey}, $j->{id}) if defined $j->{ukey};
	$self->end_admin_now($c) if $c;
}

sub do_begin
{
	my ($self, $s, $kind) = @_;
	$s->{dbh}->begin_work;
	$self->qok($s->{dbh}, 'SELECT 1');
	$s->{txn} = $kind;
	$s->{begin_op} = $self->{op};
	$self->logop($s->{id}, "BEGIN ($kind)");
}

sub do_end_txn
{
	my ($self, $s) = @_;
	my $r = rand();
	if ($r < 0.45)
	{
		$s->{dbh}->commit or $self->bad("COMMIT failed: " . $s->{dbh}->errstr);
		$self->logop($s->{id}, 'COMMIT');
		$self->commit_model($s);
	}
	elsif ($s->{txn} ne 'worker' && $r >= 0.9)
	{
		# A producer killed while its jobs wait for its commit: nothing of
		# them may appear (issue 19 §4).
		$self->terminate($s);
	}
	elsif ($r < 0.75 || $s->{txn} ne 'worker')
	{
		$s->{dbh}->rollback;
		$self->logop($s->{id}, 'ROLLBACK');
		$self->rollback_model($s);
	}
	elsif ($r < 0.87)
	{
		# Cut short by statement_timeout: the transaction aborts.
		my ($rows, $err) = $self->sq($s->{dbh}, "SET LOCAL statement_timeout = '30ms'; SELECT pg_sleep(2)");
		$self->logop($s->{id}, "[txn] SET LOCAL statement_timeout = '30ms'; SELECT pg_sleep(2) => " . ($err // 'ok'));
		$self->bad("pg_sleep was not cut short by statement_timeout") unless $err && $err =~ /^57014/;
		$s->{dbh}->rollback;
		$self->logop($s->{id}, 'ROLLBACK (aborted)');
		$self->rollback_model($s);
	}
	else { $self->terminate($s); }
}

# pg_terminate_backend of the session's backend from the maintenance
# connection; the session reconnects. Its open transaction rolls back.
sub terminate
{
	my ($self, $s) = @_;
	my $r = $self->msql("SELECT pg_terminate_backend($s->{pid}, 10000)");
	$self->logop('m', "SELECT pg_terminate_backend($s->{pid}, 10000) [$s->{id}" . ($s->{txn} ? ", open $s->{txn} txn" : '') . "] => $r->[0][0]");
	for (1 .. 200)
	{
		my $x = $self->msql("SELECT count(*) FROM pg_stat_activity WHERE pid = $s->{pid}");
		last if $x->[0][0] == 0;
		usleep(20_000);
	}
	{ local $s->{dbh}{Warn} = 0; $s->{dbh}->disconnect; }
	$s->{dbh} = $self->connect_db;
	($s->{pid}) = $s->{dbh}->selectrow_array('SELECT pg_backend_pid()');
	$self->rollback_model($s) if $s->{txn};
	$self->reset_txn($s);
	$self->{stats}{terminate}++;
}

sub do_pause
{
	my ($self) = @_;
	my $queue = $QUEUES[ int(rand(@QUEUES)) ];
	my $pause = rand() < 0.5;
	if (!$pause) { $self->resume($queue); return; }
	$self->msql("SELECT awa.pause_queue('$queue')");
	$self->logop('m', "SELECT awa.pause_queue('$queue')");
	$self->{paused}{$queue} = 1;
}

# awa.resume_queue: the queue's parked jobs join their lanes in (run_at,
# priority, job_id) order (the model reads run_at: it does not know an
# enqueue's clock), in this call; a parked job another open transaction
# holds locked is left parked, for the next promotion.
sub resume
{
	my ($self, $queue) = @_;
	$self->sync_parked;
	my $order = $self->msql("SELECT job_id FROM awa.deferred_jobs WHERE state = 'available' AND queue = '$queue'
	                         ORDER BY run_at, priority, job_id");
	$self->msql("SELECT awa.resume_queue('$queue')");
	my %left = map { $_->[0] => 1 }
	  @{ $self->msql("SELECT job_id FROM awa.deferred_jobs WHERE state = 'available' AND queue = '$queue'") };
	my @out = grep { !$left{$_} && $self->{jobs}{$_} } map { $_->[0] } @$order;
	$self->logop('m', "SELECT awa.resume_queue('$queue') (unparked: " . join(',', @out) . ")");
	for my $id (@out)
	{
		my $j = $self->{jobs}{$id};
		delete $j->{parked};
		$j->{seq} = ++$self->{seq};
		$j->{gen} = $self->{gen};
	}
	$self->{stats}{unparked} += @out;
	delete $self->{paused}{$queue};
}

# Waits until every deferral is due, then runs the promote step (or 'all'):
# every committed deferred job of an unpaused queue joins its lane, in the
# order of its deferral.
sub do_promote
{
	my ($self, $task) = @_;
	if (defined $self->{W})
	{
		for (1 .. 100)
		{
			my $r = $self->msql("SELECT extract(epoch FROM '$self->{W}'::timestamptz - clock_timestamp())");
			last if $r->[0][0] < 0;
			usleep(int(($r->[0][0] + 0.005) * 1e6));
		}
	}
	# Parked jobs of queues that are not paused (a producer that saw the
	# pause committed after the resume; a parked job moved to such a queue):
	# appended after the due jobs, in (run_at, priority, job_id) order.
	$self->sync_parked;
	my @strays = grep { $_ && !defined $_->{owner} && !$self->{paused}{ $_->{queue} } }
	  map { $self->{jobs}{ $_->[0] } }
	  @{ $self->msql("SELECT job_id FROM awa.deferred_jobs WHERE state = 'available' ORDER BY run_at, priority, job_id") };
	my $rows = $self->msql("SELECT task, outcome, detail::text FROM awa.run_maintenance('$task')");
	my ($prom) = grep { $_->[0] eq 'promote' } @$rows;
	my $gen0 = $self->{gen};
	$self->logop('m', "SELECT * FROM awa.run_maintenance('$task') => " . join('; ', map { "$_->[0]:$_->[1]" } @$rows)
		  . ($prom ? " ($prom->[2])" : ''));
	# Due jobs of a paused queue are parked (available, outside their lanes).
	my @due = sort { $a->{dseq} <=> $b->{dseq} || $a->{prio} <=> $b->{prio} || $a->{id} <=> $b->{id} }
	  grep { ($_->{state} eq 'scheduled' || $_->{state} eq 'retryable') && !defined $_->{owner} }
	  values %{ $self->{jobs} };
	my $n = 0;
	if ($prom && $prom->[2] =~ /"jobs": (\d+)/) { $n = $1; }
	$self->bad("promotion moved $n jobs, the model expected " . scalar(@due) . " due (" . join(',', map { $_->{id} } @due)
		  . ") and " . scalar(@strays) . " parked (" . join(',', map { $_->{id} } @strays) . ")")
	  unless $n == @due + @strays;
	for my $j (@due)
	{
		$j->{state} = 'available';
		delete $j->{last_batch};
		if ($self->{paused}{ $j->{queue} }) { $j->{parked} = 1; $self->{stats}{parked_due}++; next; }
		$j->{seq} = ++$self->{seq};
		$j->{gen} = $gen0;
	}
	for my $j (@strays) { delete $j->{parked}; $j->{seq} = ++$self->{seq}; $j->{gen} = $gen0; }
	$self->{stats}{parked_strays} += @strays;
	# 'all' prunes after promoting, then rotates.
	$self->pruned($rows);
	$self->read_gen;
	$self->{stats}{promoted} += @due;
	$self->sync_parked;
}

# A queue prune reclaimed a generation. With a history retention (the
# default, 1 hour, longer than any run) its finished jobs move to the history
# ring in the prune's transaction: get_job and the counts still show them, so
# the model changes nothing. With awa.history_retention = 0 they vanish
# (maintenance.md 3.3).
sub pruned
{
	my ($self, $rows) = @_;
	my ($p) = grep { $_->[0] eq 'prune_queue' && $_->[1] eq 'pruned' } @$rows;
	return unless $p;
	# One prune can reclaim several generations (the first, and those under
	# "more": a ring that grew past held slots comes back to its width,
	# maintenance.md 2).
	my @gens = $p->[2] =~ /"generation": (\d+)/g;
	$self->bad("prune_queue detail without generation: $p->[2]") unless @gens;
	# How often a prune passed over a slot an open transaction held, and
	# reclaimed more than one slot (shown in the run's statistics).
	$self->{stats}{pruned_past_held}++ if $p->[2] =~ /"held_slots"/;
	$self->{stats}{pruned_more}++ if @gens > 1;
	$self->pruned_generation($_, $p->[2]) for @gens;
}

sub pruned_generation
{
	my ($self, $g, $detail) = @_;
	my $p = [ undef, undef, $detail ];
	$self->{stats}{pruned}++;
	# What is live in the pruned generation moves to the newest one (the
	# generation the prune's call started in: it prunes before it rotates):
	# available jobs (also those an open transaction has claimed: the prune
	# cannot see that claim) and running attempts (maintenance.md 3.5).
	for my $j (values %{ $self->{jobs} }, map { values %{ $_->{saved} // {} } } @{ $self->{sess} })
	{
		next unless defined $j->{gen} && $j->{gen} == $g;
		next unless $j->{state} eq 'available' || $j->{state} eq 'running';
		$j->{gen} = $self->{gen};
	}
	if ($self->{keep_history})
	{
		$self->logop('oracle', "prune of generation $g ($p->[2]): its finished jobs move to the history ring, the model keeps them");
		return;
	}
	my %n;
	for my $j (values %{ $self->{jobs} })
	{
		next unless $j->{state} =~ /^(completed|failed|cancelled)$/ && !defined $j->{owner} && $j->{tgen} == $g;
		$n{ $j->{state} }++;
		$j->{state} = 'gone';
	}
	$self->logop('oracle', "prune of generation $g ($p->[2]): the model drops " . join(' ', map { "$_=$n{$_}" } sort keys %n));
}

# The queue ring's current generation: the one enqueues and promotions write.
sub read_gen
{
	my ($self) = @_;
	$self->{gen} = $self->msql("SELECT generation FROM awa.storage_status() WHERE ring = 'queue'")->[0][0];
}

sub do_maint
{
	my ($self) = @_;
	my $r = rand();
	if ($r < 0.08)
	{
		# A quiet spell: rotations and prunes with nothing else between them,
		# so the queue ring carries what is live into its current slot and
		# then stands still (maintenance.md 3.6, "An idle backlog stays put")
		# with open transactions, long attempts and held slots around it.
		my $k = 4 + int(rand(8));
		for (1 .. $k)
		{
			my $rows = $self->msql("SELECT task, outcome FROM awa.run_maintenance('rotate')");
			$self->logop('m', "quiet: SELECT * FROM awa.run_maintenance('rotate') => " . join('; ', map { "$_->[0]:$_->[1]" } @$rows));
			$self->{stats}{rotated}++ if grep { $_->[0] eq 'rotate_queue' && $_->[1] eq 'rotated' } @$rows;
			$self->{stats}{stood_still}++ if grep { $_->[0] eq 'rotate_queue' && $_->[1] eq 'skipped_idle' } @$rows;
			$self->read_gen;
			$rows = $self->msql("SELECT task, outcome, detail::text FROM awa.run_maintenance('prune')");
			$self->logop('m', "quiet: SELECT * FROM awa.run_maintenance('prune') => " . join('; ', map { "$_->[0]:$_->[1]" } @$rows));
			$self->pruned($rows);
		}
		return;
	}
	if ($r < 0.4)
	{
		my $rows = $self->msql("SELECT task, outcome FROM awa.run_maintenance('rotate')");
		$self->logop('m', "SELECT * FROM awa.run_maintenance('rotate') => " . join('; ', map { "$_->[0]:$_->[1]" } @$rows));
		$self->{stats}{rotated}++ if grep { $_->[0] eq 'rotate_queue' && $_->[1] eq 'rotated' } @$rows;
		$self->read_gen;
	}
	elsif ($r < 0.7)
	{
		my $rows = $self->msql("SELECT task, outcome, detail::text FROM awa.run_maintenance('prune')");
		$self->logop('m', "SELECT * FROM awa.run_maintenance('prune') => " . join('; ', map { "$_->[0]:$_->[1]" } @$rows));
		$self->pruned($rows);
	}
	elsif ($r < 0.78)
	{
		my $rows = $self->msql("SELECT task, outcome, detail::text FROM awa.run_maintenance('reclaim_lanes')");
		$self->logop('m', "SELECT * FROM awa.run_maintenance('reclaim_lanes') => " . join('; ', map { "$_->[0]:$_->[1] $_->[2]" } @$rows));
		$self->{stats}{lanes_reclaimed} += ($rows->[0][2] =~ /"reclaimed": (\d+)/ ? $1 : 0);
	}
	elsif ($r < 0.88) { $self->do_promote('promote'); }
	else { $self->do_promote('all'); }
}

# Immediate shutdown: a synchronous commit flushes the WAL, the WAL writer is
# stopped, some sessions claim (asynchronous commits, never flushed), then
# the server stops without a checkpoint and starts again.
sub do_crash
{
	my ($self) = @_;
	my $node = $self->{node};
	# A synchronous commit that wrote WAL flushes every earlier commit. (A
	# transaction that only took an xid, SELECT txid_current(), commits
	# without a flush: PostgreSQL flushes only when the transaction wrote WAL
	# before its commit record, so claims committed asynchronously before it
	# were lost in the restart, outside the in-doubt window.)
	$self->msql('INSERT INTO stress_flush VALUES (clock_timestamp())');
	my $ww = $self->msql("SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'")->[0][0];
	kill('STOP', $ww) if $ww;
	$self->logop('m', "WAL writer stopped (pid " . ($ww // '?') . ")");
	$self->{inwindow} = [];
	my @idle = grep { !$_->{txn} } @{ $self->{sess} };
	my $k = int(rand(3));
	for (1 .. $k) { last unless @idle; $self->do_claim(pick(\@idle), 1); }
	$self->logop('node', "stop('immediate'); start");
	$node->stop('immediate');
	kill('CONT', $ww) if $ww;
	$node->start;
	$self->{crashes}++;
	for my $s (@{ $self->{sess} })
	{
		{ local $s->{dbh}{Warn} = 0; $s->{dbh}->disconnect; }
		$self->rollback_model($s) if $s->{txn};
	}
	{ local $self->{m}{Warn} = 0; $self->{m}->disconnect; }
	$self->open_sessions;
	# Durable: everything that returned before the flush. In doubt: the claims made after it.
	@{ $self->{dead} } = grep { $_->{how} ne 'rolled_back' } @{ $self->{dead} };
	for my $prev (@{ $self->{inwindow} })
	{
		my $r = $self->msql("SELECT awa.get_job($prev->{id}) ->> 'state', (awa.get_job($prev->{id}) ->> 'run_lease')::bigint");
		my ($st, $lease) = @{ $r->[0] };
		my $j = $self->{jobs}{ $prev->{id} };
		if ($st eq 'available' && $lease == $prev->{lease})
		{
			$self->{jobs}{ $prev->{id} } = { %$prev };
			$self->logop('oracle', "job $prev->{id}: its claim was lost in the crash (available, run_lease $lease)");
			$self->{stats}{claims_lost}++;
		}
		elsif ($st eq 'running' && $lease == $j->{lease})
		{
			$self->logop('oracle', "job $prev->{id}: its claim survived the crash");
			$self->{stats}{claims_kept}++;
		}
		else { $self->bad("job $prev->{id} after the crash: $st, run_lease $lease; neither the claim nor its loss"); }
	}
	$self->{inwindow} = [];
	$self->{stats}{crashes}++;
}

# ---------------------------------------------------------------------------
# The oracle
# ---------------------------------------------------------------------------
sub close_all
{
	my ($self) = @_;
	for my $s (@{ $self->{sess} })
	{
		next unless $s->{txn};
		if (rand() < 0.5) { $s->{dbh}->commit or $self->bad('COMMIT failed'); $self->logop($s->{id}, 'COMMIT (phase end)'); $self->commit_model($s); }
		else { $s->{dbh}->rollback; $self->logop($s->{id}, 'ROLLBACK (phase end)'); $self->rollback_model($s); }
	}
}

sub counts_model
{
	my ($self) = @_;
	my %c;
	for my $q (@QUEUES) { $c{$q} = { map { $_ => 0 } qw(available scheduled retryable running completed failed cancelled dlq) }; }
	$c{ $_->{queue} }{ $_->{state} }++ for grep { $_->{state} ne 'gone' } values %{ $self->{jobs} };
	return \%c;
}

sub check_all
{
	my ($self, $label) = @_;
	$self->sync_parked;
	# 1. every job's state, run_lease and attempt.
	my @ids = sort { $a <=> $b } keys %{ $self->{jobs} };
	if (@ids)
	{
		my $rows = $self->msql("SELECT j, coalesce(g ->> 'state', 'gone'), coalesce((g ->> 'run_lease')::bigint, -1), coalesce((g ->> 'attempt')::int, -1)
		                       FROM unnest(ARRAY[" . join(',', @ids) . "]::bigint[]) j, awa.get_job(j) g");
		my %db = map { $_->[0] => $_ } @$rows;
		for my $id (@ids)
		{
			my $j = $self->{jobs}{$id};
			my $d = $db{$id} or $self->bad("$label: job $id ($j->{state} in the model) is missing");
			if ($j->{state} eq 'gone' || $d->[1] eq 'gone')
			{
				$self->bad("$label: job $id is $d->[1]; the model says $j->{state}") unless $d->[1] eq $j->{state};
				next;
			}
			$self->bad("$label: job $id is $d->[1] (run_lease $d->[2], attempt $d->[3]); the model says $j->{state} (run_lease $j->{lease}, attempt $j->{attempt})")
			  unless $d->[1] eq $j->{state} && $d->[2] == $j->{lease} && $d->[3] == $j->{attempt};
		}
	}
	# 2. queue_counts = queue_counts_exact = the model.
	my $mc = $self->counts_model;
	my @cols = qw(available scheduled retryable running completed failed cancelled dlq);
	for my $q (@QUEUES)
	{
		my $sel = join(',', @cols);
		my ($fast, $exact);
		for (1 .. 100)    # the counters may trail a commit by an instant
		{
			$fast  = join(' ', @{ $self->msql("SELECT $sel FROM awa.queue_counts('$q')")->[0] });
			$exact = join(' ', @{ $self->msql("SELECT $sel FROM awa.queue_counts_exact('$q')")->[0] });
			last if $fast eq $exact;
			usleep(20_000);
		}
		my $want = join(' ', map { $mc->{$q}{$_} } @cols);
		$self->bad("$label: queue_counts('$q') = [$fast] but queue_counts_exact = [$exact] ($sel)") unless $fast eq $exact;
		$self->bad("$label: queue_counts_exact('$q') = [$exact], the model has [$want] ($sel)") unless $exact eq $want;
	}
	# 3. every available job is claimable, in lane order: claim everything in
	# one transaction of the maintenance connection, then roll back.
	my $by = $self->claimable_by_lane;
	my $m = $self->{m};
	$m->begin_work;
	my %got;
	for my $q (@QUEUES)
	{
		next if $self->{paused}{$q};
		for (1 .. 10000)
		{
			my ($rows, $err) = $self->sq($m, "SELECT job_id, priority FROM awa.claim('$q', 1000, interval '1 day')");
			$self->bad("$label: probe claim failed: $err") if $err;
			last unless @$rows;
			push @{ $got{ $self->{jobs}{ $_->[0] } ? lane($self->{jobs}{ $_->[0] }) : "$q|$_->[1]" } }, $_->[0] for @$rows;
		}
	}
	$m->rollback;
	for my $lane (sort(keys %$by), sort(keys %got))
	{
		my ($q) = split /\|/, $lane;
		next if $self->{paused}{$q};
		my $w = join(' ', map { $_->{id} } @{ $by->{$lane} // [] });
		my $g = join(' ', @{ $got{$lane} // [] });
		$self->bad("$label: claiming lane $lane returned [$g]; the model's available jobs in lane order are [$w]") unless $w eq $g;
	}
	$self->logop('oracle', "$label: " . scalar(@ids) . " jobs, states, counts and claimability agree");
}

# The end: resume, promote, check, then drain every queue with claims and
# completions, and check again.
sub finish
{
	my ($self) = @_;
	$self->close_all;
	$self->resume($_) for @QUEUES;
	$self->do_promote('promote');
	$self->check_all('final');
	my $s = $self->{sess}[0];
	# End the attempts still running.
	for my $j (sort { $a->{id} <=> $b->{id} } grep { $_->{state} eq 'running' } values %{ $self->{jobs} })
	{
		my $a = $j->{att};
		my $ok = $self->qok($s->{dbh}, "SELECT awa.complete($a->{job}, $a->{lease}, $a->{receipt})")->[0][0];
		$self->logop($s->{id}, "[drain] SELECT awa.complete($a->{job}, $a->{lease}, $a->{receipt}) => $ok");
		$self->bad("drain: completion of running job $j->{id} refused") unless $ok;
		$self->finalize(undef, $j, 'completed');
	}
	for my $q (@QUEUES)
	{
		for (1 .. 100000)
		{
			my $before = $self->{stats}{claimed} // 0;
			my $sql = "SELECT job_id, run_lease, receipt_id, attempt, queue, kind, priority FROM awa.claim('$q', 10, interval '1 day')";
			my ($rows, $err) = $self->sq($s->{dbh}, $sql);
			$self->bad("drain claim failed: $err") if $err;
			$self->logop($s->{id}, "[drain] $sql => [" . join(' ', map { $_->[0] } @$rows) . "]");
			$self->check_claim($s, $q, 10, $rows);
			last unless @$rows;
			for my $r (@$rows)
			{
				my $j = $self->{jobs}{ $r->[0] };
				$j->{state} = 'running'; $j->{lease} = $r->[1]; $j->{attempt} = $r->[3];
				my $ok = $self->qok($s->{dbh}, "SELECT awa.complete($r->[0], $r->[1], $r->[2])")->[0][0];
				$self->bad("drain: completion of job $r->[0] refused") unless $ok;
				$self->finalize(undef, $j, 'completed');
			}
		}
	}
	$self->check_all('after drain');
	my @left = grep { $_->{state} !~ /^(completed|failed|cancelled|dlq|gone)$/ } values %{ $self->{jobs} };
	$self->bad("after the drain, jobs are not final: " . join(',', map { "$_->{id}:$_->{state}" } @left)) if @left;
}

# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------
sub op_seed
{
	my ($self, $i, $salt) = @_;
	# drand48 seeded with neighbouring integers gives correlated first draws:
	# hash the op's identity instead.
	return hex(substr(Digest::MD5::md5_hex("$self->{seed}:$i:" . ($salt // 0)), 0, 8));
}

sub setup
{
	my ($self) = @_;
	my $node = $self->{node};
	$node->safe_psql('postgres', "CREATE DATABASE $self->{db}");
	for my $g (sort keys %{ $self->{db_settings} })
	{
		$node->safe_psql('postgres', "ALTER DATABASE $self->{db} SET $g = '$self->{db_settings}{$g}'");
	}
	$node->safe_psql($self->{db}, 'CREATE EXTENSION awa; CREATE TABLE stress_flush (at timestamptz)');
	$self->open_sessions;
	$self->read_gen;
	# The set-up's draws (each queue's fairness) from the seed too: rand()
	# before the first srand is seeded from the clock, and a replay of a seed
	# then ran with other fairness settings.
	srand($self->op_seed(0));
	for my $q (@QUEUES)
	{
		$self->msql("SELECT awa.configure_queue('$q', aging_interval => interval '0', fairness => '"
			  . (rand() < 0.5 ? 'key' : 'none') . "'" . ($q eq 'qc' ? ', dlq_enabled => true' : '') . ")");
		$self->{dlq}{$q} = 1 if $q eq 'qc';    # do_dlq switches it
		# Create every lane up front (a first enqueue of a lane would make a
		# concurrent first enqueue wait), and finish those jobs.
		for my $p (1 .. 4)
		{
			for my $ckey (undef, 'c0', 'c1', 'c2')
			{
				my $opts = defined $ckey ? qq{'{"concurrency_key": "$ckey"}'} : "'{}'";
				my $id = $self->msql("SELECT awa.enqueue('setup', '{}', '$q', $p, NULL, 25, $opts)")->[0][0];
				$self->{jobs}{$id} = { id => $id, queue => $q, prio => $p, max => 1, lease => 0, attempt => 0, state => 'available', seq => ++$self->{seq}, gen => $self->{gen}, ckey => $ckey };
			}
		}
		for (1 .. 16)
		{
			my $r = $self->msql("SELECT job_id, run_lease, receipt_id FROM awa.claim('$q', 10)");
			for my $c (@$r)
			{
				$self->msql("SELECT awa.complete($c->[0], $c->[1], $c->[2])");
				@{ $self->{jobs}{ $c->[0] } }{qw(state lease attempt)} = ('completed', 1, 1);
			}
		}
	}
	$self->logop('setup', "database $self->{db}: queues @QUEUES, strict priorities, 48 lanes created (12 without a key), DLQ on in qc");
}

sub step
{
	my ($self, $i) = @_;
	srand($self->op_seed($i));
	my $r = rand();
	my $s = $self->{sess}[ int(rand($NSESS)) ];
	if ($r < 0.0015) { return ($ENV{STRESS_NO_CRASH} ? undef : $self->do_crash); }
	if ($r < 0.07) { return $self->do_maint; }
	if ($r < 0.085) { return $self->do_pause; }
	if ($r < 0.095) { return $self->do_cancel; }
	if ($r < 0.10) { return $self->do_retry_finished; }
	if ($r < 0.11 && !$s->{txn}) { return $self->terminate($s); }
	# Moves, priority changes and the DLQ: 3 % of the ops, taken from the
	# session ops below (each of their shares shrinks by 3.4 %, 0.86 / 0.89);
	# the ops above keep theirs.
	if ($r >= 0.11 && $r < 0.14)
	{
		return $self->do_move($s, 'queue') if $r < 0.122;
		return $self->do_move($s, 'priority') if $r < 0.132;
		return $self->do_dlq($s);
	}
	my $t = rand();
	if (!$s->{txn})
	{
		if ($t < 0.12) { return $self->do_begin($s, 'worker'); }
		# A long producer stays open across many claims, rotations and
		# prunes of the others (issue 19 §4).
		if ($t < 0.18) { return $self->do_begin($s, rand() < 0.3 ? 'long_producer' : 'producer'); }
		if ($t < 0.38) { return $self->do_enqueue($s, 0); }
		if ($t < 0.52) { return $self->do_enqueue($s, 1); }
		if ($t < 0.74) { return $self->do_claim($s); }
		if ($t < 0.94) { return $self->do_end($s); }
		return $self->do_stale($s);
	}
	if ($s->{txn} eq 'producer' || $s->{txn} eq 'long_producer')
	{
		return $self->do_end_txn($s) if $t < ($s->{txn} eq 'producer' ? 0.3 : 0.03);
		return $self->do_enqueue($s, $t < 0.7 ? 0 : 1);
	}
	if ($s->{txn} eq 'admin')
	{
		return $self->do_end_txn($s) if $t < 0.35;
		return $self->do_move($s, 'queue') if $t < 0.6;
		return $self->do_move($s, 'priority') if $t < 0.85;
		return $self->do_dlq($s, 1);
	}
	return $self->do_end_txn($s) if $t < 0.2;
	return $self->do_claim($s) if $t < 0.55 && $s->{nclaims} < 5;
	return $self->do_stale($s) if $t < 0.6;
	return $self->do_end($s);
}

# Runs ops 1..nops (skipping those in skip) with oracle checks every phase,
# then the final drain. Dies with "MODEL MISMATCH ..." on a failure.
sub run
{
	my ($self) = @_;
	$self->setup;
	for my $i (1 .. $self->{nops})
	{
		$self->{op} = $i;
		$self->step($i) unless $self->{skip}{$i};
		if ($i % $self->{phase} == 0)
		{
			srand($self->op_seed($i, 1));
			$self->close_all;
			$self->check_all("phase check after op $i");
		}
	}
	$self->{op} = $self->{nops} + 1;
	srand($self->op_seed($self->{op}, 1));
	$self->finish;
}

sub disconnect_all
{
	my ($self) = @_;
	for my $s (@{ $self->{sess} }) { local $s->{dbh}{Warn} = 0; eval { $s->{dbh}->disconnect }; }
	eval { $self->{m}->disconnect } if $self->{m};
}

1;
