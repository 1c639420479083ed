package resolve

import (
	"context"
	"io/fs"
	"os"
	"testing"
	"testing/fstest"
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
			name: "crio-dropins/disk",
			root: func(b *testing.B) fs.FS { return os.DirFS(nodeRoot(b, "crio-dropins")) },
			opts: Options{RuntimeVersion: "1.31.3", KubeadmVersion: "v1.31.3"},
		},
		{
			name: "cri-dockerd/disk",
			root: func(b *testing.B) fs.FS { return os.DirFS(nodeRoot(b, "cri-dockerd")) },
			opts: Options{KubeletVersion: "v1.35.0"},
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
