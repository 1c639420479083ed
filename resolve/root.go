package resolve

import (
	"io/fs"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
)

// DirFS returns the file system of the directory tree at dir, confined to it
// as if dir were the root of a chroot: every path, and every symbolic link
// met on the way (absolute or relative, in the last or in an intermediate
// component), resolves inside dir; ".." at the root stays at the root; a
// symbolic link loop is an error (syscall.ELOOP), not a hang. Use it for
// [Options.Root] whenever the tree is a node image or a mounted disk:
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
// A dir that does not exist or is not a directory, or an empty dir (as
// with [os.DirFS], "" is not the working directory), makes every operation
// fail with an error that does not wrap [fs.ErrNotExist] (so a mistyped
// root is not taken for an empty node). The returned file system
// implements [fs.StatFS]; it holds no open file descriptor between calls
// and is safe for concurrent use. How it confines is said in package
// resolve/internal/nodefs.
func DirFS(dir string) fs.FS { return nodefs.DirFS(dir) }

// DirOf returns the directory that fsys, a file system [DirFS] returned,
// reads (absolute and clean; "" for DirFS("")), and false for any other
// file system. Package remedy writes under it.
func DirOf(fsys fs.FS) (dir string, ok bool) { return nodefs.DirOf(fsys) }
