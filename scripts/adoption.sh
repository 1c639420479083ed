#!/usr/bin/env bash
# What adopting sandboxpin's pure packages costs each consumer listed in
# scripts/consumers.txt (see scripts/adoption/main.go). Fails on any forced
# upgrade of a requirement or of the go directive.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./scripts/adoption -consumers scripts/consumers.txt "$@"
