// Package nodetest builds node trees for the tests of package resolve and
// its internal packages: file maps, temporary roots, and the real binaries
// that scripts/deps.sh builds, placed inside a root.
package nodetest

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

// The module-built binaries of scripts/deps.sh, relative to its cache
// (see RealBinary).
const (
	Containerd242 = "containerd/v2.4.2/containerd"
	CRIO1363      = "crio/v1.36.3/crio"
	Kubelet1372   = "kubelet/v1.37.2/kubelet"
	Kubeadm1372   = "kubeadm/v1.37.2/kubeadm"
	CRIDockerd044 = "cri-dockerd/v0.4.4/cri-dockerd"
)

// MapFS builds an fstest.MapFS from path -> content.
func MapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for p, c := range files {
		m[p] = &fstest.MapFile{Data: []byte(c)}
	}
	return m
}

// WriteTree writes files (path -> content) under a new temporary root and
// places binaries (path in the root -> real binary, as RealBinary takes
// it) there; it skips the test when a binary is absent.
func WriteTree(t testing.TB, files, binaries map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		dst := filepath.Join(root, filepath.FromSlash(p))
		must(t, os.MkdirAll(filepath.Dir(dst), 0o750))
		must(t, os.WriteFile(dst, []byte(c), 0o600))
	}
	for p, src := range binaries {
		PlaceBinary(t, root, p, RealBinary(t, src))
	}
	return root
}

// RealBinary returns the path of a real binary on this machine, skipping
// the test when it is absent. A relative p is in scripts/deps.sh's cache:
// $SANDBOXPIN_CACHE, else sandboxpin in the user's cache directory
// (~/.cache/sandboxpin), as deps.sh chooses it.
func RealBinary(t testing.TB, p string) string {
	t.Helper()
	if !filepath.IsAbs(p) {
		cache := os.Getenv("SANDBOXPIN_CACHE")
		if cache == "" {
			dir, err := os.UserCacheDir()
			if err != nil {
				t.Skipf("no cache directory for %s: %v", p, err)
			}
			cache = filepath.Join(dir, "sandboxpin")
		}
		p = filepath.Join(cache, p)
	}
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() { //nolint:gosec // a test helper: the cache scripts/deps.sh built on this machine
		t.Skipf("%s is not on this machine (scripts/deps.sh builds the module-built ones): %v", p, err)
	}
	return p
}

// PlaceBinary puts the real binary src at name inside root, as a hard link
// when it can (the binaries are 50-100 MB) or a copy: never a symbolic
// link, which would point out of the root.
func PlaceBinary(t testing.TB, root, name, src string) {
	t.Helper()
	dst := filepath.Join(root, filepath.FromSlash(name))
	must(t, os.MkdirAll(filepath.Dir(dst), 0o750))
	if os.Link(src, dst) == nil {
		return
	}
	in, err := os.Open(src)
	must(t, err)
	defer in.Close()
	out, err := os.Create(dst)
	must(t, err)
	_, err = io.Copy(out, in)
	must(t, err)
	must(t, out.Close())
}

// must fails the test on err: this package is imported by tests only, but
// is no test file, so it stays free of test libraries.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
