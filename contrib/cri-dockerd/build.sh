#!/usr/bin/env bash
# Builds cri-dockerd with the patches $PATCHES names (default pin.patch): the
# tree of contrib/cri-dockerd/tree.sh (the module source of cri-dockerd
# VERSION), the patches and a requirement on this checkout's
# github.com/sandboxpin/sandboxpin (apply_patch in contrib/lib.sh), then
# `go build` with the flags and version stamp of the stock build in
# scripts/deps.sh (build_cridockerd), so that the Go build cache serves every
# package the patch does not reach.
#
#   bash contrib/cri-dockerd/build.sh OUT [VERSION] [SRC]
#
# OUT receives cri-dockerd, go.mod.diff and go.sum.diff (what the patch costs
# cri-dockerd's module graph) and modules.diff (`go list -m -e all` before
# and after). SRC (default OUT.src) is the work tree, kept for reading. The
# build fails when the patch does not apply, or when the module graph changes
# beyond sandboxpin (contrib/lib.sh). contrib/cri-dockerd/test.sh runs
# cri-dockerd's own tests on a tree of its own.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=contrib/lib.sh
. "$here/../lib.sh"
# shellcheck source=contrib/cri-dockerd/tree.sh
. "$here/tree.sh"

out=${1:?usage: build.sh OUT [VERSION] [SRC]}
version=${2:-$CRI_DOCKERD_VERSION}
src=${3:-$out.src}

cridockerd_tree "$version" "$src"
apply_patch "$here" "$out"
go build "${cridockerd_flags[@]}" -o "$out.cri-dockerd.tmp" .
check_graph "$out" "$out.cri-dockerd.tmp"
mv "$out.cri-dockerd.tmp" "$out/cri-dockerd"
