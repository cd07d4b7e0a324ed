# 025_metrics_exporter.pl
#
# The metrics surface (docs/monitoring.md; issue 12 §3) through the real
# Prometheus exporter: Debian's prometheus-postgres-exporter runs with
# monitoring/postgres_exporter.yml (--extend.query-path) against a server
# whose maintenance worker runs at its default cadence, connected as a role
# that is a member of awa_monitor only. The test scrapes /metrics over HTTP and
# checks:
#  - awa_queue_jobs{queue,state} equals awa.queue_counts() for every queue and
#    state, and the expected counts of a known workload;
#  - awa_jobs_total{queue,event} equals the events of that workload (enqueued,
#    claimed, completed, retried, snoozed, failed, rescued);
#  - awa_queue_oldest_available_age_seconds: an hour-old available job makes it
#    at least 3600, an empty queue 0;
#  - awa_queue_waiting_claims counts a claim sleeping in awa.claim(..., wait);
#  - awa_ring_generation{ring} lies between awa.storage_status() read before
#    and after the scrape (the worker rotates meanwhile);
#  - every maintenance task has awa_maintenance_errors_total, and the worker
#    is reported running;
#  - awa_periodic_next_run_in_seconds counts down to a schedule's next tick;
#  - every metric monitoring/grafana-dashboard.json uses is in the scrape;
#  - the monitoring role can read nothing else (awa.queue_counts is refused).
use strict;
use warnings;

use HTTP::Tiny;
use JSON::PP;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $root = "$FindBin::Bin/../..";
my $exporter = '/usr/bin/prometheus-postgres-exporter';
plan skip_all => "$exporter is not installed (scripts/install-deps.sh installs it)" unless -x $exporter;

my $node = start_awa_node('metrics', maintenance => 1);
$node->safe_psql('postgres', q{
	CREATE ROLE exporter LOGIN IN ROLE awa_monitor;
	CREATE ROLE plain LOGIN;
});

# A known workload. m1: 10 jobs; 6 claimed: 2 completed, 1 retried (1 h), 1
# snoozed (1 h), 1 failed, 1 rescued after its deadline (and promoted back to
# available by the worker). m2: 4 jobs, 1 cancelled. old: 2 jobs available
# since an hour ago. empty: a queue with settings only.
my $started = time;
$node->safe_psql('postgres', q{
	SELECT awa.enqueue('m', '{}', 'm1', 2) FROM generate_series(1, 10);
	SELECT awa.enqueue('m', '{}', 'old', 2, now() - interval '1 hour') FROM generate_series(1, 2);
	SELECT awa.enqueue('m', '{}', 'm2') FROM generate_series(1, 3);
	SELECT awa.cancel(max(job_id)) FROM awa.enqueue_many(ARRAY['m'], ARRAY['{}'::jsonb], 'm2') AS e(job_id);
	SELECT awa.configure_queue('empty', dlq_enabled => false, max_running => 3, rate_limit => '30 per 1 minute', burst => 5);
	SELECT awa.schedule_periodic('yearly', '@yearly', 'p.yearly', queue => 'periodic');
	CREATE TABLE claimed AS SELECT * FROM awa.claim('m1', 5, deadline => '1 hour');
	SELECT awa.complete(job_id, run_lease, receipt_id) FROM claimed ORDER BY job_id LIMIT 2;
	SELECT awa.retry(job_id, run_lease, receipt_id, 'boom', '1 hour') FROM claimed ORDER BY job_id OFFSET 2 LIMIT 1;
	SELECT awa.snooze(job_id, run_lease, receipt_id, '1 hour') FROM claimed ORDER BY job_id OFFSET 3 LIMIT 1;
	SELECT awa.fail(job_id, run_lease, receipt_id, 'permanent') FROM claimed ORDER BY job_id OFFSET 4 LIMIT 1;
	SELECT count(*) FROM awa.claim('m1', 1, deadline => '1 millisecond');
	SELECT awa.configure_queue('keyed', key_max_running => 1);
	SELECT awa.enqueue('m', '{}', 'keyed', opts => jsonb_build_object('concurrency_key', k))
	  FROM unnest(ARRAY['ka', 'ka', 'ka', 'kb']) k;
	SELECT count(*) FROM awa.claim('keyed', 5, deadline => '1 hour');
	SELECT count(*) FROM awa.claim('keyed', 5, deadline => '1 hour');
	SELECT count(*) FROM awa.claim('keyed', 5, deadline => '1 hour');
});
# The worker rescues the expired attempt, then promotes the job back.
$node->poll_query_until('postgres',
	q{SELECT (SELECT rescued FROM awa.job_event_totals() WHERE queue = 'm1') = 1
	     AND (SELECT retryable FROM awa.queue_counts('m1')) = 1})
  or die 'the worker did not rescue and promote the expired attempt';

