package resolve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
)

// The limits of one Resolve call on what it reads from Options.Root; see
// "Limits" in the package documentation. Real nodes use a few files of a few
// KiB each.
const (
	// maxFileSize bounds each file, counted by the reader (not by Stat).
	maxFileSize = 4 << 20
	// maxTotalBytes bounds the bytes of all files of one Resolve call.
	maxTotalBytes = 16 << 20
	// maxFilesPerSource bounds the files one source reads (containerd's
	// config and its imports, CRI-O's crio.conf and drop-ins, ...).
	maxFilesPerSource = 256
	// maxEntriesPerSource bounds the directory entries one source lists
	// (imports globs, crio.conf.d, systemd drop-in directories).
	maxEntriesPerSource = 4096
	// maxDepth bounds the components of a path inside the root
	// ("etc/crio/crio.conf.d/a/b" has 5).
	maxDepth = 32
)

var (
	// ErrNotRegular is wrapped by the [*ConfigError] for a node file that
	// is a FIFO, socket, device or anything else but a regular file (or a
	// symbolic link to one). Such files are refused before they are opened,
	// as opening one can block or read without end.
	ErrNotRegular = nodefs.ErrNotRegular

	// ErrLimit is wrapped by the [*ConfigError] for a source that passes
	// one of Resolve's limits (file size, bytes, files, directory entries,
	// path depth, and the limits of decoding; see the package documentation).
	ErrLimit = nodefs.ErrLimit
)

// budget is what one Resolve call may still read, shared by its sources.
type budget struct {
	ctx   context.Context
	fsys  fs.FS
	bytes int64 // read so far
	err   error // the first limit passed or the context's error; sticky
}

func newBudget(ctx context.Context, fsys fs.FS) *budget {
	return &budget{ctx: ctx, fsys: fsys}
}

// source returns the view of the root one source reads through, with its
// own file and entry counts.
func (b *budget) source() *sourceFS { return &sourceFS{b: b} }

// failed returns the first limit error or the context's error, if any. Some
// readers treat any error of a Stat or a glob as an absent file; this
// catches what they swallowed.
func (b *budget) failed() error {
	if b.err == nil {
		if err := b.ctx.Err(); err != nil {
			b.err = err
		}
	}
	return b.err
}

// fail records err (the first one wins) and returns it.
func (b *budget) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return err
}

// sourceFS is the root as one source sees it: every call checks the context
// and the path depth, directory listings are counted and bounded, and
// readFile counts files and bytes. It implements fs.StatFS and
// fs.ReadDirFS, so fs.Glob and fs.WalkDir go through it.
type sourceFS struct {
	b       *budget
	files   int // files read
	entries int // directory entries listed
	// tomlEntries counts the tables and keys of the TOML files decoded.
	tomlEntries int
}

var (
	_ fs.StatFS    = (*sourceFS)(nil)
	_ fs.ReadDirFS = (*sourceFS)(nil)
)

// check is called before every operation on name.
func (s *sourceFS) check(op, name string) error {
	if err := s.b.failed(); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	if depth := strings.Count(name, "/") + 1; depth > maxDepth {
		return s.b.fail(configErr(nodePath(name), "", 0,
			fmt.Errorf("%w: path is %d directories deep, more than %d", ErrLimit, depth, maxDepth)))
	}
	return nil
}

func (s *sourceFS) Open(name string) (fs.File, error) {
	if err := s.check("open", name); err != nil {
		return nil, err
	}
	return s.b.fsys.Open(name)
}

func (s *sourceFS) Stat(name string) (fs.FileInfo, error) {
	if err := s.check("stat", name); err != nil {
		return nil, err
	}
	return fs.Stat(s.b.fsys, name)
}

// dirChunk is how many entries ReadDir asks for at a time.
const dirChunk = 256

