#!/usr/bin/env bash
# Builds cri-dockerd with pin.patch applied: a writable copy of the module
# source of cri-dockerd VERSION (from the Go module cache; `go install`
# refuses the module, whose go.mod has replace directives), the patch, a
# requirement on this checkout's github.com/sandboxpin/sandboxpin, then
# `go build` with the flags and version stamp of the stock build in
# scripts/deps.sh (build_cridockerd), so that the Go build cache serves every
# package the patch does not reach.
#
#   bash contrib/cri-dockerd/build.sh OUT [VERSION] [SRC]
#
# OUT receives cri-dockerd, go.mod.diff and go.sum.diff (what the patch costs
# cri-dockerd's module graph) and modules.diff (`go list -m -e all` before
# and after). SRC (default OUT.src) is the work tree, kept for reading and
# for `go test ./core/`. The build fails when the patch does not apply, or
# when the module graph changes beyond sandboxpin (contrib/lib.sh).
set -euo pipefail

out=${1:?usage: build.sh OUT [VERSION] [SRC]}
version=${2:-v0.4.4}
src=${3:-$out.src}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=contrib/lib.sh
. "$here/../lib.sh"

commit=$(copy_module "github.com/Mirantis/cri-dockerd@$version" "$src")
cd "$src"
apply_patch "$here" "$out"
go build -trimpath -ldflags "-X github.com/Mirantis/cri-dockerd/cmd/version.Version=${version#v} -X github.com/Mirantis/cri-dockerd/cmd/version.GitCommit=${commit:0:7}" -o "$out.cri-dockerd.tmp" .
check_graph "$out" "$out.cri-dockerd.tmp"
mv "$out.cri-dockerd.tmp" "$out/cri-dockerd"
