#!/usr/bin/env bash
# The project's one test command (README.md, "Quick start"). It installs what
# the tests need, then runs, failing on the first problem:
#   gofmt, go vet, golangci-lint, go mod tidy -diff,
#   go test -race -shuffle=on ./... (live tests start their own containerd),
#   and a short run of every Fuzz target.
#
# As root (CI, a disposable VM) it installs containerd 1.6 from Debian and
# builds containerd 2.x, ctr 2.x and crictl from the Go module proxy into
# $SANDBOXPIN_CACHE, and the live tests FAIL when a runtime is missing.
# Without root they skip with a message. Environment:
#   SANDBOXPIN_CACHE               build cache (default ~/.cache/sandboxpin)
#   SANDBOXPIN_REQUIRE_RUNTIMES    1 (default as root) or 0
#   FUZZTIME                       per fuzz target (default 10s; 0 skips)
set -euo pipefail
cd "$(dirname "$0")/.."

export SANDBOXPIN_CACHE=${SANDBOXPIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sandboxpin}
FUZZTIME=${FUZZTIME:-10s}
CONTAINERD2_VERSION=v2.2.9
CRICTL_VERSION=v1.37.0
GOLANGCI_LINT_VERSION=v2.15.0
CONTAINERD_TAGS="no_btrfs no_devmapper no_zfs"

step() { printf '\n== %s (%ss)\n' "$*" "$SECONDS"; }

# gobuild DIR PKG@VERSION: go install PKG at VERSION into DIR unless DIR
# holds that build already (read from the binary's build info).
gobuild() {
	local dir=$1 pkg=${2%@*} version=${2#*@} bin
	bin=$dir/$(basename "$pkg")
	if [ -x "$bin" ] && go version -m "$bin" 2>/dev/null | grep -q "^[[:space:]]*mod[[:space:]].*[[:space:]]$version[[:space:]]"; then
		return 0
	fi
	echo "building $pkg@$version into $dir"
	mkdir -p "$dir"
	GOBIN=$dir GOFLAGS=-mod=mod go install -tags "$CONTAINERD_TAGS" "$pkg@$version"
}

step "tools"
gobuild "$SANDBOXPIN_CACHE/bin" "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
if [ "$(id -u)" = 0 ]; then
	export SANDBOXPIN_REQUIRE_RUNTIMES=${SANDBOXPIN_REQUIRE_RUNTIMES:-1}
	if ! command -v containerd >/dev/null || ! command -v ctr >/dev/null || ! command -v runc >/dev/null; then
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containerd >/dev/null
	fi
	gobuild "$SANDBOXPIN_CACHE/bin" "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD2_VERSION"
	gobuild "$SANDBOXPIN_CACHE/ctr2" "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD2_VERSION"
	gobuild "$SANDBOXPIN_CACHE/bin" "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"
else
	export SANDBOXPIN_REQUIRE_RUNTIMES=${SANDBOXPIN_REQUIRE_RUNTIMES:-0}
	echo "not root: live containerd tests will skip (run this script as root to include them)"
fi
# Binaries are named explicitly: the cache holds containerd 2.x, which must
# not shadow Debian's containerd 1.6 on PATH.
export SANDBOXPIN_CONTAINERD1=${SANDBOXPIN_CONTAINERD1:-$(command -v containerd || echo /usr/bin/containerd)}
export SANDBOXPIN_CONTAINERD2=${SANDBOXPIN_CONTAINERD2:-$SANDBOXPIN_CACHE/bin/containerd}
export SANDBOXPIN_CRICTL=${SANDBOXPIN_CRICTL:-$SANDBOXPIN_CACHE/bin/crictl}

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	printf 'gofmt would change:\n%s\n' "$unformatted"
	exit 1
fi

step "go mod tidy -diff"
go mod tidy -diff

step "go vet"
go vet ./...

step "golangci-lint"
"$SANDBOXPIN_CACHE/bin/golangci-lint" run ./...

step "go test -race -shuffle=on ./..."
go test -race -shuffle=on -timeout 15m ./...

if [ "$FUZZTIME" != 0 ]; then
	step "fuzz, $FUZZTIME per target"
	for p in $(go list ./...); do
		for f in $(go test -list '^Fuzz' "$p" | grep '^Fuzz' || true); do
			echo "-- $p $f"
			go test -run='^$' -fuzz="^$f\$" -fuzztime="$FUZZTIME" -fuzzminimizetime=5s "$p"
		done
	done
fi
step "all passed"
