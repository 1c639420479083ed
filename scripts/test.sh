#!/usr/bin/env bash
# The project's one test command (README.md, "Quick start"). It installs what
# the tests need (scripts/deps.sh), then runs, failing on the first problem,
# for every module of the workspace (go.work):
#   scripts/hygiene.sh (no tracked binary or file over 1 MiB), gofmt, go mod tidy -diff, go vet,
#   the API check (scripts/apilist -check against api/), golangci-lint (staticcheck among its linters),
#   go test -race -shuffle=on (live tests start their own runtimes),
#   the floor run (each module alone, at the versions its go.mod declares),
#   the newest run (each module alone, every requirement upgraded),
#   scripts/adoption.sh (what importing the pure packages costs consumers),
#   the release rehearsal (scripts/release.sh rehearse, beside the tests:
#   HEAD tagged in a temporary clone, installed and imported through a
#   file-system module proxy, the artifacts built twice and compared),
#   the upstream tests of each contrib patch (contrib/*/test.sh),
#   and a short run of every Fuzz target; the cluster tests (internal's
#   TestCluster and TestClusterRollout) run beside these last steps, after
#   the other live tests.
#
# As root (CI, a disposable VM) scripts/deps.sh installs containerd 1.6,
# conmon, runc, skopeo, Docker Engine, busybox-static and the CNI plugins
# from Debian and builds containerd 1.7/2.2/2.3/2.4 (and 2.4's
# containerd-shim-runc-v2), CRI-O, cri-dockerd 0.3.14 and 0.4.4, kubeadm,
# the kubelet, the control plane (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl), the Prometheus server
# and Operator, kube-state-metrics, ctr, crictl and critest from the Go
# module proxy into $SANDBOXPIN_CACHE; the live tests then FAIL when a
# runtime is missing.
# Without root they skip with a message. Environment:
#   SANDBOXPIN_CACHE               build cache (default ~/.cache/sandboxpin)
#   SANDBOXPIN_REQUIRE_RUNTIMES    1 (default as root) or 0
#   FUZZTIME                       per fuzz target (default 5s; 0 skips)
#   FUZZ_GOTOOLCHAIN               Go that runs the fuzz step (default go1.27.3,
#                                  fetched from the module proxy; see below)
#   FUZZ_JOBS                      fuzz targets at once, one worker each (default: nproc)
#   SKIP_VERSIONS                  1 skips the floor, newest and adoption runs
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

export SANDBOXPIN_CACHE=${SANDBOXPIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sandboxpin}
FUZZTIME=${FUZZTIME:-5s}
# Go 1.26's fuzz coordinator can report the -fuzztime deadline itself as a
# failure ("context deadline exceeded", no crasher written) when a worker is
# still inside a call as the deadline passes: go.dev/issue/75804. Go 1.27
# fixed it (src/internal/fuzz/fuzz.go at go1.27.3, CoordinateFuzzing's stop
# also compares against ctx.Err()). Slow targets such as
# resolve.FuzzRootConfinement (a directory tree per input) hit it. Only the
# fuzz step uses that Go; the modules still build and test with their own.
FUZZ_GOTOOLCHAIN=${FUZZ_GOTOOLCHAIN:-go1.27.3}
# Fuzz targets run this many at a time, one worker each.
FUZZ_JOBS=${FUZZ_JOBS:-$(nproc)}

step() { printf '\n== %s (%ss)\n' "$*" "$SECONDS"; }

step "dependencies (scripts/deps.sh)"
bash scripts/deps.sh
# shellcheck disable=SC1091 # written by deps.sh
. "$SANDBOXPIN_CACHE/env.sh"
if [ "$(id -u)" = 0 ]; then
	export SANDBOXPIN_REQUIRE_RUNTIMES=${SANDBOXPIN_REQUIRE_RUNTIMES:-1}
	# Every kubelet takes inotify instances (cAdvisor's raw container
	# factory, its config and certificate watchers), and so do containerd
	# and dockerd: internal's live tests run some 25 of them at once, and
	# at Debian's default of 128 instances per user a kubelet exits with
	# "Failed to start cAdvisor: inotify_init: too many open files" (seen in
	# CI). kind documents the same limit for many kubelets on one host.
	if [ "$(sysctl -n fs.inotify.max_user_instances)" -lt 1024 ]; then
		sysctl -q -w fs.inotify.max_user_instances=1024
	fi
