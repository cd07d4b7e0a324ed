#!/usr/bin/env bash
# The web UI's browser tests (ui/test/): a PostgreSQL cluster with awa preloaded
# (stock postgresql.conf plus the preload, the maintenance worker on at its
# cadence), a login role for the UI that is a member of awa_monitor and
# awa_admin, and one that is neither; then node's test runner (TAP). Run as a
# user initdb accepts (scripts/test.sh runs it as postgres).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bindir=${AWA_PGBIN:-$(pg_config --bindir)}
port=${UI_PGPORT:-5813}
tmp=$(mktemp -d /tmp/awa-ui-test.XXXXXX)
stop() {
	"$bindir/pg_ctl" -D "$tmp/data" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap stop EXIT
"$bindir/initdb" -D "$tmp/data" -A trust -U postgres >"$tmp/initdb.log" 2>&1
cat >>"$tmp/data/postgresql.conf" <<CONF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$tmp'
shared_preload_libraries = 'awa'
CONF
"$bindir/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w start >/dev/null
"$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$tmp" -p "$port" -U postgres -d postgres <<'SQL'
CREATE EXTENSION awa;
CREATE ROLE awa_ui LOGIN;
GRANT awa_monitor, awa_admin TO awa_ui;
CREATE ROLE awa_ui_outsider LOGIN;
SQL
export AWA_TEST_DATABASE_URL="postgresql://postgres@127.0.0.1:$port/postgres"
export AWA_UI_DATABASE_URL="postgresql://awa_ui@127.0.0.1:$port/postgres"
cd "$repo/ui"
status=0
timeout 1800 node --test --test-reporter=tap test/ || status=$?
if [ "$status" -ne 0 ]; then
	echo "# server log:"
	tail -n 40 "$tmp/server.log" | sed 's/^/# /'
fi
exit "$status"
