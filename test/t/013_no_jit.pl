# 013_no_jit.pl
#
# No statement awa runs is JIT-compiled, whatever the server's JIT settings
# (docs/architecture.md §9). The server JIT-compiles everything it can
# (jit = on, every jit_*_above_cost = 0) and pg_stat_statements records every
# statement, nested ones included (track = all). The maintenance worker runs
# at its default cadence. The test then drives the whole job lifecycle
# (enqueue single and batch, scheduled and unique jobs, claim, complete,
# heartbeat, retry, snooze, fail, DLQ, cancel, promotion, get_job,
# queue_counts, queue_metrics, the admin functions and views; the queues have a
# concurrency and a rate limit) across several rotations
# forced with awa.run_maintenance('rotate') plus the worker's own, and checks,
# statement by statement, that none but the test's own top-level statements
# (run by role jit_probe) has jit_functions > 0. Offenders are printed.
#
# Guards against a vacuous pass: JIT is available and did compile the test's
# own top-level statements, and awa's nested statements (the ring-position read,
# the maintenance steps) and the worker's were recorded.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

# The later shared_preload_libraries line overrides start_awa_node's. awa
# installs its planner hook on first use, so it runs outside (after)
# pg_stat_statements' in either order.
my $node = start_awa_node('nojit', maintenance => 1, conf => qq{
shared_preload_libraries = 'awa,pg_stat_statements'
pg_stat_statements.track = all
pg_stat_statements.max = 10000
jit = on
jit_above_cost = 0
jit_inline_above_cost = 0
jit_optimize_above_cost = 0
});

# Statistics start after this set-up: CREATE EXTENSION awa's script, run once
# under the caller's settings, is not checked.
$node->safe_psql('postgres', q{
CREATE EXTENSION pg_stat_statements;
CREATE ROLE jit_probe LOGIN SUPERUSER;
});

sub q1 { return $node->safe_psql('postgres', $_[0], extra_params => [ '-U', 'jit_probe' ]); }

q1('SELECT pg_stat_statements_reset()');
is(q1('SELECT pg_jit_available()'), 't',
	'JIT is available (llvmjit.so): without it this test could not fail');

