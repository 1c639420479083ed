#!/usr/bin/env bash
# Installs and builds what the tests need, cached by version, and writes
# $SANDBOXPIN_CACHE/env.sh, which scripts/test.sh sources. Safe to run again:
# a build whose version directory is complete is not redone.
#
#   bash scripts/deps.sh            # tools; as root also Debian packages and runtimes
#   bash scripts/deps.sh tools      # golangci-lint and promtool only
#   bash scripts/deps.sh only FUNC  # one build function, e.g. build_crio
#
# Every runtime comes from Debian's packages or the Go module proxy; nothing
# is downloaded from anywhere else. Builds run in parallel (DEPS_JOBS, default
# 3: two cores, but downloads and links leave room) with one log each under
# $SANDBOXPIN_CACHE/logs; a failed build prints the tail of its log.
set -euo pipefail
cd "$(dirname "$0")/.."

export SANDBOXPIN_CACHE=${SANDBOXPIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sandboxpin}
CACHE=$SANDBOXPIN_CACHE
JOBS=${DEPS_JOBS:-3}

# The versions the tests run against: one line each, in one place.
GOLANGCI_LINT_VERSION=v2.15.0
# apidiff, for scripts/release.sh's API check: golang.org/x/exp has no
# tags; this is the newest pseudo-version the module proxy served here.
APIDIFF_VERSION=v0.0.0-20260709172345-9ea1abe57597
CRICTL_VERSION=v1.37.0
# critest, the CRI validation suite, comes from the same cri-tools release.
CRITEST_VERSION=v1.37.0
CONTAINERD_1_7_VERSION=v1.7.35
CONTAINERD_2_2_VERSION=v2.2.10
CONTAINERD_2_3_VERSION=v2.3.7
# containerd 2.3.3, the last release that fails a pod whose sandbox image is
# not written in full (issue 40; internal/containerdtest's TestLiveSandboxRun).
CONTAINERD_2_3_3_VERSION=v2.3.3
CONTAINERD_2_4_VERSION=v2.4.2
CRIO_VERSION=v1.36.3
KUBEADM_VERSION=v1.37.2
KUBELET_VERSION=v1.37.2
# The control plane of the cluster test (issue 39): kube-apiserver,
# kube-controller-manager, kube-scheduler and kubectl from the kubelet's
# release, and etcd at the version k8s.io/kubernetes requires of
# go.etcd.io/etcd/server/v3 (v3.7.0 at v1.37.2, which is kubeadm's
# DefaultEtcdVersion 3.7.0-0 in cmd/kubeadm/app/constants/constants.go).
CONTROL_PLANE_VERSION=$KUBELET_VERSION
# The Prometheus Operator: v0.85.0 is the newest release of its root module
# (the operator and its CRDs) that the module proxy serves; deploy/go.mod's
# pkg/apis/monitoring v0.95.2 only decodes the manifests in unit tests.
PROMETHEUS_OPERATOR_VERSION=v0.85.0
KUBE_STATE_METRICS_VERSION=v2.20.0
# promtool runs the alert rules' unit tests: Prometheus 3.15.1, whose module
# version is v0.315.1 (VERSION in the module), the release deploy/go.mod
# parses the rules with; its go.mod declares go 1.26.0.
PROMETHEUS_VERSION=v0.315.1
# Prometheus' own build tags for a build with only some service discovery
# plugins (plugins/plugin_*.go at v0.315.1: `//go:build !remove_all_sd ||
# enable_NAME_sd`; file and http discovery are always in, plugins/minimum.go):
# the cluster test's scrape configuration uses kubernetes_sd_configs and
# static_configs, scripts/fleet-sim.sh file_sd_configs. The other 25 bring
# 240 of the server's 1,507 packages (go list -deps), the cloud providers'
# SDKs among them, some of the largest packages the build compiles.
PROMETHEUS_TAGS="remove_all_sd enable_kubernetes_sd"
# cri-dockerd: the oldest release the module proxy serves and the newest
# (issue 20: v0.3.14, v0.3.17, v0.4.0, v0.4.3 and v0.4.4 download; v0.4.1,
# v0.4.2, v0.3.15, v0.3.16, v0.3.18-v0.3.21, v0.3.13 and older are refused).
# v0.4.0 is left out: it refuses Docker APIs older than 1.42
# (MinimumDockerAPIVersion in libdocker/client.go at v0.4.0; v0.3.14 and
# v0.4.4 accept 1.26), and Debian 12's Docker Engine speaks 1.41.
CRI_DOCKERD_VERSIONS="v0.3.14 v0.4.4"
# contrib/cri-dockerd/pin.patch applies to this one (issue 31).
CRI_DOCKERD_PATCHED_VERSION=v0.4.4
# docker.io is Docker Engine 20.10.24 (Debian 12), the engine cri-dockerd
# talks to; it runs its own containerd from Debian's containerd package.
# busybox-static is the content of the images critest pulls from the
# in-memory registry, and containernetworking-plugins the CNI bridge its
# pods use (crishim's critest test); dbus-daemon the system bus on which
# internal/systemdtest stands in for systemd (the rollout's restarts).
DEBIAN_PACKAGES="containerd runc conmon skopeo libseccomp-dev pkg-config make gcc docker.io busybox-static containernetworking-plugins dbus-daemon"

