#!/usr/bin/env bash
# install-deps.sh: installs what building and testing awa needs on Debian 12
# (run as root). Safe to run again.
set -euo pipefail
# python3-psycopg and pgbouncer: the Python example worker and its pooler test
# (test/t/024_example_workers.pl); prometheus-postgres-exporter: the metrics
# test (test/t/025_metrics_exporter.pl); python3-matplotlib: the figures of
# bench/soak.sh (bench/plot_soak.py; pgbench, which every bench script uses,
# comes with postgresql-15); valgrind: bench/drain_instructions.sh; chromium:
# the web UI's browser tests (test/ui/run.sh) and its screenshots, with a font
# (fonts-liberation: a recommendation of chromium, which --no-install-recommends leaves out).
packages=(build-essential clang-14 llvm-14 postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap
          libtap-parser-sourcehandler-pgtap-perl libipc-run-perl libdbd-pg-perl libgtest-dev rsync
          python3-psycopg pgbouncer prometheus-postgres-exporter python3-matplotlib valgrind chromium
          fonts-liberation)
# The Node example and the web UI need node and npm; machines that have them (from any
# source) keep theirs, others get Debian's.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	packages+=(nodejs npm)
fi
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The Node example's dependencies, exactly as its package-lock.json pins them.
repo=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -d "$repo/examples/node/node_modules/pg" ]; then
	npm ci --prefix "$repo/examples/node" --no-audit --no-fund --loglevel=error >/dev/null
fi
# The web UI's dependencies (pg; puppeteer-core for its browser tests), as
# ui/package-lock.json pins them; again when the lockfile is newer than the install.
if [ ! -d "$repo/ui/node_modules/puppeteer-core" ] || [ "$repo/ui/package-lock.json" -nt "$repo/ui/node_modules/.package-lock.json" ]; then
	npm ci --prefix "$repo/ui" --no-audit --no-fund --loglevel=error >/dev/null
fi
