#!/usr/bin/env bash
# Builds kubeadm with pin.patch applied: a writable copy of the module source
# of k8s.io/kubernetes VERSION (from the Go module cache), each ./staging
# module of its go.mod replaced by the published v0.MINOR.PATCH (the module
# archive holds no staging/src, as scripts/deps.sh's build_k8s does for the
# stock build), the patch, a requirement on this checkout's
# github.com/sandboxpin/sandboxpin, then `go build ./cmd/kubeadm` with the
# flags and version stamp of the stock build.
#
#   bash contrib/kubeadm/build.sh OUT [VERSION] [SRC]
#
# OUT receives kubeadm, go.mod.diff and go.sum.diff (what the patch costs
# kubernetes' module graph, the staging replaces already in place) and
# modules.diff (`go list -m -e all` before and after). SRC (default OUT.src)
# is the work tree, kept for reading and for
# `go test ./cmd/kubeadm/app/preflight/`. The build fails when the patch does
# not apply, or when the module graph changes beyond sandboxpin
# (contrib/lib.sh).
set -euo pipefail

out=${1:?usage: build.sh OUT [VERSION] [SRC]}
version=${2:-v1.37.2}
src=${3:-$out.src}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=contrib/lib.sh
. "$here/../lib.sh"

copy_module "k8s.io/kubernetes@$version" "$src" >/dev/null
cd "$src"
staging=()
while read -r m; do
	staging+=("-replace=$m=$m@v0.${version#v1.}")
done < <(sed -n 's/^[[:space:]]*\(k8s\.io\/[^ ]*\) => \.\/staging.*/\1/p' go.mod)
go mod edit "${staging[@]}"
# The go.sum lines of the published staging modules, so that go.sum.diff
# shows only what the patch adds.
go list -deps ./cmd/kubeadm >/dev/null
apply_patch "$here" "$out"
minor=${version#v1.}
minor=${minor%%.*}
go build -trimpath -ldflags "-X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
	-o "$out.kubeadm.tmp" ./cmd/kubeadm
check_graph "$out" "$out.kubeadm.tmp"
mv "$out.kubeadm.tmp" "$out/kubeadm"
