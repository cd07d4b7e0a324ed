#!/usr/bin/env bash
# ui.sh: starts awa's web UI (ui/server.js) in the foreground.
#   DATABASE_URL           the database where awa is installed; unset: the demo
#                          server of scripts/demo.sh (the port its cluster in .demo/
#                          was last given, else AWA_DEMO_PORT, else 5440)
#   AWA_UI_PORT            default 8080, on 127.0.0.1
#   AWA_UI_ADMIN_PASSWORD  unset: read-only; set (12+ characters): actions after a login
# The connecting role must be a member of awa_monitor (and of awa_admin when the
# password is set); docs/operations-ui.md has the roles and a reverse proxy setup.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "ui.sh: node and npm are needed (Debian: apt-get install nodejs npm, or run scripts/install-deps.sh as root)" >&2
	exit 1
fi
if [ ! -d "$repo/ui/node_modules/pg" ] || [ "$repo/ui/package-lock.json" -nt "$repo/ui/node_modules/.package-lock.json" ]; then
	echo "== installing the UI's dependencies (npm ci, from ui/package-lock.json)"
	npm ci --prefix "$repo/ui" --omit=dev --no-audit --no-fund --loglevel=error >/dev/null
fi
if [ -z "${DATABASE_URL:-}" ]; then
	conf=$repo/.demo/data/postgresql.conf
	if [ ! -f "$conf" ]; then
		echo "ui.sh: DATABASE_URL is not set and there is no demo server (./scripts/demo.sh makes one)." >&2
		echo "       Pass the database where awa is installed: DATABASE_URL=postgresql://user@host:port/db ./scripts/ui.sh" >&2
		exit 2
	fi
	# demo.sh writes the port of its last run as the file's last port line.
	port=$(sed -n -E 's/^[[:space:]]*port[[:space:]]*=[[:space:]]*([0-9]+).*/\1/p' "$conf" | tail -n 1)
	export DATABASE_URL="postgresql://postgres@/postgres?host=$repo/.demo&port=${port:-${AWA_DEMO_PORT:-5440}}"
	echo "== DATABASE_URL is not set: using the demo server of scripts/demo.sh, $DATABASE_URL"
fi
exec node "$repo/ui/server.js"
