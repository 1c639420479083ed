//go:build unix

package resolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

// sentinelImage is the image named by the configs planted outside the
// root: it must never appear in a result or an error.
const (
	sentinelDomain = "sentinel.example"
	sentinelImage  = sentinelDomain + "/escaped:1"
)

// insideImage is the image named by configs inside the root.
const insideImage = "registry.k8s.io/pause:inside"

// hostileTree makes parent/root holding files (node path → content;
// a content starting with "->" makes a symbolic link to the rest) and, beside
// root in parent, a copy of every well-known node file naming sentinelImage,
// so that any escape through ".." or an absolute path to parent is seen. It
// returns root and parent.
func hostileTree(t testing.TB, files map[string]string) (root, parent string) {
	t.Helper()
	parent = t.TempDir()
	root = filepath.Join(parent, "root")
	require.NoError(t, os.Mkdir(root, 0o750))
	plant(t, parent, sentinelFiles())
	plant(t, root, files)
	return root, parent
}

// sentinelFiles are node files that name sentinelImage in every source.
func sentinelFiles() map[string]string {
	return map[string]string{
		"etc/containerd/config.toml":            "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"" + sentinelImage + "\"\n",
		"etc/containerd/conf.d/10.toml":         "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"" + sentinelImage + "\"\n",
		"etc/crio/crio.conf":                    "[crio.image]\npause_image = \"" + sentinelImage + "\"\n",
		"etc/crio/crio.conf.d/10.conf":          "[crio.image]\npause_image = \"" + sentinelImage + "\"\n",
		"var/lib/kubelet/kubeadm-flags.env":     "KUBELET_KUBEADM_ARGS=\"--pod-infra-container-image=" + sentinelImage + "\"\n",
		"etc/systemd/system/cri-docker.service": "[Service]\nExecStart=/usr/bin/cri-dockerd --pod-infra-container-image=" + sentinelImage + "\n",
		"etc/kubernetes/kubeadm.yaml":           "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nimageRepository: sentinel.example\n",
		"kubeadm.yaml":                          "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nimageRepository: sentinel.example\n",
		"sentinel.toml":                         "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"" + sentinelImage + "\"\n",
	}
}

// plant writes files under dir; see hostileTree.
func plant(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
		if target, ok := strings.CutPrefix(content, "->"); ok {
			require.NoError(t, os.Symlink(target, p))
			continue
		}
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	}
}

// resolveWithin runs Resolve and fails the test when it takes longer than
// d: a hostile root must never make it hang.
func resolveWithin(t testing.TB, d time.Duration, opts Options) (*Result, error) {
	t.Helper()
	type out struct {
		res *Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		res, err := Resolve(context.Background(), opts)
		ch <- out{res, err}
	}()
	select {
	case o := <-ch:
		return o.res, o.err
	case <-time.After(d):
		t.Fatalf("Resolve did not return within %v", d)
		return nil, nil
	}
}

// assertNoSentinel fails when the sentinel appears in res or err.
func assertNoSentinel(t testing.TB, res *Result, err error) {
	t.Helper()
	if err != nil {
		assert.NotContains(t, err.Error(), sentinelDomain)
	}
	if res != nil {
		b, jerr := json.Marshal(res)
		require.NoError(t, jerr)
		assert.NotContains(t, string(b), sentinelDomain)
	}
}

const v2Config = "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"" + insideImage + "\"\n"

