#!/usr/bin/env bash
# Runs a go command in one module of this repository on its own, outside the
# workspace (go.work), the way an importer's build sees it: with the
# requirement versions its go.mod declares (the floor). The sibling modules
# it requires at the placeholder version are replaced by their local
# directories in a temporary copy of go.mod (-modfile), so the committed
# go.mod carries no replace directive (`go install …/cmd/sandboxpin@latest`
# refuses one).
#
#   bash scripts/modules.sh list                  # the module directories
#   bash scripts/modules.sh tidy DIR [-diff]      # go mod tidy for DIR (-diff: check only)
#   bash scripts/modules.sh floor DIR ARGS...     # go ARGS... in DIR, declared versions
#   bash scripts/modules.sh newest DIR ARGS...    # go get -u ./..., then go ARGS...
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
MODULE=github.com/sandboxpin/sandboxpin

# The modules, root first; go.work lists the same.
modules() { (cd "$top" && GOWORK=$top/go.work go work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p'); }

# modfile DIR TMP: write TMP/go.mod and TMP/go.sum for DIR with a replace
# for every sibling module.
modfile() {
	local dir=$1 tmp=$2 m path
	cp "$top/$dir/go.mod" "$tmp/go.mod"
	if [ -f "$top/$dir/go.sum" ]; then cp "$top/$dir/go.sum" "$tmp/go.sum"; else : >"$tmp/go.sum"; fi
	for m in $(modules); do
		path=$MODULE${m#.}
		[ "${m#./}" = "${dir#./}" ] && continue
		go mod edit -replace="$path=$top/$m" "$tmp/go.mod"
	done
}

# unreplace TMP: drop the replaces that modfile added.
unreplace() {
	local tmp=$1 m
	for m in $(modules); do
		go mod edit -dropreplace="$MODULE${m#.}" "$tmp/go.mod"
	done
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
list) modules ;;
tidy)
	dir=$1
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	modfile "$dir" "$tmp"
	(cd "$top/$dir" && GOWORK=off GOFLAGS=-mod=mod go mod tidy -modfile="$tmp/go.mod")
	unreplace "$tmp"
	if [ "${2:-}" = -diff ]; then
		rc=0
		diff -u "$top/$dir/go.mod" "$tmp/go.mod" || rc=1
		diff -u "$top/$dir/go.sum" "$tmp/go.sum" || rc=1
		[ $rc = 0 ] || echo "$dir: go.mod/go.sum are not tidy; run: bash scripts/modules.sh tidy $dir"
		exit $rc
	fi
	cp "$tmp/go.mod" "$top/$dir/go.mod"
	cp "$tmp/go.sum" "$top/$dir/go.sum"
	;;
floor | newest)
	dir=$1
	shift
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	modfile "$dir" "$tmp"
	cd "$top/$dir"
	if [ "$cmd" = newest ]; then
		# Every direct requirement but the sibling modules (which have no
		# published versions to upgrade to); -u takes their dependencies
		# along.
		reqs=$(GOWORK=off GOFLAGS="-modfile=$tmp/go.mod" go list -m -f '{{if not (or .Main .Indirect)}}{{.Path}}{{end}}' all | grep -v "^$MODULE" || true)
		# A requirement whose newest version declares another module path
		# (github.com/google/cel-go v0.32.0 is cel.dev/cel-go) cannot be
		# upgraded under its name: it stays at its version, and is said.
		get() { GOWORK=off GOFLAGS=-mod=mod go get -modfile="$tmp/go.mod" -t "$@" >/dev/null 2>"$tmp/get.err"; }
		# shellcheck disable=SC2086 # a word list
		until get -u $reqs; do
			moved=$(sed -n 's/^[[:space:]]*but was required as: //p' "$tmp/get.err" | sort -u)
			if [ -n "$moved" ] && printf '%s\n' $reqs | grep -qxF "$moved"; then
				echo "$dir: $moved kept at its version: its newest declares another module path"
				reqs=$(printf '%s\n' $reqs | grep -vxF "$moved" || true)
				continue
			fi
			# A dependency's newest version may need a newer Go than this
			# one (k8s.io/kube-openapi's HEAD wanted go 1.27 under 1.26.8):
			# then upgrade the direct requirements only, to their latest
			# releases, and say so.
			grep -q 'requires go >=' "$tmp/get.err" || { cat "$tmp/get.err" >&2; exit 1; }
			echo "$dir: $(grep -m1 'requires go >=' "$tmp/get.err"); upgrading the direct requirements only"
			# shellcheck disable=SC2046,SC2086 # a word list
			get $(printf '%s@latest ' $reqs) || { cat "$tmp/get.err" >&2; exit 1; }
			break
		done
		cat "$tmp/get.err" >&2
		# go get records the sums of the modules it was asked for; the
		# packages their new versions import may need more (seen with
		# go-containerregistry's newest in ./internal).
		GOWORK=off GOFLAGS=-mod=mod go mod tidy -modfile="$tmp/go.mod" >/dev/null
		echo "$dir: newest requirements:"
		GOWORK=off go list -modfile="$tmp/go.mod" -m -f '{{if not .Main}}  {{.Path}} {{.Version}}{{end}}' all | grep -v "^  $MODULE" | head -n 200 >"$tmp/list" || true
		wc -l <"$tmp/list" | xargs printf '  (%s modules in the build list)\n'
	fi
	# Through GOFLAGS, so that go commands the tests run see it too.
	GOWORK=off GOFLAGS="-modfile=$tmp/go.mod" go "$@"
	;;
*)
	sed -n '2,13p' "$0"
	exit 2
	;;
esac
