#!/usr/bin/env bash
# test.sh: the whole awa test suite on a fresh Debian 12 machine, run as root.
# Installs what it needs, builds and installs awa, then runs, as the postgres
# user (initdb refuses root), in a private copy of the tree:
#   the install-script check, unit (GoogleTest), pg_regress, isolation, pgTAP, TAP,
#   and the web UI in Chromium (test/ui/run.sh).
# Ends with the line "N passed, N failed"; exits non-zero on any failure.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/usr/lib/postgresql/15/bin:$PATH

"$repo/scripts/install-deps.sh"
if ! make -C "$repo" -s -j2 >/tmp/awa-build.log 2>&1 || ! make -C "$repo" -s install >>/tmp/awa-build.log 2>&1; then
	cat /tmp/awa-build.log
	echo "build: FAILED"
	echo "0 passed, 1 failed"
	exit 1
fi

work=$(mktemp -d /tmp/awa-test.XXXXXX)
rsync -a --exclude .git --exclude tmp_check --exclude tmp_check_iso --exclude .demo "$repo/" "$work/"
chown -R postgres "$work"

passed=0
failed=0
as_postgres() { runuser -u postgres -- env PATH="$PATH" "$@"; }
add() { passed=$((passed + $1)); failed=$((failed + $2)); }

# $1 suite name, $2 log file, $3 exit status, $4 passed, $5 failed
report() {
	local name=$1 log=$2 status=$3 p=$4 f=$5
	if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	echo "== $name: $p passed, $f failed"
	if [ "$f" -ne 0 ]; then
		tail -n 60 "$log"
		# A TAP failure's own diagnostics come long before the summary.
		grep -q '^#   Failed test' "$log" && { echo "-- failed tests' diagnostics:"; grep -A25 '^#   Failed test' "$log" | head -n 200; }
		for diffs in "$work/regression.diffs" "$work/output_iso/regression.diffs"; do
			[ -s "$diffs" ] && head -n 200 "$diffs"
		done
	fi
	add "$p" "$f"
}

# pg_regress / isolation: one "... ok" or "... FAILED" line per test.
regress_suite() {
	local name=$1 target=$2 log="$work/$1.log" status p f
	as_postgres make -C "$work" "$target" >"$log" 2>&1
	status=$?
	p=$(grep -cE '\.\.\. ok' "$log")
	f=$(grep -cE '\.\.\. FAILED' "$log")
	report "$name" "$log" "$status" "$p" "$f"
}

# prove / pg_prove: "Files=N, Tests=M" plus "Failed X/Y subtests" lines.
prove_suite() {
	local name=$1 target=$2 log="$work/$1.log" status total f p
	as_postgres make -C "$work" "$target" >"$log" 2>&1
	status=$?
	total=$(grep -oE 'Tests=[0-9]+' "$log" | tail -1 | cut -d= -f2)
	f=$(grep -oE 'Failed [0-9]+/[0-9]+ subtests' "$log" | awk '{split($2, a, "/"); s += a[1]} END {print s + 0}')
	p=$(( ${total:-0} - f ))
	report "$name" "$log" "$status" "$p" "$f"
}

unit_suite() {
	local log="$work/unit.log" status p f
	as_postgres make -C "$work" -s unit >"$log" 2>&1
	status=$?
	p=$(grep -oE '\[  PASSED  \] [0-9]+' "$log" | awk '{print $4}' | tail -1)
	f=$(grep -oE '\[  FAILED  \] [0-9]+ test' "$log" | awk '{print $4}' | tail -1)
	report unit "$log" "$status" "${p:-0}" "${f:-0}"
}

# node's test runner (TAP): "# pass N" and "# fail N".
ui_suite() {
	local log="$work/ui.log" status p f
	as_postgres bash "$work/test/ui/run.sh" >"$log" 2>&1
	status=$?
	p=$(grep -oE '^# pass [0-9]+' "$log" | awk '{print $3}' | tail -1)
	f=$(grep -oE '^# fail [0-9]+' "$log" | awk '{print $3}' | tail -1)
	report ui "$log" "$status" "${p:-0}" "${f:-0}"
}

# The installed install script is what sql/install/ makes (one check).
script_suite() {
	local log="$work/install-script.log" status
	make -C "$repo" -s installscriptcheck >"$log" 2>&1
	status=$?
	if [ "$status" -eq 0 ]; then report install-script "$log" 0 1 0; else report install-script "$log" "$status" 0 1; fi
}

script_suite
unit_suite
regress_suite regress regresscheck
regress_suite isolation isolationcheck
prove_suite pgtap pgtapcheck
prove_suite tap tapcheck
ui_suite

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
