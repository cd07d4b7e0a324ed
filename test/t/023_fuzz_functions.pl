# 023_fuzz_functions.pl
#
# Every function in schema awa, called with hostile input by every role
# (issue 11 §4). Seeded (AWA_FUZZ_SEED, default 20261202; the seed is printed,
# so a failure is reproduced with it).
#
# Arguments, by type: NULL, empty strings, 1 MB text, unknown queue and task
# names, quotes; 0, negative, minimum and maximum numbers; JSON of the wrong
# shape (array, string, number, null where an object is expected, deep
# nesting); arrays empty, with NULL elements, of mismatched lengths; negative,
# zero, huge and mixed-sign intervals; durations given as numbers of seconds
# (NaN, infinite, out of range) and as bad strings; infinite and far
# timestamps. For each
# function and role: the valid-looking call, one call with NULL in each
# argument, and AWA_FUZZ_ROUNDS (8) calls with random picks.
#
# Roles: awa_producer, awa_worker, awa_admin (members of them) and a role with
# only USAGE on the schema.
#
# Each call runs in a subtransaction of a driver (public.fuzz_call). It must
# end in success or in an error whose SQLSTATE is one the documentation
# names (the class of the argument checks, 22; privileges 42501; unique
# 23505; wrong object 42809 / 42P01; state 55000, 25006, 0A000; limits 54000;
# cancels 57014), never XX000 or any other internal class, and never a crash
# (the session survives). A call that errors must change nothing: the row
# count of every awa table and the value of every awa sequence (job ids, lane
# cursors, batch ids, the fence) are the same before and after it.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::Bin;
use AwaTap;

my $seed = $ENV{AWA_FUZZ_SEED} // 20261202;
my $rounds = $ENV{AWA_FUZZ_ROUNDS} // 8;    # random calls per function and role
note "seed $seed (AWA_FUZZ_SEED)";
srand($seed);

my $node = start_awa_node('fuzz', conf => "statement_timeout = '60s'\n");
sub q1 { return $node->safe_psql('postgres', $_[0]); }

