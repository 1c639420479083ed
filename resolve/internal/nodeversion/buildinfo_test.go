package nodeversion

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime/debug"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

// realBinaries are the Go binaries this machine has, for tests that read
// real build info: Debian 12's containerd (package containerd
// 1.6.20~ds1-1+deb12u3, built outside module mode, no version in its build
// info) and the module-built binaries scripts/deps.sh puts in
// its cache (nodetest.RealBinary). Tests skip the ones that are absent.
var realBinaries = []struct {
	name      string
	path      string // on this machine; "~" is $HOME
	comp      string // component
	want      string // version its build info states; "" for none
	wantFrom  string // binaryVersion's from
	wantError string // a substring of binaryVersion's error
}{
	{name: "debian-containerd", path: "/usr/bin/containerd", comp: string(criinfo.RuntimeContainerd),
		wantError: "it states no version (go1.19.8, no main module"},
	{name: "containerd-2.4.2", path: "containerd/v2.4.2/containerd", comp: string(criinfo.RuntimeContainerd),
		want: "v2.4.2", wantFrom: "module github.com/containerd/containerd/v2 v2.4.2"},
	{name: "containerd-1.7.35", path: "containerd/v1.7.35/containerd", comp: string(criinfo.RuntimeContainerd),
		want: "v1.7.35", wantFrom: "module github.com/containerd/containerd v1.7.35"},
	{name: "crio-1.36.3", path: "crio/v1.36.3/crio", comp: string(criinfo.RuntimeCRIO),
		want: "v1.36.3", wantFrom: "module github.com/cri-o/cri-o v1.36.3"},
	{name: "kubelet-1.37.2", path: "kubelet/v1.37.2/kubelet", comp: Kubelet,
		want: "v1.37.2", wantFrom: "module k8s.io/kubernetes v1.37.2"},
	{name: "kubeadm-1.37.2", path: "kubeadm/v1.37.2/kubeadm", comp: Kubeadm,
		want: "v1.37.2", wantFrom: "module k8s.io/kubernetes v1.37.2"},
	{name: "kubeadm-as-containerd", path: "kubeadm/v1.37.2/kubeadm", comp: string(criinfo.RuntimeContainerd),
		wantError: `it is built from "k8s.io/kubernetes", not from containerd's module`},
}

// checkVersion checks what binaryVersion returned: an error holding
// wantError and no version when wantError is set, else want. It reports
// whether the call succeeded as wanted.
func checkVersion(t *testing.T, got string, err error, want, wantError string) bool {
	t.Helper()
	if wantError != "" {
		require.Error(t, err)
		assert.Contains(t, err.Error(), wantError)
		assert.Empty(t, got)
		return false
	}
	require.NoError(t, err)
	assert.Equal(t, want, got)
	return true
}

func TestReadBuildInfoReal(t *testing.T) {
	t.Parallel()
	for _, tt := range realBinaries {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := nodetest.RealBinary(t, tt.path)
			root := t.TempDir()
			nodetest.PlaceBinary(t, root, "usr/bin/x", src)
			bi, err := readBuildInfo(nodefs.DirFS(root), "usr/bin/x")
			require.NoError(t, err)
			got, from, err := binaryVersion(bi, Of(tt.comp))
			if checkVersion(t, got, err, tt.want, tt.wantError) {
				assert.Equal(t, tt.wantFrom, from)
			}
		})
	}
}

