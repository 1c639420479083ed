package nodefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
)

// The limits of one Budget on what it reads from the root (see "Limits"
// in package resolve's documentation). Real nodes use a few files of a few
// KiB each.
const (
	// MaxFileSize bounds each file, counted by the reader (not by Stat).
	MaxFileSize = 4 << 20
	// MaxTotalBytes bounds the bytes of all files of one Resolve call.
	MaxTotalBytes = 16 << 20
	// MaxFilesPerSource bounds the files one source reads (containerd's
	// config and its imports, CRI-O's crio.conf and drop-ins, ...).
	MaxFilesPerSource = 256
	// MaxEntriesPerSource bounds the directory entries one source lists
	// (imports globs, crio.conf.d, systemd drop-in directories).
	MaxEntriesPerSource = 4096
	// MaxDepth bounds the components of a path inside the root
	// ("etc/crio/crio.conf.d/a/b" has 5).
	MaxDepth = 32
)

// Budget is what one Resolve call may still read, shared by its sources.
type Budget struct {
	ctx   context.Context
	fsys  fs.FS
	bytes int64 // read so far
	err   error // the first limit passed or the context's error; sticky
}

// NewBudget returns the budget of one call that reads fsys until ctx ends.
func NewBudget(ctx context.Context, fsys fs.FS) *Budget {
	return &Budget{ctx: ctx, fsys: fsys}
}

// Context returns the context the budget was made with.
func (b *Budget) Context() context.Context { return b.ctx }

// Source returns the view of the root one source reads through, with its
// own file and entry counts.
func (b *Budget) Source() *Source { return &Source{b: b} }

// Failed returns the first limit error or the context's error, if any. Some
// readers treat any error of a Stat or a glob as an absent file; this
// catches what they swallowed.
func (b *Budget) Failed() error {
	if b.err == nil {
		if err := b.ctx.Err(); err != nil {
			b.err = err
		}
	}
	return b.err
}

// fail records err (the first one wins) and returns it.
func (b *Budget) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return err
}

// Source is the root as one source sees it: every call checks the context
// and the path depth, directory listings are counted and bounded, and
// ReadFile counts files and bytes. It implements fs.StatFS and
// fs.ReadDirFS, so fs.Glob and fs.WalkDir go through it.
type Source struct {
	b       *Budget
	files   int // files read
	entries int // directory entries listed
}

var (
	_ fs.StatFS    = (*Source)(nil)
	_ fs.ReadDirFS = (*Source)(nil)
)

// check is called before every operation on name.
func (s *Source) check(op, name string) error {
	if err := s.b.Failed(); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	if depth := strings.Count(name, "/") + 1; depth > MaxDepth {
		return s.b.fail(Invalid(NodePath(name), "", 0,
			fmt.Errorf("%w: path is %d directories deep, more than %d", ErrLimit, depth, MaxDepth)))
	}
	return nil
}

// Open opens name in the root, after the checks of every operation.
func (s *Source) Open(name string) (fs.File, error) {
	if err := s.check("open", name); err != nil {
		return nil, err
	}
	return s.b.fsys.Open(name)
}

// Stat returns name's FileInfo, after the checks of every operation.
func (s *Source) Stat(name string) (fs.FileInfo, error) {
	if err := s.check("stat", name); err != nil {
		return nil, err
	}
	return fs.Stat(s.b.fsys, name)
}

// dirChunk is how many entries ReadDir asks for at a time.
const dirChunk = 256

// ReadDir lists name sorted by file name, like fs.ReadDir, reading at most
// what is left of the source's entry budget.
func (s *Source) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := s.check("readdir", name); err != nil {
		return nil, err
	}
	if !OpensSafely(s.b.fsys) {
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
	if rd, isRD := s.b.fsys.(fs.ReadDirFS); !ok && isRD {
		// A directory file that cannot list itself in a file system that
		// lists directories (remedy's overlay, for a directory only its
		// plan adds): one listing, bounded after the fact.
		dir = &listedDir{fsys: rd, name: name}
		ok = true
	}
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not implemented")}
	}
	var list []fs.DirEntry
	for {
		if err := s.b.Failed(); err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
		}
		chunk, err := dir.ReadDir(dirChunk)
		list = append(list, chunk...)
		s.entries += len(chunk)
		if s.entries > MaxEntriesPerSource {
			return nil, s.b.fail(Invalid(NodePath(name), "", 0,
				fmt.Errorf("%w: more than %d directory entries listed for one source", ErrLimit, MaxEntriesPerSource)))
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

// ReadFile reads a node file. A missing file (or a directory where a file
// was expected) returns nil, nil: an absent source. Anything but a regular
// file is refused by its mode before it is opened (DirFS checks that in its
// Open; any other fs.FS is asked for a Stat first). At most MaxFileSize
// bytes are read, whatever Stat says; through a Source, the file and byte
// budgets are charged too. Other errors are *ConfigError values.
func ReadFile(fsys fs.FS, name string) ([]byte, error) {
	src, _ := fsys.(*Source)
	if !OpensSafely(fsys) {
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
			return nil, Invalid(NodePath(name), "", 0, NotRegular(fi.Mode()))
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
		return nil, Invalid(NodePath(name), "", 0, NotRegular(fi.Mode()))
	}
	limit := int64(MaxFileSize)
	if src != nil {
		if src.files++; src.files > MaxFilesPerSource {
			return nil, src.b.fail(Invalid(NodePath(name), "", 0,
				fmt.Errorf("%w: more than %d files read for one source", ErrLimit, MaxFilesPerSource)))
		}
		limit = min(limit, MaxTotalBytes-src.b.bytes)
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
		if limit < MaxFileSize {
			return nil, src.b.fail(Invalid(NodePath(name), "", 0,
				fmt.Errorf("%w: more than %d bytes read from the node's files", ErrLimit, MaxTotalBytes)))
		}
		return nil, Invalid(NodePath(name), "", 0, fmt.Errorf("%w: file is larger than %d bytes", ErrLimit, MaxFileSize))
	}
	return buf.Bytes(), nil
}

// OpensSafely reports whether fsys (or the root a Source reads) is a
// DirFS, whose Open refuses special files before opening them.
func OpensSafely(fsys fs.FS) bool {
	if s, ok := fsys.(*Source); ok {
		fsys = s.b.fsys
	}
	return IsDirFS(fsys)
}

// fileErr turns an error of reading name into a *ConfigError, unless it is
// already one (a limit) or a cancellation (not the file's fault).
func fileErr(name string, err error) error {
	var ce *ConfigError
	if errors.As(err, &ce) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, ErrNotRegular) {
		err = UnwrapPathError(err) // the path is the ConfigError's
	}
	return Invalid(NodePath(name), "", 0, err)
}

// First returns the budget's error (a limit passed or the context's) before
// err, a reader's own error, which may be a consequence of it.
func (b *Budget) First(err error) error {
	if berr := b.Failed(); berr != nil {
		return berr
	}
	return err
}

// listedDir is a directory listed whole by its fs.ReadDirFS, in one call
// of ReadDir whatever its n.
type listedDir struct {
	fsys fs.ReadDirFS
	name string
	done bool
}

func (d *listedDir) Stat() (fs.FileInfo, error) { return fs.Stat(d.fsys, d.name) }
func (d *listedDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: errors.New("is a directory")}
}
func (d *listedDir) Close() error { return nil }

func (d *listedDir) ReadDir(int) ([]fs.DirEntry, error) {
	if d.done {
		return nil, io.EOF
	}
	d.done = true
	list, err := d.fsys.ReadDir(d.name)
	if err != nil {
		return nil, err
	}
	return list, io.EOF
}