q1(q{
CREATE ROLE fuzz_producer IN ROLE awa_producer;
CREATE ROLE fuzz_worker IN ROLE awa_worker;
CREATE ROLE fuzz_admin IN ROLE awa_admin;
CREATE ROLE fuzz_plain;
GRANT USAGE ON SCHEMA awa TO fuzz_plain;

-- Row counts of every awa table (partitioned parents whole) and every awa
-- sequence's value.
CREATE FUNCTION public.fuzz_state() RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    r record;
    n bigint;
    out text := '';
BEGIN
    FOR r IN SELECT c.oid::regclass AS rel, c.relkind FROM pg_class c
              WHERE c.relnamespace = 'awa'::regnamespace
                AND (c.relkind = 'p' OR (c.relkind = 'r' AND NOT c.relispartition) OR c.relkind = 'S')
              ORDER BY c.oid LOOP
        IF r.relkind = 'S' THEN
            n := coalesce(pg_sequence_last_value(r.rel), 0);
        ELSE
            EXECUTE format('SELECT count(*) FROM %s', r.rel) INTO n;
        END IF;
        out := out || r.rel::text || '=' || n || ' ';
    END LOOP;
    -- The lanes' cursors, which live in their rows (moved in place).
    SELECT out || 'lane_cursors=' || coalesce(sum(l.enqueue_cursor), 0) || '/' || coalesce(sum(l.claim_cursor), 0)
      INTO out FROM awa.lane_cursors() l;
    RETURN out;
END
$f$;

-- Runs `call` as `role` in a subtransaction: 'ok', or 'SQLSTATE message';
-- 'CHANGED ...' when a call that failed changed a count or a sequence.
CREATE FUNCTION public.fuzz_call(role text, call text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    before text;
    after text;
    state text;
    message text;
BEGIN
    before := public.fuzz_state();
    BEGIN
        PERFORM set_config('role', role, true);
        EXECUTE call;
        PERFORM set_config('role', 'none', true);
        RETURN 'ok';
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
    END;
    after := public.fuzz_state();
    IF after IS DISTINCT FROM before THEN
        RETURN 'CHANGED ' || state || ' ' || left(message, 200) || ' | before: ' || before || ' | after: ' || after;
    END IF;
    RETURN state || ' ' || left(replace(message, E'\n', ' '), 200);
END
$f$;
});

# Some state for the calls to find: jobs in several states, a lane, a claim.
q1(q{
SELECT awa.enqueue('seed', '{"a": 1}', 'fq');
SELECT awa.enqueue('seed', '{}', 'fq', priority => 1);
SELECT awa.enqueue('later', '{}', 'fq', run_at => now() + interval '1 hour');
SELECT awa.enqueue('uniq', '{}', 'fq', opts => '{"unique": {"by_args": true}}');
SELECT count(*) FROM awa.claim('fq', 1);
});

my $big = 'x' x (1024 * 1024);
my %values = (
	'text' => [ 'NULL', q{''}, q{'fq'}, q{'default'}, q{'no_such_queue'}, q{'all'}, q{'promote'},
		q{'prune_queue'}, q{'no_such_task'}, "'$big'", q{'it''s'}, q{' '}, q{'fq '} ],
	'integer' => [ 'NULL', '0', '1', '-1', '4', '5', '10000', '10001', '2147483647', q{'-2147483648'} ],
	'smallint' => [ 'NULL', '0', '1', '-1', '32767', q{'-32768'} ],
	'bigint' => [ 'NULL', '0', '1', '-1', '262144', '9223372036854775807', q{'-9223372036854775808'} ],
	'boolean' => [ 'NULL', 'true', 'false' ],
	'jsonb' => [ 'NULL', q{'{}'}, q{'[]'}, q{'"s"'}, q{'1'}, q{'null'}, q{'{"unique": 1}'},
		q{'{"unique": {"period": "-1 day"}}'}, q{'{"unique": {"states": ["nope"]}}'}, q{'{"metadata": []}'},
		q{'{"unique": {"on_conflict": "skip"}}'}, q{'{"unique": {"on_conflict": 1}}'}, q{'{"on_conflict": "skip"}'},
		q{'{"tags": "x"}'}, "'{\"a\": " . ('[' x 500) . (']' x 500) . "}'",
		"('{\"k\": \"' || repeat('y', 1048576) || '\"}')" ],
	'interval' => [ 'NULL', q{'0'}, q{'-1 second'}, q{'1 second'}, q{'10 ms'}, q{'1 month -29 days'},
		q{'1000000 years'}, q{'2 days'}, q{'-1000000 years'} ],
	# awa.duration: an interval's strings, and numbers of seconds (short ones: a
	# claim that finds nothing sleeps for its wait).
	'awa.duration' => [ 'NULL', q{'0'}, q{'-1 second'}, q{'1 second'}, q{'10 ms'}, q{'1 month -29 days'},
		q{'1000000 years'}, q{'2 days'}, q{'-1000000 years'}, '0.01', '-1', '86401', q{'NaN'::numeric},
		q{'Infinity'::float8}, '1e300', '9223372036855', q{'soon'} ],
	'real' => [ 'NULL', '1.5', q{'NaN'}, q{'Infinity'}, '-1', '3.4e38' ],
	'double precision' => [ 'NULL', '2.5', q{'NaN'}, q{'-Infinity'}, '1e308', '-1e-300', '0' ],
	'numeric' => [ 'NULL', '2.5', q{'NaN'}, q{'Infinity'}, '1e400', '-0.0000005', '9223372036854.775807' ],
	# The input function of awa.duration (nobody but the owner may call it).
	'cstring' => [ 'NULL', q{'1 second'}, q{'abc'}, q{''}, q{'5'} ],
	'oid' => [ 'NULL', '0', '1186' ],
	'timestamp with time zone' => [ 'NULL', q{'infinity'}, q{'-infinity'}, q{'1970-01-01'}, 'now()',
		q{'294276-12-31'}, q{'4713-01-01 BC'} ],
	'regclass' => [ 'NULL', q{'pg_class'}, q{'awa.job_id_seq'}, '0', '4294967295' ],
	'text[]' => [ 'NULL', q{'{}'}, q{'{NULL}'}, q{'{k}'}, q{'{k,k,k}'}, "ARRAY['$big']", q{'{{a},{b}}'} ],
	'jsonb[]' => [ 'NULL', q{'{}'}, q{ARRAY[NULL]::jsonb[]}, q{ARRAY['[]']::jsonb[]}, q{ARRAY['{}', '{}']::jsonb[]} ],
	'integer[]' => [ 'NULL', q{'{}'}, q{'{NULL}'}, q{'{2}'}, q{'{0}'}, q{'{5,1}'}, q{'{{1},{2}}'} ],
	'bigint[]' => [ 'NULL', q{'{}'}, q{'{NULL}'}, q{'{1}'}, q{'{-1}'}, q{'{1,2,3}'}, q{'{{1},{2}}'} ],
	'timestamp with time zone[]' => [ 'NULL', q{'{}'}, q{'{NULL}'}, q{'{infinity}'}, q{'{now,now}'} ],
	# awa._requeue_jobs's rows (owner only: every fuzz role gets 42501).
	'awa.deferred_jobs[]' => [ 'NULL', q{'{}'}, q{ARRAY[NULL::awa.deferred_jobs]},
		q{ARRAY[ROW(1, 'q', 2, 'k', '{}', 'scheduled', now(), 0, 0, 1, now(), NULL, NULL, NULL, NULL)::awa.deferred_jobs]},
		q{ARRAY[ROW(1, NULL, 9, 'k', NULL, 'bogus', NULL, 0, 0, 1, now(), NULL, NULL, NULL, NULL)::awa.deferred_jobs]} ],
	'jsonb[]' => [ 'NULL', q{'{}'}, q{ARRAY[NULL]::jsonb[]}, q{ARRAY['[]']::jsonb[]}, q{ARRAY['{}', '{}']::jsonb[]} ],
);
# The first value of each list after NULL is the "valid-looking" one.
my %valid = map { $_ => $values{$_}[ $_ eq 'text' ? 2 : 1 ] } keys %values;

# Per function: name, argument types, and the fuzz roles that may execute it.
my @functions = map { [ split /\|/, $_, -1 ] } split /\n/, q1(q{
SELECT p.proname, coalesce(string_agg(format_type(t.t, NULL), ';' ORDER BY t.o), ''),
       (SELECT coalesce(string_agg(r, ';'), '') FROM unnest(ARRAY['fuzz_producer', 'fuzz_worker', 'fuzz_admin',
                                                             'fuzz_plain']) r
         WHERE has_function_privilege(r, p.oid, 'EXECUTE'))
  FROM pg_proc p LEFT JOIN LATERAL unnest(p.proargtypes) WITH ORDINALITY AS t(t, o) ON true
 WHERE p.pronamespace = 'awa'::regnamespace
 GROUP BY p.oid, p.proname ORDER BY p.proname});
ok(@functions >= 70, 'found ' . scalar(@functions) . ' functions in schema awa');

# The driver can fail: a call that errors after moving a sequence is
# 'CHANGED', and an internal error is reported with its SQLSTATE.
like(q1(q{SELECT public.fuzz_call('postgres', $$SELECT nextval('awa.job_id_seq') / 0$$)}),
	qr/^CHANGED 22012/, 'canary: a failed call that moved a sequence is caught');
like(q1(q{SELECT public.fuzz_call('postgres', $o$DO $d$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = 'XX000'; END $d$$o$)}),
	qr/^XX000/, 'canary: an internal error is reported as XX000');

my %documented = map { $_ => 1 } qw(42501 23505 42809 42P01 42704 55000 55P03 25006 25001 0A000 54000 57014);
my (@bad, %outcomes);
my $calls = 0;
for my $f (@functions)
{
	my ($name, $types, $allowed) = @$f;
	my %may = map { $_ => 1 } split /;/, $allowed;
	my @types = $types eq '' ? () : split /;/, $types;
	# No SQL value has type internal: awa._duration_recv (awa.duration's
	# binary input) cannot be called from SQL at all.
	next if grep { $_ eq 'internal' } @types;
	for my $t (@types) { die "no values for type $t of awa.$name" unless $values{$t}; }
	my @vectors;
	push @vectors, [ map { $valid{$_} } @types ];
	for my $i (0 .. $#types)
	{
		my @v = map { $valid{$_} } @types;
		$v[$i] = 'NULL';
		push @vectors, \@v;
	}
	for (1 .. $rounds)
	{
		push @vectors, [ map { my $l = $values{$_}; $l->[ int(rand(@$l)) ] } @types ];
	}
	for my $role (qw(fuzz_producer fuzz_worker fuzz_admin fuzz_plain))
	{
		# A role that may not execute the function gets 42501 whatever the
		# arguments: two calls show it.
		for my $v ($may{$role} ? @vectors : @vectors[0, -1])
		{
			my $args = join(', ', map { "$v->[$_]::$types[$_]" } 0 .. $#types);
			my $call = "SELECT * FROM awa.$name($args)";
			my ($rc, $out, $err) = $node->psql('postgres', "SELECT public.fuzz_call('$role', \$fz\$$call\$fz\$)");
			$calls++;
			my $shown = length($call) > 300 ? substr($call, 0, 300) . '...' : $call;
			if ($rc != 0)
			{
				push @bad, "$role: $shown: the driver failed ($err)";
				# A crash: the server restarts; wait for it.
				$node->poll_query_until('postgres', 'SELECT 1');
				next;
			}
			my ($state) = $out =~ /^(\S+)/;
			$outcomes{$state}++;
			note "$role: $shown: $out" if ($ENV{AWA_FUZZ_SHOW} // '') eq $state;
			next if $state eq 'ok';
			if ($state eq 'CHANGED' || !($state =~ /^22/ || $documented{$state}))
			{
				push @bad, "$role: $shown: " . (length($out) > 600 ? substr($out, 0, 600) . '...' : $out);
			}
		}
	}
}
note "$calls calls; outcomes: " . join(', ', map { "$_ $outcomes{$_}" } sort keys %outcomes);
is(scalar(@bad), 0, "$calls calls: each succeeded or failed with a documented SQLSTATE and changed nothing")
  or diag(join("\n", @bad[0 .. ($#bad < 40 ? $#bad : 40)]));
is(q1('SELECT 1'), '1', 'the server is up; no call crashed it');
ok(!$node->log_contains('server process .* was terminated by signal'), 'no backend was terminated by a signal');

$node->stop;
done_testing();
