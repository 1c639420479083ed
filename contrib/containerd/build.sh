#!/usr/bin/env bash
# Builds containerd with the patches $PATCHES names (default pin.patch;
# PATCHES=status.patch or PATCHES="pin.patch status.patch"): a writable copy
# of the module source of containerd VERSION (from the Go module cache), the
# patches, a requirement on this checkout's github.com/sandboxpin/sandboxpin
# when they import it (pin.patch does, status.patch does not), then
# `go build` of cmd/containerd with the flags and tags of the stock build in
# scripts/deps.sh, so that the Go build cache serves every package the
# patches do not reach.
#
#   bash contrib/containerd/build.sh OUT [VERSION] [SRC]
#
# OUT receives containerd, go.mod.diff and go.sum.diff (what the patches
# cost containerd's module graph) and modules.diff (`go list -m -e all`
# before and after). SRC (default OUT.src) is the work tree, kept for
# reading. The build fails when a patch does not apply, or when the module
# graph changes beyond sandboxpin (at all, without it: contrib/lib.sh).
set -euo pipefail

out=${1:?usage: build.sh OUT [VERSION] [SRC]}
version=${2:-v2.4.2}
src=${3:-$out.src}
here=$(cd "$(dirname "$0")" && pwd)
# The tags of the stock build (scripts/deps.sh CONTAINERD_TAGS): the same
# tags and -trimpath give the same build cache keys for the dependencies.
tags=${CONTAINERD_TAGS:-no_btrfs no_devmapper no_zfs}
# shellcheck source=contrib/lib.sh
. "$here/../lib.sh"

copy_module "github.com/containerd/containerd/v2@$version" "$src" >/dev/null
cd "$src"
apply_patch "$here" "$out"
# Adds the go.sum lines a new import needs and nothing else: no tidy, which
# would also rewrite lines the patches have nothing to do with.
go build -trimpath -tags "$tags" -o "$out.containerd.tmp" ./cmd/containerd
check_graph "$out" "$out.containerd.tmp"
mv "$out.containerd.tmp" "$out/containerd"