# containerd's optional snapshotters need C headers or kernel features that
# test machines lack; none of them is used by the tests.
CONTAINERD_TAGS="no_btrfs no_devmapper no_zfs"
# CRI-O's tags for a build without ostree, gpgme and btrfs headers (the
# tags its Makefile uses for such builds; seccomp links libseccomp).
CRIO_TAGS="containers_image_ostree_stub containers_image_openpgp exclude_graphdriver_btrfs btrfs_noversion seccomp"

mkdir -p "$CACHE/logs"
log() { printf '[deps %ss] %s\n' "$SECONDS" "$*"; }

# build_patched NAME VERSION DIR...: contrib/NAME/build.sh with the patches
# $PATCHES names (default pin.patch) into $CACHE/NAME-patched/VERSION (for
# pin.patch) or $CACHE/NAME-patched-A+B/VERSION (for A.patch B.patch),
# rebuilt when the patches, the build scripts or the Go sources (not tests)
# under the sandboxpin DIRs it links change: their hash is the content of
# .done. Each build.sh builds like the stock build, so the Go build cache
# serves everything the patch does not reach.
build_patched() {
	local name=$1 version=$2 dir key p variant=
	shift 2
	for p in ${PATCHES:-pin.patch}; do variant+=+${p%.patch}; done
	variant=${variant#+}
	dir=$CACHE/$name-patched/$version
	[ "$variant" = pin ] || dir=$CACHE/$name-patched-$variant/$version
	key=$( (cat contrib/lib.sh "contrib/$name/build.sh" go.mod
		# the tree.sh that build.sh and test.sh share, where there is one
		[ ! -f "contrib/$name/tree.sh" ] || cat "contrib/$name/tree.sh"
		for p in ${PATCHES:-pin.patch}; do cat "contrib/$name/$p"; done
		find "$@" -name '*.go' ! -name '*_test.go' | sort | xargs cat) | sha256sum | cut -c1-16)
	[ "$(cat "$dir/.done" 2>/dev/null)" = "$key" ] && return 0
	rm -rf "$dir"
	bash "contrib/$name/build.sh" "$dir" "$version" "$CACHE/src/$(basename "$(dirname "$dir")")-$version"
	echo "$key" >"$dir/.done"
}

# done DIR: whether DIR holds a finished build.
done_in() { [ -f "$1/.done" ]; }

# goinstall DIR TAGS PKG@VERSION: go install into DIR.
goinstall() {
	local dir=$1 tags=$2 target=$3
	done_in "$dir" && return 0
	rm -rf "$dir" && mkdir -p "$dir"
	GOBIN=$dir GOFLAGS=-mod=mod go install -trimpath -tags "$tags" "$target"
	touch "$dir/.done"
}

# scratch DIR MODULE@VERSION [go mod edit flags...]: a throw-away module in
# DIR that requires MODULE at VERSION, for programs that `go install pkg@v`
# refuses (their go.mod has exclude or replace directives).
scratch() {
	local dir=$1 target=$2
	shift 2
	rm -rf "$dir" && mkdir -p "$dir"
	(
		cd "$dir"
		go mod init sandboxpin.test/build >/dev/null 2>&1
		go mod edit -require="$target" "$@"
		GOFLAGS=-mod=mod go mod download "${target%@*}"
	)
}

build_containerd17() {
	local dir=$CACHE/containerd/$CONTAINERD_1_7_VERSION src
	done_in "$dir" && return 0
	src=$CACHE/src/containerd-$CONTAINERD_1_7_VERSION
	# containerd v1.7.x's go.mod excludes osext; `go install` refuses a
	# module with exclude directives, so repeat the exclusion here.
	scratch "$src" "github.com/containerd/containerd@$CONTAINERD_1_7_VERSION" \
		-exclude=github.com/mitchellh/osext@v0.0.0-20151018003038-5e2d6d41470f
	printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/containerd/containerd/cmd/containerd"\n' >"$src/tools.go"
	(cd "$src" && GOFLAGS=-mod=mod go mod tidy && mkdir -p "$dir" &&
		go build -trimpath -tags "$CONTAINERD_TAGS" -o "$dir/containerd" github.com/containerd/containerd/cmd/containerd)
	touch "$dir/.done"
}

# build_containerd_patched: containerd $CONTAINERD_2_4_VERSION with
# contrib/containerd/pin.patch (issue 23), with status.patch alone (issue
# 40: it links no sandboxpin package, so its key names contrib/containerd,
# which holds no Go source) and with both, each built on the previous one's
# build cache.
build_containerd_patched() {
	CONTAINERD_TAGS=$CONTAINERD_TAGS build_patched containerd "$CONTAINERD_2_4_VERSION" pin reference
	CONTAINERD_TAGS=$CONTAINERD_TAGS PATCHES=status.patch build_patched containerd "$CONTAINERD_2_4_VERSION" contrib/containerd
	CONTAINERD_TAGS=$CONTAINERD_TAGS PATCHES="pin.patch status.patch" build_patched containerd "$CONTAINERD_2_4_VERSION" pin reference
}

build_crio() {
	local dir=$CACHE/crio/$CRIO_VERSION src mod
	done_in "$dir" && return 0
	src=$CACHE/src/crio-$CRIO_VERSION
	scratch "$src" "github.com/cri-o/cri-o@$CRIO_VERSION"
	printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/cri-o/cri-o/cmd/crio"\n' >"$src/tools.go"
	(cd "$src" && GOFLAGS=-mod=mod go mod tidy && mkdir -p "$dir" &&
		go build -trimpath -tags "$CRIO_TAGS" -o "$dir/crio" github.com/cri-o/cri-o/cmd/crio)
	# pinns, the small C helper CRI-O will not start without, ships in the
	# module's pinns/ directory.
	mod=$(cd "$src" && go list -m -f '{{.Dir}}' github.com/cri-o/cri-o)
	rm -rf "$src/pinns" && cp -r "$mod/pinns" "$src/pinns" && chmod -R u+w "$src/pinns"
	make -C "$src/pinns" >/dev/null
	# its Makefile writes ../bin/pinns
	cp "$src/bin/pinns" "$dir/pinns"
	touch "$dir/.done"
}

# build_promtool: github.com/prometheus/prometheus/cmd/promtool at
# $PROMETHEUS_VERSION (deploy's rule tests).
build_promtool() { build_prometheus_cmd promtool; }

# build_prometheus: the Prometheus server of the same version, for
# scripts/fleet-sim.sh (`bash scripts/deps.sh only build_prometheus`); its
# web UI's assets are not built (the API is all the script uses).
build_prometheus() { build_prometheus_cmd prometheus; }

# build_prometheus_cmd CMD: github.com/prometheus/prometheus/cmd/CMD at
# $PROMETHEUS_VERSION into $CACHE/CMD/$PROMETHEUS_VERSION. Its go.mod has
# exclude and replace directives, which `go install` refuses: repeat them in
# a scratch module. The version stamp is the one its .promu.yml sets
# (`promtool --version`). Only the service discoveries the tests use are
# built in (PROMETHEUS_TAGS); a build with other tags is redone.
build_prometheus_cmd() {
	local cmd=$1 dir=$CACHE/$1/$PROMETHEUS_VERSION src
	[ "$(cat "$dir/.done" 2>/dev/null)" = "$PROMETHEUS_TAGS" ] && return 0
	src=$CACHE/src/$cmd-$PROMETHEUS_VERSION
	scratch "$src" "github.com/prometheus/prometheus@$PROMETHEUS_VERSION" \
		-exclude=github.com/linode/linodego@v1.0.0 \
		-exclude=github.com/grpc-ecosystem/grpc-gateway@v1.14.7 \
		-exclude=google.golang.org/api@v0.30.0 \
		-replace=cloud.google.com/go=cloud.google.com/go@v0.123.0
	printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/prometheus/prometheus/cmd/%s"\n' "$cmd" >"$src/tools.go"
	(cd "$src" && GOFLAGS=-mod=mod go mod tidy && mkdir -p "$dir" &&
		go build -trimpath -tags "$PROMETHEUS_TAGS" -ldflags "-X github.com/prometheus/common/version.Version=$(cat "$(go list -m -f '{{.Dir}}' github.com/prometheus/prometheus)/VERSION")" \
			-o "$dir/$cmd" "github.com/prometheus/prometheus/cmd/$cmd")
	echo "$PROMETHEUS_TAGS" >"$dir/.done"
}

# k8s_scratch DIR VERSION: a scratch module in DIR that requires
# k8s.io/kubernetes at VERSION, each ./staging module of kubernetes' own
# go.mod replaced with the published v0.MINOR.PATCH, as importers of
# k8s.io/kubernetes do.
k8s_scratch() {
	local src=$1 version=$2 gomod m staging=()
	scratch "$src" "k8s.io/kubernetes@$version"
	gomod=$(cd "$src" && go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
	while read -r m; do
		staging+=("-replace=$m=$m@v0.${version#v1.}")
	done < <(sed -n 's/^[[:space:]]*\(k8s\.io\/[^ ]*\) => \.\/staging.*/\1/p' "$gomod")
	(cd "$src" && go mod edit "${staging[@]}")
}

# build_k8s CMD VERSION: k8s.io/kubernetes/cmd/CMD at VERSION into
# $CACHE/CMD/VERSION (kubeadm, kubelet).
build_k8s() {
	local cmd=$1 version=$2 dir src minor
	dir=$CACHE/$cmd/$version
	done_in "$dir" && return 0
	src=$CACHE/src/$cmd-$version
	k8s_scratch "$src" "$version"
	printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/%s"\n' "$cmd" >"$src/tools.go"
	minor=${version#v1.}
	minor=${minor%%.*}
	# Without the version stamp kubeadm calls itself v0.0.0-master, which
	# its version-skew checks reject; the kubelet reports the same stamp
	# to the runtime and in its logs.
	(cd "$src" && GOFLAGS=-mod=mod go mod tidy && mkdir -p "$dir" &&
		go build -trimpath -ldflags "-X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
			-o "$dir/$cmd" "k8s.io/kubernetes/cmd/$cmd")
	touch "$dir/.done"
}

# build_control_plane: kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl and etcd (go.etcd.io/etcd/server/v3, whose
# binary go names "server") into $CACHE/control-plane/VERSION, from one
# scratch module and one go build, so that they share its compiled packages.
build_control_plane() {
	local version=$CONTROL_PLANE_VERSION dir src minor pkgs=() c
	dir=$CACHE/control-plane/$version
	done_in "$dir" && return 0
	src=$CACHE/src/control-plane-$version
	k8s_scratch "$src" "$version"
	for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
	pkgs+=(go.etcd.io/etcd/server/v3)
	{ printf '//go:build tools\n\npackage tools\n\nimport (\n'; printf '\t_ "%s"\n' "${pkgs[@]}"; printf ')\n'; } >"$src/tools.go"
	minor=${version#v1.}
	minor=${minor%%.*}
	(cd "$src" && GOFLAGS=-mod=mod go mod tidy && mkdir -p "$dir" &&
		go build -trimpath -ldflags "-X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
			-o "$dir/" "${pkgs[@]}" && mv "$dir/server" "$dir/etcd")
	touch "$dir/.done"
}

# build_prometheus_operator: the operator (cmd/operator) at
# $PROMETHEUS_OPERATOR_VERSION, and its CRDs (example/prometheus-operator-crd
# of the same module) beside it. Its go.mod replaces its two nested modules
# with directories; the scratch module takes their releases of the same tag.
build_prometheus_operator() {
	local version=$PROMETHEUS_OPERATOR_VERSION dir src m=github.com/prometheus-operator/prometheus-operator
	dir=$CACHE/prometheus-operator/$version
	done_in "$dir" && return 0
	src=$CACHE/src/prometheus-operator-$version
	scratch "$src" "$m@$version" -require="$m/pkg/apis/monitoring@$version" -require="$m/pkg/client@$version"
	printf '//go:build tools\n\npackage tools\n\nimport _ "%s/cmd/operator"\n' "$m" >"$src/tools.go"
	(cd "$src" && GOFLAGS=-mod=mod go mod tidy && mkdir -p "$dir/crds" &&
		go build -trimpath -ldflags "-X github.com/prometheus/common/version.Version=${version#v}" -o "$dir/operator" "$m/cmd/operator" &&
		cp "$(go list -m -f '{{.Dir}}' "$m")"/example/prometheus-operator-crd/*.yaml "$dir/crds/" && chmod u+w "$dir"/crds/*)
	touch "$dir/.done"
}

# build_kube_state_metrics: k8s.io/kube-state-metrics/v2 at
# $KUBE_STATE_METRICS_VERSION (its main package is the module's root).
build_kube_state_metrics() {
	goinstall "$CACHE/kube-state-metrics/$KUBE_STATE_METRICS_VERSION" "" "k8s.io/kube-state-metrics/v2@$KUBE_STATE_METRICS_VERSION"
}

# build_cridockerd VERSION: github.com/Mirantis/cri-dockerd at VERSION into
# $CACHE/cri-dockerd/VERSION. `go install` refuses the module (its go.mod
# has replace directives) and a scratch module that requires it fails in
# tidy ("ambiguous import cloud.google.com/go/compute/metadata"), so build
# inside a writable copy of the module itself, with the Makefile's version
# stamp (without it `cri-dockerd --version` says "dev (HEAD)"); the commit
# is the one the module proxy names for the tag.
build_cridockerd() {
	local version=$1 dir src mod commit
	dir=$CACHE/cri-dockerd/$version
	done_in "$dir" && return 0
	src=$CACHE/src/cri-dockerd-$version
	mod=$(go mod download -json "github.com/Mirantis/cri-dockerd@$version")
	commit=$(printf '%s\n' "$mod" | sed -n 's/.*"Hash": "\(.*\)",*/\1/p')
	rm -rf "$src" && cp -r "$(printf '%s\n' "$mod" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')" "$src" && chmod -R u+w "$src"
	(cd "$src" && mkdir -p "$dir" &&
		GOFLAGS=-mod=mod go build -trimpath -ldflags "-X github.com/Mirantis/cri-dockerd/cmd/version.Version=${version#v} -X github.com/Mirantis/cri-dockerd/cmd/version.GitCommit=${commit:0:7}" -o "$dir/cri-dockerd" .)
	touch "$dir/.done"
}

# build_critest: cri-tools' critest, which has no main package: it is the
# test binary of sigs.k8s.io/cri-tools/cmd/critest (Makefile's critest
# target at the tag builds it the same way, with go test -c).
build_critest() {
	local dir=$CACHE/critest/$CRITEST_VERSION src
	done_in "$dir" && return 0
	src=$CACHE/src/critest-$CRITEST_VERSION
	scratch "$src" "sigs.k8s.io/cri-tools@$CRITEST_VERSION"
	printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/cri-tools/cmd/critest"\n' >"$src/tools.go"
	(cd "$src" && GOFLAGS=-mod=mod go mod tidy && mkdir -p "$dir" &&
		go test -c -trimpath -o "$dir/critest" sigs.k8s.io/cri-tools/cmd/critest)
	touch "$dir/.done"
}

# build_cri_tools: critest, then crictl (the same module at the same
# version, so its packages come from the build cache).
build_cri_tools() {
	build_critest
	goinstall "$CACHE/crictl/$CRICTL_VERSION" "" "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"
}

# build_kubernetes: kubeadm, then the kubelet and the control plane (the
# same k8s.io/kubernetes packages), then kubeadm with contrib/kubeadm's
# patches (issues 31 and 40), which the stock builds' cache serves.
build_kubernetes() {
	build_k8s kubeadm "$KUBEADM_VERSION"
	build_k8s kubelet "$KUBELET_VERSION"
	build_control_plane
	build_kubeadm_patched
}

# build_prometheus_all: promtool, and as root the server of the same module
# (they share most packages) for internal/clustertest and
# scripts/fleet-sim.sh.
build_prometheus_all() {
	build_promtool
	[ "${root:-0}" = 0 ] || build_prometheus
}

# build_monitoring: the Prometheus Operator and kube-state-metrics, for
# internal/clustertest (issue 39).
build_monitoring() {
	build_prometheus_operator
	build_kube_state_metrics
}

# build_kubeadm_patched: contrib/kubeadm (issue 40): compare.patch alone,
# which links reference, into kubeadm-patched-compare; then with
# fallback.patch on top, which links resolve, into
# kubeadm-patched-compare+fallback.
build_kubeadm_patched() {
	PATCHES=compare.patch build_patched kubeadm "$KUBEADM_VERSION" reference
	PATCHES="compare.patch fallback.patch" build_patched kubeadm "$KUBEADM_VERSION" pin reference criinfo resolve
}

# build_cridockerd_patched: contrib/cri-dockerd (issue 31) on the newest
# release; it links pin and reference.
build_cridockerd_patched() {
	build_patched cri-dockerd "$CRI_DOCKERD_PATCHED_VERSION" pin reference
}

# build_containerd_all: containerd 2.4 with its runc shim and ctr (the same
# module) and the patched 2.4, then 2.3, 2.2 and 1.7, which share many of its
# requirements.
build_containerd_all() {
	local v
	goinstall "$CACHE/containerd/$CONTAINERD_2_4_VERSION" "$CONTAINERD_TAGS" "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_2_4_VERSION"
	# containerd 2.x starts pods only with its own shim: Debian's 1.6 shim
	# fails RunPodSandbox with "type with url … not found" (issue 19).
	goinstall "$CACHE/containerd-shim-runc-v2/$CONTAINERD_2_4_VERSION" "$CONTAINERD_TAGS" "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_2_4_VERSION"
	# ctr 2.x imports into every containerd 2.x and 1.7 (the image API is
	# the same); containerd 1.6 is paired with Debian's ctr.
	goinstall "$CACHE/ctr/$CONTAINERD_2_4_VERSION" "$CONTAINERD_TAGS" "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_2_4_VERSION"
	# The patched 2.4 (issue 23) right after the stock one, whose build
	# cache serves everything the patch does not reach.
	build_containerd_patched
	for v in $CONTAINERD_2_3_VERSION $CONTAINERD_2_2_VERSION; do
		goinstall "$CACHE/containerd/$v" "$CONTAINERD_TAGS" "github.com/containerd/containerd/v2/cmd/containerd@$v"
	done
	goinstall "$CACHE/containerd/$CONTAINERD_2_3_3_VERSION" "$CONTAINERD_TAGS" "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_2_3_3_VERSION"
	build_containerd17
}

# build_cridockerd_all: every cri-dockerd release, newest first, and the
# patched newest.
build_cridockerd_all() {
	local v
	for v in $(printf '%s\n' $CRI_DOCKERD_VERSIONS | sort -rV); do
		build_cridockerd "$v"
	done
	build_cridockerd_patched
}

# job NAME CMD...: run CMD in the background, logging to logs/NAME.log,
# at most $JOBS at once.
pids=() names=()
job() {
	local name=$1
	shift
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
	# Its wall and CPU time on this script's output (fd 3), for the cold
	# run's budget.
	(
		start=$SECONDS
		trap 'rc=$?; times >"$CACHE/logs/$name.times"; log "$name: $((SECONDS - start)) s, CPU (user, system) $(tail -n 1 "$CACHE/logs/$name.times") (exit $rc)" >&3' EXIT
		"$@"
	) 3>&1 >"$CACHE/logs/$name.log" 2>&1 &
	pids+=("$!") names+=("$name")
}

failed=0
wait_all() {
	local i
	for i in "${!pids[@]}"; do
		if ! wait "${pids[$i]}"; then
			log "FAILED: ${names[$i]} (tail of $CACHE/logs/${names[$i]}.log)"
			tail -n 30 "$CACHE/logs/${names[$i]}.log"
			failed=1
		fi
	done
}

# `bash scripts/deps.sh only FUNCTION [ARGS...]` runs one build function of
# this file alone (for example `only build_crio`), without the others and
# without writing env.sh: for working on one build while another run of
# this script may be busy with the rest (two runs must not build the same
# directory at once).
if [ "${1:-}" = only ]; then
	shift
	"$@"
	exit
fi

job golangci-lint goinstall "$CACHE/golangci-lint/$GOLANGCI_LINT_VERSION" "" \
	"github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"

job apidiff goinstall "$CACHE/apidiff/$APIDIFF_VERSION" "" "golang.org/x/exp/cmd/apidiff@$APIDIFF_VERSION"

root=0
[ "$(id -u)" = 0 ] && [ "${1:-}" != tools ] && root=1

# promtool is a tool too: deploy's rule tests run it as any user.
job promtool build_prometheus_all
if [ "$root" = 1 ]; then
	missing=""
	for p in $DEBIAN_PACKAGES; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		log "apt-get install$missing"
		apt-get update -qq
		# shellcheck disable=SC2086 # a word list
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >"$CACHE/logs/apt.log" 2>&1 ||
			{ tail -n 30 "$CACHE/logs/apt.log"; exit 1; }
	fi
	# Builds that share packages at the same versions run one after the
	# other in one job, so that the later ones reuse the Go build cache:
	# two go commands that compile the same package at once both do the
	# work. The longest first, so that the short ones fill the gaps.
	job kubernetes build_kubernetes
	job monitoring build_monitoring
	job crio build_crio
	job containerd build_containerd_all
	job cri-dockerd build_cridockerd_all
	job cri-tools build_cri_tools
fi
wait_all
[ "$failed" = 0 ] || exit 1

# The environment the tests read (see internal/containerdtest/doc.go).
{
	echo "# written by scripts/deps.sh; sourced by scripts/test.sh"
	echo "export SANDBOXPIN_CACHE='$CACHE'"
	echo "export SANDBOXPIN_GOLANGCI_LINT='$CACHE/golangci-lint/$GOLANGCI_LINT_VERSION/golangci-lint'"
	echo "export SANDBOXPIN_APIDIFF='$CACHE/apidiff/$APIDIFF_VERSION/apidiff'"
	echo "export SANDBOXPIN_PROMTOOL='$CACHE/promtool/$PROMETHEUS_VERSION/promtool'"
	if [ "$root" = 1 ]; then
		echo "export SANDBOXPIN_CONTAINERD1='/usr/bin/containerd'"
		echo "export SANDBOXPIN_CTR1='/usr/bin/ctr'"
		echo "export SANDBOXPIN_CONTAINERD_1_7='$CACHE/containerd/$CONTAINERD_1_7_VERSION/containerd'"
		echo "export SANDBOXPIN_CONTAINERD2='$CACHE/containerd/$CONTAINERD_2_2_VERSION/containerd'"
		echo "export SANDBOXPIN_CONTAINERD_2_3='$CACHE/containerd/$CONTAINERD_2_3_VERSION/containerd'"
		echo "export SANDBOXPIN_CONTAINERD_2_3_3='$CACHE/containerd/$CONTAINERD_2_3_3_VERSION/containerd'"
		echo "export SANDBOXPIN_CONTAINERD_2_4='$CACHE/containerd/$CONTAINERD_2_4_VERSION/containerd'"
		echo "export SANDBOXPIN_CONTAINERD_2_4_PATCHED='$CACHE/containerd-patched/$CONTAINERD_2_4_VERSION/containerd'"
		# with contrib/containerd/status.patch, alone and after pin.patch
		echo "export SANDBOXPIN_CONTAINERD_2_4_STATUS='$CACHE/containerd-patched-status/$CONTAINERD_2_4_VERSION/containerd'"
		echo "export SANDBOXPIN_CONTAINERD_2_4_PIN_STATUS='$CACHE/containerd-patched-pin+status/$CONTAINERD_2_4_VERSION/containerd'"
		echo "export SANDBOXPIN_CTR2='$CACHE/ctr/$CONTAINERD_2_4_VERSION/ctr'"
		echo "export SANDBOXPIN_CRICTL='$CACHE/crictl/$CRICTL_VERSION/crictl'"
		echo "export SANDBOXPIN_CRITEST='$CACHE/critest/$CRITEST_VERSION/critest'"
		echo "export SANDBOXPIN_BUSYBOX='/bin/busybox'"
		echo "export SANDBOXPIN_CNI_BIN='/usr/lib/cni'"
		echo "export SANDBOXPIN_CRIO='$CACHE/crio/$CRIO_VERSION/crio'"
		echo "export SANDBOXPIN_PINNS='$CACHE/crio/$CRIO_VERSION/pinns'"
		echo "export SANDBOXPIN_CONMON='$(command -v conmon || echo /usr/bin/conmon)'"
		echo "export SANDBOXPIN_RUNC='$(command -v runc || echo /usr/bin/runc)'"
		echo "export SANDBOXPIN_SKOPEO='$(command -v skopeo || echo /usr/bin/skopeo)'"
		echo "export SANDBOXPIN_KUBEADM='$CACHE/kubeadm/$KUBEADM_VERSION/kubeadm'"
		echo "export SANDBOXPIN_KUBEADM_VERSION='$KUBEADM_VERSION'"
		# kubeadm with contrib/kubeadm's compare.patch and fallback.patch, and
		# with compare.patch alone
		echo "export SANDBOXPIN_KUBEADM_PATCHED='$CACHE/kubeadm-patched-compare+fallback/$KUBEADM_VERSION/kubeadm'"
		echo "export SANDBOXPIN_KUBEADM_PATCHED_COMPARE='$CACHE/kubeadm-patched-compare/$KUBEADM_VERSION/kubeadm'"
		echo "export SANDBOXPIN_KUBELET='$CACHE/kubelet/$KUBELET_VERSION/kubelet'"
		echo "export SANDBOXPIN_KUBELET_VERSION='$KUBELET_VERSION'"
		# internal/clustertest (issue 39)
		echo "export SANDBOXPIN_CONTROL_PLANE='$CACHE/control-plane/$CONTROL_PLANE_VERSION'"
		echo "export SANDBOXPIN_PROMETHEUS='$CACHE/prometheus/$PROMETHEUS_VERSION/prometheus'"
		echo "export SANDBOXPIN_PROMETHEUS_OPERATOR='$CACHE/prometheus-operator/$PROMETHEUS_OPERATOR_VERSION'"
		echo "export SANDBOXPIN_KUBE_STATE_METRICS='$CACHE/kube-state-metrics/$KUBE_STATE_METRICS_VERSION/kube-state-metrics'"
		echo "export SANDBOXPIN_DOCKERD='$(command -v dockerd || echo /usr/sbin/dockerd)'"
		# Debian's client, not another docker earlier in PATH
		echo "export SANDBOXPIN_DOCKER='/usr/bin/docker'"
		for v in $CRI_DOCKERD_VERSIONS; do
			echo "export SANDBOXPIN_CRI_DOCKERD_$(echo "${v#v}" | tr . _)='$CACHE/cri-dockerd/$v/cri-dockerd'"
		done
		echo "export SANDBOXPIN_CRI_DOCKERD_PATCHED='$CACHE/cri-dockerd-patched/$CRI_DOCKERD_PATCHED_VERSION/cri-dockerd'"
		echo "export SANDBOXPIN_CONTAINERD_2_4_SHIM='$CACHE/containerd-shim-runc-v2/$CONTAINERD_2_4_VERSION/containerd-shim-runc-v2'"
	fi
} >"$CACHE/env.sh"
log "ready: $CACHE/env.sh"