else
	export SANDBOXPIN_REQUIRE_RUNTIMES=${SANDBOXPIN_REQUIRE_RUNTIMES:-0}
	echo "not root: live runtime tests will skip (run this script as root to include them)"
fi
modules=$(bash scripts/modules.sh list)

step "hygiene: no tracked build output, no file over 1 MiB (scripts/hygiene.sh)"
bash scripts/hygiene.sh

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	printf 'gofmt would change:\n%s\n' "$unformatted"
	exit 1
fi

step "go mod tidy -diff, per module"
for m in $modules; do bash scripts/modules.sh tidy "$m" -diff; done

step "go vet, per module"
for m in $modules; do (cd "$m" && go vet ./...); done

step "API: the exported API of the public packages against api/ (scripts/apilist)"
# A removed or changed feature is an incompatible change, an added one a
# new feature: either fails until api/ records it (go run ./scripts/apilist -w).
go run ./scripts/apilist -check

step "golangci-lint, per module"
for m in $modules; do (cd "$m" && "$SANDBOXPIN_GOLANGCI_LINT" run --allow-parallel-runners ./...); done

step "go test -race -shuffle=on, per module"
# internal's kubelet rows (TestKubeletGC, TestKubeletAgeGC) spend their time
# waiting for GC rounds (10 s apart under disk pressure, 5 min by age): run
# them all at once, not GOMAXPROCS at a time, and beside the other modules'
# tests (its output follows theirs).
internal_log=$(mktemp)
internal_pid=""
if printf '%s\n' $modules | grep -qx ./internal; then
	# A session of its own, so that a failure elsewhere stops it whole.
	(cd internal && exec setsid go test -race -shuffle=on -timeout 20m -parallel 24 -skip '^TestCluster(Rollout)?$' ./...) >"$internal_log" 2>&1 &
	internal_pid=$!
	trap 'kill -- "-$internal_pid" 2>/dev/null || true' EXIT
fi
# The release rehearsal (HEAD's commit, not uncommitted changes) beside them.
rehearsal_log=$(mktemp)
bash scripts/release.sh rehearse >"$rehearsal_log" 2>&1 &
rehearsal_pid=$!
for m in $modules; do
	[ "$m" = ./internal ] && continue
	(cd "$m" && go test -race -shuffle=on -timeout 20m ./...)
done
cluster_pid=""
cluster_log=$(mktemp)
if [ -n "$internal_pid" ]; then
	rc=0
	wait "$internal_pid" || rc=$?
	trap - EXIT
	cat "$internal_log"
	rm -f "$internal_log"
	[ "$rc" = 0 ] || exit "$rc"
	# The cluster tests (TestCluster, issue 39: a control plane, two
	# nodes, Prometheus; TestClusterRollout, issue 53: the fleet rollout
	# of fix on such a cluster, about 14 min, most of it waiting for the
	# kubelets' GC rounds and the alerts' for:) after them, not beside
	# them: on two cores their dozen servers beside internal's kubelet rows
	# made a containerd miss its 60 s start (CI). They run side by side,
	# and beside the steps below, which only compile (not timed) or fuzz
	# for a fixed time, and with -v: their logs are what they show
	# (kubectl get nodes,pods, Prometheus' targets, the alerts before and
	# after the fix; the rollout's Events and Leases, each node's audit
	# and the kubelets' GC lines).
	(cd internal && exec setsid go test -race -timeout 30m -run '^TestCluster(Rollout)?$' -v ./kubelettest) >"$cluster_log" 2>&1 &
	cluster_pid=$!
	trap 'kill -- "-$cluster_pid" 2>/dev/null || true' EXIT
fi
step "release rehearsal (scripts/release.sh rehearse)"
rc=0
wait "$rehearsal_pid" || rc=$?
# The log, whatever it holds: grep finding no line must not end this
# script silently (a rehearsal that failed before it printed anything).
grep -v '^go: \(downloading\|added\)' "$rehearsal_log" || true
rm -f "$rehearsal_log"
[ "$rc" = 0 ] || echo "the release rehearsal failed (exit $rc)"
[ "$rc" = 0 ] || exit "$rc"

