package nodeversion

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
	"github.com/sandboxpin/sandboxpin/resolve/internal/unitfile"
)

// maxBinaryRead bounds the bytes read from one binary to find its build
// info. Go's linker writes the build info into its own section
// (.go.buildinfo, a few KiB) and debug/buildinfo reads the ELF headers,
// section names and that section: about 100 KiB for a 60 MB containerd.
// A file that makes the reader search further (no such section, a data
// segment it scans in 1 MiB chunks, section tables claiming gigabytes) is
// given up on at this bound.
const maxBinaryRead = 8 << 20

var (
	// errNoBuildInfo is wrapped by the error of a node binary that holds no
	// readable Go build info (not a Go executable, not an executable, cut
	// short, or past maxBinaryRead).
	errNoBuildInfo = errors.New("no Go build info")
	// errNoReaderAt is the error of a file system whose files cannot be
	// read at an offset: a binary is never read whole.
	errNoReaderAt = errors.New("the file system gives no random access to it (io.ReaderAt)")
)

// readBuildInfo reads the Go build info of the binary name in fsys, as `go
// version -m` shows it, without running it and without reading it whole:
// only regular files are opened (the rule of readFile), through
// [io.ReaderAt] at most maxBinaryRead bytes are read, and a file that is
// not a Go executable is an error wrapping errNoBuildInfo, never a panic.
func readBuildInfo(fsys fs.FS, name string) (*debug.BuildInfo, error) {
	if !nodefs.OpensSafely(fsys) {
		fi, err := fs.Stat(fsys, name)
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, nodefs.NotRegular(fi.Mode())
		}
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nodefs.NotRegular(fi.Mode())
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		return nil, errNoReaderAt
	}
	return buildInfoAt(ra, fi.Size())
}

// buildInfoAt reads the Go build info of the size bytes of r, reading at
// most maxBinaryRead of them.
func buildInfoAt(r io.ReaderAt, size int64) (bi *debug.BuildInfo, err error) {
	br := &boundedReaderAt{r: r, size: size, left: maxBinaryRead}
	defer func() {
		// debug/buildinfo and the debug/elf, debug/pe and debug/macho
		// readers under it are meant not to panic on any input, but they
		// have before (go.dev/issue/47653 and others): a node binary is
		// hostile input, so a panic there is a file without build info.
		if p := recover(); p != nil {
			bi, err = nil, fmt.Errorf("%w: the reader failed on this file (%v)", errNoBuildInfo, p)
		}
	}()
	bi, err = buildinfo.Read(br)
	switch {
	case br.exceeded:
		return nil, fmt.Errorf("%w: %w: more than %d bytes read looking for it", errNoBuildInfo, nodefs.ErrLimit, maxBinaryRead)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errNoBuildInfo, err)
	}
	return bi, nil
}

// boundedReaderAt reads the first size bytes of r, and no more than left
// bytes in all; past that every read fails and exceeded is set.
type boundedReaderAt struct {
	r        io.ReaderAt
	size     int64 // the file's size: reads end there with io.EOF
	left     int64 // bytes that may still be read
	exceeded bool
}

var errReadBound = errors.New("read bound reached")

func (b *boundedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= b.size {
		return 0, io.EOF
	}
	short := false
	if int64(len(p)) > b.size-off {
		p, short = p[:b.size-off], true
	}
	if int64(len(p)) > b.left {
		b.exceeded = true
		return 0, errReadBound
	}
	n, err := b.r.ReadAt(p, off)
	b.left -= int64(n)
	if err == nil && short {
		err = io.EOF
	}
	return n, err
}

// binaryVersion returns the version of comp that build info bi states,
// and where in it: the main module's version when bi was built from one of
// comp's modules ("github.com/cri-o/cri-o v1.36.3"), else a version set
// with -X on one of comp's version variables in the recorded -ldflags
// ("-X github.com/Mirantis/cri-dockerd/cmd/version.Version=0.3.16"). A
// pseudo-version or "(devel)" is no version. The error says what bi holds
// instead.
func binaryVersion(bi *debug.BuildInfo, comp Component) (version, from string, err error) {
	built := bi.Main.Path
	if built == "" {
		built = bi.Path // a GOPATH build (Debian's containerd): no module
	}
	if !comp.builtFrom(built) {
		return "", "", fmt.Errorf("it is built from %q, not from %s's module %s", built, comp.Name, comp.Modules[0])
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" && !pseudoVersion(v) {
		if _, err := releases.ParseVersion(v); err == nil {
			return v, "module " + bi.Main.Path + " " + v, nil
		}
	}
	for _, s := range bi.Settings {
		if s.Key != "-ldflags" {
			continue
		}
		// The linker applies every -X in order: the last one of a
		// variable wins.
		var last string
		for _, x := range ldflagsX(s.Value) {
			if name, _, _ := strings.Cut(x, "="); slices.Contains(comp.XVars, name) {
				last = x
			}
		}
		if _, val, _ := strings.Cut(last, "="); last != "" {
			if _, err := releases.ParseVersion(val); err == nil {
				return val, "-ldflags -X " + last, nil
			}
		}
	}
	mod := "no main module (built outside module mode)"
	if bi.Main.Path != "" {
		mod = "main module " + bi.Main.Path + " " + bi.Main.Version
	}
	return "", "", fmt.Errorf("it states no version (%s, %s; no -X of %s in its recorded -ldflags)",
		bi.GoVersion, mod, strings.Join(comp.XVars, " or "))
}

// ldflagsX returns the name=value arguments of every -X in a recorded
// -ldflags value ("-s -w -X a/version.Version=1.2 -X=b.V=3"), quotes
// removed as the go command's quoted.Split removes them.
func ldflagsX(s string) []string {
	words, err := unitfile.Split(s, 0)
	if err != nil {
		return nil
	}
	var out []string
	for i := 0; i < len(words); i++ {
		w := strings.TrimPrefix(words[i].Text, "-")
		switch {
		case w == "-X" || w == "X":
			if i+1 < len(words) {
				out = append(out, words[i+1].Text)
				i++
			}
		case strings.HasPrefix(w, "X="):
			out = append(out, w[2:])
		case strings.HasPrefix(w, "-X="):
			out = append(out, w[3:])
		}
	}
	return out
}

// pseudoVersion reports whether v is a Go module pseudo-version, a commit
// between releases: it ends in a 14-digit timestamp, a dash and a 12-digit
// commit hash ("v0.0.0-20240102150405-abcdefabcdef",
// "v2.4.3-0.20240102150405-abcdefabcdef"), before any "+incompatible".
func pseudoVersion(v string) bool {
	v, _, _ = strings.Cut(v, "+")
	const tail = 14 + 1 + 12
	if len(v) < tail+1 {
		return false
	}
	t := v[len(v)-tail:]
	if c := v[len(v)-tail-1]; c != '-' && c != '.' {
		return false
	}
	if t[14] != '-' {
		return false
	}
	for i, c := range t {
		switch {
		case i == 14:
		case i < 14 && (c < '0' || c > '9'):
			return false
		case i > 14 && (c < '0' || c > '9') && (c < 'a' || c > 'f'):
			return false
		}
	}
	return true
}