func TestDirFSConfinement(t *testing.T) {
	t.Parallel()
	parentMarker := "{PARENT}" // replaced by the absolute path of parent
	tests := []struct {
		name      string
		files     map[string]string
		opts      Options
		wantImage string // "" when no source names one
		wantErr   error  // errors.Is target; nil for success
		// escapes says os.DirFS reads the sentinel for this tree: proof that
		// the tree really tries to escape.
		escapes bool
	}{
		{
			name:    "absolute symlink to a host file",
			files:   map[string]string{"etc/containerd/config.toml": "->{PARENT}/sentinel.toml"},
			escapes: true,
		},
		{
			name: "absolute symlink resolves inside the root",
			files: map[string]string{
				"etc/containerd/config.toml": "->/opt/real/config.toml",
				"opt/real/config.toml":       v2Config,
			},
			wantImage: insideImage,
		},
		{
			name:    "relative .. chain past the root",
			files:   map[string]string{"etc/containerd/config.toml": "->../../../../../../../../sentinel.toml"},
			wantErr: nil,
			escapes: false, // os.DirFS goes to the file system's root, not parent
		},
		{
			name:    "relative .. to parent",
			files:   map[string]string{"etc/containerd/config.toml": "->../../../sentinel.toml"},
			escapes: true,
		},
		{
			name: "relative .. chain stays at the root",
			files: map[string]string{
				"etc/containerd/config.toml": "->../../../../../../../../real.toml",
				"real.toml":                  v2Config,
			},
			wantImage: insideImage,
		},
		{
			name:    "intermediate directory absolute symlink",
			files:   map[string]string{"etc": "->{PARENT}/etc"},
			escapes: true,
		},
		{
			name:    "intermediate directory relative symlink",
			files:   map[string]string{"etc/crio": "->../../etc/crio"},
			wantErr: syscall.ELOOP, // inside the root it leads to itself
			escapes: true,
		},
		{
			name:    "link to slash and up",
			files:   map[string]string{"var/lib/kubelet": "->/.."},
			escapes: false,
		},
		{
			name:    "intermediate link climbing up",
			files:   map[string]string{"etc/containerd": "->/x/../../etc/../../.."},
			escapes: false,
		},
		{
			name: "containerd import by absolute host path",
			files: map[string]string{
				"etc/containerd/config.toml": "version = 2\nimports = [\"{PARENT}/sentinel.toml\"]\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"" + insideImage + "\"\n",
			},
			wantImage: insideImage, // imports name node paths: a missing import
		},
		{
			name: "containerd import glob through a symlinked directory",
			files: map[string]string{
				"etc/containerd/config.toml": "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"" + insideImage + "\"\n",
				"etc/containerd/conf.d":      "->{PARENT}/etc/containerd/conf.d",
			},
			wantImage: insideImage,
			escapes:   true,
		},
		{
			name:      "crio drop-in symlink",
			files:     map[string]string{"etc/crio/crio.conf.d/10.conf": "->{PARENT}/etc/crio/crio.conf.d/10.conf", "etc/crio/crio.conf": "[crio.image]\npause_image = \"" + insideImage + "\"\n"},
			wantImage: insideImage,
			escapes:   true,
		},
		{
			name: "kubeadm config through a symlink",
			files: map[string]string{
				"etc/kubernetes": "->../..",
			},
			opts:    Options{KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml", KubeadmVersion: "v1.31.0"},
			wantErr: fs.ErrNotExist,
			escapes: true,
		},
		{
			name:    "symlink loop",
			files:   map[string]string{"etc/containerd/config.toml": "->loop", "etc/containerd/loop": "->config.toml"},
			wantErr: syscall.ELOOP,
		},
		{
			name:    "self symlink",
			files:   map[string]string{"etc/containerd/config.toml": "->config.toml"},
			wantErr: syscall.ELOOP,
		},
		{
			name:    "directory loop",
			files:   map[string]string{"etc/containerd": "->/etc/containerd/x"},
			wantErr: syscall.ELOOP,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			files := map[string]string{}
			for k, v := range tt.files {
				files[k] = strings.ReplaceAll(v, parentMarker, parent)
			}
			root := filepath.Join(parent, "root")
			require.NoError(t, os.Mkdir(root, 0o750))
			plant(t, parent, sentinelFiles())
			plant(t, root, files)

			opts := tt.opts
			opts.Root = DirFS(root)
			res, err := resolveWithin(t, 10*time.Second, opts)
			assertNoSentinel(t, res, err)
			if tt.wantErr != nil {
				require.Error(t, err)
				assert.ErrorIs(t, err, tt.wantErr)
			} else {
				requireResolved(t, res, err)
				assert.Equal(t, tt.wantImage, res.SandboxImage)
			}

			// The same tree through os.DirFS: the sentinel shows where the
			// tree escapes, so the checks above can fail.
			opts.Root = os.DirFS(root)
			res, err = resolveWithin(t, 10*time.Second, opts)
			var seen string
			if err != nil {
				seen = err.Error()
			}
			if res != nil {
				b, jerr := json.Marshal(res)
				require.NoError(t, jerr)
				seen += string(b)
			}
			if tt.escapes {
				assert.Contains(t, seen, sentinelDomain, "os.DirFS should escape this tree")
			}
		})
	}
}

