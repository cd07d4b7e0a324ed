# 007_rescue_dead_worker.pl
#
# The background maintenance worker rescues attempts whose worker died or ran
# past its deadline (awa.rescue_interval = 200ms, awa.heartbeat_staleness = 2s):
#
# (a) A claimer's backend is terminated right after its claim (it never
#     heartbeats). The worker closes the attempt ("heartbeat stale: worker
#     presumed dead"), the job becomes retryable, the worker promotes it once
#     its backoff (2 s + jitter after attempt 1) has passed, another session
#     claims it (attempt 2, run_lease 2) and completes it. The dead attempt's
#     receipt is refused (complete false, heartbeat stale) before and after.
#     Meanwhile a job whose worker heartbeats every ~0.1 s stays running.
# (b) An attempt claimed with deadline '500 ms' that heartbeats all along is
#     closed once the deadline passes ("hard deadline exceeded"); its
#     heartbeat then answers stale; the job is retryable, then claimable as
#     attempt 2.
# (c) An attempt on its last try (max_attempts 1) that is rescued ends the job:
#     failed on a plain queue, dlq on a queue with the DLQ on.
# At the end queue_counts = queue_counts_exact for every queue.
#
# The rings do not rotate here (rotate intervals 1 h): a prune of the first
# slots could otherwise reclaim the finished jobs' history (get_job NULL)
# before the test reads it.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('rescue', maintenance => 1, conf => qq{
awa.rescue_interval = '200ms'
awa.heartbeat_staleness = '2s'
awa.promote_interval = '250ms'
awa.queue_rotate_interval = '1h'
awa.claim_rotate_interval = '1h'
});

sub q1 { return $node->safe_psql('postgres', $_[0]); }

sub state_of { return q1("SELECT awa.get_job($_[0]) ->> 'state'"); }

sub last_error
{
	return q1("SELECT awa.get_job($_[0]) -> 'errors' -> -1 ->> 'error'");
}

q1("SELECT awa.configure_queue('rd', dlq_enabled => true)");

my $a_job  = q1("SELECT awa.enqueue('dead', '{}', 'ra')");
my $b_job  = q1("SELECT awa.enqueue('alive', '{}', 'rb')");
my $c_job  = q1("SELECT awa.enqueue('deadline', '{}', 'rc')");
my $f_job  = q1("SELECT awa.enqueue('last', '{}', 'rf', max_attempts => 1)");
my $d_job  = q1("SELECT awa.enqueue('last', '{}', 'rd', max_attempts => 1)");

# ---------------------------------------------------------------------------
# Claims. (a): in a session that is then terminated.
# ---------------------------------------------------------------------------
my $claimer = $node->background_psql('postgres', on_error_stop => 0);
my $claimer_pid = $claimer->query('SELECT pg_backend_pid()');
my ($a_id, $a_lease, $a_receipt, $a_attempt) = split /\|/,
  $claimer->query("SELECT job_id, run_lease, receipt_id, attempt FROM awa.claim('ra')");
is($a_id,      $a_job, '(a) the doomed session claimed the job');
is($a_lease,   '1',    '(a) run_lease 1');
is($a_attempt, '1',    '(a) attempt 1');
is(q1("SELECT pg_terminate_backend($claimer_pid)"), 't', '(a) the claimer backend is terminated');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $claimer_pid"),
	'(a) the claimer backend is gone');
$claimer->quit;

my $ta = "$a_id, $a_lease, $a_receipt";

# (b) and (c): claimed here; (b) heartbeats, (c) never does.
my ($b_id, $b_lease, $b_receipt) = split /\|/,
  q1("SELECT job_id, run_lease, receipt_id FROM awa.claim('rb')");
