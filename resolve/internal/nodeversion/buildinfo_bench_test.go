package nodeversion

import (
	"bytes"
	"io/fs"
	"os"
	"testing"
	"testing/fstest"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

// BenchmarkReadBuildInfo measures reading a binary's version from its Go
// build info: real binaries of 48-100 MB through nodefs.DirFS (skipped when
// absent), a minimal ELF and a garbage file in memory.
func BenchmarkReadBuildInfo(b *testing.B) {
	benches := []struct {
		name string
		src  string // a real binary; "" for data
		data []byte
		comp string
	}{
		{name: "containerd-2.4.2-56MB", src: nodetest.Containerd242, comp: string(criinfo.RuntimeContainerd)},
		{name: "debian-containerd-48MB", src: "/usr/bin/containerd", comp: string(criinfo.RuntimeContainerd)},
		{name: "kubelet-1.37.2", src: nodetest.Kubelet1372, comp: Kubelet},
		{name: "tiny-elf/memory", data: tinyContainerd(), comp: string(criinfo.RuntimeContainerd)},
		{name: "garbage-64KiB/memory", data: bytes.Repeat([]byte("\x7fELF garbage"), 64<<10/12), comp: string(criinfo.RuntimeContainerd)},
	}
	for _, bb := range benches {
		b.Run(bb.name, func(b *testing.B) {
			var fsys fs.FS
			if bb.src != "" {
				src := nodetest.RealBinary(b, bb.src)
				root := b.TempDir()
				nodetest.PlaceBinary(b, root, "usr/bin/x", src)
				if fi, err := os.Stat(src); err == nil {
					b.ReportMetric(float64(fi.Size())/1e6, "MB/file")
				}
				fsys = nodefs.DirFS(root)
			} else {
				fsys = fstest.MapFS{"usr/bin/x": {Data: bb.data}}
			}
			comp := Of(bb.comp)
			b.ReportAllocs()
			for b.Loop() {
				bi, err := readBuildInfo(fsys, "usr/bin/x")
				if err == nil {
					_, _, _ = binaryVersion(bi, comp)
				}
			}
		})
	}
}