// ReadDir lists name sorted by file name, like fs.ReadDir, reading at most
// what is left of the source's entry budget.
func (s *sourceFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := s.check("readdir", name); err != nil {
		return nil, err
	}
	if !opensSafely(s.b.fsys) {
		// fs.Glob lists a directory without a Stat first: an os.DirFS
		// would block opening a FIFO there.
		fi, err := fs.Stat(s.b.fsys, name)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
		}
	}
	f, err := s.b.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dir, ok := f.(fs.ReadDirFile)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not implemented")}
	}
	var list []fs.DirEntry
	for {
		if err := s.b.failed(); err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
		}
		chunk, err := dir.ReadDir(dirChunk)
		list = append(list, chunk...)
		s.entries += len(chunk)
		if s.entries > maxEntriesPerSource {
			return nil, s.b.fail(configErr(nodePath(name), "", 0,
				fmt.Errorf("%w: more than %d directory entries listed for one source", ErrLimit, maxEntriesPerSource)))
		}
		if errors.Is(err, io.EOF) || (err == nil && len(chunk) == 0) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(list, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return list, nil
}

// readFile reads a node file. A missing file (or a directory where a file
// was expected) returns nil, nil: an absent source. Anything but a regular
// file is refused by its mode before it is opened (DirFS checks that in its
// Open; any other fs.FS is asked for a Stat first). At most maxFileSize
// bytes are read, whatever Stat says; through a sourceFS, the file and byte
// budgets are charged too. Other errors are *ConfigError values.
func readFile(fsys fs.FS, name string) ([]byte, error) {
	src, _ := fsys.(*sourceFS)
	if !opensSafely(fsys) {
		fi, err := fs.Stat(fsys, name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil
			}
			return nil, fileErr(name, err)
		}
		if fi.IsDir() {
			return nil, nil
		}
		if !fi.Mode().IsRegular() {
			return nil, configErr(nodePath(name), "", 0, nodefs.NotRegular(fi.Mode()))
		}
	}
	f, err := fsys.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fileErr(name, err)
	}
	defer f.Close()
	// Check the file that was opened: a Stat before may have met another.
	fi, err := f.Stat()
	if err != nil {
		return nil, fileErr(name, err)
	}
	if fi.IsDir() {
		return nil, nil
	}
	if !fi.Mode().IsRegular() {
		return nil, configErr(nodePath(name), "", 0, nodefs.NotRegular(fi.Mode()))
	}
	limit := int64(maxFileSize)
	if src != nil {
		if src.files++; src.files > maxFilesPerSource {
			return nil, src.b.fail(configErr(nodePath(name), "", 0,
				fmt.Errorf("%w: more than %d files read for one source", ErrLimit, maxFilesPerSource)))
		}
		limit = min(limit, maxTotalBytes-src.b.bytes)
	}
	var buf bytes.Buffer
	if n := fi.Size(); n > 0 && n < limit {
		buf.Grow(int(n) + 1)
	}
	n, err := buf.ReadFrom(io.LimitReader(f, limit+1))
	if src != nil {
		src.b.bytes += n
	}
	if err != nil {
		return nil, fileErr(name, err)
	}
	if n > limit {
		if limit < maxFileSize {
			return nil, src.b.fail(configErr(nodePath(name), "", 0,
				fmt.Errorf("%w: more than %d bytes read from the node's files", ErrLimit, maxTotalBytes)))
		}
		return nil, configErr(nodePath(name), "", 0, fmt.Errorf("%w: file is larger than %d bytes", ErrLimit, maxFileSize))
	}
	return buf.Bytes(), nil
}

// opensSafely reports whether fsys (or the root a sourceFS reads) is a
// DirFS, whose Open refuses special files before opening them.
func opensSafely(fsys fs.FS) bool {
	if s, ok := fsys.(*sourceFS); ok {
		fsys = s.b.fsys
	}
	return nodefs.IsDirFS(fsys)
}

// fileErr turns an error of reading name into a *ConfigError, unless it is
// already one (a limit) or a cancellation (not the file's fault).
func fileErr(name string, err error) error {
	var ce *ConfigError
	if errors.As(err, &ce) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, ErrNotRegular) {
		err = nodefs.UnwrapPathError(err) // the path is the ConfigError's
	}
	return configErr(nodePath(name), "", 0, err)
}
