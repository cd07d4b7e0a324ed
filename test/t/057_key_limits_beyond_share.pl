# 057_key_limits_beyond_share.pl
#
# Each key of a queue with limits per key takes a counters entry, counted in
# the database's share (awa.max_queues_per_database; src/pg/key_limits.hpp).
# Beyond it a key finds no entry: its running attempts are then counted
# exactly under its limit lock, and its rate is its lane's bucket in the key
# scheduler. Found from outside: with key_rate_limit such keys were never
# claimed (15 of 30 keys drained, the other 75 jobs stayed for good). Here the
# share is 16 (its least) and two queues have 30 keys each.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('keyshare', maintenance => 1, conf => "awa.max_queues_per_database = 16\n");
sub q1 { return $node->safe_psql('postgres', $_[0]); }

q1(q{
  SELECT awa.configure_queue('rate', key_rate_limit => '1000 per 1 second', key_burst => 10);
  SELECT awa.configure_queue('conc', key_max_running => 1);
  SELECT count(*) FROM (SELECT awa.enqueue('k', '{}', q, opts => jsonb_build_object('concurrency_key', 'k' || k))
                          FROM unnest(ARRAY['rate', 'conc']) q, generate_series(1, 30) k, generate_series(1, 5) n) x;
});
# One claimer drains each queue: claim, complete, until a claim finds nothing
# 50 times in a row (a key out of tokens waits for the next, 1 ms).
for my $q (qw(rate conc))
{
	q1(qq{DO \$\$ DECLARE n int; empty int := 0; BEGIN
	  WHILE empty < 50 LOOP
	    SELECT count(*) INTO n FROM awa.claim('$q', 5) c, LATERAL awa.complete(c.job_id, c.run_lease, c.receipt_id);
	    IF n = 0 THEN empty := empty + 1; PERFORM pg_sleep(0.01); ELSE empty := 0; END IF;
	    COMMIT;
	  END LOOP; END \$\$});
	is(q1(qq{SELECT available || '/' || running || '/' || completed FROM awa.queue_counts_exact('$q')}), '0/0/150',
		"$q: the 30 keys' 150 jobs drained beyond the database's share of counters entries");
}

$node->stop;
done_testing();
