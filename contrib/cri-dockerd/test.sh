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
# shellcheck source=contrib/testlib.sh
. "$here/../testlib.sh"
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
go_test_summary "$work/test.log"
echo "go test in $((SECONDS - start))s"
if [ "$rc" != 0 ]; then
	go_test_failures "$work/test.log"
	echo "contrib/cri-dockerd/test.sh: cri-dockerd's tests failed on the $mode tree" >&2
	exit "$rc"
fi
