package nodefs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// DirFS returns the file system of the directory tree at dir, confined to it
// as if dir were the root of a chroot: every path, and every symbolic link
// met on the way (absolute or relative, in the last or in an intermediate
// component), resolves inside dir; ".." at the root stays at the root; a
// symbolic link loop is an error (syscall.ELOOP), not a hang. Use it for
// resolve.Options.Root whenever the tree is a node image or a mounted disk:
// [os.DirFS] follows such links onto the host, so that an image whose
// /etc/containerd/config.toml links to /opt/real/config.toml would be read
// from the host's /opt.
//
// Only directories and regular files can be opened: a FIFO, socket or
// device (including one reached through a symbolic link, such as a link to
// /dev/zero) is refused by its mode before any open that could block, with
// an error wrapping [ErrNotRegular]; regular files are opened non-blocking
// and their mode is checked again on the open file.
//
// Symbolic links are resolved with filepath-securejoin's SecureJoin
// (lexically, with dir as the root), and the resolved path is then opened
// through an [os.Root] at dir, which refuses to leave dir even if the tree
// changes between the two steps. DirFS("/") reads the host as it is. A dir
// that does not exist or is not a directory, or an empty dir (as with
// [os.DirFS], "" is not the working directory), makes every operation fail
// with an error that does not wrap [fs.ErrNotExist] (so a mistyped root is
// not taken for an empty node). The FileInfo of an opened file has the name of
// the path asked for, as with [os.DirFS]; directory entries are not
// followed (a symbolic link is listed as one).
//
// The returned file system implements [fs.StatFS]; it holds no open file
// descriptor between calls and is safe for concurrent use.
func DirFS(dir string) fs.FS {
	if dir == "" {
		// As os.DirFS(""): an empty dir is a caller's mistake, not the
		// working directory.
		return &rootFS{}
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &rootFS{dir: filepath.Clean(dir)}
}

// rootFS is the file system DirFS returns.
type rootFS struct {
	dir string // absolute and clean; "" for DirFS(""), which opens nothing
}

var _ fs.StatFS = (*rootFS)(nil)

// String returns the root directory, as errors name it.
func (r *rootFS) String() string { return r.dir }

// DirOf returns the directory fsys reads and true when DirFS returned it
// ("" for DirFS("")), else "", false.
func DirOf(fsys fs.FS) (string, bool) {
	r, ok := fsys.(*rootFS)
	if !ok {
		return "", false
	}
	return r.dir, true
}

// IsDirFS reports whether fsys is a file system DirFS returned, whose Open
// refuses special files before opening them.
func IsDirFS(fsys fs.FS) bool {
	_, ok := fsys.(*rootFS)
	return ok
}

// resolve opens an os.Root at the root directory and returns the in-root
// path that name leads to after every symbolic link on the way is resolved
// inside the root. The caller closes the root.
func (r *rootFS) resolve(op, name string) (*os.Root, string, error) {
	if !fs.ValidPath(name) {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if r.dir == "" {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: errors.New("root directory: empty path")}
	}
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		// %v, not %w: a missing root is not a missing file.
		return nil, "", &fs.PathError{Op: op, Path: name, Err: errors.New("root directory: " + err.Error())}
	}
	if name == "." {
		return root, ".", nil
	}
	full, err := securejoin.SecureJoin(r.dir, filepath.FromSlash(name))
	if err != nil {
		_ = root.Close()
		return nil, "", &fs.PathError{Op: op, Path: name, Err: UnwrapPathError(err)}
	}
	rel, err := filepath.Rel(r.dir, full)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		// SecureJoin guarantees this does not happen; os.Root would refuse it
		// anyway.
		_ = root.Close()
		return nil, "", &fs.PathError{Op: op, Path: name, Err: errors.New("path resolves outside the root")}
	}
	return root, rel, nil
}

// UnwrapPathError drops the *os.PathError of a host path, keeping its cause,
// so that errors name the path inside the root only.
func UnwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Stat returns the FileInfo of what name leads to inside the root.
func (r *rootFS) Stat(name string) (fs.FileInfo, error) {
	root, rel, err := r.resolve("stat", name)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := root.Stat(rel)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: UnwrapPathError(err)}
	}
	return namedInfo{fi, path.Base(name)}, nil
}

// Open opens the directory or regular file name leads to inside the root.
func (r *rootFS) Open(name string) (fs.File, error) {
	root, rel, err := r.resolve("open", name)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := root.Stat(rel)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: UnwrapPathError(err)}
	}
	if err := CheckOpenable(fi.Mode()); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	flag := os.O_RDONLY
	if fi.Mode().IsRegular() {
		flag |= oNonblock
	}
	f, err := root.OpenFile(rel, flag, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: UnwrapPathError(err)}
	}
	// What was opened may not be what was stat'ed (a tree that changes).
	if ofi, err := f.Stat(); err != nil || CheckOpenable(ofi.Mode()) != nil || ofi.IsDir() != fi.IsDir() {
		_ = f.Close()
		if err == nil {
			err = CheckOpenable(ofi.Mode())
		}
		if err == nil {
			err = errors.New("changed while it was opened")
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: UnwrapPathError(err)}
	}
	return &rootFile{File: f, name: path.Base(name)}, nil
}

// CheckOpenable refuses everything but directories and regular files.
func CheckOpenable(m fs.FileMode) error {
	if m.IsDir() || m.IsRegular() {
		return nil
	}
	return NotRegular(m)
}

// rootFile is an open file of a rootFS; Stat reports the name asked for.
type rootFile struct {
	*os.File
	name string
}

func (f *rootFile) Stat() (fs.FileInfo, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	return namedInfo{fi, f.name}, nil
}

// namedInfo is a FileInfo under another name.
type namedInfo struct {
	fs.FileInfo
	name string
}

func (i namedInfo) Name() string { return i.name }
