#!/usr/bin/env bash
# Releases every module of this repository at one version, and rehearses it.
#
#   bash scripts/release.sh VERSION [DIR]      # tag, then build the artifacts into DIR (default dist/VERSION)
#   bash scripts/release.sh artifacts VERSION DIR   # the artifacts of tagged VERSION again
#   bash scripts/release.sh rehearse           # CI: all of it in a temporary clone, as a consumer sees it,
#                                              # every module zip under 1 MiB
#   bash scripts/release.sh apicheck VERSION   # the API check alone (see below)
#   bash scripts/release.sh frozen [-w]        # check (-w: write) the API of reference and pin in CHANGELOG.md
#
# VERSION (such as v0.1.0) on a clean checkout: in a temporary clone of HEAD
# (the checkout is untouched; the tags are fetched back) it sets every module's requirement on its
# siblings from the placeholder v0.0.0-00010101000000-000000000000 (which
# only go.work's replaces resolve) to VERSION and runs go mod tidy per
# module with GOWORK=off, siblings before the modules that require them,
# each sibling served at VERSION by a file-system module proxy (GOPROXY=
# file://…) made from its commit, as the go command would zip it. It
# commits that as a child of HEAD, tags
# every module (VERSION for the root, DIR/VERSION for the module in DIR),
# checks that no tagged go.mod carries the placeholder or a replace
# directive, and prints what to push. Main keeps the placeholders.
#
# Before it tags, it compares the API of each public module (the root,
# reference, pin, criinfo/cri, crishim, rollout) with the previous release's tag of
# that module (pin/v0.1.0 for pin), by apidiff (golang.org/x/exp/cmd/apidiff,
# $SANDBOXPIN_APIDIFF, built by scripts/deps.sh), under README's stability
# promise: reference and pin are frozen since v0.1.0, so any release that
# keeps their major version and changes their API incompatibly is refused;
# the other public modules stay v0.x, where a minor release may change the Go
# API incompatibly when CHANGELOG.md's section for the version names each
# such package (`resolve`, `criinfo/cri`, ...), and a patch release may not.
# A new major version may break. The first release has nothing to compare
# with. CHANGELOG.md lists the frozen API (`go doc -short` of reference and
# pin) between the markers that `release.sh frozen -w` rewrites; the
# rehearsal checks it.
#
# The artifacts come from the tags alone: a module proxy made from the
# tagged commits, `go install …/cmd/sandboxpin@VERSION` through it
# (CGO_ENABLED=0, -trimpath; `sandboxpin version` prints VERSION) for
# linux/amd64 and linux/arm64, an SPDX SBOM of each binary from its build
# info, the DaemonSet's image as an OCI layout archive (each binary at
# /sandboxpin on an empty base), and SHA256SUMS of them all. Two builds from
# one commit give the same bytes (the rehearsal checks it).
#
# Third-party modules come from GOPROXY (default: the module cache's
# download directory, then `go env GOPROXY`).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
MODULE=github.com/sandboxpin/sandboxpin
PLACEHOLDER=v0.0.0-00010101000000-000000000000
IMAGE=ghcr.io/sandboxpin/sandboxpin
ARCHES="amd64 arm64"
FALLBACK=${RELEASE_GOPROXY:-file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)}

