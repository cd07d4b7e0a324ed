# 058_key_entries_freed.pl
#
# Idle keys' counters entries are freed (src/pg/counters.cpp, "Freeing idle
# key entries"), so keys that come and go do not fill the database's share of
# entries for good. Before, an entry lived until the server stopped: past the
# share (awa.max_queues_per_database) the database counted every queue exactly
# for good (its counters step "unavailable"), and its new keys had only their
# lanes' rate buckets.
#
# Part 1 drives the counters step by hand (the worker off), so each pass's
# report is exact: a pass retires the idle entries, a later one frees them,
# but not while a transaction that began using key entries before the
# retirement is open (it may hold their pointers). Part 2 runs with the
# worker at its cadence: waves of new keys, each drained, the counters
# trusted again after each.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $conf = "awa.max_queues_per_database = 16\n";

# Enqueues 5 jobs for each of the keys "$prefix1" .. "$prefix30" and drains
# them with one claimer (claim, complete, until 50 empty claims in a row).
sub wave
{
	my ($node, $q, $prefix) = @_;
	$node->safe_psql('postgres', qq{
	  SELECT count(*) FROM (SELECT awa.enqueue('k', '{}', '$q', opts => jsonb_build_object('concurrency_key', '$prefix' || k))
	                          FROM generate_series(1, 30) k, generate_series(1, 5) n) x});
	$node->safe_psql('postgres', qq{DO \$\$ DECLARE n int; empty int := 0; BEGIN
	  WHILE empty < 50 LOOP
	    SELECT count(*) INTO n FROM awa.claim('$q', 5) c, LATERAL awa.complete(c.job_id, c.run_lease, c.receipt_id);
	    IF n = 0 THEN empty := empty + 1; PERFORM pg_sleep(0.01); ELSE empty := 0; END IF;
	    COMMIT;
	  END LOOP; END \$\$});
}

# --- Part 1: by hand --------------------------------------------------------
my $node = start_awa_node('keyfree', maintenance => 0, conf => $conf);
sub q1 { return $node->safe_psql('postgres', $_[0]); }
sub counters_pass
{
	return q1(q{SELECT outcome || ' ' || (detail->>'key_entries_live') || '/' || (detail->>'key_entries_retired') || '/' || (detail->>'key_entries_freed')
	              FROM awa.run_maintenance('counters')});
}

q1(q{SELECT awa.configure_queue('q', key_max_running => 2, key_rate_limit => '1000 per 1 second', key_burst => 5)});
wave($node, 'q', 'a');
is(q1(q{SELECT available || '/' || running || '/' || completed FROM awa.queue_counts_exact('q')}), '0/0/150',
	'30 keys beyond a share of 16 entries drained');
# A transaction that began using key entries before a retirement (it may
# hold their pointers) holds the freeing off until it ends.
my $holder = $node->background_psql('postgres');
$holder->query(q{SELECT awa.enqueue('k', '{}', 'q', opts => '{"concurrency_key": "hold"}')});
$holder->query_safe('BEGIN');
my ($hold_job, $hold_lease, $hold_receipt) =
  split / /, $holder->query(q{SELECT job_id || ' ' || run_lease || ' ' || receipt_id FROM awa.claim('q', 1)});
ok(defined $hold_lease, 'a claim of key "hold" in an open transaction');
my $first = counters_pass();
like($first, qr{^unavailable 0/\d+/0$}, "first pass: the idle key entries retired, none freed; the counts still exact ($first)");
my ($retired) = $first =~ m{/(\d+)/};
cmp_ok($retired, '>', 0, 'some keys had entries');
is(counters_pass(), "unavailable 0/$retired/0", 'a later pass frees nothing while the older key user is open');
$holder->query('COMMIT');
$holder->quit;
my $third = counters_pass();
like($third, qr{^trusted 0/0/$retired$}, "after it ends the retired entries are freed and the counts trusted again ($third)");
# A transaction that begins after a retirement does not hold it off: it
# revives what it looks up, and never had the rest.
my $late = $node->background_psql('postgres');
$late->query_safe('BEGIN');
is($late->query_safe(q{SELECT count(*) FROM awa.claim('q', 1)}), '0', 'a claim in an open transaction (nothing left)');
is(q1(qq{SELECT awa.complete($hold_job, $hold_lease, $hold_receipt) IS NOT NULL}), 't',
	'key "hold"\'s attempt completed');
like(counters_pass(), qr{^trusted 0/1/0$}, 'its idle entry is retired');
$late->query_safe(q{SELECT count(*) FROM awa.claim('q', 1)});
like(counters_pass(), qr{^trusted 0/0/1$}, 'and freed beside an open transaction that began using key entries after');
$late->query_safe('COMMIT');
$late->quit;

