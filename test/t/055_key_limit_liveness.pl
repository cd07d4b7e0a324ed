# 055_key_limit_liveness.pl
#
# A key at key_max_running leaves its priority's key scheduler until its room
# may have grown (src/pg/key_lanes.hpp, key_limits.hpp); it must never stay
# out while it has room. Found from outside: claimers that blocked a key
# looked at its room again by reserving, and two doing so at once each saw the
# other's reservation, so the key stayed blocked with nothing running and no
# end to come: the queue stopped for good (2 to 35 of 200 jobs done). Here
# three and eight claimers loop claim (commit), complete (commit) in a
# procedure, as an SQL worker does, over a key with key_max_running 1 and
# over 20 keys with key_max_running 2 (and jobs without a key), first while
# the counters are untrusted (the worker off: every reservation counts
# exactly, as right after limits per key are first set), then with the
# worker on and the counters trusted. After each load: a key that still has
# jobs and nothing running must be claimable by the next claim, and the
# queue drains.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('keylive', maintenance => 0);
my $pgbench = $node->installed_command('pgbench');

sub q1 { return $node->safe_psql('postgres', $_[0]); }

q1(q{
  CREATE PROCEDURE sw(q text) LANGUAGE plpgsql AS $$
  DECLARE r record;
  BEGIN
    SELECT * INTO r FROM awa.claim(q, 1); COMMIT;
    IF r.job_id IS NULL THEN RETURN; END IF;
    PERFORM awa.complete(r.job_id, r.run_lease, r.receipt_id); COMMIT;
  END $$;
});
my $script = $node->basedir . '/sw.sql';
open my $fh, '>', $script or die "cannot write $script: $!";
print $fh "\\set which random(1, 2)\nCALL sw((ARRAY['one', 'many'])[:which]);\n";
close $fh;

# One phase: fresh queues, the load, then the checks.
sub phase
{
	my ($label, $clients, $trusted) = @_;
	q1(qq{
	  SELECT awa.configure_queue('one', key_max_running => 1);
	  SELECT awa.configure_queue('many', key_max_running => 2, fairness => 'key');
	  SELECT count(*) FROM (SELECT awa.enqueue('k', '{}', 'one', opts => '{"concurrency_key": "K"}')
	                          FROM generate_series(1, 200)) a;
	  SELECT count(*) FROM (SELECT awa.enqueue('k', '{}', 'many', opts => jsonb_build_object('concurrency_key', 'k' || g % 20))
	                          FROM generate_series(1, 400) g) b;
	  SELECT count(*) FROM (SELECT awa.enqueue('k', '{}', 'many') FROM generate_series(1, 50)) c;
	});
	# (Setting a first limit per key leaves the counters untrusted until every
	# older transaction has ended and a second has passed: then a rebuild.)
	$node->poll_query_until('postgres', 'SELECT awa.rebuild_counters()') or die 'the counters were not trusted again'
	  if $trusted;
	my ($out, $err) = ('', '');
	IPC::Run::run([ $pgbench, '-n', '-c', $clients, '-j', 2, '-t', 300, '-h', $node->host, '-p', $node->port,
		'-f', $script, 'postgres' ], '>', \$out, '2>', \$err);
	note("$label: pgbench: " . join(' ', grep { /processed|failed|error/i } split /\n/, "$out\n$err"));
	# Nothing runs now: every key with jobs left must be claimable at once.
	for my $q (qw(one many))
	{
		my ($available, $running) = split /\|/, q1("SELECT available, running FROM awa.queue_counts_exact('$q')");
		is($running, 0, "$label: nothing of $q runs after the load");
		if ($available > 0)
		{
			is(q1("SELECT count(*) FROM awa.claim('$q', 1) c, LATERAL awa.complete(c.job_id, c.run_lease, c.receipt_id)"),
				1, "$label: $q has $available jobs left and nothing running: the next claim gets one");
		}
		else
		{
			pass("$label: $q drained under the load");
		}
		# And it drains (one claimer, no race).
		q1("DO \$\$ DECLARE n int; BEGIN LOOP
		      SELECT count(*) INTO n FROM awa.claim('$q', 10) c, LATERAL awa.complete(c.job_id, c.run_lease, c.receipt_id);
		      EXIT WHEN n = 0; END LOOP; END \$\$");
		is(q1("SELECT available || '/' || running FROM awa.queue_counts_exact('$q')"), '0/0', "$label: $q drains");
	}
	q1(q{SELECT awa.configure_queue('one', key_max_running => 0); SELECT awa.configure_queue('many', key_max_running => 0);});
}

phase('untrusted counters, 3 claimers', 3);
phase('untrusted counters, 8 claimers', 8);
$node->append_conf('postgresql.conf', 'awa.maintenance_enabled = on');
$node->restart;
q1('SELECT count(*) FROM awa.queue_counts()');    # the counters rebuilt and trusted
phase('trusted counters, 8 claimers', 8, 1);

$node->stop;
done_testing();