is($b_id, $b_job, '(a) control job claimed (it will heartbeat)');
my $tb = "$b_id, $b_lease, $b_receipt";
# deadline_at = the claim's clock time + 500 ms, and that clock time lies between
# now() (transaction start) and clock_timestamp() (read after the claim): exact
# bounds, no timing slack (a 100 ms slack failed once on a loaded machine).
my ($c_id, $c_lease, $c_receipt, $c_deadline_ok, $c_hb) = split /\|/, q1(
	"SELECT job_id AS j, run_lease AS l, receipt_id AS r,
	        deadline_at > now() + interval '500 ms' - interval '1 us' AND deadline_at <= clock_timestamp() + interval '500 ms' AS dl
	   FROM awa.claim('rc', 1, interval '500 ms') \\gset
	 SELECT :j, :l, :r, :'dl', awa.heartbeat(:j, :l, :r)");
is($c_id,          $c_job,  '(b) claimed with a 500 ms deadline');
is($c_deadline_ok, 't',     '(b) deadline_at is 500 ms after the claim');
is($c_hb,          'alive', '(b) its first heartbeat: alive');
my $tc = "$c_id, $c_lease, $c_receipt";
my ($f_id, $f_lease, $f_receipt) = split /\|/,
  q1("SELECT job_id, run_lease, receipt_id FROM awa.claim('rf')");
is($f_id, $f_job, '(c) last attempt claimed on rf (no heartbeat, default deadline)');
my ($d_id, $d_lease, $d_receipt) = split /\|/,
  q1("SELECT job_id, run_lease, receipt_id FROM awa.claim('rd', 1, interval '300 ms')");
is($d_id, $d_job, '(c) last attempt claimed on rd (DLQ on) with a 300 ms deadline');

# ---------------------------------------------------------------------------
# Until the end, every wait heartbeats the control job (b_job) every ~0.1 s:
# it must stay alive throughout. The first wait also heartbeats the deadline
# job (c_job) until that answers stale, and waits for the dead attempt (a).
# ---------------------------------------------------------------------------
my $hb = $node->background_psql('postgres', on_error_stop => 0);
my @b_answers;

# Polls $cond (an SQL boolean, with extra columns returned after it) while
# heartbeating the control job; returns the last row's extra columns, or
# undef after 60 s.
sub wait_until
{
	my ($cond, $extra) = @_;
	$extra //= "''";
	my $deadline = time + 60;
	while (time < $deadline)
	{
		my ($b_ans, $ok, @rest) = split /\|/,
		  $hb->query("SELECT awa.heartbeat($tb), ($cond), $extra"), -1;
		push @b_answers, $b_ans;
		return \@rest if $ok eq 't';
		usleep(100_000);
	}
	return undef;
}

my $first = wait_until(
	"h.c = 'stale' AND awa.get_job($a_id) ->> 'state' <> 'running'",
	"awa.get_job($a_id) ->> 'state' FROM (SELECT awa.heartbeat($tc) AS c) h");
ok(defined $first, '(a) and (b): both attempts were closed by the worker');
is($first->[0], 'retryable', '(a) the dead attempt was rescued: the job is retryable');
is(state_of($b_id), 'running', '(a) the heartbeating control job is still running');

# (a) the rescue's record.
is(last_error($a_id), 'heartbeat stale: worker presumed dead',
	'(a) error history: heartbeat stale: worker presumed dead');
is(q1("SELECT awa.get_job($a_id) -> 'errors' -> -1 ->> 'attempt'"), '1',
	'(a) the error is recorded for attempt 1');
is(q1("SELECT awa.complete($ta)"),  'f',     '(a) the dead attempt cannot complete');
is(q1("SELECT awa.heartbeat($ta)"), 'stale', '(a) the dead attempt\'s heartbeat is stale');

# (b) the deadline rescue's record.
my $c_state = state_of($c_id);
ok($c_state eq 'retryable' || $c_state eq 'available',
	"(b) the deadline attempt was closed; the job is retryable or already promoted ($c_state)");
is(last_error($c_id), 'hard deadline exceeded', '(b) error history: hard deadline exceeded');
is(q1("SELECT awa.complete($tc)"), 'f', '(b) the expired attempt cannot complete');

# ---------------------------------------------------------------------------
# (a) promotion after backoff; attempt 2 in another session.
# ---------------------------------------------------------------------------
ok(defined wait_until("awa.get_job($a_id) ->> 'state' = 'available'"),
	'(a) the worker promoted the job after its backoff');
my ($a2_id, $a2_lease, $a2_receipt, $a2_attempt) = split /\|/,
  q1("SELECT job_id, run_lease, receipt_id, attempt FROM awa.claim('ra')");
is($a2_id,      $a_id, '(a) another session claims the job again');
is($a2_attempt, '2',   '(a) attempt 2');
is($a2_lease,   '2',   '(a) run_lease 2');
is(q1("SELECT awa.complete($ta)"), 'f', '(a) the old receipt is still refused while attempt 2 runs');
is(q1("SELECT awa.complete($a2_id, $a2_lease, $a2_receipt)"), 't', '(a) attempt 2 completes');
is(q1("SELECT awa.complete($ta)"), 'f', '(a) the old receipt is refused after the completion');
is(state_of($a_id), 'completed', '(a) get_job: completed');
is(q1("SELECT awa.get_job($a_id) -> 'errors' @> '[{\"attempt\": 1, \"error\": \"heartbeat stale: worker presumed dead\"}]'"),
	't', '(a) the completed job keeps the rescue in its error history');

# (b) the deadline job: promoted, claimed as attempt 2, completed.
ok(defined wait_until("awa.get_job($c_id) ->> 'state' = 'available'"),
	'(b) the worker promoted the deadline job');
is( q1("SELECT attempt || '/' || run_lease || '/' || awa.complete(job_id, run_lease, receipt_id) FROM awa.claim('rc')"),
	'2/2/true', '(b) claimed again as attempt 2 (run_lease 2) and completed');

# ---------------------------------------------------------------------------
# (c) exhausted attempts.
# ---------------------------------------------------------------------------
ok(defined wait_until("awa.get_job($f_id) ->> 'state' = 'failed'"),
	'(c) max_attempts 1, no heartbeat: the job failed');
is(last_error($f_id), 'heartbeat stale: worker presumed dead', '(c) failed job: heartbeat stale error');
ok(defined wait_until("awa.get_job($d_id) ->> 'state' = 'dlq'"),
	'(c) max_attempts 1, deadline passed, DLQ on: the job is dead-lettered');
is(q1("SELECT errors -> -1 ->> 'error' FROM awa.dlq WHERE job_id = $d_id"), 'hard deadline exceeded',
	'(c) awa.dlq lists it with the deadline error');
is(q1("SELECT awa.complete($f_id, $f_lease, $f_receipt)"), 'f', '(c) the failed attempt cannot complete');
is(q1("SELECT awa.complete($d_id, $d_lease, $d_receipt)"), 'f', '(c) the dead-lettered attempt cannot complete');

# The control job stayed alive all along, and completes.
is_deeply([ grep { $_ ne 'alive' } @b_answers ], [],
	'(a) the control job answered alive to every heartbeat (' . scalar(@b_answers) . ')');
is(q1("SELECT awa.heartbeat($tb)"), 'alive', '(a) control job: still alive');
is(q1("SELECT awa.complete($tb)"),  't',     '(a) control job completes');
$hb->quit;

is( q1("SELECT string_agg(queue || ':' || available || scheduled || retryable || running || completed || failed || cancelled || dlq, ' ' ORDER BY queue) FROM awa.queue_counts_exact(NULL)"),
	'ra:00001000 rb:00001000 rc:00001000 rd:00000001 rf:00000100',
	'queue_counts_exact: ra, rb, rc completed, rf failed, rd dlq');
is( q1("SELECT count(*) FROM ((SELECT * FROM awa.queue_counts(NULL) EXCEPT ALL SELECT * FROM awa.queue_counts_exact(NULL))
	                         UNION ALL
	                         (SELECT * FROM awa.queue_counts_exact(NULL) EXCEPT ALL SELECT * FROM awa.queue_counts(NULL))) x"),
	'0', 'queue_counts = queue_counts_exact');
is(q1("SELECT errors FROM awa.maintenance_status() WHERE task = 'rescue'"), '0', 'no rescue step failed');

$node->stop;
done_testing();
