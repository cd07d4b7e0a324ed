#!/bin/bash
# limit_overhead.sh: drain throughput (16 pgbench clients, claim 1 + complete, claim 10 + complete_many)
# of a queue without a concurrency limit and of one with a limit that never binds (max_running 100000),
# alternated, twice. Run as root: PGBIN=<bin dir> bench/limit_overhead.sh (starts its own cluster).
B=${PGBIN:-/usr/lib/postgresql/15/bin}; d=${WORKDIR:-/tmp/awa-limit-overhead}; port=${PORT:-5501}
rm -rf $d; mkdir -p $d; chown postgres $d
runuser -u postgres -- $B/initdb -D $d/data -A trust >/dev/null
printf "port=$port\nshared_preload_libraries='awa'\nunix_socket_directories='$d'\n" >> $d/data/postgresql.conf
runuser -u postgres -- $B/pg_ctl -D $d/data -l $d/log -w start >/dev/null
P="runuser -u postgres -- $B/psql -h $d -p $port -d postgres -Atq"
$P -c "CREATE EXTENSION awa"
cat > $d/drain1.sql <<'SQL'
SELECT awa.complete(job_id, run_lease, receipt_id) FROM awa.claim(':q', 1);
SQL
cat > $d/drain10.sql <<'SQL'
SELECT count(*) FROM (SELECT awa.complete_many(array_agg(job_id), array_agg(run_lease), array_agg(receipt_id)) FROM awa.claim(':q', 10)) x;
SQL
chown -R postgres $d
for rep in 1 2; do for lim in none 100000; do for b in 1 10; do
  q=lq_${lim}_${b}_$rep
  $P -c "SELECT count(*) FROM awa.enqueue_many(array_fill('k'::text, ARRAY[200000]), NULL, '$q')" >/dev/null
  [ $lim != none ] && $P -c "SELECT awa.configure_queue('$q', max_running => $lim)" >/dev/null
  T=$(runuser -u postgres -- $B/pgbench -h $d -p $port -n -c 16 -j 2 -T 10 -D q=$q -f $d/drain$b.sql postgres 2>/dev/null | grep "^tps" | awk '{print $3}')
  echo "rep=$rep limit=$lim batch=$b tps=$T"
done; done; done
runuser -u postgres -- $B/pg_ctl -D $d/data -m fast -w stop >/dev/null
