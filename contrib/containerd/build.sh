#!/usr/bin/env bash
# Builds containerd with pin.patch applied: a writable copy of the module
# source of containerd VERSION (from the Go module cache), the patch, a
# requirement on this checkout's github.com/sandboxpin/sandboxpin, then
# `go build` of cmd/containerd with the flags and tags of the stock build in
# scripts/deps.sh, so that the Go build cache serves every package the patch
# does not reach.
#
#   bash contrib/containerd/build.sh OUT [VERSION] [SRC]
#
# OUT receives containerd, go.mod.diff and go.sum.diff (what the patch costs
# containerd's module graph) and modules.diff (`go list -m all` before and
# after: only github.com/sandboxpin/sandboxpin may appear). SRC (default
# OUT.src) is the work tree, kept for reading. The build fails when the patch
# does not apply, or when any requirement other than sandboxpin changes.
set -euo pipefail

out=${1:?usage: build.sh OUT [VERSION] [SRC]}
version=${2:-v2.4.2}
src=${3:-$out.src}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# The tags of the stock build (scripts/deps.sh CONTAINERD_TAGS): the same
# tags and -trimpath give the same build cache keys for the dependencies.
tags=${CONTAINERD_TAGS:-no_btrfs no_devmapper no_zfs}
# The version scripts/deps.sh builds the root module at: unpublished, so the
# replace below points it at this checkout.
sbp=github.com/sandboxpin/sandboxpin
sbpv=v0.0.0-00010101000000-000000000000

# No workspace: containerd is the main module, as in its own repository.
export GOWORK=off GOFLAGS=-mod=mod

mod=$(go mod download -json "github.com/containerd/containerd/v2@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$mod" ] || { echo "build.sh: containerd $version not in the module cache" >&2; exit 1; }
rm -rf "$src" && mkdir -p "$(dirname "$src")" "$(dirname "$out")"
cp -r "$mod" "$src" && chmod -R u+w "$src"
cd "$src"
go list -m all >"$out.modules.before"
cp go.mod go.mod.orig && cp go.sum go.sum.orig
# git apply works outside a repository; --verbose names each file.
git apply --verbose "$here/pin.patch"
go mod edit -require="$sbp@$sbpv" -replace="$sbp=$repo"
# Adds the go.sum lines the new import needs and nothing else: no tidy, which
# would also rewrite lines the patch has nothing to do with.
go build -trimpath -tags "$tags" -o "$out.containerd.tmp" ./cmd/containerd
go list -m all >"$out.modules.after"

mkdir -p "$out"
diff -u go.mod.orig go.mod >"$out/go.mod.diff" || true
diff -u go.sum.orig go.sum >"$out/go.sum.diff" || true
diff "$out.modules.before" "$out.modules.after" >"$out/modules.diff" || true
rm -f "$out.modules.before" "$out.modules.after"
# Only sandboxpin may be added; a changed version of anything else is a raised
# requirement that every containerd build would inherit.
if grep '^[<>]' "$out/modules.diff" | grep -v "^> $sbp $sbpv => $repo\$"; then
	echo "build.sh: the patch changes containerd's module graph beyond $sbp (above)" >&2
	exit 1
fi
mv "$out.containerd.tmp" "$out/containerd"