// TestDirFSMatchesOSDirFS resolves every test node through DirFS and
// os.DirFS: without links out of the root, both give the same result.
func TestDirFSMatchesOSDirFS(t *testing.T) {
	t.Parallel()
	for _, tt := range nodeTests {
		t.Run(tt.node, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Root = os.DirFS(nodeRoot(t, tt.node))
			want, err := Resolve(context.Background(), opts)
			require.NoError(t, err)
			opts.Root = DirFS(nodeRoot(t, tt.node))
			got, err := Resolve(context.Background(), opts)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

// TestDirFSIsAnFS runs the standard library's file system checks on DirFS.
func TestDirFSIsAnFS(t *testing.T) {
	t.Parallel()
	require.NoError(t, fstest.TestFS(DirFS(nodeRoot(t, "containerd-2.2-v3-imports")),
		"etc/containerd/config.toml"))
}

func TestDirFSMissingRoot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		dir  string // the root given to DirFS
	}{
		{name: "typo", dir: filepath.Join(t.TempDir(), "typo")},
		// os.DirFS("") refuses too; "" is not the working directory
		// (which holds this package's testdata, a readable tree).
		{name: "empty", dir: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Resolve(context.Background(), Options{Root: DirFS(tt.dir)})
			require.Error(t, err, "a missing root is not an empty node")
			assert.NotErrorIs(t, err, fs.ErrNotExist)
			assert.Contains(t, err.Error(), "root directory")
			_, err = fs.Stat(DirFS(tt.dir), ".")
			require.Error(t, err)
			_, err = fs.ReadDir(DirFS(tt.dir), ".")
			require.Error(t, err)
		})
	}

	_, err := DirFS(t.TempDir()).Open("../x")
	assert.ErrorIs(t, err, fs.ErrInvalid)
}

// TestSpecialFiles puts FIFOs, sockets and devices where node files are
// expected: each is refused by its mode, promptly, with a *ConfigError
// naming the path and what it is.
func TestSpecialFiles(t *testing.T) {
	t.Parallel()
	type special struct {
		path string // node path to make special
		make func(t *testing.T, p string)
	}
	fifo := func(t *testing.T, p string) { require.NoError(t, syscall.Mkfifo(p, 0o600)) }
	sock := func(t *testing.T, p string) {
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Skipf("unix socket at %s: %v", p, err)
		}
		t.Cleanup(func() { _ = l.Close() })
	}
	tests := []struct {
		name     string
		special  special
		opts     Options
		wantPath string
		wantWhat string
		viaLink  bool // the node path is an absolute link to /special
	}{
		{"containerd config FIFO", special{"etc/containerd/config.toml", fifo}, Options{}, "/etc/containerd/config.toml", "named pipe (FIFO)", false},
		{"crio drop-in FIFO", special{"etc/crio/crio.conf.d/10.conf", fifo}, Options{}, "/etc/crio/crio.conf.d/10.conf", "named pipe (FIFO)", false},
		{"kubelet flags FIFO", special{"var/lib/kubelet/kubeadm-flags.env", fifo}, Options{}, "/var/lib/kubelet/kubeadm-flags.env", "named pipe (FIFO)", false},
		{"systemd drop-in FIFO", special{"etc/systemd/system/cri-docker.service.d/10.conf", fifo}, Options{}, "/etc/systemd/system/cri-docker.service.d/10.conf", "named pipe (FIFO)", false},
		{"kubeadm config FIFO", special{"etc/kubernetes/kubeadm.yaml", fifo}, Options{KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"}, "/etc/kubernetes/kubeadm.yaml", "named pipe (FIFO)", false},
		{"containerd config socket", special{"etc/containerd/config.toml", sock}, Options{}, "/etc/containerd/config.toml", "socket", false},
		{"containerd config link to a FIFO", special{"etc/containerd/config.toml", fifo}, Options{}, "/etc/containerd/config.toml", "named pipe (FIFO)", true},
		{"crio drop-in link to a FIFO", special{"etc/crio/crio.conf.d/10.conf", fifo}, Options{}, "/etc/crio/crio.conf.d/10.conf", "named pipe (FIFO)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			plant(t, root, map[string]string{
				"etc/systemd/system/cri-docker.service": "[Service]\nExecStart=/usr/bin/cri-dockerd\n",
			})
			p := filepath.Join(root, filepath.FromSlash(tt.special.path))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
			if tt.viaLink {
				require.NoError(t, os.Symlink("/special", p))
				p = filepath.Join(root, "special")
			}
			tt.special.make(t, p)
			for name, fsys := range map[string]fs.FS{"DirFS": DirFS(root), "os.DirFS": os.DirFS(root)} {
				if tt.viaLink && name == "os.DirFS" {
					continue // the absolute link leads to the host's /special
				}
				opts := tt.opts
				opts.Root = fsys
				start := time.Now()
				_, err := resolveWithin(t, 10*time.Second, opts)
				assert.Less(t, time.Since(start), 2*time.Second, name)
				var ce *ConfigError
				if assert.ErrorAs(t, err, &ce, name) {
					assert.Equal(t, tt.wantPath, ce.Path, name)
				}
				assert.ErrorIs(t, err, ErrNotRegular, name)
				assert.ErrorIs(t, err, ErrInvalidConfig, name)
				assert.Contains(t, fmt.Sprint(err), tt.wantWhat, name)
			}
		})
	}
}

