#!/usr/bin/env bash
# What adopting sandboxpin's pure packages costs each consumer listed in
# scripts/consumers.txt (see scripts/adoption/main.go). Fails on any forced
# upgrade of a requirement or of the go directive, and when a new go 1.25
# importer of criinfo/cri gets a higher go line or the internal module in its
# graph (crishim's may reach go 1.26.0: see scripts/adoption/main.go).
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./scripts/adoption -consumers scripts/consumers.txt "$@"
