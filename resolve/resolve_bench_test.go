package resolve

import (
	"context"
	"io/fs"
	"os"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

// loadTree copies a node tree into memory so the benchmark measures
// Resolve, not the disk.
func loadTree(b *testing.B, dir string) fstest.MapFS {
	b.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(os.DirFS(dir), p)
		m[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

func BenchmarkResolve(b *testing.B) {
	benches := []struct {
		name string
		root func(b *testing.B) fs.FS
		opts Options
	}{
		{
			name: "containerd-2.2-v3-imports/memory",
			root: func(b *testing.B) fs.FS { return loadTree(b, nodeRoot(b, "containerd-2.2-v3-imports")) },
			opts: Options{RuntimeVersion: "2.2.9", KubeadmVersion: "v1.34.1", KubeadmConfigPath: "etc/kubernetes/kubeadm.yaml"},
		},
		{
			name: "containerd-2.2-v3-imports/disk",
			root: func(b *testing.B) fs.FS { return os.DirFS(nodeRoot(b, "containerd-2.2-v3-imports")) },
			opts: Options{RuntimeVersion: "2.2.9", KubeadmVersion: "v1.34.1", KubeadmConfigPath: "etc/kubernetes/kubeadm.yaml"},
		},
		{
			name: "containerd-1.6-v2/disk",
			root: func(b *testing.B) fs.FS { return os.DirFS(nodeRoot(b, "containerd-1.6-v2")) },
			opts: Options{RuntimeVersion: "1.6.20", KubeadmVersion: "v1.26.15"},
		},
		{
			// The kubelet's unit, two drop-ins and a kubeadm config (issue 40).
			name: "kubelet-flag-dropin/disk",
			root: func(b *testing.B) fs.FS { return os.DirFS(nodeRoot(b, "kubelet-flag-dropin")) },
			opts: Options{RuntimeVersion: "2.4.2", KubeletVersion: "1.35.0", KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"},
		},
		{
			name: "crio-dropins/disk",
			root: func(b *testing.B) fs.FS { return os.DirFS(nodeRoot(b, "crio-dropins")) },
			opts: Options{RuntimeVersion: "1.31.3", KubeadmVersion: "v1.31.3"},
		},
		{
			name: "cri-dockerd/disk",
			root: func(b *testing.B) fs.FS { return os.DirFS(nodeRoot(b, "cri-dockerd")) },
			opts: Options{KubeletVersion: "v1.35.0"},
		},
		{
			// No binaries and no package database: the version sources
			// cost a few failed lookups through DirFS.
			name: "containerd-2.2-v3-imports/dirfs",
			root: func(b *testing.B) fs.FS { return DirFS(nodeRoot(b, "containerd-2.2-v3-imports")) },
			opts: Options{RuntimeVersion: "2.2.9", KubeadmVersion: "v1.34.1", KubeadmConfigPath: "etc/kubernetes/kubeadm.yaml"},
		},
		{
			// Debian 12's containerd: its default config and its dpkg
			// stanza, the version from the package database.
			name: "debian-dpkg/dirfs",
			root: func(b *testing.B) fs.FS { return DirFS(nodeRoot(b, "containerd-1.6-debian-dpkg")) },
		},
		{
			// The module-built containerd 2.4.2 (56 MB), kubelet and
			// kubeadm v1.37.2 in /usr/local/bin and /usr/bin, each read for
			// its build info.
			name: "containerd-2.4.2-kubelet-kubeadm-binaries/dirfs",
			root: func(b *testing.B) fs.FS {
				root := b.TempDir()
				require.NoError(b, os.MkdirAll(root+"/etc/containerd", 0o750))
				require.NoError(b, os.WriteFile(root+"/etc/containerd/config.toml", []byte("version = 4\n"), 0o600))
				nodetest.PlaceBinary(b, root, "usr/local/bin/containerd", nodetest.RealBinary(b, nodetest.Containerd242))
				nodetest.PlaceBinary(b, root, "usr/bin/kubelet", nodetest.RealBinary(b, nodetest.Kubelet1372))
				nodetest.PlaceBinary(b, root, "usr/bin/kubeadm", nodetest.RealBinary(b, nodetest.Kubeadm1372))
				return DirFS(root)
			},
		},
	}
	for _, bb := range benches {
		b.Run(bb.name, func(b *testing.B) {
			opts := bb.opts
			opts.Root = bb.root(b)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Resolve(ctx, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