// TestGlobOverFIFO: a FIFO where an imports glob expects a directory is
// not opened (fs.Glob lists directories without a Stat first).
func TestGlobOverFIFO(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	plant(t, root, map[string]string{
		"etc/containerd/config.toml": "version = 2\nimports = [\"conf.d/*.toml\"]\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"" + insideImage + "\"\n",
	})
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "etc/containerd/conf.d"), 0o600))
	for name, fsys := range map[string]fs.FS{"DirFS": DirFS(root), "os.DirFS": os.DirFS(root)} {
		res, err := resolveWithin(t, 10*time.Second, Options{Root: fsys})
		require.NoError(t, err, name)
		assert.Equal(t, insideImage, res.SandboxImage, name)
	}
}

// TestDevices: a link to /dev/zero stays in the root (absent there); a
// device node inside the root (made with mknod when running as root), or
// /dev/zero through os.DirFS, is refused by its mode, never read.
func TestDevices(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	plant(t, root, map[string]string{
		"etc/containerd/config.toml":        "->/dev/zero",
		"var/lib/kubelet/kubeadm-flags.env": "->../../../../../../../dev/zero",
	})
	res, err := resolveWithin(t, 10*time.Second, Options{Root: DirFS(root)})
	requireResolved(t, res, err, "the link leads to the root's /dev/zero, which does not exist")
	assert.Empty(t, res.Candidates)

	_, err = resolveWithin(t, 10*time.Second, Options{Root: os.DirFS(root)})
	assert.ErrorIs(t, err, ErrNotRegular, "os.DirFS follows to the host's /dev/zero")
	assert.Contains(t, fmt.Sprint(err), "character device")

	if os.Geteuid() != 0 {
		t.Skip("mknod needs root")
	}
	require.NoError(t, os.Mkdir(filepath.Join(root, "dev"), 0o750))
	// 1:5 is /dev/zero on Linux.
	require.NoError(t, syscall.Mknod(filepath.Join(root, "dev/zero"), syscall.S_IFCHR|0o600, 1<<8|5))
	_, err = resolveWithin(t, 10*time.Second, Options{Root: DirFS(root)})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "/etc/containerd/config.toml", ce.Path)
	assert.ErrorIs(t, err, ErrNotRegular)
	assert.Contains(t, err.Error(), "character device")
}

// endlessFS is a file system whose one file claims to be small and
// regular but reads without end, like a device behind a lying Stat.
type endlessFS struct{}

type endlessFile struct{ read int64 }

type smallInfo struct{ name string }