my %expected_counts = (
	m1 => { available => 5, scheduled => 1, retryable => 1, running => 0, completed => 2, failed => 1,
	        cancelled => 0, dlq => 0 },
	m2 => { available => 3, scheduled => 0, retryable => 0, running => 0, completed => 0, failed => 0,
	        cancelled => 1, dlq => 0 },
	old => { available => 2, scheduled => 0, retryable => 0, running => 0, completed => 0, failed => 0,
	         cancelled => 0, dlq => 0 },
	empty => { map { $_ => 0 } qw(available scheduled retryable running completed failed cancelled dlq) });
my %expected_events = (
	m1 => { enqueued => 10, claimed => 6, completed => 2, retried => 1, snoozed => 1, failed => 1, rescued => 1 },
	m2 => { enqueued => 4, claimed => 0, completed => 0, retried => 0, snoozed => 0, failed => 0, rescued => 0 });

# A claim that waits for work on queue idle, for the whole test.
my ($in, $out, $err) = ('', '', '');
my $waiter = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	  q{SELECT count(*) FROM awa.claim('idle', 1, wait => '10 minutes')} ],
	\$in, \$out, \$err);
$node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM awa.waiting_claims() WHERE queue = 'idle'})
  or die 'the waiting claim was not listed';

# A wake that finds nothing (a rolled-back enqueue wakes the waiters of its
# queue) leaves the claim listed, since it started waiting.
my $since = $node->safe_psql('postgres', q{SELECT waiting_since FROM awa.waiting_claims() WHERE queue = 'idle'});
$node->safe_psql('postgres', q{BEGIN; SELECT awa.enqueue('x', '{}', 'idle'); ROLLBACK;});
# (The claim wakes at each rollback, looks, and sleeps again; a second is
# ample for that. A slower machine can only make this check pass without
# the wake having happened, never fail.)
sleep 1;
$node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM awa.waiting_claims() WHERE queue = 'idle'})
  or die 'the waiting claim is gone';
is($node->safe_psql('postgres', q{SELECT waiting_since FROM awa.waiting_claims() WHERE queue = 'idle'}), $since,
	'the waiting claim keeps its waiting_since across wakes that find nothing');

# The exporter, on a free port, with awa's queries only.
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $dsn = sprintf('host=%s port=%d user=exporter dbname=postgres sslmode=disable', $node->host, $node->port);
my $exporter_log = $node->basedir . '/exporter.log';
my $exporter_run = IPC::Run::start(
	[ $exporter, "--web.listen-address=127.0.0.1:$port", "--extend.query-path=$root/monitoring/postgres_exporter.yml",
	  '--disable-default-metrics', '--disable-settings-metrics' ],
	'<', \undef, '>&', $exporter_log, init => sub { $ENV{DATA_SOURCE_NAME} = $dsn });
END { $exporter_run->kill_kill if $exporter_run; $waiter->kill_kill if $waiter; }

# Parses the exposition format: {name}{sorted label string} = value.
sub scrape
{
	my $http = HTTP::Tiny->new(timeout => 30);
	my $response;
	for (1 .. 300) {
		$response = $http->get("http://127.0.0.1:$port/metrics");
		last if $response->{success} && $response->{content} =~ /^awa_queue_jobs\{/m;
		usleep(100_000);
	}
	die "no awa metrics from the exporter: $response->{status} " . slurp_file($exporter_log)
	  unless $response->{success} && $response->{content} =~ /^awa_queue_jobs\{/m;
	my %metrics;
	for my $line (split /\n/, $response->{content}) {
		next unless $line =~ /^(awa_\w+)(?:\{([^}]*)\})?\s+(\S+)$/;
		my ($name, $labels, $value) = ($1, $2 // '', $3);
		my %l = $labels =~ /(\w+)="([^"]*)"/g;
		delete $l{server};
		$metrics{$name}{ join(',', map { "$_=$l{$_}" } sort keys %l) } = $value;
	}
	return \%metrics;
}

my %generation_before = split /[|\n]/, $node->safe_psql('postgres', 'SELECT ring, generation FROM awa.storage_status()');
my $m = scrape();
my $elapsed = time - $started;
my %generation_after = split /[|\n]/, $node->safe_psql('postgres', 'SELECT ring, generation FROM awa.storage_status()');

