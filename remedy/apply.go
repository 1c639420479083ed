package remedy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// DefaultBackupDir is where Apply keeps the originals, inside the root:
// one directory a run, named by its time, holding each file at its node
// path. (Not beside the files: CRI-O reads every file of crio.conf.d.)
const DefaultBackupDir = "/var/backups/sandboxpin"

// ApplyOptions are the options of [Apply]; the zero value is the defaults.
type ApplyOptions struct {
	// BackupDir is the node path of the directory the originals are kept
	// under; "" is [DefaultBackupDir].
	BackupDir string
	// Now names the run's backup directory; nil is time.Now.
	Now func() time.Time
}

// Apply writes the plan's edits into the node tree at dir, every one or
// none, and marks each written Edit Changed. Nothing outside dir is opened
// for writing, and no symbolic link is followed out of it (a link inside
// the tree is followed as in a chroot, and the file it leads to is
// written). It takes an exclusive lock on dir first (two runs never
// interleave), then, before anything is visible: checks that each file
// still has the Hash it was planned from (else an error wrapping
// [ErrChanged]) and is a regular file (else [ErrNotRegular]), writes the
// new contents to a temporary file beside each, synced, with the
// original's mode and owner, and copies each original under the backup
// directory, synced. Then it renames each temporary file over its file and
// syncs the directory: a process killed at any instant leaves each file
// whole-old or whole-new. An error before the renames leaves the tree as
// it was and names the path; an error during them restores the files
// renamed already.
//
// Apply writes what the plan says: make the plan with [For] and check it
// with [Verify] first.
func Apply(ctx context.Context, p *Plan, dir string, o ApplyOptions) error {
	return apply(ctx, p, dir, o, func(string) {})
}

