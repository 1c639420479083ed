// Package nodetest builds node trees for the tests of package resolve and
// its internal packages: file maps, temporary roots, and the real binaries
// that scripts/deps.sh builds, placed inside a root.
package nodetest

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// The module-built binaries of scripts/deps.sh ("~" is $HOME).
const (
	Containerd242 = "~/.cache/sandboxpin/containerd/v2.4.2/containerd"
	CRIO1363      = "~/.cache/sandboxpin/crio/v1.36.3/crio"
	Kubelet1372   = "~/.cache/sandboxpin/kubelet/v1.37.2/kubelet"
	Kubeadm1372   = "~/.cache/sandboxpin/kubeadm/v1.37.2/kubeadm"
	CRIDockerd044 = "~/.cache/sandboxpin/cri-dockerd/v0.4.4/cri-dockerd"
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
// places binaries (path in the root -> real binary, "~" for $HOME) there;
// it skips the test when a binary is absent.
func WriteTree(t testing.TB, files, binaries map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		dst := filepath.Join(root, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o750))
		require.NoError(t, os.WriteFile(dst, []byte(c), 0o600))
	}
	for p, src := range binaries {
		PlaceBinary(t, root, p, RealBinary(t, src))
	}
	return root
}

// RealBinary returns the path of a real binary on this machine ("~" for
// $HOME), skipping the test when it is absent.
func RealBinary(t testing.TB, p string) string {
	t.Helper()
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Skipf("no home directory for %s: %v", p, err)
		}
		p = filepath.Join(home, rest)
	}
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
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
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o750))
	if os.Link(src, dst) == nil {
		return
	}
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.Create(dst)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}
