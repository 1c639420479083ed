package resolve

import (
	"context"
	"io/fs"
	"os"
	"testing"
)

// BenchmarkResolveRoot compares the root-confined DirFS with os.DirFS over
// the same test node trees on disk.
func BenchmarkResolveRoot(b *testing.B) {
	trees := []struct {
		node string
		opts Options
	}{
		{"containerd-2.2-v3-imports", Options{RuntimeVersion: "2.2.9", KubeadmVersion: "v1.34.1", KubeadmConfigPath: "etc/kubernetes/kubeadm.yaml"}},
		{"containerd-1.6-v2", Options{RuntimeVersion: "1.6.20", KubeadmVersion: "v1.26.15"}},
		{"crio-dropins", Options{RuntimeVersion: "1.31.3", KubeadmVersion: "v1.31.3"}},
		{"cri-dockerd", Options{KubeletVersion: "v1.35.0"}},
	}
	roots := []struct {
		name string
		fsys func(dir string) fs.FS
	}{
		{"os.DirFS", os.DirFS},
		{"DirFS", DirFS},
	}
	for _, tree := range trees {
		for _, root := range roots {
			b.Run(tree.node+"/"+root.name, func(b *testing.B) {
				opts := tree.opts
				opts.Root = root.fsys(nodeRoot(b, tree.node))
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
}