die() { echo "release.sh: $*" >&2; exit 1; }
modules() { bash "$top/scripts/modules.sh" list; }
tagof() { local m=${2#./}; [ "$m" = . ] && echo "$1" || echo "$m/$1"; }

# siblings DIR: the sibling modules DIR's go.mod requires at the placeholder.
siblings() { sed -n "s#^[[:space:]]*\(require[[:space:]]*\)\{0,1\}\($MODULE[^[:space:]]*\) $PLACEHOLDER.*#\2#p" "$1/go.mod"; }

# dirof PATH: the directory of the sibling module PATH, as modules lists it.
dirof() { if [ "$1" = $MODULE ]; then echo .; else echo "./${1#"$MODULE"/}"; fi; }

# ordered ROOT: the modules under ROOT, each after the siblings it requires.
ordered() {
	local root=$1 done=" " m s pending next ready
	pending=$(modules | xargs)
	while [ -n "$pending" ]; do
		next=""
		for m in $pending; do
			ready=1
			for s in $(siblings "$root/$m"); do
				[[ $done == *" $(dirof "$s") "* ]] || ready=0
			done
			if [ $ready = 1 ]; then echo "$m"; done="$done$m "; else next="$next $m"; fi
		done
		[ "${next# }" != "$pending" ] || die "these modules require each other in a cycle: $pending"
		pending=${next# }
	done
}

# gocmd: the go command as an importer runs it, modules from $proxy first,
# in a module cache of its own unless RELEASE_GOMODCACHE says.
gocmd() {
	GOWORK=off GOFLAGS="-modcacherw ${RELEASE_GOFLAGS:-}" GOPROXY="file://$proxy,$FALLBACK" GONOSUMDB=$MODULE \
		GOMODCACHE=${RELEASE_GOMODCACHE:-$tmp/modcache} go "$@"
}

# uncache VERSION: remove this repository's modules at VERSION from the
# shared module cache, where tag's go mod tidy put them.
uncache() {
	local c
	c=$(go env GOMODCACHE)
	rm -rf "$c/$MODULE@$1" "$c/$MODULE"/*@"$1" "$c/$MODULE"/*/*@"$1"
	find "$c/cache/download/$MODULE" -path "*/@v/$1.*" -delete 2>/dev/null || true
	find "$c/cache/download/$MODULE" -path "*/@v/list" -exec sed -i "/^$1\$/d" {} + 2>/dev/null || true
}

# releasetool ARGS...: internal/release/releasetool, built once (and
# handed to the release.sh runs that rehearse starts).
releasetool() {
	[ -x "${RELEASETOOL:=$tmp/releasetool}" ] || (cd "$top/internal" && go build -o "$RELEASETOOL" ./release/releasetool)
	"$RELEASETOOL" "$@"
}

# check REPO VERSION: no go.mod at a tag requires the placeholder or has a
# replace directive; prints the placeholder count.
check() {
	local repo=$1 version=$2 m tag n=0 gomod
	for m in $(cd "$repo" && modules); do
		tag=$(tagof "$version" "$m")
		gomod=$(git -C "$repo" show "$tag:$(tagof go.mod "$m")")
		n=$((n + $(grep -c -- "$PLACEHOLDER" <<<"$gomod" || true)))
		! grep -Eq '^[[:space:]]*replace([[:space:]]|\()' <<<"$gomod" || die "$tag: go.mod has a replace directive"
	done
	echo "placeholder requirements in the tagged go.mod files: $n"
	[ "$n" = 0 ] || die "the placeholder is still required at $version"
}

# gitid ARGS...: git, with an identity where none is configured.
gitid() {
	git -c user.name="$(git -C "$top" config user.name || echo sandboxpin release)" \
		-c user.email="$(git -C "$top" config user.email || echo release@sandboxpin.invalid)" "$@"
}

# clone DIR: a clone of the checkout's repository, objects shared, HEAD
# detached at the checkout's HEAD. x/mod/zip.CreateFromVCS wants a .git
# directory, which a linked worktree (like this checkout may be) has not.
clone() {
	git clone -q --shared --no-checkout "$top" "$1"
	git -C "$1" checkout -q --detach "$(git -C "$top" rev-parse HEAD)"
}

# PUBLIC are the modules whose API a release keeps; cmd is a program,
# internal, deploy and examples are never imported. FROZEN are those whose
# API is frozen at v0.1.0 (README, "Stability").
PUBLIC=". ./reference ./pin ./criinfo/cri ./crishim ./rollout"
FROZEN="./reference ./pin"

# previous VERSION: the newest release tag of the root module below
# VERSION, "" when there is none.
previous() {
	local tags
	# No tag yet is no error (grep finds nothing).
	tags=$(git -C "$top" tag --list 'v*' | grep -E '^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$' || true)
	# sort -V orders "~" before anything, as semver orders a pre-release
	# before its release: v0.1.0-rc.1 sorts as v0.1.0~rc.1.
	printf '%s\n%s\n' "$tags" "$1" | sed '/^$/d; s/-/~/' | sort -V | sed 's/~/-/' | sed -n "/^$1\$/q; p" | tail -n 1
}

# changelogged VERSION PKG: CHANGELOG.md's section for VERSION ("## VERSION"
# or "## VERSION (unreleased)") names package PKG (`PKG` or `PKG.Name`).
changelogged() {
	sed -n "/^## $1\( \|\$\)/,/^## /p" "$top/CHANGELOG.md" | grep -q "\`$2[\`.]"
}

# apicheck VERSION: refuses VERSION when a public module's API changed
# incompatibly against its previous release beyond what README's stability
# promise allows (see the top). The previous API is read at the commit the
# previous release was made from (its tag's parent: the same code, the
# workspace's go.work).
apicheck() {
	local version=$1 prev m path rel report refused="" frozen old
	prev=$(previous "$version")
	if [ -z "$prev" ]; then
		echo "api: no earlier release to compare $version with"
		return
	fi
	if [ "${prev%%.*}" != "${version%%.*}" ]; then
		echo "api: $version is a new major version after $prev: incompatible changes are allowed"
		return
	fi
	[ -x "${SANDBOXPIN_APIDIFF:-}" ] || die "api: \$SANDBOXPIN_APIDIFF is not set: run scripts/deps.sh and source its env.sh"
	for m in $PUBLIC; do
		frozen=0
		[[ " $FROZEN " != *" $m "* ]] || frozen=1
		old=$tmp/api-old/$(tagof "$prev" "$m")
		git clone -q --shared --no-checkout "$top" "$old"
		git -C "$old" checkout -q --detach "$(tagof "$prev" "$m")^"
		# Package by package: a module path would take in the packages of
		# every module of the workspace below it.
		for path in $(cd "$old/$m" && go list ./... | grep -v '/internal\(/\|$\)'); do
			(cd "$old/$m" && "$SANDBOXPIN_APIDIFF" -w "$tmp/api.old" "$path")
			if ! (cd "$top/$m" && go list "$path" >/dev/null 2>&1); then
				report="package removed"
			else
				report=$(cd "$top/$m" && "$SANDBOXPIN_APIDIFF" -incompatible "$tmp/api.old" "$path")
			fi
			[ -n "$report" ] || continue
			rel=${path#"$MODULE"/}
			echo "api: $path changed incompatibly since $(tagof "$prev" "$m"):"
			echo "$report" | sed 's/^/  /'
			if [ $frozen = 1 ]; then
				echo "api: $rel is frozen since v0.1.0: refused"
			elif [ "${prev%.*}" = "${version%.*}" ]; then
				echo "api: $version is a patch release: refused"
			elif ! changelogged "$version" "$rel"; then
				echo "api: CHANGELOG.md's section for $version does not name \`$rel\`: refused"
			else
				echo "api: allowed in the minor release $version of a v0 module; CHANGELOG.md names \`$rel\`"
				continue
			fi
			refused="$refused $path"
		done
	done
	[ -z "$refused" ] || die "$version keeps the major version of $prev, but the API of$refused changed incompatibly: release a new major version, or keep the old API beside the new (README, \"Stability\")"
	echo "api: the public modules keep the API of $prev that README's stability section promises"
}

# frozendoc: the API of the frozen modules as CHANGELOG.md lists it.
frozendoc() {
	local m
	echo "<!-- release.sh frozen -w writes this list: go doc -short of each frozen module -->"
	for m in $FROZEN; do
		echo
		echo "\`$MODULE/${m#./}\` (\`go doc -short\`):"
		echo
		echo '```'
		(cd "$top/$m" && go doc -short .)
		echo '```'
	done
	echo "<!-- end of the frozen API -->"
}

# frozen [-w]: CHANGELOG.md's list of the frozen API is frozendoc's (-w:
# make it so).
frozen() {
	local want got
	want=$(frozendoc)
	got=$(sed -n '/^<!-- release.sh frozen -w writes this list/,/^<!-- end of the frozen API -->/p' "$top/CHANGELOG.md")
	[ -n "$got" ] || die "CHANGELOG.md has no list of the frozen API (markers \"<!-- release.sh frozen -w ...\")"
	if [ "$got" = "$want" ]; then
		echo "frozen: CHANGELOG.md lists the API of $FROZEN as go doc -short prints it"
		return
	fi
	if [ "${1:-}" != -w ]; then
		diff <(echo "$got") <(echo "$want") || true
		die "CHANGELOG.md's list of the frozen API is not go doc -short's: run bash scripts/release.sh frozen -w"
	fi
	echo "$want" >"$tmp/frozen"
	awk -v f="$tmp/frozen" 'BEGIN { while ((getline l < f) > 0) want = want l "\n" }
		/^<!-- release.sh frozen -w writes this list/ { printf "%s", want; skip = 1; next }
		skip && /^<!-- end of the frozen API -->/ { skip = 0; next }
		!skip' "$top/CHANGELOG.md" >"$tmp/CHANGELOG.md"
	cp "$tmp/CHANGELOG.md" "$top/CHANGELOG.md"
	echo "frozen: CHANGELOG.md's list of the frozen API rewritten"
}

# tag VERSION: the release commit and its tags (see the top).
tag() {
	local version=$1 wt=$tmp/release m s base tags=""
	[[ $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] || die "$version: not a semantic version vMAJOR.MINOR.PATCH[-PRE]"
	[ -z "$(git -C "$top" status --porcelain)" ] || die "the checkout has uncommitted changes"
	for m in $(modules); do
		! git -C "$top" rev-parse -q --verify "refs/tags/$(tagof "$version" "$m")" >/dev/null || die "tag $(tagof "$version" "$m") exists"
	done
	frozen
	apicheck "$version"
	clone "$wt"
	base=$(git -C "$wt" rev-parse HEAD)
	proxy=$tmp/prepare-proxy
	# go mod tidy needs every module's test dependencies, extracted: take
	# them from the shared module cache (hundreds of MB), and remove the
	# release's own modules from it afterwards, so that a version made
	# again is never served stale.
	# shellcheck disable=SC2064 # expanded now: $version is local
	trap "uncache $version; rm -rf '$tmp'" EXIT
	for m in $(ordered "$wt"); do
		for s in $(siblings "$wt/$m"); do
			(cd "$wt/$m" && go mod edit -require="$s@$version")
		done
		(cd "$wt/$m" && RELEASE_GOMODCACHE=$(go env GOMODCACHE) gocmd mod tidy)
		# Served as committed, so that the go.sum hashes the next
		# modules record are those of the tagged commit.
		git -C "$wt" add -A
		gitid -C "$wt" commit -q --allow-empty -m "$m"
		(cd "$wt" && releasetool proxy -dir "$proxy" -version "$version" -rev HEAD "$m")
		tags="$tags $(tagof "$version" "$m")"
	done
	git -C "$wt" reset -q --soft "$base"
	gitid -C "$wt" commit -q -m "release $version: the modules require each other at $version"
	for t in $tags; do
		gitid -C "$wt" tag -a -m "sandboxpin $t" "$t"
		git -C "$top" fetch -q "$wt" "refs/tags/$t:refs/tags/$t"
	done
	check "$top" "$version"
	echo "tagged $(git -C "$top" rev-parse --short "$version^{commit}") as:$tags"
	echo "to publish: git push origin$tags"
}

# artifacts VERSION DIR: the binaries, SBOMs, image and SHA256SUMS of the
# tagged VERSION (see the top).
artifacts() {
	local version=$1 out=$2 when arch bins="" files=""
	when=$(git -C "$top" log -1 --format=%cI "$version^{commit}")
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	proxy=$tmp/proxy
	clone "$tmp/vcs"
	# shellcheck disable=SC2046 # a word list
	(cd "$tmp/vcs" && releasetool proxy -dir "$proxy" -version "$version" -time "$when" $(modules))
	for arch in $ARCHES; do
		rm -rf "$tmp/gopath"
		(cd "$tmp" && GOPATH=$tmp/gopath CGO_ENABLED=0 GOOS=linux GOARCH=$arch \
			RELEASE_GOFLAGS=-trimpath gocmd install "$MODULE/cmd/sandboxpin@$version")
		find "$tmp/gopath/bin" -type f -name sandboxpin -exec cp {} "$out/sandboxpin-linux-$arch" \;
		bins="$bins $arch=$out/sandboxpin-linux-$arch"
		files="$files $out/sandboxpin-linux-$arch"
	done
	# shellcheck disable=SC2086 # a word list
	releasetool sbom -time "$when" $files
	# shellcheck disable=SC2086 # a word list
	releasetool image -o "$out/sandboxpin-image-$version.oci.tar" -ref "$IMAGE:$version" -version "$version" $bins >"$out/image-digest"
	(cd "$out" && rm -f SHA256SUMS && sha256sum -- * >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
	echo "artifacts of $version in $out (image $IMAGE:$version@$(cat "$out/image-digest")):"
	cat "$out/SHA256SUMS"
}

# consumer NAME ARGS...: the go command of a consumer with an empty GOPATH
# and module cache of its own (NAME), modules from $proxy first.
consumer() {
	local name=$1
	shift
	GOPATH=$tmp/$name/gopath RELEASE_GOMODCACHE=$tmp/$name/modcache gocmd "$@"
}

# fetched NAME: what consumer NAME downloaded: module zips and go.mod files.
fetched() {
	local c=$tmp/$1/modcache/cache/download
	echo "$1 downloaded $(find "$c" -name '*.zip' | wc -l) module zips and $(find "$c" -name '*.mod' | wc -l) go.mod files; of this repository's modules:" \
		"$(cd "$c" && find github.com/sandboxpin -name '*.zip' -o -name '*.mod' | sed 's#/@v/#@#' | sort | xargs)"
	! find "$c/github.com/sandboxpin" -name '*.zip' | grep -Eq '/(internal|examples|deploy)/@v/' || die "$1 downloaded the test harness, examples or deploy module"
}

# bump VERSION minor|patch: the next minor or patch version.
bump() {
	local v=${1#v} major minor patch
	IFS=. read -r major minor patch <<<"${v%%-*}"
	if [ "$2" = minor ]; then echo "v$major.$((minor + 1)).0"; else echo "v$major.$minor.$((patch + 1))"; fi
}

# rehearse: release.sh in a temporary clone of HEAD, then what a consumer
# does with the release, then the artifacts once more (see the top). The
# version is the next release's: v0.1.0 (reference/v0.1.0, pin/v0.1.0, the
# frozen API) until the checkout has tags, then the next minor version. The
# shared module cache holds it while the release tidies: a lock keeps two
# runs at once apart.
rehearse() {
	local version repo=$tmp/repo start=$SECONDS out m deps latest next
	latest=$(previous v999999.0.0)
	if [ -z "$latest" ]; then version=v0.1.0; else version=$(bump "$latest" minor); fi
	exec 9>"$(go env GOMODCACHE)/cache/sandboxpin-release.lock"
	flock 9
	git clone -q --no-checkout "$top" "$repo"
	git -C "$repo" checkout -q --detach "$(git -C "$top" rev-parse HEAD)"
	releasetool sbom # no binary: builds the tool once, for the release.sh runs below
	export RELEASETOOL
	(cd "$repo" && bash scripts/release.sh "$version" "$tmp/dist1")
	echo "== release and artifacts: $((SECONDS - start))s"
	for m in $FROZEN; do
		echo "frozen module tag $(tagof "$version" "$m"): $(git -C "$repo" rev-parse --short "$(tagof "$version" "$m")^{commit}")"
	done
	proxy=$tmp/proxy
	# shellcheck disable=SC2046 # a word list
	(cd "$repo" && releasetool proxy -dir "$proxy" -version "$version" $(modules))
	# Every module zip stays under 1 MiB: a proxy keeps a zip for good, and
	# each importer downloads the whole of it (issue 45: a committed 24 MB
	# binary made the root module's 12.4 MB).
	while read -r size zip; do
		[ "$size" -le $((1024 * 1024)) ] || die "${zip#"$proxy"/} is $size bytes, over 1 MiB"
		echo "module zip ${zip#"$proxy"/}: $size bytes"
	done < <(find "$proxy/github.com/sandboxpin" -name '*.zip' -printf '%s %p\n' | sort -k2)

	# Each tagged module's go.sum holds the hashes of its siblings' zips as
	# the go command makes them from the tags (a worktree's .git file or a
	# missing LICENSE would differ): checked by downloading them in the
	# tagged commit's module directories.
	git -C "$repo" checkout -q "$version"
	for m in $(cd "$repo" && modules); do
		deps=$(sed -n "s#^[[:space:]]*\(require[[:space:]]*\)\{0,1\}\($MODULE[^[:space:]]*\) $version.*#\2@$version#p" "$repo/$m/go.mod")
		# shellcheck disable=SC2086 # a word list
		[ -z "$deps" ] || (cd "$repo/$m" && consumer verify mod download $deps)
	done
	echo "the tagged go.sum files agree with the tagged modules' zips"

	mkdir -p "$tmp/install" "$tmp/app" "$tmp/pure"
	echo "\$ go install $MODULE/cmd/sandboxpin@$version"
	(cd "$tmp/install" && consumer install install "$MODULE/cmd/sandboxpin@$version")
	out=$("$tmp/install/gopath/bin/sandboxpin" version)
	echo "\$ sandboxpin version"$'\n'"$out"
	[[ $out == "sandboxpin $version "* ]] || die "sandboxpin version printed \"$out\", not $version"
	fetched install

	cat >"$tmp/app/main.go" <<-'EOF'
		// A consumer of the released criinfo/cri and crishim modules.
		package main

		import (
			"context"
			"errors"
			"fmt"

			"github.com/sandboxpin/sandboxpin/criinfo/cri"
			"github.com/sandboxpin/sandboxpin/crishim"
		)

		func main() {
			_, err := cri.Query(context.Background(), "unix:///nonexistent/cri.sock")
			opts := crishim.Options{Listen: "unix:///nonexistent/shim.sock", RuntimeEndpoint: "unix:///nonexistent/cri.sock"}
			fmt.Printf("cri.Query: ErrNoSocket %v; crishim.Options for %s\n", errors.Is(err, cri.ErrNoSocket), opts.RuntimeEndpoint)
		}
	EOF
	(
		cd "$tmp/app"
		echo "\$ go mod init example.com/app && go get $MODULE/criinfo/cri@$version $MODULE/crishim@$version && go build && ./app"
		consumer app mod init example.com/app 2>/dev/null
		consumer app get "$MODULE/criinfo/cri@$version" "$MODULE/crishim@$version" 2>&1 | grep -v '^go: downloading'
		consumer app build -o app .
		./app
		echo "the app's module graph names the test harness module $(consumer app mod graph | grep -c " $MODULE/internal@") times (a requirement of crishim's tests, not of cri's; pruned, never downloaded)"
	)
	fetched app

	(
		cd "$tmp/pure"
		echo "\$ go mod init example.com/pure && go get $MODULE@$version && go list -m all"
		consumer pure mod init example.com/pure 2>/dev/null
		consumer pure get "$MODULE@$version" 2>&1 | grep -v '^go: downloading'
		consumer pure list -m all | tee "$tmp/pure/all"
		git -C "$repo" show "$version:go.mod" >"$tmp/pure/root.mod"
		want=$( (echo example.com/pure; echo "$MODULE $version"; go mod edit -json "$tmp/pure/root.mod" | sed -n '/"Require"/,/]/p' | sed -n 's/.*"Path": "\([^"]*\)".*/\1/p; s/.*"Version": "\([^"]*\)".*/\1/p' | paste -d' ' - -) | sort)
		[ "$(sort "$tmp/pure/all")" = "$want" ] || die "go get $MODULE@$version brought more than the root module's requirements:"$'\n'"$(diff <(echo "$want") <(sort "$tmp/pure/all"))"
	)
	fetched pure

	# What a CRI runtime imports: pin (and reference through it) brings
	# go-digest and the test framework's modules, no file decoder, no
	# file-system module, no distribution/reference, and not the root
	# module (issue 45; docs/design.md, "Modules").
	mkdir -p "$tmp/runtime"
	(
		cd "$tmp/runtime"
		echo "\$ go mod init example.com/runtime && go get $MODULE/pin@$version && go list -m all"
		consumer runtime mod init example.com/runtime 2>/dev/null
		consumer runtime get "$MODULE/pin@$version" 2>&1 | grep -v '^go: downloading'
		consumer runtime list -m all | tee "$tmp/runtime/all"
		for m in $FROZEN; do
			grep -qx "$MODULE/${m#./} $version" "$tmp/runtime/all" || die "the runtime's build list has no $MODULE/${m#./} $version"
		done
		! grep -E "^($MODULE|github.com/BurntSushi/toml|github.com/pelletier/go-toml|sigs.k8s.io/yaml|go.yaml.in/yaml|github.com/cyphar/filepath-securejoin|github.com/distribution/reference)( |/v[0-9]+ |$)" "$tmp/runtime/all" ||
			die "go get $MODULE/pin@$version brought the modules above into a runtime's graph"
	)
	fetched runtime

	echo "== the artifacts again, with an empty build cache"
	(cd "$repo" && GOCACHE=$tmp/gocache bash scripts/release.sh artifacts "$version" "$tmp/dist2" >/dev/null)
	if ! diff "$tmp/dist1/SHA256SUMS" "$tmp/dist2/SHA256SUMS"; then
		for arch in $ARCHES; do diff <(go version -m "$tmp/dist1/sandboxpin-linux-$arch" | tail -n +2) <(go version -m "$tmp/dist2/sandboxpin-linux-$arch" | tail -n +2) || true; done
		die "two builds of $version differ"
	fi
	echo "two builds of $version: identical SHA256SUMS; image digest $(cat "$tmp/dist2/image-digest")"

	# The API guard: a patch release after a deliberate incompatible change
	# (a constant's value changed) must be refused with apidiff's report.
	echo "== a patch release with an incompatible change"
	git -C "$repo" checkout -q --detach "$version^"
	sed -i 's/^const ExtraSource = "--pin"$/const ExtraSource = "--pattern"/' "$repo/resolve/matcher.go"
	grep -q -- '"--pattern"' "$repo/resolve/matcher.go" || die "the deliberate change did not apply"
	gitid -C "$repo" commit -q -am "a deliberate incompatible change"
	if out=$(cd "$repo" && bash scripts/release.sh "$(bump "$version" patch)" "$tmp/dist3" 2>&1); then
		die "release.sh tagged a patch release with an incompatible API change:"$'\n'"$out"
	fi
	echo "$out" | grep -A3 '^api: ' || true
	grep -q 'ExtraSource: value changed from "--pin" to "--pattern"' <<<"$out" || die "release.sh failed, but not on the API:"$'\n'"$out"
	echo "refused, as it must be"

	# The frozen modules against their tags: in the next minor release an
	# incompatible change to reference (a constant's value changed: it
	# breaks no build, so apidiff loads every package) is refused, while
	# resolve's above is allowed once CHANGELOG.md names it (README,
	# "Stability").
	echo "== a minor release with incompatible changes to reference and resolve"
	next=$(bump "$version" minor)
	sed -i 's/^\tMaxPathLength = 255$/\tMaxPathLength = 256/' "$repo/reference/parse.go"
	grep -q '^.MaxPathLength = 256$' "$repo/reference/parse.go" || die "the deliberate change to reference did not apply"
	gitid -C "$repo" commit -q -am "a deliberate incompatible change to reference"
	if out=$(cd "$repo" && bash scripts/release.sh apicheck "$next" 2>&1); then
		die "release.sh apicheck allowed an incompatible change to reference in $next:"$'\n'"$out"
	fi
	echo "$out" | grep -A1 '^api: .*changed incompatibly\|: refused$' || true
	grep -q "api: reference is frozen since v0.1.0: refused" <<<"$out" || die "reference's change was not refused as frozen:"$'\n'"$out"
	grep -q "does not name \`resolve\`: refused" <<<"$out" || die "resolve's change was not refused for want of a CHANGELOG entry:"$'\n'"$out"
	gitid -C "$repo" revert --no-edit HEAD >/dev/null
	printf '%s\n' '# Changelog' '' "## $next" '' '- `resolve.ExtraSource` is `"--pattern"` (was `"--pin"`).' >"$repo/CHANGELOG.md"
	gitid -C "$repo" commit -q -am "CHANGELOG: $next"
	out=$(cd "$repo" && bash scripts/release.sh apicheck "$next" 2>&1) || die "release.sh apicheck refused resolve's change named in CHANGELOG.md:"$'\n'"$out"
	echo "$out" | grep '^api: .*allowed'
	echo "reference refused, resolve allowed, as they must be"
	echo "== rehearsal passed in $((SECONDS - start))s"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case "${1:-}" in
artifacts) [ $# = 3 ] || die "usage: release.sh artifacts VERSION DIR"; artifacts "$2" "$3" ;;
rehearse) rehearse ;;
apicheck) [ $# = 2 ] || die "usage: release.sh apicheck VERSION"; apicheck "$2" ;;
frozen) frozen "${2:-}" ;;
v*) tag "$1"; artifacts "$1" "${2:-$top/dist/$1}" ;;
*) sed -n '2,6p' "$0"; exit 2 ;;
esac
