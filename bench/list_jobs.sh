#!/usr/bin/env bash
# list_jobs.sh: what one page of awa.list_jobs costs as the store grows (issue 22 §1), at 10,000,
# 100,000 and 1,000,000 jobs, on a scratch server (bench/scratch_server.sh) with the maintenance
# worker on at its default cadence.
#
# The store of N jobs, oldest first: 30 % completed, 5 % failed, 4 % dead-lettered, 1,000 running
# (claimed, never ended), 5 % scheduled a day ahead, the rest (about 55 %) available; in queues
# q0 (70 %), q1 (20 %), q2 (9 %) and q3 (1 %), kinds k0..k9, every 100th job tagged "rare" with
# args {"rare": true}. Each case is one page of 50 (the default), newest first, and the same page
# continued from the middle of the store (before_job_id = the median job_id); a case's figure is
# the median of REPS calls (in one transaction per case, after one call not counted). The plans of
# the statements inside one call of each case go to $WORKDIR/plans-N.txt (auto_explain, nested
# statements, ANALYZE); the script counts their "Seq Scan" lines.
#
# Usage: bench/list_jobs.sh   (as root or postgres; SIZES="10000 100000" to choose; REPS (default 20);
# PORT, PGBIN, WORKDIR, KEEP=1 as in bench/scratch_server.sh). The table is also $WORKDIR/result.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PORT=${PORT:-55449}
SCRIPT_NAME=list-jobs
REPS=${REPS:-20}
# shellcheck source=bench/scratch_server.sh
source "$here/scratch_server.sh"
start_scratch_server
sizes=${SIZES:-"10000 100000 1000000"}

populate() { # populate DB N
	local db=$1 n=$2
	sql "CREATE DATABASE $db" >/dev/null
	DB=$db sql "CREATE EXTENSION awa" >/dev/null
	DB=$db sql "SELECT awa.configure_queue('qd', dlq_enabled => true)" >/dev/null
	# Enqueues `count` jobs of queue `q` in calls of 1,000 (job i of the store: tag and args by i).
	DB=$db sql "CREATE FUNCTION public.fill(q text, count int, later boolean DEFAULT false) RETURNS void
	  LANGUAGE plpgsql AS \$f\$
	  DECLARE base bigint;
	  BEGIN
	    FOR c IN 0 .. (count - 1) / 1000 LOOP
	      PERFORM awa.enqueue_many(
	        ARRAY(SELECT 'k' || (i % 10) FROM generate_series(1, least(1000, count - c * 1000)) i),
	        ARRAY(SELECT CASE WHEN i % 100 = 0 THEN jsonb_build_object('rare', true, 'i', i)
	                          ELSE jsonb_build_object('i', i) END FROM generate_series(1, least(1000, count - c * 1000)) i),
	        q,
	        run_at => CASE WHEN later THEN array_fill(now() + interval '1 day', ARRAY[least(1000, count - c * 1000)]) END,
	        opts => ARRAY(SELECT CASE WHEN i % 100 = 0 THEN '{\"tags\": [\"rare\"]}'::jsonb ELSE '{}'::jsonb END
	                        FROM generate_series(1, least(1000, count - c * 1000)) i));
	    END LOOP;
	  END \$f\$" >/dev/null
	# Claims up to `count` jobs of `q` and ends each: 'complete', 'fail' or 'none' (left running).
	DB=$db sql "CREATE PROCEDURE public.drain(q text, count int, how text) LANGUAGE plpgsql AS \$f\$
	  DECLARE done int := 0; got int; c record; j bigint[]; l bigint[]; r bigint[];
	  BEGIN
	    WHILE done < count LOOP
	      got := 0;
	      IF how = 'complete' THEN
	        SELECT array_agg(x.job_id), array_agg(x.run_lease), array_agg(x.receipt_id) INTO j, l, r
	          FROM awa.claim(q, least(1000, count - done)) x;
	        IF j IS NOT NULL THEN
	          PERFORM awa.complete_many(j, l, r);
	          got := cardinality(j);
	        END IF;
	      ELSE
	        FOR c IN SELECT * FROM awa.claim(q, least(1000, count - done)) LOOP
	          IF how = 'fail' THEN PERFORM awa.fail(c.job_id, c.run_lease, c.receipt_id, 'bench failure'); END IF;
	          got := got + 1;
	        END LOOP;
	      END IF;
	      COMMIT;
	      EXIT WHEN got = 0;
	      done := done + got;
	    END LOOP;
	  END \$f\$" >/dev/null
	local completed=$((n * 30 / 100)) failed=$((n * 5 / 100)) dlq=$((n * 4 / 100)) running=1000
	local sched=$((n * 5 / 100))
	local avail=$((n - completed - failed - dlq - running - sched))
	# Oldest first: the finished ones, then the running, the scheduled and the available.
	for part in "q0 $((completed * 70 / 100)) complete" "q1 $((completed * 20 / 100)) complete" \
	            "q2 $((completed * 9 / 100)) complete" "q3 $((completed - completed * 99 / 100)) complete" \
	            "q1 $failed fail" "qd $dlq fail" "q0 $running none"; do
		set -- $part
		DB=$db sql "SELECT public.fill('$1', $2)" >/dev/null
		DB=$db sql "CALL public.drain('$1', $2, '$3')" >/dev/null
	done
	DB=$db sql "SELECT public.fill('q2', $sched, true)" >/dev/null
	DB=$db sql "SELECT public.fill('q0', $((avail * 70 / 100))), public.fill('q1', $((avail * 20 / 100))),
	                   public.fill('q2', $((avail * 9 / 100))), public.fill('q3', $((avail - avail * 99 / 100)))" >/dev/null
	DB=$db sql "VACUUM ANALYZE" >/dev/null
}

