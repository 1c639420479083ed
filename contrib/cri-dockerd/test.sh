#!/usr/bin/env bash
# Runs cri-dockerd's own tests of the packages the patches touch (core, as
# `go test ./core/...`; cri-dockerd's CI runs `go test ./...` through `make
# test`) on a fresh tree with the patches applied: the module source of
# cri-dockerd VERSION (contrib/cri-dockerd/tree.sh, as build.sh builds it),
# the patches $PATCHES names (default pin.patch) and the requirement on this
# checkout's sandboxpin. scripts/test.sh runs it after scripts/deps.sh; the
# flags are build.sh's, so that the Go build cache of the cri-dockerd builds
# serves every package the tests share with cri-dockerd.
#
#   bash contrib/cri-dockerd/test.sh          # the patched tree
#   bash contrib/cri-dockerd/test.sh stock    # the same tests, no patch applied
#
# VERSION is tree.sh's CRI_DOCKERD_VERSION. The tree is not the one build.sh
# left under $SANDBOXPIN_CACHE/src: its go.mod points at whichever checkout
# built it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=contrib/lib.sh
. "$here/../lib.sh"
# shellcheck source=contrib/cri-dockerd/tree.sh
. "$here/tree.sh"

version=$CRI_DOCKERD_VERSION
mode=${1:-patched}
pkgs=(./core/...)
# The tests that fail on the stock tree in CI's sandbox (root, no Docker
# daemon, no network), each by its whole name, with the reason. None at
# v0.4.4: `test.sh stock` passes 45 tests and 14 subtests there, as core's
# tests talk to libdocker's FakeDockerClient, not to a daemon.
skip=()

work=$(mktemp -d "${TMPDIR:-/tmp}/sandboxpin-cri-dockerd-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

start=$SECONDS
cridockerd_tree "$version" "$work/src"
if [ "$mode" = stock ]; then
	echo "cri-dockerd $version, stock"
else
	echo "cri-dockerd $version with ${PATCHES:-pin.patch}"
	apply_patch "$here" "$work/out" 2>&1 | sed 's/^/  /'
fi
echo "tree ready in $((SECONDS - start))s"

start=$SECONDS
rc=0
args=("${cridockerd_flags[@]}" -count=1 -v)
[ "${#skip[@]}" = 0 ] || args+=(-skip "$(IFS='|' && echo "${skip[*]}")")
go test "${args[@]}" "${pkgs[@]}" >"$work/test.log" 2>&1 || rc=$?
# Per package: top-level tests and subtests passed, failed and skipped,
# from go test -v (one package's lines come before its ok/FAIL line).
awk '
	/^--- PASS/ { p++ } /^--- FAIL/ { f++ } /^--- SKIP/ { s++ }
	/^ +--- PASS/ { sp++ } /^ +--- FAIL/ { sf++ } /^ +--- SKIP/ { ss++ }
	/^(ok|FAIL)[ \t]+github\.com\// {
		printf "%-4s %-40s %3d tests (%d failed, %d skipped), %3d subtests (%d failed, %d skipped), %s\n", $1, $2, p+f+s, f, s, sp+sf+ss, sf, ss, $3
		p = f = s = sp = sf = ss = 0
	}
	/^\?/ { printf "%-4s %-40s no test files\n", "", $2 }
' "$work/test.log"
echo "go test in $((SECONDS - start))s"
if [ "$rc" != 0 ]; then
	# The log without the lines of passing tests: a failing assertion is
	# printed where its subtest ran, not beside its --- FAIL line.
	grep -v -E '^ *--- (PASS|SKIP)|^=== (RUN|PAUSE|CONT|NAME)' "$work/test.log" | tail -n 300
	echo "contrib/cri-dockerd/test.sh: cri-dockerd's tests failed on the $mode tree" >&2
	exit "$rc"
fi
