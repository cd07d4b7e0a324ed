#!/usr/bin/env bash
# install-deps.sh: installs what building and testing awa needs on Debian 12
# (run as root). Safe to run again.
set -euo pipefail
packages=(build-essential clang-14 llvm-14 postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap
          libtap-parser-sourcehandler-pgtap-perl libipc-run-perl libdbd-pg-perl libgtest-dev rsync)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
