# 043_rate_bucket_after_restart.pl
#
# After a server start a queue's rate-limit bucket starts empty, so that no
# window spanning the restart sees more than the limit (docs/flow-control.md);
# only a limit set after the start starts full. Whether the limit was set
# after the start was read from queue_meta.updated_at, which every change of
# the queue's settings moves: a pause and resume (or any configure_queue)
# after a restart gave the queue a full bucket, its whole burst at once on top
# of what was used just before the restart (found by the adversary round).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('ratebucket');
sub q1 { return $node->safe_psql('postgres', $_[0]); }

q1(q{SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[20]), NULL, 'rb');
  SELECT awa.configure_queue('rb', rate_limit => '1 per 1 hour', burst => 3)});
is(q1(q{SELECT count(*) FROM awa.claim('rb', 10)}), '3', 'a limit set while the server runs: the burst at once');
is(q1(q{SELECT count(*) FROM awa.claim('rb', 10)}), '0', 'then nothing until the next token');

$node->restart;
# Settings that are not the rate limit change after the start.
q1(q{SELECT awa.pause_queue('rb'); SELECT awa.resume_queue('rb');
  SELECT awa.configure_queue('rb', dlq_enabled => true)});
is(q1(q{SELECT count(*) FROM awa.claim('rb', 10)}), '0',
	'after a restart the bucket starts empty, whatever else changed in the queue settings');

# A rate limit set after the start starts full again.
q1(q{SELECT awa.configure_queue('rb', rate_limit => '1 per 1 hour', burst => 2)});
$node->restart;
q1(q{SELECT awa.configure_queue('rb', rate_limit => '1 per 1 hour')});
is(q1(q{SELECT count(*) FROM awa.claim('rb', 10)}), '2', 'a rate limit set after the start starts with a full bucket');
done_testing();
