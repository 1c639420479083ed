# shellcheck shell=bash
# Shared by contrib/kubeadm/build.sh and test.sh (sourced after contrib/lib.sh,
# not run): the tree both work in.

# The patches, in the order they apply: compare.patch alone, or with
# fallback.patch on top of it (README.md).
PATCHES=${PATCHES:-compare.patch fallback.patch}
export PATCHES

# kubeadm_tree VERSION SRC: a writable copy of the module source of
# k8s.io/kubernetes VERSION (from the Go module cache) in SRC, each ./staging
# module of its go.mod replaced by the published v0.MINOR.PATCH (the module
# archive holds no staging/src), as scripts/deps.sh's build_k8s does for the
# stock build and as importers of k8s.io/kubernetes do. The caller is left in
# SRC, to apply the patches (apply_patch in contrib/lib.sh) or not.
# Prints the modules kubeadm links (linked_modules).
kubeadm_tree() {
	local version=$1 src=$2 m staging=()
	copy_module "k8s.io/kubernetes@$version" "$src" >/dev/null
	cd "$src" || return
	while read -r m; do
		staging+=("-replace=$m=$m@v0.${version#v1.}")
	done < <(sed -n 's/^[[:space:]]*\(k8s\.io\/[^ ]*\) => \.\/staging.*/\1/p' go.mod)
	go mod edit "${staging[@]}"
	# Also the go.sum lines of the published staging modules, so that
	# go.sum.diff shows only what the patches add.
	linked_modules
}

# linked_modules: the modules that packages of ./cmd/kubeadm come from, as
# "path version" lines, sorted: the ones its binary links, which a module
# that is only in the module graph is not.
linked_modules() {
	go list -deps -f '{{with .Module}}{{.Path}} {{.Version}}{{with .Replace}} => {{.Path}}{{with .Version}} {{.}}{{end}}{{end}}{{end}}' ./cmd/kubeadm | sed '/^$/d' | sort -u
}