# Key "hold" again: a new entry, its limit (2) counts what runs.
q1(q{SELECT awa.enqueue('k', '{}', 'q', opts => '{"concurrency_key": "hold"}') FROM generate_series(1, 4)});
q1(q{CREATE TABLE held AS SELECT job_id, run_lease, receipt_id FROM awa.claim('q', 1)});
is(q1(q{WITH c AS (INSERT INTO held SELECT job_id, run_lease, receipt_id FROM awa.claim('q', 5) RETURNING 1) SELECT count(*) FROM c}),
	'1', 'key "hold": one claimed, then one more, not three (its limit is 2)');
is(q1(q{SELECT running FROM awa.queue_counts('q')}), '2', 'trusted counts: 2 running');
q1(q{SELECT awa.complete(job_id, run_lease, receipt_id) FROM held});
wave($node, 'q', 'b');
is(q1(q{SELECT available || '/' || running || '/' || completed FROM awa.queue_counts_exact('q')}), '0/0/305',
	'a second wave of 30 new keys drained (and the last 2 jobs of "hold")');
is(q1(q{SELECT completed FROM awa.queue_counts('q')}), '305', 'the counts trusted after it');
$node->stop;

# --- Part 1b: a claim under the key's limit lock, open while entries are freed
# A key without an entry (the share full) is reserved under its limit lock;
# freeing then makes room, and a claim in another session makes the key an
# entry. Found from outside: that claim did not see the first one, and the
# key ran 2 attempts with key_max_running 1.
my $l = start_awa_node('keyfreel', maintenance => 0, conf => $conf);
sub ql { return $l->safe_psql('postgres', $_[0]); }
ql(q{SELECT awa.configure_queue('q', key_max_running => 1)});
ql(q{SELECT count(awa.enqueue('k', '{}', 'q', opts => jsonb_build_object('concurrency_key', 'f' || i))) FROM generate_series(1, 20) i});
ql(q{CREATE TABLE held AS SELECT job_id, run_lease, receipt_id FROM awa.claim('q', 1) LIMIT 0});
for my $i (1 .. 20)
{
	my ($out, $err) = ('', '');
	$l->psql('postgres', q{INSERT INTO held SELECT job_id, run_lease, receipt_id FROM awa.claim('q', 1)},
		stdout => \$out, stderr => \$err);
}
is(ql(q{SELECT count(*) FROM held}), '20', '20 keys running, beyond a share of 16');
ql(q{SELECT count(awa.enqueue('k', '{}', 'q', priority => p, opts => '{"concurrency_key": "K"}')) FROM generate_series(1, 3) p});
ql(q{SELECT count(awa.complete(job_id, run_lease, receipt_id)) FROM held});
ql(q{SELECT count(*) FROM awa.run_maintenance('counters')});
my $a = $l->background_psql('postgres');
$a->query('BEGIN');
is($a->query(q{SELECT count(*) FROM awa.claim('q', 1)}), '1', 'session A claims a job of key K (no entry: under its limit lock)');
like(ql(q{SELECT outcome || ' ' || (detail->>'key_entries_freed') FROM awa.run_maintenance('counters')}), qr/^trusted [1-9]/,
	'the counters step frees idle entries meanwhile');
is(ql(q{SELECT count(*) FROM awa.claim('q', 1)}), '0', 'session B claims nothing of key K while A is open');
$a->query('COMMIT');
$a->quit;
is(ql(q{SELECT running FROM awa._key_running_scan('q', 'K')}), '1', 'key K: one attempt running, its limit');
is(ql(q{SELECT count(*) FROM awa.claim('q', 1)}), '0', 'and no more after A commits');
$l->stop;

# --- Part 2: the worker at its cadence ---------------------------------------
my $w = start_awa_node('keyfreew', maintenance => 1, conf => $conf);
$w->safe_psql('postgres',
	q{SELECT awa.configure_queue('q', key_max_running => 1, key_rate_limit => '1000 per 1 second', key_burst => 5)});
for my $wave (1 .. 4)
{
	wave($w, 'q', "w$wave-");
	my $drained_at = $w->safe_psql('postgres', 'SELECT now()');
	is($w->safe_psql('postgres', q{SELECT available || '/' || running FROM awa.queue_counts_exact('q')}), '0/0',
		"wave $wave of 30 new keys drained");
	ok($w->poll_query_until('postgres',
			qq{SELECT last_outcome = 'trusted' AND last_run_at > '$drained_at'
			     FROM awa.maintenance_status() WHERE task = 'counters'}),
		"wave $wave: the worker freed idle key entries and the counts are trusted again");
}
is($w->safe_psql('postgres', q{SELECT completed FROM awa.queue_counts('q')}), '600',
	'trusted counts after 120 keys in a share of 16: 600 completed');
$w->stop;
done_testing();
