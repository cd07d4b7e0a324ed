#!/usr/bin/env bash
# enqueue_many_scaling.sh: the cost of one awa.enqueue_many call at 10k, 100k
# and 1M jobs (available now, and scheduled a day ahead), per job, on a scratch
# server (bench/scratch_server.sh). A linear call has a flat cost per job.
# Usage: bench/enqueue_many_scaling.sh   (as root or postgres; SIZES="10000 100000" to choose;
# PORT, PGBIN, WORKDIR, KEEP=1 as in bench/scratch_server.sh). The table is also $WORKDIR/result.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PORT=${PORT:-55447}
SCRIPT_NAME=enqueue-many-scaling
# shellcheck source=bench/scratch_server.sh
source "$here/scratch_server.sh"
start_scratch_server
sql "CREATE EXTENSION awa" >/dev/null
sizes=${SIZES:-"10000 100000 1000000"}
{
	printf '%-10s %-10s %12s %12s\n' jobs run_at ms us_per_job
	for n in $sizes; do
		for kind in now later; do
			if [ "$kind" = now ]; then extra=""; else extra=", run_at => array_fill(now() + interval '1 day', array[$n])"; fi
			ms=$(as_pg "${PSQL[@]}" -d postgres -At -c '\timing on' \
				-c "SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, array[$n]), NULL, queue => 'scale_${kind}_$n'$extra)" |
				sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
			printf '%-10s %-10s %12.1f %12.2f\n' "$n" "$kind" "$ms" "$(awk -v ms="$ms" -v n="$n" 'BEGIN { print ms * 1000 / n }')"
		done
	done
} | tee "$WORKDIR/result.md"
