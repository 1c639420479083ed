#!/usr/bin/env bash
# Runs kubeadm's own tests of the packages the patches touch, on a fresh tree
# for each step of the series: compare.patch alone (sent first), then
# compare.patch and fallback.patch. Each tree is the module source of
# k8s.io/kubernetes VERSION with the published staging modules
# (contrib/kubeadm/tree.sh, as build.sh builds it), the patches and the
# requirement on this checkout's sandboxpin. scripts/test.sh runs it after
# scripts/deps.sh; -trimpath, as build.sh builds, so that the Go build cache of
# the kubeadm builds serves every package the tests share with kubeadm.
#
#   bash contrib/kubeadm/test.sh                          # both steps
#   PATCHES=compare.patch bash contrib/kubeadm/test.sh    # one set of patches
#   bash contrib/kubeadm/test.sh stock                    # no patch applied
#
# VERSION is $SANDBOXPIN_KUBEADM_VERSION (scripts/deps.sh's env.sh), default
# v1.37.2. The trees are not the ones build.sh left under
# $SANDBOXPIN_CACHE/src: their go.mod points at whichever checkout built them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = stock ]; then
	series=(stock)
elif [ -n "${PATCHES:-}" ]; then
	series=("$PATCHES")
else
	series=("compare.patch" "compare.patch fallback.patch")
fi
# shellcheck source=contrib/lib.sh
. "$here/../lib.sh"
# shellcheck source=contrib/testlib.sh
. "$here/../testlib.sh"
# shellcheck source=contrib/kubeadm/tree.sh
. "$here/tree.sh"

version=${SANDBOXPIN_KUBEADM_VERSION:-v1.37.2}
pkgs=(./cmd/kubeadm/app/preflight/... ./cmd/kubeadm/app/util/runtime/...)
# Tests to skip, by whole name, each with the reason: none. Every test of
# these packages passes on the stock tree of v1.37.2 in CI's sandbox (root,
# no systemd, no network), as `test.sh stock` shows.
skip=()

work=$(mktemp -d "${TMPDIR:-/tmp}/sandboxpin-kubeadm-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

# run_tests N PATCHES: kubeadm's tests on a tree in $work/N with PATCHES
# applied ("stock": none).
run_tests() {
	local n=$1 start=$SECONDS rc=0 args=(-trimpath -count=1 -v)
	PATCHES=$2
	echo "-- kubeadm $version, $PATCHES"
	(
		kubeadm_tree "$version" "$work/$n" >/dev/null
		[ "$PATCHES" = stock ] || apply_patch "$here" "$work/$n.out" 2>&1 | sed 's/^/  /'
	)
	echo "tree ready in $((SECONDS - start))s"
	start=$SECONDS
	[ "${#skip[@]}" = 0 ] || args+=(-skip "$(IFS='|' && echo "${skip[*]}")")
	(cd "$work/$n" && go test "${args[@]}" "${pkgs[@]}") >"$work/$n.log" 2>&1 || rc=$?
	go_test_summary "$work/$n.log"
	echo "go test in $((SECONDS - start))s"
	if [ "$rc" != 0 ]; then
		go_test_failures "$work/$n.log"
		echo "contrib/kubeadm/test.sh: kubeadm's tests failed with $PATCHES" >&2
		return "$rc"
	fi
}

start=$SECONDS
for i in "${!series[@]}"; do
	run_tests "$i" "${series[$i]}"
done
echo "contrib/kubeadm/test.sh: ${#series[@]} tree(s) in $((SECONDS - start))s"
