#!/usr/bin/env bash
# Runs containerd's own tests of the packages contrib/containerd's patches
# touch (internal/cri/server/images for pin.patch, internal/cri/server for
# status.patch; both in every run) on fresh copies of the containerd
# module: stock, then with pin.patch alone, status.patch alone and both,
# each as contrib/lib.sh's apply_patch applies them for build.sh.
# scripts/test.sh runs it after scripts/deps.sh; the flags and tags are
# build.sh's (CONTAINERD_TAGS, -trimpath), so that the Go build cache of the
# containerd builds serves every package the tests share with them.
#
#   bash contrib/containerd/test.sh                       # every set
#   bash contrib/containerd/test.sh stock status.patch    # the sets named
#
# A set is "stock" or a list of patch file names, in order. The trees are
# not those build.sh left under $SANDBOXPIN_CACHE/src: their go.mod points
# at whichever checkout built them. containerd's CI runs these packages with
# `make test` (go test of ./..., Makefile at v2.4.2); tests that need root
# are gated there by -test.root, which is not given here.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=contrib/lib.sh
. "$here/../lib.sh"

version=${CONTAINERD_VERSION:-v2.4.2}
# scripts/deps.sh's CONTAINERD_TAGS, as build.sh uses them.
tags=${CONTAINERD_TAGS:-no_btrfs no_devmapper no_zfs}
pkgs=(./internal/cri/server/images/ ./internal/cri/server/)
# The tests that fail on the stock tree of v2.4.2 here (root, no network,
# CI's sandbox), each by its whole name, with the reason. None does: stock
# v2.4.2 passes both packages as root on this machine (2026-12-04); two
# subtests of TestCgroupNamespace skip themselves on a cgroup v1 host
# (internal/cri/server/container_create_linux_test.go, v2.4.2: "requires
# cgroups v2").
skip=()
sets=(stock "pin.patch" "status.patch" "pin.patch status.patch")
[ "$#" = 0 ] || sets=("$@")

work=$(mktemp -d "${TMPDIR:-/tmp}/sandboxpin-containerd-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

# counts JSON: per package, from go test -json, the top-level tests and
# the subtests (a "/" in the name) that passed, failed and were skipped,
# and the package's own time.
counts() {
	[ -f "$1" ] || return 0 # no tree to test
	sed -n 's/^{"Time":"[^"]*","Action":"\(pass\|fail\|skip\)","Package":"\([^"]*\)"\(,"Test":"\([^"]*\)"\)\{0,1\},"Elapsed":\([0-9.]*\).*/\1 \2 \4 \5/p' "$1" |
		awk '
		NF == 3 { pkgs[++n] = $2; res[$2] = $1; el[$2] = $3; next }
		{ kind = index($3, "/") ? "sub" : "top"; c[$2, kind, $1]++ }
		END {
			for (i = 1; i <= n; i++) {
				p = pkgs[i]
				printf "  %-4s %-52s %3d tests (%d failed, %d skipped), %3d subtests (%d failed, %d skipped), %.1fs\n", res[p], p,
					c[p, "top", "pass"] + c[p, "top", "fail"] + c[p, "top", "skip"], c[p, "top", "fail"], c[p, "top", "skip"],
					c[p, "sub", "pass"] + c[p, "sub", "fail"] + c[p, "sub", "skip"], c[p, "sub", "fail"], c[p, "sub", "skip"], el[p]
			}
		}'
}

failed=()
i=0
for set in "${sets[@]}"; do
	i=$((i + 1))
	src=$work/$i
	start=$SECONDS
	copy_module "github.com/containerd/containerd/v2@$version" "$src" >/dev/null
	echo "containerd $version, ${set/#stock/stock (no patch)}"
	# set -e holds in the subshell (it would not in `( ... ) || rc=$?`).
	set +e
	(
		set -e
		cd "$src"
		if [ "$set" != stock ]; then
			PATCHES=$set apply_patch "$here" "$work/$i.out" 2>&1 | sed 's/^/  /'
		fi
		echo "  tree ready in $((SECONDS - start))s"
		start=$SECONDS
		args=(-trimpath -tags "$tags" -count=1 -json)
		[ "${#skip[@]}" = 0 ] || args+=(-skip "$(IFS='|' && echo "${skip[*]}")")
		trc=0
		go test "${args[@]}" "${pkgs[@]}" >"$work/$i.json" 2>"$work/$i.err" || trc=$?
		echo "  go test in $((SECONDS - start))s"
		exit "$trc"
	)
	rc=$?
	set -e
	counts "$work/$i.json"
	if [ "$rc" != 0 ]; then
		failed+=("$set")
		# the output of what failed: a patch that did not apply, a build
		# error, or the failed tests' lines (go test -json's Output,
		# unquoted enough to read)
		cat "$work/$i.err" 2>/dev/null || true
		touch "$work/$i.json"
		sed -n 's/.*"Action":"fail","Package":"[^"]*","Test":"\([^"]*\)".*/"Test":"\1","Output"/p' "$work/$i.json" |
			sort -u >"$work/$i.failed"
		grep -e '"Action":"build-output"' -e '"Action":"output"' "$work/$i.json" |
			grep -F -e '"Action":"build-output"' -f "$work/$i.failed" |
			sed 's/.*"Output":"\(.*\)"}$/\1/; s/\\t/\t/g; s/\\n$//; s/\\"/"/g' | head -n 200 || true
	fi
	rm -rf "$src"
done
if [ "${#failed[@]}" != 0 ]; then
	echo "contrib/containerd/test.sh: containerd's tests failed on: ${failed[*]}" >&2
	exit 1
fi