// apply is Apply, calling step before each step of the writing (tests
// kill the process there).
func apply(ctx context.Context, p *Plan, dir string, o ApplyOptions, step func(string)) (err error) {
	if p == nil || len(p.Edits) == 0 {
		return nil
	}
	unlock, err := lock(ctx, dir)
	if err != nil {
		return err
	}
	defer unlock()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("remedy: root: %w", err)
	}
	defer root.Close()
	sweep(root, dir, p)
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	backup := o.BackupDir
	if backup == "" {
		backup = DefaultBackupDir
	}
	backup = path.Join(backup, now().UTC().Format("20060102T150405.000000000Z"))

	type pending struct {
		e    *Edit
		rel  string // the file, relative to dir, links resolved
		tmp  string
		done bool
	}
	var ps []*pending
	var made []string // directories made, the deepest last
	renamed := false
	defer func() {
		if err == nil {
			return
		}
		for _, q := range ps {
			if q.tmp != "" && !q.done {
				_ = root.Remove(q.tmp)
			}
		}
		if !renamed {
			// Nothing was written: no backup and no new directory stays.
			_ = root.RemoveAll(strings.TrimPrefix(backup, "/"))
			for i := len(made) - 1; i >= 0; i-- {
				_ = root.Remove(made[i])
			}
		}
	}()
	for i := range p.Edits {
		e := &p.Edits[i]
		step("check " + e.Path)
		rel, err := confine(dir, e.Path)
		if err != nil {
			return err
		}
		q := &pending{e: e, rel: rel}
		ps = append(ps, q)
		mode, uid, gid := fs.FileMode(0o644), -1, -1
		fi, statErr := root.Lstat(rel)
		switch {
		case e.Create && statErr == nil:
			return &fs.PathError{Op: "create", Path: e.Path, Err: fs.ErrExist}
		case e.Create && errors.Is(statErr, fs.ErrNotExist):
			if err := mkdirAll(root, path.Dir(rel), &made); err != nil {
				return &fs.PathError{Op: "mkdir", Path: path.Dir(e.Path), Err: unwrap(err)}
			}
		case statErr != nil:
			return &fs.PathError{Op: "stat", Path: e.Path, Err: unwrap(statErr)}
		case !fi.Mode().IsRegular():
			return &fs.PathError{Op: "write", Path: e.Path, Err: fmt.Errorf("%w: %s", ErrNotRegular, typeOf(fi.Mode()))}
		default:
			cur, err := readRegular(root, rel)
			if err != nil {
				return &fs.PathError{Op: "read", Path: e.Path, Err: unwrap(err)}
			}
			if hashOf(cur) != e.Hash {
				return &fs.PathError{Op: "write", Path: e.Path, Err: ErrChanged}
			}
			mode = fi.Mode().Perm()
			uid, gid = owner(fi)
			step("backup " + e.Path)
			b := path.Join(strings.TrimPrefix(backup, "/"), rel)
			if err := mkdirAll(root, path.Dir(b), &made); err != nil {
				return &fs.PathError{Op: "backup", Path: path.Dir(path.Join(backup, e.Path)), Err: unwrap(err)}
			}
			if err := writeSynced(root, b, cur, mode, -1, -1); err != nil {
				return &fs.PathError{Op: "backup", Path: path.Join(backup, e.Path), Err: unwrap(err)}
			}
		}
		step("write " + e.Path)
		q.tmp = path.Join(path.Dir(rel), "."+path.Base(rel)+".sandboxpin-"+randomSuffix())
		if err := writeSynced(root, q.tmp, e.After, mode, uid, gid); err != nil {
			return &fs.PathError{Op: "write", Path: e.Path, Err: unwrap(err)}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, q := range ps {
		step("rename " + q.e.Path)
		renamed = true
		if q.e.Create {
			// A new file never replaces one that appeared meanwhile.
			err = root.Link(q.tmp, q.rel)
			if err == nil {
				_ = root.Remove(q.tmp)
			}
		} else {
			err = root.Rename(q.tmp, q.rel)
		}
		if err != nil {
			err = &fs.PathError{Op: "rename", Path: q.e.Path, Err: unwrap(err)}
			return errors.Join(err, restore(root, ps[:i], backup, func(q *pending) (string, string, bool) { return q.rel, q.e.Path, q.e.Create }))
		}
		q.done = true
		q.e.Changed = true
		step("sync " + path.Dir(q.e.Path))
		if err := syncDir(root, path.Dir(q.rel)); err != nil {
			return &fs.PathError{Op: "sync", Path: path.Dir(q.e.Path), Err: unwrap(err)}
		}
	}
	return nil
}

// sweep removes the temporary files a killed run left beside the files to
// edit: CRI-O reads every file of crio.conf.d, a dot file included.
func sweep(root *os.Root, dir string, p *Plan) {
	for _, e := range p.Edits {
		rel, err := confine(dir, e.Path)
		if err != nil {
			continue
		}
		d, err := root.Open(path.Dir(rel))
		if err != nil {
			continue
		}
		names, _ := d.Readdirnames(-1)
		_ = d.Close()
		for _, n := range names {
			if strings.HasPrefix(n, "."+path.Base(rel)+".sandboxpin-") {
				_ = root.Remove(path.Join(path.Dir(rel), n))
			}
		}
	}
}

// restore puts back the files renamed already, after a failed rename.
func restore[T any](root *os.Root, done []T, backup string, at func(T) (rel, np string, created bool)) error {
	var errs []error
	for _, q := range done {
		rel, np, created := at(q)
		if created {
			errs = append(errs, root.Remove(rel))
			continue
		}
		b, err := root.ReadFile(path.Join(strings.TrimPrefix(backup, "/"), rel))
		if err == nil {
			tmp := rel + ".sandboxpin-restore"
			if err = writeSynced(root, tmp, b, 0o600, -1, -1); err == nil {
				err = root.Rename(tmp, rel)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("restoring %s from %s: %w", np, backup, err))
		}
	}
	return errors.Join(errs...)
}

// confine returns the path of the node path np relative to dir, every
// symbolic link on the way resolved inside dir as in a chroot.
func confine(dir, np string) (string, error) {
	full, err := securejoin.SecureJoin(dir, filepath.FromSlash(np))
	if err != nil {
		return "", &fs.PathError{Op: "resolve", Path: np, Err: unwrap(err)}
	}
	rel, err := filepath.Rel(dir, full)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", &fs.PathError{Op: "resolve", Path: np, Err: ErrOutsideRoot}
	}
	return filepath.ToSlash(rel), nil
}

// readRegular reads a regular file without blocking on anything else.
func readRegular(root *os.Root, rel string) ([]byte, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s", ErrNotRegular, typeOf(fi.Mode()))
	}
	return io.ReadAll(f)
}

// writeSynced writes b to a new file rel (refusing one that exists), with
// mode and, when uid is not -1, that owner, and syncs it.
func writeSynced(root *os.Root, rel string, b []byte, mode fs.FileMode, uid, gid int) error {
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(mode) // not the umask's
	}
	if err == nil && uid >= 0 {
		err = f.Chown(uid, gid)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = root.Remove(rel)
	}
	return err
}

// mkdirAll makes rel and its parents inside root, adding each it made to
// made.
func mkdirAll(root *os.Root, rel string, made *[]string) error {
	if rel == "." || rel == "" {
		return nil
	}
	fi, err := root.Stat(rel)
	if err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: rel, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if err := mkdirAll(root, path.Dir(rel), made); err != nil {
		return err
	}
	if err := root.Mkdir(rel, 0o755); err != nil {
		return err
	}
	*made = append(*made, rel)
	return syncDir(root, path.Dir(rel))
}

// syncDir syncs a directory, so that a rename in it is on disk.
func syncDir(root *os.Root, rel string) error {
	d, err := root.Open(rel)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// unwrap drops the host path of an *fs.PathError: errors name node paths.
func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// typeOf names a file type for an error.
func typeOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return m.Type().String()
}
