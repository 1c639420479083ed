package resolve

import (
	"bytes"
	"io/fs"
	"os"
	"testing"
	"testing/fstest"
)

// BenchmarkReadBuildInfo measures reading a binary's version from its Go
// build info: real binaries of 48-100 MB through DirFS (skipped when
// absent), a minimal ELF and a garbage file in memory.
func BenchmarkReadBuildInfo(b *testing.B) {
	benches := []struct {
		name string
		src  string // a real binary; "" for data
		data []byte
		comp string
	}{
		{name: "containerd-2.4.2-56MB", src: containerd242, comp: runtimeContainerd},
		{name: "debian-containerd-48MB", src: "/usr/bin/containerd", comp: runtimeContainerd},
		{name: "kubelet-1.37.2", src: kubelet1372, comp: componentKubelet},
		{name: "tiny-elf/memory", data: tinyContainerd(), comp: runtimeContainerd},
		{name: "garbage-64KiB/memory", data: bytes.Repeat([]byte("\x7fELF garbage"), 64<<10/12), comp: runtimeContainerd},
	}
	for _, bb := range benches {
		b.Run(bb.name, func(b *testing.B) {
			var fsys fs.FS
			if bb.src != "" {
				src := realBinary(b, bb.src)
				root := b.TempDir()
				placeBinary(b, root, "usr/bin/x", src)
				if fi, err := os.Stat(src); err == nil {
					b.ReportMetric(float64(fi.Size())/1e6, "MB/file")
				}
				fsys = DirFS(root)
			} else {
				fsys = fstest.MapFS{"usr/bin/x": {Data: bb.data}}
			}
			comp := componentOf(bb.comp)
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