# Job counts per queue and state: the exporter's equal queue_counts, and the workload's.
my @states = qw(available scheduled retryable running completed failed cancelled dlq);
my $counts = $node->safe_psql('postgres', 'SELECT * FROM awa.queue_counts() ORDER BY queue');
my $queues_seen = 0;
for my $row (split /\n/, $counts) {
	my ($queue, @values) = split /\|/, $row;
	$queues_seen++;
	for my $i (0 .. $#states) {
		is($m->{awa_queue_jobs}{"queue=$queue,state=$states[$i]"}, $values[$i],
			"awa_queue_jobs{queue=$queue,state=$states[$i]} equals queue_counts");
		is($values[$i], $expected_counts{$queue}{ $states[$i] }, "$queue has $expected_counts{$queue}{$states[$i]} $states[$i]")
		  if $expected_counts{$queue};
	}
}
is($queues_seen, 5, 'queue_counts lists the five queues');
is(scalar(keys %{ $m->{awa_queue_jobs} }), 5 * 8, 'awa_queue_jobs has a series per queue and state, no more');

# Event totals.
for my $queue (sort keys %expected_events) {
	for my $event (sort keys %{ $expected_events{$queue} }) {
		is($m->{awa_jobs_total}{"event=$event,queue=$queue"}, $expected_events{$queue}{$event},
			"awa_jobs_total{queue=$queue,event=$event} = $expected_events{$queue}{$event}");
	}
}

# The oldest available job's age.
my $age = $m->{awa_queue_oldest_available_age_seconds}{'queue=old'};
ok($age >= 3600 && $age <= 3600 + $elapsed + 1, "old's oldest available job is an hour old ($age s)");
$age = $m->{awa_queue_oldest_available_age_seconds}{'queue=m1'};
ok($age > 0 && $age <= $elapsed + 1, "m1's oldest available job is as old as the test ($age s, at most $elapsed)");
is($m->{awa_queue_oldest_available_age_seconds}{'queue=empty'}, 0, 'a queue with nothing available reports 0');
is($m->{awa_queue_oldest_paused}{'queue=m2'}, 0, 'm2 is not paused');

# The concurrency limit: a series only for the queue that has one.
is($m->{awa_queue_limit_max_running}{'queue=empty'}, 3, 'awa_queue_limit_max_running{queue=empty} = 3');
is($m->{awa_queue_limit_running}{'queue=empty'}, 0, 'awa_queue_limit_running{queue=empty} = 0');
is($m->{awa_queue_limit_claims_limited}{'queue=empty'}, 0, 'awa_queue_limit_claims_limited{queue=empty} = 0');
ok(!exists $m->{awa_queue_limit_max_running}{'queue=m1'}, 'no limit series for m1 (no limit)');
# The rate limit: per second, its burst and the claims it cut.
is($m->{awa_queue_rate_limit_per_second}{'queue=empty'}, 0.5, 'awa_queue_rate_limit_per_second{queue=empty} = 0.5');
is($m->{awa_queue_rate_limit_burst}{'queue=empty'}, 5, 'awa_queue_rate_limit_burst{queue=empty} = 5');
is($m->{awa_queue_rate_limit_claims_limited}{'queue=empty'}, 0, 'awa_queue_rate_limit_claims_limited{queue=empty} = 0');
ok(!exists $m->{awa_queue_rate_limit_per_second}{'queue=m1'}, 'no rate series for m1 (no rate limit)');

# The waiting claim.
is($m->{awa_queue_waiting_claims}{'queue=idle'}, 1, 'one claim waits on queue idle');
ok(!exists $m->{awa_queue_waiting_claims}{'queue=m1'}, 'no claim waits on m1');

# Rings: the scraped generation lies between the readings around the scrape.
for my $ring (qw(queue claim lease)) {
	my $g = $m->{awa_ring_generation}{"ring=$ring"};
	ok(defined $g && $g >= $generation_before{$ring} && $g <= $generation_after{$ring},
		"awa_ring_generation{ring=$ring} = $g, between $generation_before{$ring} and $generation_after{$ring}");
	ok(exists $m->{awa_ring_seconds_since_rotation}{"ring=$ring"}, "awa_ring_seconds_since_rotation{ring=$ring}");
	for my $step (qw(rotate prune)) {
		ok((grep { /^outcome=[a-z_]+,ring=$ring,step=$step$/ } keys %{ $m->{awa_ring_last_outcome_info} }) == 1,
			"one last $step outcome of ring $ring");
	}
}

# A periodic job that has not ticked yet.
my $until = $node->safe_psql('postgres', q{SELECT extract(epoch FROM next_run_at - now()) FROM awa.periodic_jobs});
my $next_in = $m->{awa_periodic_next_run_in_seconds}{'name=yearly'};
# Scraped before $until was read: at least as far, and no further than the test has run.
ok(defined $next_in && $next_in >= $until && $next_in <= $until + (time - $started) + 1,
	"awa_periodic_next_run_in_seconds{name=yearly} = $next_in, just above $until");
