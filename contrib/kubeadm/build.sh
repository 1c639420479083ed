#!/usr/bin/env bash
# Builds kubeadm with the patches $PATCHES names (default "compare.patch
# fallback.patch"; README.md): the tree of contrib/kubeadm/tree.sh (the module
# source of k8s.io/kubernetes VERSION with the published staging modules), the
# patches and a requirement on this checkout's github.com/sandboxpin/sandboxpin
# (apply_patch in contrib/lib.sh), then `go build ./cmd/kubeadm` with the
# flags and version stamp of the stock build.
#
#   bash contrib/kubeadm/build.sh OUT [VERSION] [SRC]
#   PATCHES=compare.patch bash contrib/kubeadm/build.sh OUT
#
# OUT receives kubeadm, go.mod.diff and go.sum.diff (what the patches cost
# kubernetes' module graph, the staging replaces already in place),
# modules.diff (`go list -m -e all` before and after) and linked.diff (the
# modules kubeadm's packages come from, before and after: a module in
# modules.diff but not here is in the graph only). SRC (default OUT.src)
# is the work tree, kept for reading. The build fails when a patch does not
# apply, or when the module graph changes beyond sandboxpin (contrib/lib.sh).
# contrib/kubeadm/test.sh runs kubeadm's own tests on a tree of its own.
set -euo pipefail

out=${1:?usage: build.sh OUT [VERSION] [SRC]}
version=${2:-v1.37.2}
src=${3:-$out.src}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=contrib/lib.sh
. "$here/../lib.sh"
# shellcheck source=contrib/kubeadm/tree.sh
. "$here/tree.sh"

mkdir -p "$(dirname "$out")"
kubeadm_tree "$version" "$src" >"$out.linked.before"
apply_patch "$here" "$out"
minor=${version#v1.}
minor=${minor%%.*}
go build -trimpath -ldflags "-X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
	-o "$out.kubeadm.tmp" ./cmd/kubeadm
check_graph "$out" "$out.kubeadm.tmp"
linked_modules | diff "$out.linked.before" - >"$out/linked.diff" || true
rm -f "$out.linked.before"
mv "$out.kubeadm.tmp" "$out/kubeadm"