# name|arguments of awa.list_jobs
cases=(
	"newest, no filter|"
	"queue q0 (70 %)|queue => 'q0'"
	"queue q3 (1 %)|queue => 'q3'"
	"state available|state => 'available'"
	"state running|state => 'running'"
	"state completed|state => 'completed'"
	"state failed|state => 'failed'"
	"state dlq|state => 'dlq'"
	"state scheduled|state => 'scheduled'"
	"kind k3|kind => 'k3'"
	"tag rare (1 %)|tag => 'rare'"
	"args {\"rare\": true}|args_contains => '{\"rare\": true}'"
	"queue q3, state completed|queue => 'q3', state => 'completed'"
)

{
	printf '| jobs | case | first page ms | page from the middle ms | rows |\n|---:|---|---:|---:|---:|\n'
	for n in $sizes; do
		db=lj_$n
		log "store of $n jobs"
		populate "$db" "$n"
		mid=$((n / 2))  # job_ids of a new database run 1 .. N
		DB=$db sql "CREATE FUNCTION public.median_ms(q text, reps int) RETURNS numeric LANGUAGE plpgsql AS \$f\$
		  DECLARE t timestamptz; ms numeric[] := '{}';
		  BEGIN
		    EXECUTE q;
		    FOR i IN 1 .. reps LOOP
		      t := clock_timestamp();
		      EXECUTE q;
		      ms := ms || (extract(epoch FROM clock_timestamp() - t) * 1000)::numeric;
		    END LOOP;
		    RETURN round((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY m) FROM unnest(ms) m)::numeric, 2);
		  END \$f\$" >/dev/null
		: >"$WORKDIR/plans-$n.txt"
		for c in "${cases[@]}"; do
			name=${c%%|*}
			args=${c#*|}
			sep=${args:+, }
			first=$(DB=$db sql "SELECT public.median_ms(\$q\$SELECT count(*) FROM awa.list_jobs($args)\$q\$, $REPS)")
			middle=$(DB=$db sql "SELECT public.median_ms(\$q\$SELECT count(*) FROM awa.list_jobs(${args}${sep}before_job_id => $mid)\$q\$, $REPS)")
			rows=$(DB=$db sql "SELECT count(*) FROM awa.list_jobs($args)")
			printf '| %s | %s | %s | %s | %s |\n' "$n" "$name" "$first" "$middle" "$rows"
			{
				echo "==== $n jobs: $name"
				PGOPTIONS="-c client_min_messages=log" "${PSQL[@]}" -d "$db" -At \
					-c "LOAD 'auto_explain'" -c "SET auto_explain.log_min_duration = 0" \
					-c "SET auto_explain.log_nested_statements = on" -c "SET auto_explain.log_analyze = on" \
					-c "SET auto_explain.log_level = log" \
					-c "SELECT count(*) FROM awa.list_jobs($args)" 2>&1
			} >>"$WORKDIR/plans-$n.txt"
		done
		log "plans of $n jobs: $(grep -c 'Seq Scan' "$WORKDIR/plans-$n.txt" || true) Seq Scan lines ($(grep 'Seq Scan on' "$WORKDIR/plans-$n.txt" | sed 's/.*Seq Scan on \([a-z_0-9.]*\).*/\1/' | sort | uniq -c | tr '\n' ' '))"
	done
} | tee "$WORKDIR/result.md"
