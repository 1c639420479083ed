package remedy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// Restore undoes the plan p that [Apply] wrote into the node tree at root
// (as Apply takes it): each Edit marked Changed, the last first, gets its
// original back, and a file Apply created is removed; each Edit restored
// is no longer marked Changed. It takes Apply's lock.
//
// A file is restored only while it holds what Apply wrote (Edit.After):
// else it is another writer's, left as it is, with an error wrapping
// [ErrChanged] that names it (a replaced file that is gone too). A
// created file that is gone already counts as restored. A replaced file gets the original from p.Backup, which must
// still hold the bytes the Edit was planned from (Edit.Hash, else
// [ErrChanged] naming the backup); it is written as Apply writes, to a
// temporary file with the mode and owner of the file it replaces (Apply
// gave it the original's), synced, the file's bytes compared again just
// before the rename. The backups are kept.
//
// Restore goes on past a file it cannot restore and returns every such
// error joined: the files it restores are the originals, the others are
// as it found them.
func Restore(ctx context.Context, p *Plan, root fs.FS) error {
	dir, err := rootDir(root)
	if err != nil || p == nil {
		return err
	}
	return locked(ctx, dir, func(root *os.Root) error {
		var errs []error
		for i := len(p.Edits) - 1; i >= 0; i-- {
			e := &p.Edits[i]
			if !e.Changed {
				continue
			}
			if err := ctx.Err(); err != nil {
				return errors.Join(append(errs, err)...)
			}
			if err := restore(root, dir, p.Backup, e); err != nil {
				errs = append(errs, err)
				continue
			}
			e.Changed = false
		}
		return errors.Join(errs...)
	})
}

// restore puts back the file of e, which Apply wrote, from the backup
// directory backup (a node path).
func restore(root *os.Root, dir, backup string, e *Edit) error {
	rel, err := confine(dir, e.Path)
	if err != nil {
		return err
	}
	cur, err := readRegular(root, rel)
	switch {
	case e.Create && errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return &fs.PathError{Op: "restore", Path: e.Path, Err: fmt.Errorf("%w after it was written: removed", ErrChanged)}
	case err != nil:
		return &fs.PathError{Op: "restore", Path: e.Path, Err: unwrap(err)}
	case !bytes.Equal(cur, e.After):
		return &fs.PathError{Op: "restore", Path: e.Path, Err: fmt.Errorf("%w after it was written: left as it is", ErrChanged)}
	case e.Create:
		if err := root.Remove(rel); err != nil {
			return &fs.PathError{Op: "restore", Path: e.Path, Err: unwrap(err)}
		}
		return syncDir(root, path.Dir(rel))
	}
	if backup == "" {
		return &fs.PathError{Op: "restore", Path: e.Path, Err: errors.New("the plan names no backup directory")}
	}
	b, err := confine(dir, backup)
	if err != nil {
		return err
	}
	b = path.Join(b, rel)
	orig, err := readRegular(root, b)
	if err != nil {
		return &fs.PathError{Op: "restore", Path: "/" + b, Err: unwrap(err)}
	}
	if hashOf(orig) != e.Hash {
		return &fs.PathError{Op: "restore", Path: "/" + b, Err: fmt.Errorf("the backup of %s: %w", e.Path, ErrChanged)}
	}
	fi, err := root.Lstat(rel)
	if err != nil {
		return &fs.PathError{Op: "restore", Path: e.Path, Err: unwrap(err)}
	}
	uid, gid := owner(fi)
	tmp := tmpName(rel)
	if err := writeSynced(root, tmp, orig, fi.Mode().Perm(), uid, gid); err != nil {
		return &fs.PathError{Op: "restore", Path: e.Path, Err: unwrap(err)}
	}
	defer func() { _ = root.Remove(tmp) }() // gone already when renamed
	if cur, err := readRegular(root, rel); err != nil || !bytes.Equal(cur, e.After) {
		return &fs.PathError{Op: "restore", Path: e.Path, Err: fmt.Errorf("%w after it was written: left as it is", ErrChanged)}
	}
	if err := root.Rename(tmp, rel); err != nil {
		return &fs.PathError{Op: "restore", Path: e.Path, Err: unwrap(err)}
	}
	_ = syncDir(root, tmpDir(rel))
	return syncDir(root, path.Dir(rel))
}
