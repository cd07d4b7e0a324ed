#!/usr/bin/env bash
# bench/close_each.sh: the cost of ending the attempts of ONE big claim batch one call each.
#
#   PGBIN=/usr/lib/postgresql/15/bin PORT=5493 SIZES="1000 4000 8000" bench/close_each.sh
#
# For each size N: enqueue N jobs, claim all N in one awa.claim call, then complete each job in its
# own transaction (a procedure that COMMITs after every awa.complete, so no client round trip is
# counted): the average time per job. Then, for the size 4000 (HB_SIZE), the average time of an
# awa.heartbeat on an attempt of a fresh batch of that size and on the last open attempt of a batch
# whose other attempts were completed one call each. Then one rescue tick (awa._rescue, the default
# awa.rescue_batch_size of 500) over a batch of RESCUE_N (8000) jobs whose deadline passed, of which
# RESCUE_CLOSED (2500) were completed one call each first.
#
# A throwaway cluster (bench/scratch_server.sh) with awa's maintenance worker off (so no tick rescues
# or prunes behind the measurement). Run as root (the server runs as postgres) or as postgres.
# Writes Markdown to stdout and $WORKDIR/result.md.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PORT=${PORT:-5493}
SIZES=${SIZES:-1000 4000 8000}
HB_SIZE=${HB_SIZE:-4000}
RESCUE_N=${RESCUE_N:-8000}
RESCUE_CLOSED=${RESCUE_CLOSED:-2500}
SCRIPT_NAME=close_each
EXTRA_CONF="awa.maintenance_enabled = off"
# shellcheck source=bench/scratch_server.sh
source "$HERE/scratch_server.sh"
start_scratch_server
sql 'CREATE EXTENSION awa' >/dev/null
sql "
CREATE TABLE ce_claims (n int, job_id bigint, run_lease bigint, receipt_id bigint);
-- Claims all N jobs of a fresh queue in one call (deadline: how long the attempts may run).
CREATE FUNCTION ce_claim(q text, n int, deadline interval) RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
    TRUNCATE ce_claims;
    PERFORM awa.enqueue_many(array_fill('ce'::text, ARRAY[n]), NULL, q);
    INSERT INTO ce_claims SELECT row_number() OVER (ORDER BY c.receipt_id), c.job_id, c.run_lease, c.receipt_id
      FROM awa.claim(q, n, deadline) c;
    IF (SELECT count(*) FROM ce_claims) <> n THEN RAISE 'claimed % of %', (SELECT count(*) FROM ce_claims), n; END IF;
END \$\$;
-- Completes the claimed attempts n <= upto, each in its own transaction; the elapsed seconds.
CREATE PROCEDURE ce_complete_each(upto int, INOUT seconds float8 DEFAULT NULL) LANGUAGE plpgsql AS \$\$
DECLARE r record; t0 timestamptz := clock_timestamp();
BEGIN
    FOR r IN SELECT * FROM ce_claims WHERE n <= upto ORDER BY n LOOP
        IF NOT awa.complete(r.job_id, r.run_lease, r.receipt_id) THEN RAISE 'job % refused', r.job_id; END IF;
        COMMIT;
    END LOOP;
    seconds := extract(epoch FROM clock_timestamp() - t0);
END \$\$;
-- k heartbeats of attempt n, each in its own transaction; the average milliseconds.
CREATE PROCEDURE ce_heartbeat(at_n int, k int, INOUT ms float8 DEFAULT NULL) LANGUAGE plpgsql AS \$\$
DECLARE r record; t0 timestamptz := clock_timestamp();
BEGIN
    SELECT * INTO r FROM ce_claims WHERE n = at_n;
    FOR i IN 1..k LOOP
        PERFORM awa.heartbeat(r.job_id, r.run_lease, r.receipt_id);
        COMMIT;
    END LOOP;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000 / k;
END \$\$;
" >/dev/null
{
	echo "## Completing each job of one claim batch in its own transaction"
	echo
	echo '| jobs in the claim batch | total s | µs per job |'
	echo '|---:|---:|---:|'
	for n in $SIZES; do
		sql "SELECT ce_claim('ce_$n', $n, '1 hour')" >/dev/null
		s=$(sql "CALL ce_complete_each($n)")
		echo "| $n | $(printf '%.2f' "$s") | $(awk -v s="$s" -v n="$n" 'BEGIN { printf "%.0f", s * 1e6 / n }') |"
	done
	echo
	echo "## awa.heartbeat on an attempt of a $HB_SIZE-job claim batch (average of 200, each its own transaction)"
	echo
	sql "SELECT ce_claim('ce_hb', $HB_SIZE, '1 hour')" >/dev/null
	fresh=$(sql "CALL ce_heartbeat($HB_SIZE, 200)")
	sql "CALL ce_complete_each($((HB_SIZE - 1)))" >/dev/null
	late=$(sql "CALL ce_heartbeat($HB_SIZE, 200)")
	echo "| closures before | ms per heartbeat |"
	echo '|---:|---:|'
	echo "| 0 | $(printf '%.3f' "$fresh") |"
	echo "| $((HB_SIZE - 1)) | $(printf '%.3f' "$late") |"
	echo
	echo "## One rescue tick: $RESCUE_N-job claim batch, deadline passed, $RESCUE_CLOSED completed one call each"
	echo
	sql "SELECT ce_claim('ce_rescue', $RESCUE_N, '20 seconds')" >/dev/null
	t0=$(date +%s)
	sql "CALL ce_complete_each($RESCUE_CLOSED)" >/dev/null
	left=$((20 + 1 - ($(date +%s) - t0)))
	if [ "$left" -gt 0 ]; then sleep "$left"; fi
	for tick in 1 2; do
		t1=$(date +%s%N)
		out=$(sql "SELECT detail FROM awa._rescue()")
		t2=$(date +%s%N)
		echo "Tick $tick: $(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') s ($out)"
		echo
	done
	echo
} | tee "$WORKDIR/result.md"
