# 068_standby_claim_moves_nothing.pl
#
# A claim cursor moves only on a primary. A claim run on a hot standby (a
# worker sent there by a load balancer) walks its lane like any claim; when
# the walk would move the cursor, it is refused with 25006 before anything is
# written. Once the claim cursor could be written in place (docs/architecture.md,
# "Claim cursor moves in place when the WAL is flushed"), the move went into
# the standby's page with nothing in the WAL, and a logged one would have been
# attempted inside a critical section (found by a reviewer). The maintenance's
# advance is refused the same way, and the standby stays up.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $primary = start_awa_node('claimprimary', init => { allows_streaming => 1 }, conf => $QUIET_WAL_CONF);
my $standby = start_streaming_standby($primary, 'claimstandby');

my @jobs = split /\n/,
  $primary->safe_psql('postgres', q{SELECT awa.enqueue('k', '{}', 'sb') FROM generate_series(1, 2)});
is( $primary->safe_psql('postgres',
		q{SELECT awa.complete(c.job_id, c.run_lease, c.receipt_id) FROM awa.claim('sb', async_commit => false) c}),
	't', 'the primary claims and completes the first job');
is(claim_cursor($primary, 'sb'), '0', 'its walk had nothing to pass: the cursor is 0');
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('flush'));

my ($rc, $out, $err) = $standby->psql('postgres', q{SELECT job_id FROM awa.claim('sb')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($rc, 0, 'a claim on the standby fails');
like($err, qr/25006/, 'with SQLSTATE 25006 (read_only_sql_transaction)');
like($err, qr/cannot move a lane cursor during recovery/, 'before moving the cursor past the claimed job');
is(claim_cursor($standby, 'sb'), '0', 'the standby\'s claim cursor is unchanged');

($rc, $out, $err) = $standby->psql('postgres', q{SELECT awa._advance_cursors()},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($rc, 0, 'the advance of idle lanes fails on the standby');
like($err, qr/25006/, 'with SQLSTATE 25006');
is(claim_cursor($standby, 'sb'), '0', 'and moves nothing');
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'the standby is up, in recovery');

# The primary goes on as before: the next claim there returns the second job.
is($primary->safe_psql('postgres', q{SELECT job_id FROM awa.claim('sb')}), $jobs[1],
	'the primary hands out the second job');
$standby->stop;
$primary->stop;
done_testing();
