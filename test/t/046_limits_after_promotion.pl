# 046_limits_after_promotion.pl
#
# A queue's limits on a promoted standby (issue 21 §1, §4): nothing of them is
# kept in shared memory across the promotion but the settings, which
# replicate with awa.queue_meta. So:
#   - the attempts that were running on the old primary hold their slots on
#     the new one (counted from the replicated open attempts): a claim at the
#     limit gets nothing, and an attempt ended on the new primary frees its
#     slot there;
#   - the rate bucket starts empty after the promotion (a server start of the
#     new primary): what the old primary used just before is not known, so
#     the first claim gets no token; the next token comes at the rate.
# The maintenance worker is off on both, so that nothing but the claims here
# moves the queues (no rescue, no rebuild of the counters in between).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $primary = start_awa_node('limprimary', init => { allows_streaming => 1 });
my $standby = start_streaming_standby($primary, 'limstandby');
sub p1 { return $primary->safe_psql('postgres', $_[0]); }
sub s1 { return $standby->safe_psql('postgres', $_[0]); }

p1(q{SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[5]), NULL, 'pl');
  SELECT awa.configure_queue('pl', max_running => 2);
  SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[5]), NULL, 'pr');
  SELECT awa.configure_queue('pr', rate_limit => '1 per 1 hour', burst => 3);});
# Two attempts start on the primary (committed, and flushed: the claim's
# commit is asynchronous by default).
my @held = split /\n/, p1(q{SELECT job_id || ',' || run_lease || ',' || receipt_id FROM awa.claim('pl', 5, async_commit => false)});
is(scalar(@held), 2, 'the primary starts 2 attempts, its limit');
is(p1(q{SELECT count(*) FROM awa.claim('pr', 1, async_commit => false)}), '1', 'the primary takes one token of 3');
$primary->wait_for_catchup($standby);
$primary->stop('immediate');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'the standby was not promoted';

is(s1(q{SELECT max_running || '/' || (rate_limit IS NOT NULL) FROM awa.queue_metrics() WHERE queue = 'pl'}), '2/false',
	'the settings came with the promotion');
is(s1(q{SELECT running FROM awa.queue_counts_exact('pl')}), '2', 'the two attempts are running on the new primary');
is(s1(q{SELECT count(*) FROM awa.claim('pl', 5)}), '0', 'a claim at the limit gets nothing: the running attempts hold their slots');
my ($job, $lease, $receipt) = split /,/, $held[0];
is(s1(qq{SELECT accepted FROM awa.complete_many(ARRAY[$job]::bigint[], ARRAY[$lease]::bigint[], ARRAY[$receipt]::bigint[])}),
	't', 'an attempt started on the old primary completes on the new one');
is(s1(q{SELECT count(*) FROM awa.claim('pl', 5)}), '1', 'its slot is free: the next claim gets exactly one');
is(s1(q{SELECT count(*) FROM awa.claim('pl', 5)}), '0', 'and the limit holds again');

is(s1(q{SELECT count(*) FROM awa.claim('pr', 3)}), '0',
	'the rate bucket starts empty on the new primary (the 2 tokens left on the old one are not known)');

$standby->stop;
done_testing();