func (smallInfo) Size() int64                     { return 10 }
func (i smallInfo) Name() string                  { return i.name }
func (smallInfo) Mode() fs.FileMode               { return 0o644 }
func (smallInfo) ModTime() time.Time              { return time.Time{} }
func (smallInfo) IsDir() bool                     { return false }
func (smallInfo) Sys() any                        { return nil }
func (f *endlessFile) Close() error               { return nil }
func (f *endlessFile) Stat() (fs.FileInfo, error) { return smallInfo{"config.toml"}, nil }
func (f *endlessFile) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '#'
	}
	f.read += int64(len(p))
	return len(p), nil
}

func (endlessFS) Open(name string) (fs.File, error) {
	if name == "etc/containerd/config.toml" {
		return &endlessFile{}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// TestReadsBoundedByReader: neither a lying Stat nor a huge sparse file
// makes Resolve read more than the limit.
func TestReadsBoundedByReader(t *testing.T) {
	t.Parallel()
	_, err := resolveWithin(t, 10*time.Second, Options{Root: endlessFS{}})
	assert.ErrorIs(t, err, ErrLimit)
	assert.Contains(t, fmt.Sprint(err), "/etc/containerd/config.toml")

	f := &endlessFile{}
	b, err := nodefs.ReadFile(fsFunc(func(string) (fs.File, error) { return f, nil }), "x")
	assert.Nil(t, b)
	assert.ErrorIs(t, err, ErrLimit)
	assert.Equal(t, int64(nodefs.MaxFileSize+1), f.read, "bytes read from an endless file")

	root := t.TempDir()
	p := filepath.Join(root, "etc/crio/crio.conf")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
	big, err := os.Create(p)
	require.NoError(t, err)
	require.NoError(t, big.Truncate(8<<30)) // 8 GiB, sparse
	require.NoError(t, big.Close())
	_, err = resolveWithin(t, 10*time.Second, Options{Root: DirFS(root)})
	assert.ErrorIs(t, err, ErrLimit)
	assert.Contains(t, fmt.Sprint(err), "/etc/crio/crio.conf")
}

// fsFunc is an fs.FS made of its Open.
type fsFunc func(name string) (fs.File, error)

func (f fsFunc) Open(name string) (fs.File, error) { return f(name) }

// TestTotalBytes: many files under the per-file limit stop at the total.
func TestTotalBytes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	filler := "# " + strings.Repeat("x", nodefs.MaxFileSize-100) + "\n"
	files := map[string]string{
		"etc/containerd/config.toml": "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n",
	}
	for i := range nodefs.MaxTotalBytes/nodefs.MaxFileSize + 1 {
		files[fmt.Sprintf("etc/containerd/conf.d/%02d.toml", i)] = filler
	}
	plant(t, root, files)
	_, err := resolveWithin(t, 20*time.Second, Options{Root: DirFS(root)})
	assert.ErrorIs(t, err, ErrLimit)
	assert.Contains(t, fmt.Sprint(err), fmt.Sprintf("more than %d bytes", nodefs.MaxTotalBytes))
}

// manyFiles makes n empty files named prefix00000suffix... in dir.
func manyFiles(t testing.TB, dir, suffix string, n int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o750))
	for i := range n {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%06d%s", i, suffix)))
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
}

// TestHugeDirectories: an imports glob over 100,000 files (10,000 with
// -short), a crio.conf.d and a systemd drop-in directory with thousands of
// files end promptly with an ErrLimit that names the directory.
func TestHugeDirectories(t *testing.T) {
	t.Parallel()
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	tests := []struct {
		name     string
		files    map[string]string
		dir      string // where to make the files
		suffix   string
		count    int
		wantPath string
	}{
		{
			name:  "containerd imports glob",
			files: map[string]string{"etc/containerd/config.toml": "version = 2\nimports = [\"conf.d/*.toml\"]\n"},
			dir:   "etc/containerd/conf.d", suffix: ".toml", count: n,
			wantPath: "/etc/containerd/conf.d",
		},
		{
			name: "crio.conf.d",
			dir:  "etc/crio/crio.conf.d", suffix: ".conf", count: 5000,
			wantPath: "/etc/crio/crio.conf.d",
		},
		{
			name: "crio.conf.d files under the entry limit",
			dir:  "etc/crio/crio.conf.d", suffix: ".conf", count: nodefs.MaxFilesPerSource + 1,
			wantPath: "/etc/crio/crio.conf.d/000256.conf",
		},
		{
			name:  "systemd drop-ins",
			files: map[string]string{"etc/systemd/system/cri-docker.service": "[Service]\nExecStart=/usr/bin/cri-dockerd\n"},
			dir:   "etc/systemd/system/cri-docker.service.d", suffix: ".conf", count: 5000,
			wantPath: "/etc/systemd/system/cri-docker.service.d",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			plant(t, root, tt.files)
			manyFiles(t, filepath.Join(root, tt.dir), tt.suffix, tt.count)
			start := time.Now()
			_, err := resolveWithin(t, 30*time.Second, Options{Root: DirFS(root)})
			t.Logf("%d files: %v", tt.count, time.Since(start))
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.ErrorIs(t, err, ErrLimit)
			assert.Equal(t, tt.wantPath, ce.Path)
		})
	}
}

