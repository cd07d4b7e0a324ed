# 067_trailing_hole_after_restart.pl
#
# After a restart the enqueue cursor of a lane reads as its logged value, up
# to 32 positions past the last one handed out (docs/architecture.md, "The
# enqueue cursor is logged ahead"). Those positions were never handed out:
# a trailing hole, nothing committed after it. A claim cursor left below it
# kept the lane "behind", so every maintenance pass walked every such lane
# (awa._advance_cursors walks each lane whose claim cursor is behind its
# enqueue cursor) until the lane was enqueued into again: with many idle
# lanes, a cost per pass that grew with the number of lanes (found by a
# reviewer). The maintenance's advance now proves a trailing hole dead, as a
# claim proves a hole before committed lanes: the cursor reaches the enqueue
# cursor and later passes skip the lane. A trailing position that an open
# reservation still holds is not passed. (A reservation that rolled back
# after it was made left the same hole before; it is proven the same way.)
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $node = start_awa_node('trailinghole');
sub q1 { return $node->safe_psql('postgres', shift); }
sub cursors { return q1("SELECT enqueue_cursor || '|' || claim_cursor FROM awa.lanes WHERE queue = '$_[0]'"); }

my $job = q1(q{SELECT awa.enqueue('k', '{}', 'th')});
is(q1(q{SELECT awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('th') c}), 't',
	'a job is claimed and completed');
is(q1('SELECT awa._advance_cursors()'), '1', 'the advance moves the idle lane past it');
is(cursors('th'), '1|1', 'the lane is not behind');

$node->restart;
is(cursors('th'), '33|1', 'after a restart the enqueue cursor reads as the logged value');
is(q1('SELECT awa._advance_cursors()'), '1', 'the advance proves the trailing hole dead');
is(cursors('th'), '33|33', 'the claim cursor reaches the enqueue cursor');
is(q1('SELECT awa._advance_cursors()'), '0', 'and the next pass walks no lane');

# A trailing position a reservation still holds is not passed; once its
# transaction ends without a row there, it is. (An enqueue reserves at its
# commit; awa._reserve_lane_positions, the test building block, reserves at
# once and holds the lane's reserve lock to the end of its transaction.)
my $producer = $node->background_psql('postgres', on_error_stop => 0);
$producer->query_safe(q{BEGIN});
is($producer->query_safe(q{SELECT awa._reserve_lane_positions('th', 2, 1)}), '34', 'an open transaction reserves 34');
is(cursors('th'), '34|33', 'the lane is behind');
is(q1('SELECT awa._advance_cursors()'), '0', 'the advance does not pass the open reservation');
is(cursors('th'), '34|33', 'the claim cursor stays below it');
$producer->query_safe(q{ROLLBACK});
$producer->quit;
is(q1('SELECT awa._advance_cursors()'), '1', 'once it rolled back, the advance proves 34 dead');
is(cursors('th'), '34|34', 'the lane is not behind');

my $next = q1(q{SELECT awa.enqueue('k', '{}', 'th')});
is(q1(q{SELECT string_agg(job_id::text, ',') FROM awa.claim('th', 10)}), $next, 'the next job is claimed');

$node->stop;

# The maintenance worker does it by itself, at its first queue prune after a
# start (an idle ring has no slot due, and the prune's own advance runs only
# for a due slot). The queue ring's interval is an hour here, so no slot comes
# due while the test waits: only the worker's advance after its start can
# move the cursor.
my $auto = start_awa_node('trailingholeauto', maintenance => 1, conf => "awa.queue_rotate_interval = '1h'\n");
sub qa { return $auto->safe_psql('postgres', shift); }
qa(q{SELECT awa.enqueue('k', '{}', 'ta')});
is(qa(q{SELECT awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('ta') c}), 't',
	'worker on: a job is claimed and completed');
$auto->restart;
ok($auto->poll_query_until('postgres',
		q{SELECT enqueue_cursor = 33 AND claim_cursor = 33 FROM awa.lanes WHERE queue = 'ta'}),
	'after a restart the worker moves the claim cursor past the trailing hole, with no call by hand');
$auto->stop;
done_testing();
