# Shared by contrib/*/build.sh (sourced, not run): a writable copy of a
# module's source with patches and, when they import it, a requirement on
# this checkout's github.com/sandboxpin/sandboxpin, and the check that the
# patches change the module graph by that requirement alone (by nothing,
# when they import no sandboxpin package).

sbp=github.com/sandboxpin/sandboxpin
# The version scripts/deps.sh builds the root module at: unpublished, so the
# replace points it at this checkout.
sbpv=v0.0.0-00010101000000-000000000000
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# No workspace: the patched module is the main module, as in its own
# repository.
export GOWORK=off GOFLAGS=-mod=mod

# copy_module MODULE@VERSION SRC: a writable copy of the module's source in
# SRC; prints the commit the module proxy names for the version.
copy_module() {
	local info dir
	info=$(go mod download -json "$1")
	dir=$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -n "$dir" ] || { echo "build.sh: $1 not in the module cache" >&2; return 1; }
	rm -rf "$2" && mkdir -p "$(dirname "$2")" && cp -r "$dir" "$2" && chmod -R u+w "$2"
	printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Hash": "\(.*\)",*$/\1/p'
}

# apply_patch DIR OUT: in the current directory (the copy), records the
# module graph, applies the patches of DIR that $PATCHES names, in order
# (file names, default pin.patch), and adds the requirement when one of
# them imports a sandboxpin package (sbp_required=1, else 0: a patch such
# as contrib/containerd/status.patch needs no new module). `go list -m -e all`:
# some modules' go.mod name versions that exist only inside their own
# repository (cri-dockerd's k8s.io/kubernetes v1.29.15 requires k8s.io/*
# v0.0.0), which -e lists as they are written.
apply_patch() {
	mkdir -p "$(dirname "$2")"
	go list -m -e all 2>/dev/null >"$2.modules.before"
	cp go.mod go.mod.orig && cp go.sum go.sum.orig
	# git apply works outside a repository; --verbose names each file.
	local p path m mods=""
	sbp_required=0
	for p in ${PATCHES:-pin.patch}; do
		# return: callers may run this where set -e is ignored
		git apply --verbose "$1/$p" || return
		# Each added line that quotes a sandboxpin import path (an import
		# spec, alone or in an import block, with or without a name)
		# requires the module that provides it: reference and pin are
		# modules of their own (issue 45), every other package is the
		# root module's.
		for path in $(sed -n "s#^+[[:space:]]*\(import[[:space:]]*\)\{0,1\}\([A-Za-z_][A-Za-z0-9_]*[[:space:]]*\)\{0,1\}\"\(${sbp}[^\"]*\)\".*#\3#p" "$1/$p"); do
			case "$path" in
			"$sbp/reference" | "$sbp/reference/"*) m=$sbp/reference ;;
			"$sbp/pin" | "$sbp/pin/"*) m=$sbp/pin ;;
			*) m=$sbp ;;
			esac
			sbp_required=1
			case " $mods " in *" $m "*) ;; *) mods="$mods $m" ;; esac
		done
	done
	if [ "$sbp_required" = 1 ]; then
		# Each required module and the siblings it requires, replaced by
		# this checkout: the root module requires pin and reference, pin
		# requires reference.
		local reps=" "
		for m in $mods; do
			go mod edit -require="$m@$sbpv" || return
			case "$m" in
			"$sbp") reps="$reps$sbp $sbp/pin $sbp/reference " ;;
			"$sbp/pin") reps="$reps$sbp/pin $sbp/reference " ;;
			*) reps="$reps$m " ;;
			esac
		done
		for m in "$sbp" "$sbp/pin" "$sbp/reference"; do
			case "$reps" in *" $m "*) go mod edit -replace="$m=$repo${m#"$sbp"}" || return ;; esac
		done
	else
		echo "build.sh: the patches import no sandboxpin package: no requirement added" >&2
	fi
}

# check_graph OUT BINARY: after the build, writes OUT/go.mod.diff,
# OUT/go.sum.diff and OUT/modules.diff, and fails when the patch moves a
# module the built BINARY links, removes a module, or adds one that is
# neither sandboxpin nor in sandboxpin's own module graph at that version.
# Without the requirement (apply_patch's sbp_required=0) nothing may
# change: go.mod, go.sum and the module graph stay as they were.
# A module that is new to the consumer (go-toml/v2 for cri-dockerd and
# kubernetes) is allowed and listed in modules.diff. So is a module raised
# to sandboxpin's version that BINARY does not link (`go version -m` lists
# every module a binary's packages come from): the consumer's go.mod,
# go.sum and binary do not change for it. cri-dockerd 0.4.4's graph has
# BurntSushi/toml v0.3.1 from a dependency's go.mod, which resolve's CRI-O
# reader (v1.6.0, CRI-O 1.36.3's decoder) raises in the graph only; the
# build prints each such module.
check_graph() {
	local out=$1 bin=$2 allowed linked raised m
	mkdir -p "$out"
	diff -u go.mod.orig go.mod >"$out/go.mod.diff" || true
	diff -u go.sum.orig go.sum >"$out/go.sum.diff" || true
	go list -m -e all 2>/dev/null >"$out.modules.after"
	diff "$out.modules.before" "$out.modules.after" >"$out/modules.diff" || true
	rm -f "$out.modules.before" "$out.modules.after"
	if [ "${sbp_required:-1}" = 0 ]; then
		if [ -s "$out/go.mod.diff" ] || [ -s "$out/go.sum.diff" ] || [ -s "$out/modules.diff" ]; then
			cat "$out/go.mod.diff" "$out/go.sum.diff" "$out/modules.diff" >&2
			echo "build.sh: the patches import no sandboxpin package, yet the module graph changed (above)" >&2
			return 1
		fi
		return 0
	fi
	# sandboxpin's own module graph, as `> path version` lines: the root
	# module's, outside the workspace, with its sibling modules (pin,
	# reference) replaced by this checkout as scripts/modules.sh does.
	allowed=$(bash "$repo/scripts/modules.sh" floor . list -m all | sed 1d | sed 's/^/> /')
	# the modules the binary links, one path a line
	linked=$(go version -m "$bin" | awk '$1 == "dep" || $1 == "=>" { print $2 }')
	# modules that moved and that the binary does not link: their old line
	# ("< path old") and new line ("> path new") are both allowed
	raised=$(sed -n 's/^< \([^ ]*\) .*/\1/p' "$out/modules.diff" | while read -r m; do
		grep -qxF "$m" <<<"$linked" || printf '< %s \n> %s \n' "$m" "$m"
	done)
	if [ -z "$raised" ]; then
		raised='(none)' # a pattern no line of modules.diff holds
	else
		echo "build.sh: raised in the module graph only, not linked by $(basename "$bin"):" >&2
		grep -F -e "$(grep '^> ' <<<"$raised")" "$out/modules.diff" | grep '^>' >&2 || true
	fi
	if grep '^[<>]' "$out/modules.diff" | grep -v "^> $sbp\(/pin\|/reference\)\{0,1\} $sbpv => $repo\(/pin\|/reference\)\{0,1\}\$" |
		grep -vxF -e "$allowed" | grep -vF -e "$raised"; then
		echo "build.sh: the patch changes the module graph beyond $sbp and its requirements (above)" >&2
		return 1
	fi
}