// TestImportsAndWalks: self-imports, import cycles through links, deep
// trees and directory loops in crio.conf.d end without hanging.
func TestImportsAndWalks(t *testing.T) {
	t.Parallel()
	deep := "etc/crio/crio.conf.d" + strings.Repeat("/d", nodefs.MaxDepth) + "/10.conf"
	tests := []struct {
		name      string
		files     map[string]string
		wantImage string
		wantErr   error
	}{
		{
			name: "import that imports itself",
			files: map[string]string{
				"etc/containerd/config.toml": "version = 2\nimports = [\"/etc/containerd/config.toml\", \"config.toml\", \"./self.toml\"]\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"" + insideImage + "\"\n",
				"etc/containerd/self.toml":   "->config.toml",
			},
			wantImage: insideImage,
		},
		{
			name: "import glob matching its importer",
			files: map[string]string{
				"etc/containerd/config.toml": "version = 2\nimports = [\"/etc/containerd/*.toml\", \"/etc/*/*.toml\"]\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"" + insideImage + "\"\n",
			},
			wantImage: insideImage,
		},
		{
			name:    "deep crio.conf.d",
			files:   map[string]string{deep: "[crio.image]\npause_image = \"" + insideImage + "\"\n"},
			wantErr: ErrLimit,
		},
		{
			name: "crio.conf.d directory links",
			files: map[string]string{
				"etc/crio/crio.conf":            "[crio.image]\npause_image = \"" + insideImage + "\"\n",
				"etc/crio/crio.conf.d/up":       "->..",
				"etc/crio/crio.conf.d/self":     "->.",
				"etc/crio/crio.conf.d/root":     "->/",
				"etc/crio/crio.conf.d/sub/back": "->../../crio.conf.d",
			},
			wantImage: insideImage,
		},
		{
			name: "crio.conf.d link loop",
			files: map[string]string{
				"etc/crio/crio.conf.d/a": "->b",
				"etc/crio/crio.conf.d/b": "->a",
			},
			wantErr: syscall.ELOOP,
		},
		{
			name: "glob over the whole root",
			files: map[string]string{
				"etc/containerd/config.toml": "version = 2\nimports = [\"/*/*/*/*/*/*\"]\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"" + insideImage + "\"\n",
			},
			wantImage: insideImage,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root, _ := hostileTree(t, tt.files)
			res, err := resolveWithin(t, 10*time.Second, Options{Root: DirFS(root)})
			assertNoSentinel(t, res, err)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantImage, res.SandboxImage)
		})
	}
}

// countingFS counts opens and cancels a context at the first one.
type countingFS struct {
	fs.FS
	cancel context.CancelFunc
	opens  int
}

func (c *countingFS) Open(name string) (fs.File, error) {
	c.opens++
	c.cancel()
	return c.FS.Open(name)
}