is($m->{awa_periodic_seconds_since_last_run}{'name=yearly'}, -1, 'the yearly job has not run yet');
is($m->{awa_periodic_failing}{'name=yearly'}, 0, 'the yearly job is not failing');

# Maintenance: a series for every task, no error, the worker running.
my @tasks = split /\n/, $node->safe_psql('postgres', 'SELECT unnest(awa._task_names())');
for my $task (@tasks) {
	ok(exists $m->{awa_maintenance_errors_total}{"task=$task"}, "awa_maintenance_errors_total{task=$task}");
}
is((grep { $_ != 0 } values %{ $m->{awa_maintenance_errors_total} }), 0, 'no maintenance task has an error');
is($m->{awa_maintenance_worker_running}{''}, 1, 'the maintenance worker is reported running');

# Keys (awa.key_metrics): key_max_running 1 let one attempt of each key run.
# A claim the limit gives fewer jobs than it asked for counts: the first
# claim (5 asked, ka gave 1), the second (ka at its limit gave 0; kb gave 1 of
# 5); the third found nothing to ask (ka held back, kb drained).
is($m->{awa_key_running}{'key=ka,queue=keyed'}, 1, 'awa_key_running{queue=keyed,key=ka} = 1');
is($m->{awa_key_running}{'key=kb,queue=keyed'}, 1, 'awa_key_running{queue=keyed,key=kb} = 1');
cmp_ok($m->{awa_key_backlog}{'key=ka,queue=keyed'}, '>=', 2, 'awa_key_backlog{queue=keyed,key=ka} counts its waiting jobs');
is($m->{awa_key_claims_limited}{'key=ka,queue=keyed'}, 2, 'awa_key_claims_limited{queue=keyed,key=ka} = 2');
is($m->{awa_key_claims_limited}{'key=kb,queue=keyed'}, 1, 'awa_key_claims_limited{queue=keyed,key=kb} = 1');
is($m->{awa_key_claims_rate_limited}{'key=ka,queue=keyed'}, 0, 'awa_key_claims_rate_limited{queue=keyed,key=ka} = 0');
is(scalar(keys %{ $m->{awa_key_running} }), 2, 'awa_key_running has a series per key of a keyed queue, no more');

# The dashboard uses only metrics the exporter exports (each seen in this scrape).
my $dashboard = JSON::PP::decode_json(slurp_file("$root/monitoring/grafana-dashboard.json"));
my %used;
my @panels = @{ $dashboard->{panels} };
for my $panel (@panels) {
	$used{$_} = 1 for map { ($_->{expr} // '') =~ /\b(awa_[a-z_]+)/g } @{ $panel->{targets} // [] };
}
$used{$_} = 1 for map { ($_->{query} // '') =~ /\b(awa_[a-z_]+)/g } @{ $dashboard->{templating}{list} // [] };
ok(keys(%used) >= 10, 'the dashboard uses ' . scalar(keys %used) . ' awa metrics');
is(join(' ', grep { !exists $m->{$_} } sort keys %used), '', 'every metric the dashboard uses is in the scrape');

# The monitoring role reads the surface and nothing else; a plain role not even that.
my ($rc, $stdout, $stderr) = $node->psql('postgres', 'SELECT count(*) FROM awa.queue_metrics()',
	extra_params => [ '-U', 'exporter' ]);
is($stdout, '5', 'awa_monitor reads awa.queue_metrics');
($rc, $stdout, $stderr) = $node->psql('postgres', 'SELECT * FROM awa.queue_counts()', extra_params => [ '-U', 'exporter' ]);
like($stderr, qr/permission denied for function queue_counts/, 'awa_monitor may not call awa.queue_counts');
($rc, $stdout, $stderr) = $node->psql('postgres', q{SELECT awa.enqueue('x')}, extra_params => [ '-U', 'exporter' ]);
like($stderr, qr/permission denied for function enqueue/, 'awa_monitor may not enqueue');
($rc, $stdout, $stderr) = $node->psql('postgres', 'SELECT * FROM awa.queue_metrics()', extra_params => [ '-U', 'plain' ]);
like($stderr, qr/permission denied for schema awa/, 'a role outside awa_monitor may not read the metrics');

# A waiting claim that is cancelled is no longer listed.
$node->safe_psql('postgres', q{SELECT pg_cancel_backend(pid) FROM awa.waiting_claims() WHERE queue = 'idle'});
$node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM awa.waiting_claims()})
  or die 'a cancelled claim is still listed';
pass('a cancelled waiting claim is no longer listed');
$waiter->finish;
like($err, qr/canceling statement due to user request/, 'the waiting claim was cancelled');
$waiter = undef;

$exporter_run->kill_kill;
$exporter_run = undef;
$node->stop;
done_testing();