step "upstream tests of the contrib patches (contrib/*/test.sh)"
# Each runs its project's own tests of the packages its patches touch, on a
# fresh copy of the module with the patches applied (issue 40).
for t in contrib/*/test.sh; do
	[ -e "$t" ] || continue
	echo "-- $t"
	bash "$t"
done

if [ "${SKIP_VERSIONS:-0}" != 1 ]; then
	# The floor and newest runs repeat the unit tests under other
	# requirement versions (the live runtime tests ran above), side by
	# side: each works on temporary go.mod files of its own, and neither
	# keeps two cores busy. Their logs follow, one after the other.
	step "floor (each module alone, at its go.mod's versions) and newest (every requirement upgraded), side by side"
	versions_dir=$(mktemp -d)
	declare -A versions_pid=()
	for run in floor newest; do
		(
			start=$SECONDS
			for m in $modules; do bash scripts/modules.sh "$run" "$m" test -short -count=1 ./... || exit 1; done
			echo "$run: passed in $((SECONDS - start)) s"
		) >"$versions_dir/$run" 2>&1 &
		versions_pid[$run]=$!
	done
	rc=0
	for run in floor newest; do
		wait "${versions_pid[$run]}" || { rc=1; echo "the $run run failed"; }
		echo "-- $run"
		cat "$versions_dir/$run"
	done
	rm -rf "$versions_dir"
	[ "$rc" = 0 ] || exit 1

	step "adoption: what importing the pure packages costs each consumer"
	bash scripts/adoption.sh
fi

if [ "$FUZZTIME" != 0 ]; then
	step "fuzz, $FUZZTIME per target, $FUZZ_JOBS at a time with one worker each, with GOTOOLCHAIN=$FUZZ_GOTOOLCHAIN"
	if ! fuzzgo=$(GOTOOLCHAIN=$FUZZ_GOTOOLCHAIN go version); then
		echo "cannot get Go $FUZZ_GOTOOLCHAIN from the module proxy; FUZZ_GOTOOLCHAIN=local uses $(go version)" >&2
		exit 1
	fi
	echo "$fuzzgo"
	fuzz_dir=$(mktemp -d)
	# The targets, from each package's test files (go test -list would
	# build every package's test binary once more, without -race): one
	# line each, "MODULE PACKAGE TARGET".
	for m in $modules; do
		(cd "$top/$m" && go list -f '{{.ImportPath}} {{.Dir}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}' ./...) |
			while read -r p dir files; do
				[ -n "$files" ] || continue
				for f in $(cd "$dir" && sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*\*testing\.F).*/\1/p' $files); do
					echo "$m $p $f"
				done
			done
	done >"$fuzz_dir/targets"
	# FUZZ_JOBS targets at once, each with one worker (-parallel 1), not
	# one at a time with a worker per core: the step takes half the time
	# for half the executions per target (a brief run; fuzz for minutes
	# by hand before landing a change to a parser), and one target's
	# build, link and baseline run beside another's fuzzing. In a
	# subshell, whose jobs are these alone (the cluster test is a job of
	# this shell). Each log is printed whole as its run ends.
	(
		declare -A logs=()
		failed=0
		finish() {
			local pid
			wait -n -p pid || { failed=1; echo "FAILED: the fuzz run below"; }
			cat "${logs[$pid]}"
			unset "logs[$pid]"
		}
		i=0
		while read -r m p f; do
			while [ "${#logs[@]}" -ge "$FUZZ_JOBS" ]; do finish; done
			i=$((i + 1))
			(
				cd "$top/$m"
				echo "-- $p $f"
				GOTOOLCHAIN=$FUZZ_GOTOOLCHAIN go test -run='^$' -fuzz="^$f\$" -fuzztime="$FUZZTIME" -fuzzminimizetime=5s -parallel=1 "$p" </dev/null
			) >"$fuzz_dir/$i.log" 2>&1 &
			logs[$!]=$fuzz_dir/$i.log
		done <"$fuzz_dir/targets"
		while [ "${#logs[@]}" -gt 0 ]; do finish; done
		echo "fuzzed $i targets"
		exit "$failed"
	) || exit 1
	rm -rf "$fuzz_dir"
fi
if [ -n "$cluster_pid" ]; then
	step "the cluster tests (TestCluster and TestClusterRollout, started after internal's tests)"
	rc=0
	wait "$cluster_pid" || rc=$?
	trap - EXIT
	cat "$cluster_log"
	rm -f "$cluster_log"
	[ "$rc" = 0 ] || exit "$rc"
fi
step "all passed"