// TestResolveCancelled: Resolve checks its context between files.
func TestResolveCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Resolve(ctx, Options{Root: DirFS(nodeRoot(t, "crio-dropins"))})
	require.ErrorIs(t, err, context.Canceled)

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	c := &countingFS{FS: os.DirFS(nodeRoot(t, "containerd-2.2-v3-imports")), cancel: cancel}
	_, err = Resolve(ctx, Options{Root: c, KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"})
	require.ErrorIs(t, err, context.Canceled)
	var ce *ConfigError
	assert.False(t, errors.As(err, &ce), "a cancellation is not a configuration error: %v", err)
	assert.Equal(t, 1, c.opens, "files opened after the cancellation")
}

// TestErrorExcerpts: a value of a megabyte in a node file shows in an error
// as a short excerpt at most.
func TestErrorExcerpts(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("A", 1<<20)
	tests := []struct {
		name  string
		files map[string]string
		opts  Options
	}{
		{"containerd version", map[string]string{"etc/containerd/config.toml": "version = \"" + long + "\"\n"}, Options{}},
		{"containerd import", map[string]string{"etc/containerd/config.toml": "version = 2\nimports = [\"" + long + "[*\"]\n"}, Options{}},
		{"containerd toml syntax", map[string]string{"etc/containerd/config.toml": "version = 2\n" + long + "\n"}, Options{}},
		{"crio pause_image type", map[string]string{"etc/crio/crio.conf": "[crio.image]\npause_image = [\"" + long + "\"]\n"}, Options{}},
		{"systemd section", map[string]string{"etc/systemd/system/cri-docker.service": "[" + long + "\n"}, Options{}},
		{"systemd quote", map[string]string{"etc/systemd/system/cri-docker.service": "[Service]\nExecStart=/x \"" + long + "\n"}, Options{}},
		{"kubelet quote", map[string]string{"var/lib/kubelet/kubeadm-flags.env": "KUBELET_KUBEADM_ARGS=\"" + long + "\n"}, Options{}},
		{"kubeadm yaml", map[string]string{"etc/kubernetes/kubeadm.yaml": "kind: ClusterConfiguration\napiVersion: kubeadm.k8s.io/v1beta3\nimageRepository: [" + long + "\n"}, Options{KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			plant(t, root, tt.files)
			opts := tt.opts
			opts.Root = DirFS(root)
			_, err := Resolve(context.Background(), opts)
			require.Error(t, err)
			msg := err.Error()
			assert.LessOrEqual(t, len(msg), 512, "error: %.600s", msg)
			assert.LessOrEqual(t, strings.Count(msg, "A"), nodefs.MaxMessage, "error: %.600s", msg)
		})
	}
}

var _ io.Reader = (*endlessFile)(nil)

// TestDirFSSlash: DirFS("/") reads the host as it is.
func TestDirFSSlash(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Skipf("no /etc/passwd: %v", err)
	}
	got, err := fs.ReadFile(DirFS("/"), "etc/passwd")
	require.NoError(t, err)
	assert.Equal(t, want, got)
	fi, err := fs.Stat(DirFS("/"), ".")
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
}

// TestResolveHostileBinaries checks that binaries are read like configs: a
// symbolic link out of the root resolves inside it, and a FIFO or a
// directory at a binary's path is a note, read nothing and block nothing.
func TestResolveHostileBinaries(t *testing.T) {
	t.Parallel()
	src := nodetest.RealBinary(t, nodetest.Containerd242)
	root := nodetest.WriteTree(t, map[string]string{"etc/containerd/config.toml": "version = 4\n", dpkgStatus: debianStatus(t)}, nil)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "usr/local/bin"), 0o750))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "usr/bin/containerd"), 0o750))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "opt/bin"), 0o750))
	// An absolute link to the host's containerd 2.4.2: inside the root it
	// names /root/.cache/..., which does not exist there.
	require.NoError(t, os.Symlink(src, filepath.Join(root, "usr/local/bin/containerd")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "opt/bin/containerd"), 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := Resolve(ctx, Options{Root: DirFS(root)})
	require.NoError(t, err)
	assert.Equal(t, []ComponentVersion{
		{Component: "containerd", Version: "1.6.20~ds1-1+deb12u3", Origin: "/var/lib/dpkg/status:8", Used: true},
	}, res.Versions, "the link out of the root must not be followed")
	assert.True(t, containsSub(res.Notes, "/usr/bin/containerd: not a regular file: it is a directory"), "notes %q", res.Notes)
	assert.True(t, containsSub(res.Notes, "/opt/bin/containerd: not a regular file: it is a named pipe (FIFO)"), "notes %q", res.Notes)
}