# One round of the lifecycle on queue $q. Every psql call is a new backend,
# so each one reads the ring positions and prepares its statements afresh.
sub lifecycle
{
	my ($q) = @_;
	q1("SELECT awa.configure_queue('$q', dlq_enabled => true)");
	# The flow-control limits: every claim below reserves under a concurrency
	# limit and takes rate tokens (docs/flow-control.md).
	q1("SELECT awa.configure_queue('$q', max_running => 1000, rate_limit => '100000 per 1 second', burst => 1000)");
	q1("SELECT awa.enqueue('single', jsonb_build_object('i', i), '$q') FROM generate_series(1, 20) i");
	q1("SELECT awa.enqueue('prio', '{}', '$q', priority => 1)");
	q1("SELECT count(*) FROM awa.enqueue_many(array_fill('batch'::text, ARRAY[50]),
	      array_fill('{}'::jsonb, ARRAY[50]), '$q')");
	q1("SELECT count(*) FROM awa.enqueue_many(ARRAY['b1', 'b2'], ARRAY['{}', '{}']::jsonb[], '$q',
	      priorities => ARRAY[3, 4], run_at => ARRAY[now(), now() + interval '1 hour'],
	      opts => ARRAY['{\"unique_key\": \"u-$q\"}', '{\"metadata\": {\"m\": 1}}']::jsonb[])");
	q1("SELECT awa.enqueue('later', '{}', '$q', run_at => now() + interval '1 hour')");
	q1("SELECT awa.enqueue('soon', '{}', '$q', run_at => now() + interval '10 ms')");
	q1("SELECT awa.enqueue('unique', '{}', '$q', opts => '{\"unique_key\": \"k-$q\"}')");
	q1("SELECT awa.enqueue('last', '{}', '$q', max_attempts => 1)");
	my $cancel_available = q1("SELECT awa.enqueue('cancel-me', '{}', '$q', priority => 4)");
	my $cancel_scheduled = q1("SELECT awa.enqueue('cancel-me-later', '{}', '$q', run_at => now() + interval '1 day')");

	is(q1("SELECT awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('$q') c"), 't',
		"$q: claim the priority-1 job and complete it");
	is(q1("SELECT count(*) FILTER (WHERE awa.complete(c.job_id, c.run_lease, c.receipt_id))
	         FROM awa.claim('$q', max_jobs => 10) c"), '10', "$q: claim 10 and complete them");
	q1("SELECT count(*) FROM awa.claim('$q', max_jobs => 5) c,
	           LATERAL awa.complete_many(ARRAY[c.job_id], ARRAY[c.run_lease], ARRAY[c.receipt_id])");
	q1("SELECT awa.heartbeat(c.job_id, c.run_lease, c.receipt_id, '{\"p\": 1}'),
	           awa.heartbeat(c.job_id, c.run_lease, c.receipt_id),
	           awa.complete(c.job_id, c.run_lease, c.receipt_id)
	      FROM awa.claim('$q', max_jobs => 3, deadline => '1 minute') c");
	q1("SELECT count(*) FROM awa.claim('$q', max_jobs => 3) c,
	           LATERAL awa.heartbeat_many(ARRAY[c.job_id], ARRAY[c.run_lease], ARRAY[c.receipt_id])");
	q1("SELECT awa.retry(c.job_id, c.run_lease, c.receipt_id, 'boom', delay => '0') FROM awa.claim('$q', max_jobs => 3) c");
	q1("SELECT awa.retry(c.job_id, c.run_lease, c.receipt_id, 'boom') FROM awa.claim('$q', max_jobs => 2) c");
	q1("SELECT awa.snooze(c.job_id, c.run_lease, c.receipt_id, '0') FROM awa.claim('$q', max_jobs => 2) c");
	q1("SELECT awa.fail(c.job_id, c.run_lease, c.receipt_id, 'bad') FROM awa.claim('$q', max_jobs => 2) c");
	q1("SELECT awa.cancel($cancel_available), awa.cancel($cancel_scheduled)");
	q1("SELECT awa.promote_due()");
	q1("SELECT awa.get_job(j) FROM generate_series($cancel_available - 10, $cancel_available + 1) j");
	q1("SELECT * FROM awa.queue_counts('$q')");
	q1("SELECT * FROM awa.queue_counts()");
	q1("SELECT * FROM awa.queue_counts_exact('$q')");
	q1("SELECT awa.pause_queue('$q'), awa.resume_queue('$q')");
	q1("SELECT count(*) FROM awa.dlq");
	q1("SELECT awa.dlq_retry(ARRAY(SELECT job_id FROM awa.dlq WHERE queue = '$q' LIMIT 1))");
	q1("SELECT awa.dlq_purge(ARRAY(SELECT job_id FROM awa.dlq WHERE queue = '$q'))");
	# Whatever is left: completed (the retried and snoozed ones once due).
	q1("SELECT awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('$q', max_jobs => 100) c");
}

for my $round (1 .. 4)
{
	lifecycle("nojit_$round");
	q1("SELECT * FROM awa.run_maintenance('all')");
	q1("SELECT * FROM awa.run_maintenance('rotate')");
	q1("SELECT * FROM awa.run_maintenance('rotate')");
	q1("SELECT * FROM awa.run_maintenance('rescue')");
	q1("SELECT * FROM awa.storage_status()");
	q1("SELECT * FROM awa.maintenance_status()");
	q1("SELECT * FROM awa.queue_metrics()");
	q1("SELECT * FROM awa.lanes");
	q1("SELECT awa.rebuild_counters()");
	# The worker rotates each ring once a second: let it run some steps.
	sleep 1;
}
q1("SELECT * FROM awa.run_maintenance('all')");

# The worker ran steps of its own (its statements are top-level, as the superuser).
cmp_ok(q1("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
            WHERE userid <> 'jit_probe'::regrole AND toplevel AND query LIKE '%awa.run_maintenance(%'"),
	'>', 0, 'the maintenance worker ran its steps (recorded)');

# Guards: JIT compiled the test's own statements, and awa's nested ones were recorded.
cmp_ok(q1("SELECT coalesce(sum(jit_functions), 0) FROM pg_stat_statements
            WHERE toplevel AND userid = 'jit_probe'::regrole"), '>', 0,
	"the test's own top-level statements were JIT-compiled (JIT is in force)");
cmp_ok(q1("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
            WHERE NOT toplevel AND query LIKE '%awa.queue_ring_rotations%' AND query LIKE '%awa.claim_ring_rotations%'
              AND query NOT LIKE '%CREATE%'"), '>', 0,
	'the ring-position read was recorded as a nested statement');
cmp_ok(q1("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE NOT toplevel AND query LIKE '%awa._rotate(%'"),
	'>', 0, 'the maintenance steps were recorded as nested statements');

# The check: every statement but the test's own top-level ones.
my $offenders = q1(q{
SELECT string_agg(format('jit_functions=%s calls=%s toplevel=%s: %s', jit_functions, calls, toplevel,
                         left(regexp_replace(query, '\s+', ' ', 'g'), 200)), E'\n' ORDER BY jit_functions DESC)
  FROM pg_stat_statements
 WHERE jit_functions > 0 AND NOT (toplevel AND userid = 'jit_probe'::regrole)});
diag("JIT-compiled statements of awa:\n$offenders") if $offenders ne '';
is(q1(q{SELECT count(*) FROM pg_stat_statements
         WHERE jit_functions > 0 AND NOT (toplevel AND userid = 'jit_probe'::regrole)}),
	'0', 'no statement awa ran was JIT-compiled');

my $log = slurp_file($node->logfile);
unlike($log, qr/\b(ERROR|PANIC|FATAL):.*awa/, 'no awa error in the server log');

$node->stop;
done_testing();
