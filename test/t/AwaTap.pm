# AwaTap.pm: helpers shared by awa's TAP tests (test/t/*.pl).
package AwaTap;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT = qw($QUIET_WAL_CONF start_awa_node start_streaming_standby make_standby_synchronous pause_wal_writer
  claim_cursor lanes_page_write wait_until_true);

# Settings under which, once the WAL writer is paused, only a backend's own
# XLogFlush (a synchronous commit) writes WAL to the files: no autovacuum, no
# background-writer LRU writes, buffers large enough that no backend evicts a
# dirty buffer, no checkpoint due.
our $QUIET_WAL_CONF = qq{
autovacuum = off
bgwriter_lru_maxpages = 0
shared_buffers = '128MB'
checkpoint_timeout = '1h'
max_wal_size = '1GB'
};

# A started node with awa preloaded and created in database postgres.
# conf: extra postgresql.conf text; init: options for init(); maintenance: 1 to
# let the background maintenance worker run (off by default, so that the
# tests of other behaviour see no rotation, promotion or WAL of its own).
sub start_awa_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%{ $opts{init} // {} });
	my $maintenance = $opts{maintenance} ? 'on' : 'off';
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'awa'\nawa.maintenance_enabled = $maintenance\n" . ($opts{conf} // ''));
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION awa');
	return $node;
}

# A streaming standby of $primary (started with init => { allows_streaming => 1 }),
# from a new base backup, started.
sub start_streaming_standby
{
	my ($primary, $name) = @_;
	$primary->backup("base_$name");
	my $standby = PostgreSQL::Test::Cluster->new($name);
	$standby->init_from_backup($primary, "base_$name", has_streaming => 1);
	$standby->start;
	return $standby;
}

# Makes $primary's standbys synchronous (ALTER SYSTEM, so a standby made from
# an earlier backup does not inherit it) and waits until one is.
sub make_standby_synchronous
{
	my ($primary) = @_;
	$primary->safe_psql('postgres', "ALTER SYSTEM SET synchronous_standby_names = '*'");
	$primary->reload;
	$primary->poll_query_until('postgres', "SELECT sync_state = 'sync' FROM pg_stat_replication")
	  or die 'the standby did not become synchronous';
}

# Pauses the node's WAL writer (SIGSTOP); returns its pid. Two assertions,
# named after $label.
sub pause_wal_writer
{
	my ($node, $label) = @_;
	$label //= 'WAL writer';
	my $pid = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'");
	like($pid, qr/^\d+$/, "found the $label");
	is(kill('STOP', $pid), 1, "$label paused (SIGSTOP)");
	return $pid;
}

# The claim cursor of lane ($queue, priority 2).
sub claim_cursor
{
	my ($node, $queue) = @_;
	return $node->safe_psql('postgres',
		"SELECT claim_cursor FROM awa.lanes WHERE queue = '$queue' AND priority = 2");
}

# Runs $sql on $node; returns whether it logged a change of the first page of
# awa.queue_lanes ('logged': its LSN moved) or not ('in place': an in-place
# cursor write leaves it), and the statement's output. Needs pageinspect.
# (pg_walinspect cannot read WAL that is not flushed yet.)
sub lanes_page_write
{
	my ($node, $sql) = @_;
	my $lsn = q{SELECT lsn FROM page_header(get_raw_page('awa.queue_lanes', 0))};
	my $before = $node->safe_psql('postgres', $lsn);
	my $out = $node->safe_psql('postgres', $sql);
	my $after = $node->safe_psql('postgres', $lsn);
	return ($before eq $after ? 'in place' : 'logged', $out);
}

# Waits until $sql (in database postgres) returns t; a failed test after 240 s
# (a bound that only stops a hung run: no assertion depends on the time).
sub wait_until_true
{
	my ($node, $what, $sql) = @_;
	my $deadline = time + 240;
	while (time < $deadline) {
		return 1 if $node->safe_psql('postgres', $sql) eq 't';
		usleep(200_000);
	}
	fail("timed out waiting until $what");
	return 0;
}

1;