// garbageBinaries are files at a binary's path that hold no build info;
// each must give an error wrapping errNoBuildInfo, never a panic. The fuzz
// target is seeded from them.
var garbageBinaries = []struct {
	name string
	data []byte
}{
	{name: "empty", data: nil},
	{name: "shell script", data: []byte("#!/bin/sh\nexec /usr/bin/containerd.real \"$@\"\n")},
	{name: "ELF magic only", data: []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00")},
	{name: "ELF header, no sections", data: append([]byte("\x7fELF\x02\x01\x01\x00"), make([]byte, 56)...)},
	{name: "PE magic", data: append([]byte("MZ"), make([]byte, 62)...)},
	{name: "Mach-O magic", data: append([]byte("\xcf\xfa\xed\xfe"), make([]byte, 60)...)},
	{name: "build info magic outside an executable", data: append([]byte("\xff Go buildinf:\x08\x02"), make([]byte, 64)...)},
}

func TestReadBuildInfoGarbage(t *testing.T) {
	t.Parallel()
	for _, tt := range garbageBinaries {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{"usr/bin/containerd": {Data: tt.data, Mode: 0o755}}
			bi, err := readBuildInfo(fsys, "usr/bin/containerd")
			assert.ErrorIs(t, err, errNoBuildInfo)
			assert.Nil(t, bi)
		})
	}
}

func TestReadBuildInfoNotRegular(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"usr/bin/containerd": {Mode: os.ModeNamedPipe},
		"usr/bin/crio":       {Mode: os.ModeDir},
	}
	_, err := readBuildInfo(fsys, "usr/bin/containerd")
	assert.ErrorIs(t, err, nodefs.ErrNotRegular)
	_, err = readBuildInfo(fsys, "usr/bin/crio")
	assert.ErrorIs(t, err, nodefs.ErrNotRegular)
	_, err = readBuildInfo(fsys, "usr/bin/kubelet")
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

// TestReadBuildInfoBounded checks that a real binary costs a small part of
// its size, and that a reader that keeps reading is stopped at
// maxBinaryRead.
func TestReadBuildInfoBounded(t *testing.T) {
	t.Parallel()
	src := nodetest.RealBinary(t, "containerd/v2.4.2/containerd")
	f, err := os.Open(src)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	c := &countingReaderAt{r: f}
	_, err = buildInfoAt(c, fi.Size())
	require.NoError(t, err)
	t.Logf("read %d of %d bytes of %s", c.n, fi.Size(), src)
	assert.Less(t, c.n, int64(maxBinaryRead))

	// Past the bound every read fails, whatever the file's size.
	br := &boundedReaderAt{r: bytes.NewReader(make([]byte, 1024)), size: 1 << 40, left: 100}
	_, err = br.ReadAt(make([]byte, 101), 0)
	assert.True(t, errors.Is(err, errReadBound) && br.exceeded)
}

func TestBinaryVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		comp      string
		bi        debug.BuildInfo
		want      string // version; "" for an error
		wantError string // a substring of the error
	}{
		{name: "module version", comp: string(criinfo.RuntimeCRIO),
			bi:   debug.BuildInfo{Path: "github.com/cri-o/cri-o/cmd/crio", Main: debug.Module{Path: "github.com/cri-o/cri-o", Version: "v1.36.3"}},
			want: "v1.36.3"},
		{name: "devel, version by -X", comp: string(criinfo.RuntimeContainerd),
			bi: debug.BuildInfo{Path: "github.com/containerd/containerd/v2/cmd/containerd",
				Main:     debug.Module{Path: "github.com/containerd/containerd/v2", Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "-ldflags", Value: "-s -w -X github.com/containerd/containerd/v2/version.Version=v2.2.1 -X github.com/containerd/containerd/v2/version.Revision=abc"}}},
			want: "v2.2.1"},
		{name: "the last -X wins", comp: string(criinfo.RuntimeCRIDockerd),
			bi: debug.BuildInfo{Path: "github.com/Mirantis/cri-dockerd", Main: debug.Module{Path: "github.com/Mirantis/cri-dockerd", Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "-ldflags", Value: "-X github.com/Mirantis/cri-dockerd/cmd/version.Version=0.3.1 '-X=github.com/Mirantis/cri-dockerd/cmd/version.Version=0.3.16'"}}},
			want: "0.3.16"},
		{name: "kubernetes gitVersion", comp: Kubelet,
			bi: debug.BuildInfo{Path: "k8s.io/kubernetes/cmd/kubelet", Main: debug.Module{Path: "k8s.io/kubernetes", Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "-ldflags", Value: "-X 'k8s.io/component-base/version.gitVersion=v1.31.2' -X 'k8s.io/component-base/version.gitMajor=1'"}}},
			want: "v1.31.2"},
		{name: "pseudo-version is no version", comp: string(criinfo.RuntimeContainerd),
			bi: debug.BuildInfo{GoVersion: "go1.26.8", Path: "github.com/containerd/containerd/v2/cmd/containerd",
				Main: debug.Module{Path: "github.com/containerd/containerd/v2", Version: "v2.4.3-0.20260102150405-abcdefabcdef"}},
			wantError: "it states no version (go1.26.8, main module github.com/containerd/containerd/v2 v2.4.3-0.20260102150405-abcdefabcdef"},
		{name: "-X of another variable", comp: string(criinfo.RuntimeContainerd),
			bi: debug.BuildInfo{Path: "github.com/containerd/containerd/cmd/containerd", Main: debug.Module{Path: "github.com/containerd/containerd", Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "-ldflags", Value: "-X github.com/docker/docker/dockerversion.Version=20.10.24+dfsg1"}}},
			wantError: "it states no version"},
		{name: "-X that is not a version", comp: string(criinfo.RuntimeContainerd),
			bi: debug.BuildInfo{Path: "github.com/containerd/containerd/cmd/containerd",
				Settings: []debug.BuildSetting{{Key: "-ldflags", Value: "-X github.com/containerd/containerd/version.Version=unknown"}}},
			wantError: "it states no version"},
		{name: "another program", comp: string(criinfo.RuntimeContainerd),
			bi:        debug.BuildInfo{Path: "github.com/k3s-io/k3s/cmd/server", Main: debug.Module{Path: "github.com/k3s-io/k3s", Version: "v1.31.2+k3s1"}},
			wantError: `it is built from "github.com/k3s-io/k3s", not from containerd's module`},
		{name: "prefix is not a module boundary", comp: string(criinfo.RuntimeContainerd),
			bi:        debug.BuildInfo{Path: "github.com/containerd/containerdx", Main: debug.Module{Path: "github.com/containerd/containerdx", Version: "v1.0.0"}},
			wantError: "it is built from"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, _, err := binaryVersion(&tt.bi, Of(tt.comp))
			checkVersion(t, got, err, tt.want, tt.wantError)
		})
	}
}

func TestLdflagsX(t *testing.T) {
	t.Parallel()
	// Debian 12's dockerd (docker.io 20.10.24+dfsg1-1+deb12u1), as
	// `go version -m /usr/sbin/dockerd` shows its -ldflags.
	in := `-X github.com/docker/docker/dockerversion.Version=20.10.24+dfsg1 -X "github.com/docker/docker/dockerversion.GitCommit=297e128" --X=a.B=c -s`
	assert.Equal(t, []string{
		"github.com/docker/docker/dockerversion.Version=20.10.24+dfsg1",
		"github.com/docker/docker/dockerversion.GitCommit=297e128",
		"a.B=c",
	}, ldflagsX(in))
	assert.Empty(t, ldflagsX(`-X "unterminated`))
	assert.Empty(t, ldflagsX(`-s -w -X`))
}

func TestPseudoVersion(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{
		"v0.0.0-20240102150405-abcdefabcdef":              true,
		"v2.4.3-0.20240102150405-abcdefabcdef":            true,
		"v1.2.3-rc.1.0.20240102150405-abcdefabcdef":       true,
		"v2.0.0-20240102150405-abcdefabcdef+incompatible": true,
		"v2.4.2":                             false,
		"v1.31.0-rc.1":                       false,
		"v1.0.0-20240102150405-ABCDEFABCDEF": false,
		"(devel)":                            false,
	} {
		if got := pseudoVersion(v); got != want {
			t.Errorf("pseudoVersion(%q) = %v, want %v", v, got, want)
		}
	}
}
