#!/usr/bin/env bash
# run.sh: runs the pgTAP schema tests (test/pgtap/*.sql) with pg_prove against
# a private cluster in tmp_pgtap/ (started and stopped here). Run as a
# non-root user after `make install`.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=${AWA_PGBIN:-/usr/lib/postgresql/15/bin}:$PATH
dir=$PWD/tmp_pgtap
port=${PGTAP_PORT:-54390}
rm -rf "$dir"
initdb -D "$dir/data" -A trust >/dev/null
cat >>"$dir/data/postgresql.conf" <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$dir'
shared_preload_libraries = 'awa'
awa.maintenance_enabled = off
fsync = off
CONF
pg_ctl -D "$dir/data" -l "$dir/log" -w start >/dev/null
trap 'pg_ctl -D "$dir/data" -m fast -w stop >/dev/null' EXIT
createdb -h "$dir" -p "$port" awa_pgtap
psql -h "$dir" -p "$port" -d awa_pgtap -qc 'CREATE EXTENSION pgtap; CREATE EXTENSION awa;'
pg_prove -h "$dir" -p "$port" -d awa_pgtap test/pgtap/*.sql
