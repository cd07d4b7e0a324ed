# 053_keyed_lanes_bounds.pl
#
# The key schedulers' shared memory is bounded (src/pg/key_lanes.hpp,
# docs/flow-control.md "Fair share between keys"), and nothing is lost at the
# bounds:
#   - awa.max_keys_per_queue keys with work per scheduler: an enqueue whose
#     commit would give one more key work is refused with 53200 and enqueues
#     nothing; once keys drain, new keys fit again;
#   - awa.max_keyed_queues schedulers, one database at most half: a queue that
#     finds none is still served, every job exactly once (its claims look at
#     each lane), but first come, not fairly;
#   - a dropped database's scheduler is freed for another database, and a
#     scheduler without keys is given up for a queue that needs one.
# Fair share is how a test sees that a queue has a scheduler: with one, the
# first claims of three keys of 3 jobs each take the three keys.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('keybounds', conf => "awa.max_keys_per_queue = 16\nawa.max_keyed_queues = 2\n");
sub q1 { return $node->safe_psql($_[1] // 'postgres', $_[0]); }

sub enqueue_keys    # enqueue_keys(queue, first key, last key, jobs per key, db)
{
	my ($queue, $from, $to, $jobs, $db) = @_;
	return $node->psql($db // 'postgres',
		qq{SELECT count(*) FROM (SELECT awa.enqueue('k', jsonb_build_object('key', 'k' || k), '$queue',
		                          opts => jsonb_build_object('concurrency_key', 'k' || k))
		     FROM generate_series($from, $to) k, generate_series(1, $jobs) n) x});
}

sub first_claims    # the keys of the next n one-job claims
{
	my ($queue, $n, $db) = @_;
	return join(',', map { q1(qq{SELECT args->>'key' FROM awa.claim('$queue', 1)}, $db) } 1 .. $n);
}

# The keys of a scheduler.
q1(q{SELECT awa.configure_queue('kb', fairness => 'key')});
is(enqueue_keys('kb', 1, 16, 1), 0, '16 keys with work fit a scheduler of 16');
my ($rc, $out, $err) = $node->psql('postgres',
	q{SELECT awa.enqueue('k', '{}', 'kb', opts => '{"concurrency_key": "k17"}')});
like($err, qr/has work for awa.max_keys_per_queue \(16\) keys at priority 2 already/, 'the 17th key is refused');
like($err, qr/HINT:  Raise awa.max_keys_per_queue/, 'its hint names the setting');
is(q1(q{SELECT count(*) FROM awa.ready_entries WHERE queue = 'kb'}), '16', 'and nothing of it was enqueued');
is(q1(q{SELECT count(*) FROM (SELECT (awa.claim('kb', 1)).job_id FROM generate_series(1, 8)) x}), '8', 'eight keys drain');
# The drained keys leave the scheduler when a claim finds them empty: walk them.
q1(q{SELECT count(*) FROM (SELECT (awa.claim('kb', 1)).job_id FROM generate_series(1, 20)) x});
is(enqueue_keys('kb', 17, 20, 1), 0, 'once keys drained, new keys fit again');
is(q1(q{SELECT count(*) FROM (SELECT (awa.claim('kb', 1)).job_id FROM generate_series(1, 10)) x}), '4',
	'and their jobs are claimed');

# A transaction refused at its commit (21 new keys, room for 16) leaves no
# member behind: 16 other keys fit at once, without a claim to clear them.
isnt(enqueue_keys('kb', 100, 120, 1), 0, 'a transaction of 21 new keys is refused');
is(enqueue_keys('kb', 200, 215, 1), 0, 'and took no room: 16 other keys fit right after');
is(q1(q{SELECT count(*) FROM (SELECT (awa.claim('kb', 1)).job_id FROM generate_series(1, 20)) x}), '16',
	'their 16 jobs are claimed, and nothing of the refused one');

# Two schedulers in all, one for this database: its second keyed queue has none
# while the first has a key with work.
enqueue_keys('kb', 300, 300, 1);
q1(q{SELECT awa.configure_queue('kc', fairness => 'key')});
enqueue_keys('kc', 1, 3, 3);
my $order = first_claims('kc', 9);
is(join(',', sort split /,/, $order), 'k1,k1,k1,k2,k2,k2,k3,k3,k3', 'a queue without a scheduler is still served: every job once');
isnt(join(',', (split /,/, $order)[0 .. 2]), 'k1,k2,k3', 'but not fairly (first come): it has no scheduler') or diag($order);
is(q1(q{SELECT count(*) FROM awa.claim('kc', 1)}), '0', 'and nothing is left');

# A scheduler without keys is given up for a queue that needs one: once kb
# drained (its last key dropped by the claim that found it empty), kd gets it.
is(q1(q{SELECT count(*) FROM (SELECT (awa.claim('kb', 1)).job_id FROM generate_series(1, 3)) x}), '1',
	'kb drains its last key');
q1(q{SELECT awa.configure_queue('kd', fairness => 'key')});
enqueue_keys('kd', 1, 3, 3);
is(first_claims('kd', 3), 'k1,k2,k3', 'a new keyed queue takes the scheduler kb no longer uses: fair');
is(q1(q{SELECT count(*) FROM (SELECT (awa.claim('kd', 1)).job_id FROM generate_series(1, 10)) x}), '6',
	'and every job is claimed');
enqueue_keys('kb', 400, 402, 2);
is(q1(q{SELECT count(*) FROM (SELECT (awa.claim('kb', 1)).job_id FROM generate_series(1, 10)) x}), '6',
	'kb, back with work, takes the drained kd scheduler and every job is claimed');

# Another database takes the other scheduler; dropped, it frees it.
q1('CREATE DATABASE other');
q1('CREATE EXTENSION awa', 'other');
q1(q{SELECT awa.configure_queue('ko', fairness => 'key')}, 'other');
enqueue_keys('ko', 1, 3, 3, 'other');
is(first_claims('ko', 3, 'other'), 'k1,k2,k3', 'the other database has the second scheduler: fair');
q1('DROP DATABASE other');
q1('CREATE DATABASE third');
q1('CREATE EXTENSION awa', 'third');
q1(q{SELECT awa.configure_queue('kt', fairness => 'key')}, 'third');
enqueue_keys('kt', 1, 3, 3, 'third');
is(first_claims('kt', 3, 'third'), 'k1,k2,k3', 'a third database gets the dropped one\'s scheduler: fair');

# The extension dropped and created again in a database frees its schedulers too.
q1('DROP EXTENSION awa CASCADE; CREATE EXTENSION awa', 'third');
q1(q{SELECT awa.configure_queue('kt', fairness => 'key')}, 'third');
enqueue_keys('kt', 1, 3, 3, 'third');
is(first_claims('kt', 3, 'third'), 'k1,k2,k3', 'after DROP and CREATE EXTENSION the queue gets a scheduler again: fair');
is(q1(q{SELECT count(*) FROM (SELECT (awa.claim('kt', 1)).job_id FROM generate_series(1, 10)) x}, 'third'), '6',
	'and every job is claimed');

done_testing();
