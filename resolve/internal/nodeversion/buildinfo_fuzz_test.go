package nodeversion

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// tinyELF returns the smallest ELF executable that debug/buildinfo reads:
// one writable PT_LOAD segment holding a .go.buildinfo section with the
// Go version vers and the module info mod inline (the format of Go 1.18
// and later, cmd/link's buildinfo), and a section name table.
func tinyELF(vers, mod string) []byte {
	le := binary.LittleEndian
	// The build info blob: a 32-byte header, then the two strings.
	blob := []byte("\xff Go buildinf:")
	blob = append(blob, 8, 2) // pointer size, flags: inline strings
	blob = append(blob, make([]byte, 16)...)
	blob = binary.AppendUvarint(blob, uint64(len(vers)))
	blob = append(blob, vers...)
	// The go command frames the module info with two 16-byte sentinels.
	framed := strings.Repeat("\x30", 16) + mod + strings.Repeat("\x31", 16)
	blob = binary.AppendUvarint(blob, uint64(len(framed)))
	blob = append(blob, framed...)

	const dataOff, vaddr = 128, 0x1000
	shstr := "\x00.go.buildinfo\x00.shstrtab\x00"
	strOff := dataOff + len(blob)
	shOff := (strOff + len(shstr) + 7) &^ 7
	b := make([]byte, shOff+3*64)
	copy(b, "\x7fELF\x02\x01\x01")           // 64-bit, little endian, version 1
	le.PutUint16(b[16:], 2)                  // ET_EXEC
	le.PutUint16(b[18:], 62)                 // EM_X86_64
	le.PutUint32(b[20:], 1)                  // version
	le.PutUint64(b[32:], 64)                 // program headers
	le.PutUint64(b[40:], uint64(shOff))      //nolint:gosec // section headers: a small positive offset
	le.PutUint16(b[52:], 64)                 // header size
	le.PutUint16(b[54:], 56)                 // program header size
	le.PutUint16(b[56:], 1)                  // one program header
	le.PutUint16(b[58:], 64)                 // section header size
	le.PutUint16(b[60:], 3)                  // three sections
	le.PutUint16(b[62:], 2)                  // the name table is section 2
	ph := b[64:]                             // PT_LOAD, RW
	le.PutUint32(ph[0:], 1)                  // PT_LOAD
	le.PutUint32(ph[4:], 6)                  // PF_R|PF_W
	le.PutUint64(ph[8:], dataOff)            // offset
	le.PutUint64(ph[16:], vaddr)             // vaddr
	le.PutUint64(ph[24:], vaddr)             // paddr
	le.PutUint64(ph[32:], uint64(len(blob))) // filesz
	le.PutUint64(ph[40:], uint64(len(blob))) // memsz
	le.PutUint64(ph[48:], 16)                // align
	copy(b[dataOff:], blob)
	copy(b[strOff:], shstr)
	sh := b[shOff+64:] // section 1: .go.buildinfo
	le.PutUint32(sh[0:], 1)
	le.PutUint32(sh[4:], 1) // SHT_PROGBITS
	le.PutUint64(sh[8:], 3) // SHF_WRITE|SHF_ALLOC
	le.PutUint64(sh[16:], vaddr)
	le.PutUint64(sh[24:], dataOff)
	le.PutUint64(sh[32:], uint64(len(blob)))
	le.PutUint64(sh[48:], 16)
	sh = b[shOff+128:] // section 2: .shstrtab
	le.PutUint32(sh[0:], 15)
	le.PutUint32(sh[4:], 3) // SHT_STRTAB
	le.PutUint64(sh[24:], uint64(strOff))
	le.PutUint64(sh[32:], uint64(len(shstr)))
	le.PutUint64(sh[48:], 1)
	return b
}

// tinyContainerd is a tinyELF whose build info is that of the module-built
// containerd 2.4.2, dependencies left out.
func tinyContainerd() []byte {
	return tinyELF("go1.26.8", "path\tgithub.com/containerd/containerd/v2/cmd/containerd\n"+
		"mod\tgithub.com/containerd/containerd/v2\tv2.4.2\th1:p6Qg+xbEz8lvwdhHDx0U469xENvp4LgGBx+E7djXkGw=\n"+
		"build\t-trimpath=true\n")
}

func TestTinyELF(t *testing.T) {
	t.Parallel()
	b := tinyContainerd()
	bi, err := buildInfoAt(bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	v, from, err := binaryVersion(bi, Of(string(criinfo.RuntimeContainerd)))
	require.NoError(t, err)
	assert.Equal(t, "v2.4.2", v)
	assert.Equal(t, "module github.com/containerd/containerd/v2 v2.4.2", from)

	// Every prefix of it is a file cut short: no build info, no panic.
	for n := range len(b) {
		_, err := buildInfoAt(bytes.NewReader(b[:n]), int64(n))
		if !errors.Is(err, errNoBuildInfo) {
			t.Fatalf("buildInfoAt(first %d bytes) error = %v, want errNoBuildInfo", n, err)
		}
	}
}

// FuzzBuildInfo reads arbitrary files as binaries: the reader must return
// build info or an error wrapping errNoBuildInfo, never panic (the recover
// in buildInfoAt would hide a panic of debug/buildinfo: here it fails the
// target), read past maxBinaryRead, or give a version that is not one.
func FuzzBuildInfo(f *testing.F) {
	f.Add(tinyContainerd())
	f.Add(tinyELF("go1.19.8", "path\tgithub.com/containerd/containerd/cmd/containerd\nbuild\t-ldflags=\"-X github.com/containerd/containerd/version.Version=1.6.20\"\n"))
	for _, g := range garbageBinaries {
		f.Add(g.data)
	}
	comps := []string{string(criinfo.RuntimeContainerd), string(criinfo.RuntimeCRIO), string(criinfo.RuntimeCRIDockerd), Kubelet, Kubeadm}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &countingReaderAt{r: bytes.NewReader(b)}
		bi, err := buildInfoAt(c, int64(len(b)))
		if c.n > maxBinaryRead {
			t.Fatalf("read %d bytes, more than %d", c.n, maxBinaryRead)
		}
		if err != nil {
			if !errors.Is(err, errNoBuildInfo) || bi != nil {
				t.Fatalf("buildInfoAt = %v, %v; want nil and errNoBuildInfo", bi, err)
			}
			if strings.Contains(err.Error(), "the reader failed") {
				t.Fatalf("debug/buildinfo panicked: %v", err)
			}
			return
		}
		for _, name := range comps {
			v, _, err := binaryVersion(bi, Of(name))
			if err != nil {
				if v != "" {
					t.Fatalf("binaryVersion(%s) = %q with error %v", name, v, err)
				}
				continue
			}
			if _, perr := releases.ParseVersion(v); perr != nil || pseudoVersion(v) {
				t.Fatalf("binaryVersion(%s) = %q, not a release version", name, v)
			}
		}
	})
}
