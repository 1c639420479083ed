# shellcheck shell=bash
# Shared by contrib/cri-dockerd/build.sh and test.sh (sourced after
# contrib/lib.sh, not run): the tree both work in and the flags both build it
# with.

# The newest release the Go module proxy serves, which the patches are
# written against (scripts/deps.sh: CRI_DOCKERD_PATCHED_VERSION).
# shellcheck disable=SC2034 # read by build.sh and test.sh
CRI_DOCKERD_VERSION=v0.4.4

# cridockerd_tree VERSION SRC: a writable copy of the module source of
# github.com/Mirantis/cri-dockerd VERSION (from the Go module cache; `go
# install` refuses the module, whose go.mod has replace directives) in SRC.
# It sets cridockerd_flags to -trimpath and the version stamp of the
# Makefile, as scripts/deps.sh's stock build (build_cridockerd) builds, so
# that the Go build cache serves every package a patch does not reach; the
# commit is the one the module proxy names for the tag. The caller is left in
# SRC, to apply the patches (apply_patch in contrib/lib.sh) or not.
cridockerd_tree() {
	local version=$1 src=$2 commit v=github.com/Mirantis/cri-dockerd/cmd/version
	commit=$(copy_module "github.com/Mirantis/cri-dockerd@$version" "$src")
	# shellcheck disable=SC2034 # read by build.sh and test.sh
	cridockerd_flags=(-trimpath -ldflags "-X $v.Version=${version#v} -X $v.GitCommit=${commit:0:7}")
	cd "$src" || return
}
