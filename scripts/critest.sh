#!/usr/bin/env bash
# Runs the whole CRI validation suite (critest v1.37.0) directly and through
# the shim on containerd 1.6.20, containerd 2.4.2 and CRI-O 1.36.3, one
# runtime after the other, and prints the table of README's crishim
# section: specs passed / run, each way. Not CI (CI runs
# internal/critesttest's TestLiveCritest: one runtime, through the shim,
# slow specs skipped). As root, after scripts/deps.sh; each runtime takes
# several minutes per way.
#
#   bash scripts/critest.sh [RUNTIME...]  # containerd-1.6 containerd-2.4 cri-o
#
# SANDBOXPIN_CRITEST_QUICK=1 leaves out the slow groups CI leaves out (a
# row marked "(quick)", in about a quarter of the time).
#
# Each runtime runs internal/critesttest's TestLiveCritestTable, which fails
# when a spec passes directly and fails through the shim; the logs stay in
# $LOGDIR (default: a new temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."

export SANDBOXPIN_CACHE=${SANDBOXPIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sandboxpin}
# The harnesses' defaults are deps.sh's paths, should env.sh be missing.
# shellcheck disable=SC1091 # written by deps.sh
[ ! -f "$SANDBOXPIN_CACHE/env.sh" ] || . "$SANDBOXPIN_CACHE/env.sh"
export SANDBOXPIN_REQUIRE_RUNTIMES=1
LOGDIR=${LOGDIR:-$(mktemp -d /tmp/critest-table.XXXXXX)}
runtimes=${*:-containerd-1.6 containerd-2.4 cri-o}

bin=$LOGDIR/critesttest.test
(cd internal && go test -c -o "$bin" ./critesttest)
rows="" failed=0
for rt in $runtimes; do
	printf '[critest %ss] %s\n' "$SECONDS" "$rt"
	rc=0
	(cd internal/critesttest && SANDBOXPIN_CRITEST_TABLE=$rt "$bin" -test.run '^TestLiveCritestTable$' -test.v -test.timeout 60m) >"$LOGDIR/$rt.log" 2>&1 || rc=$?
	row=$(grep -o 'TABLE| .*' "$LOGDIR/$rt.log" || echo "TABLE| $rt | (no result: see $LOGDIR/$rt.log) | | |")
	[ "$rc" = 0 ] || { failed=1; row="$row (test failed: see $LOGDIR/$rt.log)"; }
	rows="$rows${row#TABLE}"$'\n'
done
printf '\n| runtime | specs | passed / ran, direct | passed / ran, through the shim | time, direct / shim |\n|---|---|---|---|---|\n%s' "$rows"
printf '\nlogs: %s (%ss)\n' "$LOGDIR" "$SECONDS"
exit "$failed"
