#!/usr/bin/env bash
# The long soak of `sandboxpin shim` under a real kubelet (not CI; CI runs
# 90 s of the same test): the kubelet v1.37.2, the shim started from
# deploy/systemd/sandboxpin-shim.service's ExecStart line and containerd
# 1.6.20, a static pod added and the one before removed every 10 s, image
# GC rounds every 10 s. It fails when the shim's goroutines at the end are
# more than after minute one, or its resident memory more than 10 % more
# than its highest sample from minute one to the middle of the soak, or
# when a call failed through the shim that the runtime did not fail
# (internal/kubelettest/soak_live_test.go, TestSoak). Run as root after
# scripts/deps.sh.
#
#   bash scripts/soak.sh            # 10 minutes
#   SANDBOXPIN_SOAK=30m bash scripts/soak.sh
set -euo pipefail
cd "$(dirname "$0")/../internal"
export SANDBOXPIN_CACHE=${SANDBOXPIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sandboxpin}
# shellcheck disable=SC1091 # written by deps.sh
. "$SANDBOXPIN_CACHE/env.sh"
export SANDBOXPIN_SOAK=${SANDBOXPIN_SOAK:-10m}
export SANDBOXPIN_REQUIRE_RUNTIMES=1
exec go test -race -count=1 -run '^TestSoak$' -timeout 2h -v ./kubelettest
