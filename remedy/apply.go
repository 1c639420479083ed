package remedy

import (
	"bytes"
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
	"slices"
	"strings"
	"syscall"
	"time"

	securejoin "github.com/cyphar/filepath-securejoin"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// DefaultBackupDir is where Apply keeps the originals, inside the root:
// one directory a run that replaces a file, named by its time, holding
// each file at its node path. (Not beside the files: CRI-O reads every
// file of crio.conf.d.)
const DefaultBackupDir = "/var/backups/sandboxpin"

// ApplyOptions are the options of [Apply]; the zero value is the defaults.
type ApplyOptions struct {
	// BackupDir is the node path of the directory the originals are kept
	// under; "" is [DefaultBackupDir].
	BackupDir string
	// Now names the run's backup directory; nil is time.Now.
	Now func() time.Time
}

// Apply writes the plan's edits into the node tree at root, every one or
// none, marks each written Edit Changed, and sets p.Backup. root is the
// root the plan was made from, as [resolve.Options.Root] takes it: nil is
// resolve.DirFS("/"); it must be a [resolve.DirFS] (dir below is its
// directory), any other file system is an error wrapping
// [resolve.ErrNoRoot]. Nothing outside
// dir is opened for writing, and no symbolic link is followed out of it: a
// link inside the tree, on the way to an edited file or to the backup
// directory, is followed as in a chroot (an absolute link names a path
// under dir); a path whose ".." climbs above the root is refused with
// [ErrOutsideRoot].
//
// It takes an exclusive lock on dir (flock(2) on the directory itself: two
// runs never interleave) and first removes what killed runs left, as
// [Sweep] does and beside the plan's files, whatever the plan (a nil or
// empty plan too). Then, before anything is visible, for each edit: an
// Edit whose After is the file's bytes is skipped (identical bytes are
// never rewritten); it checks that the file still has the Hash it was
// planned from (else an error wrapping [ErrChanged]) and is a regular file
// (else [ErrNotRegular]), copies the original under the backup directory,
// synced, and writes the new contents to a temporary file, synced, with
// the original's mode and owner. A new file takes its directory's owner
// and mode, without execute bits or write for group and others (0755
// gives 0644, 0750 gives 0640). Then, for each file in turn: it reads the
// file again and compares its size and hash (else [ErrChanged]), links the
// original under a temporary name, renames the temporary file over the
// file and syncs the directory. A process killed at any instant leaves
// each file whole-old or whole-new.
//
// Right after each rename, and again once every file is renamed, it
// compares the original's size and modification time, through the
// descriptor it read it with, to what it read: a write that came between
// that read and the rename (into the original, by a writer that opened it
// before) is caught, and the run is undone ([ErrChanged]) with the
// original, and that write, in place. Without a lock the other writer
// shares, a window remains between Apply's last check and rename(2): a
// writer that opened the file before the rename and writes after Apply's
// last check writes into the original, which Apply then unlinks; a writer
// that replaces the file by a rename of its own in that window has its
// file replaced; a write that keeps the size within one tick of the file
// system's clock is not seen. A writer that takes flock(2) LOCK_EX on dir
// meets none of these.
//
// Temporary files are dot files named ".NAME.sandboxpin-" and 12 hex
// digits, beside the file, or, for a file in a drop-in directory (a name
// ending in ".d"), in the directory above it, which no component reads
// as a whole: CRI-O reads every file under crio.conf.d, whatever its
// name. Renaming needs both in one file system: a drop-in directory that
// is a mount point of its own fails with an error wrapping syscall.EXDEV,
// and the run is undone; so does a file system without hard links.
//
// An error before the renames leaves the tree as it was and names the
// path; an error during or after them undoes the files renamed already,
// the last first: the original itself comes back (its inode: mode, owner,
// extended attributes, ACLs and SELinux label as they were), and a new
// file is removed. A file that another writer wrote after Apply renamed
// it is left as it is, named in the error (wrapping [ErrChanged]), and
// its original, with what was written into it, is in the backup
// directory. A run that keeps no original leaves no backup directory, nor
// a parent it made.
//
// Extended attributes, ACLs and SELinux labels are not copied: a written
// file has those a new file gets in the directory of its temporary file
// (a default ACL, the policy's label for that directory). The backup is
// owned by the user running Apply, with the original's mode.
//
// Apply writes what the plan says: make the plan with [For] and check it
// with [Verify] first.
func Apply(ctx context.Context, p *Plan, root fs.FS, o ApplyOptions) error {
	dir, err := rootDir(root)
	if err != nil {
		return err
	}
	return apply(ctx, p, dir, o, func(string) {})
}

// rootDir is the directory Apply and Sweep write under: that of root, a
// [resolve.DirFS]; nil is "/", as in [resolve.Resolve]. Another file
// system cannot be written to: an error wrapping [resolve.ErrNoRoot].
func rootDir(root fs.FS) (string, error) {
	if root == nil {
		return "/", nil
	}
	if dir, ok := resolve.DirOf(root); ok {
		return dir, nil
	}
	return "", fmt.Errorf("remedy: %T is no resolve.DirFS, which Apply writes under: %w", root, resolve.ErrNoRoot)
}

// Sweep removes the temporary files that runs of [Apply] killed midway
// left in the node tree at root (as [Apply] takes it), and returns their node paths. It takes
// Apply's lock. It looks in every directory under /etc,
// /usr/lib/systemd/system, /lib/systemd/system and k3s's and RKE2's
// agent/etc, and in /var/lib/kubelet itself (not under it: the pods'
// volumes), where the files a plan edits or creates live; a file
// elsewhere (a kubeadm configuration named by path) is swept by the Apply
// that edits it. Older runs left them beside the file, inside drop-in
// directories that a runtime, and resolve, read: call Sweep before
// resolving a node that a run may have been killed on.
func Sweep(ctx context.Context, root fs.FS) ([]string, error) {
	dir, err := rootDir(root)
	if err != nil {
		return nil, err
	}
	var removed []string
	err = locked(ctx, dir, func(root *os.Root) (err error) {
		removed, err = sweep(root)
		return err
	})
	return removed, err
}

// locked calls f with the root at dir, holding the lock on dir.
func locked(ctx context.Context, dir string, f func(*os.Root) error) error {
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
	return f(root)
}

// apply is Apply, calling step before each step of the writing (tests
// kill the process there, or write as another writer would).
func apply(ctx context.Context, p *Plan, dir string, o ApplyOptions, step func(string)) error {
	return locked(ctx, dir, func(root *os.Root) error {
		var dirs []string
		if p != nil {
			for _, e := range p.Edits {
				if rel, err := confine(dir, e.Path); err == nil {
					dirs = append(dirs, path.Dir(rel), tmpDir(rel))
				}
			}
		}
		if _, err := sweep(root, dirs...); err != nil || p == nil {
			return err
		}
		r := &run{root: root, dir: dir, step: step}
		return r.write(ctx, p, o)
	})
}

// run is the writing of one plan.
type run struct {
	root    *os.Root
	dir     string
	step    func(string)
	backup  string     // the run's backup directory, relative to the root
	backups bool       // whether an original was copied there
	made    []string   // the directories made, the deepest last
	ps      []*pending // the files to write
}

// pending is one file to write.
type pending struct {
	e        *Edit
	rel      string      // the file, relative to the root, links resolved
	tmp      string      // the new contents
	old      string      // a link to the original, from the check before its rename
	size     int         // the original's size, as first read
	f        *os.File    // the original, as read before its rename
	read     fs.FileInfo // f's, before that read
	mode     fs.FileMode
	uid, gid int
	renamed  bool
}

// write writes p; on an error it undoes what it did.
func (r *run) write(ctx context.Context, p *Plan, o ApplyOptions) (err error) {
	bd := o.BackupDir
	if bd == "" {
		bd = DefaultBackupDir
	}
	if r.backup, err = confine(r.dir, bd); err != nil {
		return err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	r.backup = path.Join(r.backup, now().UTC().Format("20060102T150405.000000000Z"))
	defer func() {
		var left error
		if err != nil {
			left = r.undo()
			err = errors.Join(err, left)
		}
		for _, q := range r.ps {
			if q.f != nil {
				_ = q.f.Close()
			}
			for _, t := range []string{q.tmp, q.old} {
				if t != "" {
					_ = r.root.Remove(t) // gone already when renamed
				}
			}
			_ = syncDir(r.root, tmpDir(q.rel))
		}
		if err != nil && left == nil {
			// Nothing is written: no backup, and no directory made, stays.
			if slices.Contains(r.made, r.backup) {
				_ = r.root.RemoveAll(r.backup)
			}
			for i := len(r.made) - 1; i >= 0; i-- {
				_ = r.root.Remove(r.made[i]) // one that is not empty stays
			}
			r.backups = false
		}
		if r.backups {
			p.Backup = "/" + r.backup
		}
	}()
	for i := range p.Edits {
		e := &p.Edits[i]
		if !e.Create && hashOf(e.After) == e.Hash {
			continue // identical bytes are never rewritten
		}
		q, err := r.prepare(e)
		if err != nil {
			return err
		}
		r.ps = append(r.ps, q)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, q := range r.ps {
		if err := r.commit(q); err != nil {
			return err
		}
	}
	for _, q := range r.ps {
		if q.f != nil && q.touched() {
			return &fs.PathError{Op: "write", Path: q.e.Path, Err: ErrChanged}
		}
	}
	return nil
}

// prepare checks the file of e, copies it under the backup directory and
// writes its new contents to a temporary file.
func (r *run) prepare(e *Edit) (*pending, error) {
	r.step("check " + e.Path)
	rel, err := confine(r.dir, e.Path)
	if err != nil {
		return nil, err
	}
	q := &pending{e: e, rel: rel}
	fi, statErr := r.root.Lstat(rel)
	switch {
	case e.Create && statErr == nil:
		return nil, &fs.PathError{Op: "create", Path: e.Path, Err: fs.ErrExist}
	case e.Create && errors.Is(statErr, fs.ErrNotExist):
		if err := r.mkdirAll(path.Dir(rel)); err != nil {
			return nil, &fs.PathError{Op: "mkdir", Path: path.Dir(e.Path), Err: unwrap(err)}
		}
		d, err := r.root.Stat(path.Dir(rel))
		if err != nil {
			return nil, &fs.PathError{Op: "stat", Path: path.Dir(e.Path), Err: unwrap(err)}
		}
		q.mode = d.Mode().Perm() & 0o644
		q.uid, q.gid = owner(d)
	case statErr != nil:
		return nil, &fs.PathError{Op: "stat", Path: e.Path, Err: unwrap(statErr)}
	case !fi.Mode().IsRegular():
		return nil, &fs.PathError{Op: "write", Path: e.Path, Err: fmt.Errorf("%w: %s", ErrNotRegular, typeOf(fi.Mode()))}
	default:
		cur, err := readRegular(r.root, rel)
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: e.Path, Err: unwrap(err)}
		}
		if hashOf(cur) != e.Hash {
			return nil, &fs.PathError{Op: "write", Path: e.Path, Err: ErrChanged}
		}
		q.size, q.mode = len(cur), fi.Mode().Perm()
		q.uid, q.gid = owner(fi)
		r.step("backup " + e.Path)
		b := path.Join(r.backup, rel)
		if err := r.mkdirAll(path.Dir(b)); err != nil {
			return nil, &fs.PathError{Op: "backup", Path: "/" + path.Dir(b), Err: unwrap(err)}
		}
		if err := writeSynced(r.root, b, cur, q.mode, -1, -1); err != nil {
			return nil, &fs.PathError{Op: "backup", Path: "/" + b, Err: unwrap(err)}
		}
		r.backups = true
	}
	r.step("write " + e.Path)
	tmp := tmpName(rel)
	if err := writeSynced(r.root, tmp, e.After, q.mode, q.uid, q.gid); err != nil {
		return nil, &fs.PathError{Op: "write", Path: e.Path, Err: unwrap(err)}
	}
	q.tmp = tmp
	return q, nil
}

// commit renames the temporary file of q over its file, checking the
// file again just before, and the original just after.
func (r *run) commit(q *pending) error {
	e := q.e
	if e.Create {
		r.step("rename " + e.Path)
		// A new file never replaces one that appeared meanwhile.
		if err := r.root.Link(q.tmp, q.rel); err != nil {
			return &fs.PathError{Op: "link", Path: e.Path, Err: unwrap(err)}
		}
		q.renamed = true
	} else {
		f, err := r.root.OpenFile(q.rel, os.O_RDONLY|oNonblock, 0)
		if err != nil {
			return &fs.PathError{Op: "read", Path: e.Path, Err: unwrap(err)}
		}
		q.f = f // closed by write
		if q.read, err = f.Stat(); err != nil {
			return &fs.PathError{Op: "read", Path: e.Path, Err: unwrap(err)}
		}
		if !q.read.Mode().IsRegular() {
			return &fs.PathError{Op: "write", Path: e.Path, Err: fmt.Errorf("%w: %s", ErrNotRegular, typeOf(q.read.Mode()))}
		}
		cur, err := io.ReadAll(f)
		if err != nil {
			return &fs.PathError{Op: "read", Path: e.Path, Err: unwrap(err)}
		}
		if len(cur) != q.size || hashOf(cur) != e.Hash {
			return &fs.PathError{Op: "write", Path: e.Path, Err: ErrChanged}
		}
		old := tmpName(q.rel)
		if err := r.root.Link(q.rel, old); err != nil {
			return &fs.PathError{Op: "link", Path: e.Path, Err: unwrap(err)}
		}
		q.old = old
		if fi, err := r.root.Lstat(old); err != nil || !os.SameFile(q.read, fi) {
			return &fs.PathError{Op: "write", Path: e.Path, Err: ErrChanged} // replaced since the read
		}
		r.step("rename " + e.Path)
		if err := r.root.Rename(q.tmp, q.rel); err != nil {
			return &fs.PathError{Op: "rename", Path: e.Path, Err: unwrap(err)}
		}
		q.renamed = true
		if q.touched() {
			return &fs.PathError{Op: "write", Path: e.Path, Err: ErrChanged}
		}
	}
	e.Changed = true
	r.step("sync " + path.Dir(e.Path))
	if err := syncDir(r.root, path.Dir(q.rel)); err != nil {
		return &fs.PathError{Op: "sync", Path: path.Dir(e.Path), Err: unwrap(err)}
	}
	return nil
}

// touched reports whether the original of q was written since it was
// read before its rename: a writer that opened it before the rename
// writes there.
func (q *pending) touched() bool {
	fi, err := q.f.Stat()
	return err != nil || fi.Size() != int64(q.size) || !fi.ModTime().Equal(q.read.ModTime())
}

// undo puts back the files renamed already, the last first, and says
// which it could not.
func (r *run) undo() error {
	var errs []error
	for i := len(r.ps) - 1; i >= 0; i-- {
		q := r.ps[i]
		if !q.renamed {
			continue
		}
		b, err := readRegular(r.root, q.rel)
		switch {
		case err == nil && !bytes.Equal(b, q.e.After):
			err = fmt.Errorf("%w after it was written: left as it is", ErrChanged)
			if !q.e.Create {
				err = fmt.Errorf("%w (the original is %s)", err, r.keep(q))
			}
		case err == nil && q.e.Create:
			err = r.root.Remove(q.rel)
		case err == nil:
			err = r.root.Rename(q.old, q.rel)
		}
		if err != nil {
			errs = append(errs, &fs.PathError{Op: "undo", Path: q.e.Path, Err: unwrap(err)})
			continue
		}
		q.renamed, q.e.Changed = false, false
		_ = syncDir(r.root, path.Dir(q.rel))
	}
	return errors.Join(errs...)
}

// keep returns the node path of the backup of q's original, which it
// first makes what the original holds now: what a writer wrote into it
// after Apply read it is kept.
func (r *run) keep(q *pending) string {
	b := path.Join(r.backup, q.rel)
	if cur, err := r.root.ReadFile(q.old); err == nil && hashOf(cur) != q.e.Hash {
		if writeSynced(r.root, b+".new", cur, q.mode, -1, -1) == nil {
			_ = r.root.Rename(b+".new", b)
		}
	}
	return "/" + b
}

// tmpName names a new temporary file for the file rel, in tmpDir(rel).
func tmpName(rel string) string {
	return path.Join(tmpDir(rel), "."+path.Base(rel)+".sandboxpin-"+randomSuffix())
}

// tmpDir is the directory of the temporary files of the file rel: its
// own, or, in a drop-in directory, the one above. CRI-O reads every file
// under its drop-in directory, whatever its name, a dot file too
// (pkg/config/config.go, Config.UpdateFromPath: a filepath.Walk, at cri-o
// v1.36.3), and so does resolve; systemd and k3s read theirs by suffix.
func tmpDir(rel string) string {
	d := path.Dir(rel)
	if strings.HasSuffix(d, ".d") {
		return path.Dir(d)
	}
	return d
}

// isTemp reports whether the file name n is one of Apply's temporary
// files: ".NAME.sandboxpin-" and 12 hex digits, or an older run's
// "NAME.sandboxpin-restore".
func isTemp(n string) bool {
	if strings.HasSuffix(n, ".sandboxpin-restore") {
		return true
	}
	i := strings.LastIndex(n, ".sandboxpin-")
	if !strings.HasPrefix(n, ".") || i < 1 || len(n)-i-len(".sandboxpin-") != 12 {
		return false
	}
	_, err := hex.DecodeString(n[i+len(".sandboxpin-"):])
	return err == nil
}

// sweepTrees are the trees [Sweep] looks in, every directory under each.
var sweepTrees = []string{"etc", "usr/lib/systemd/system", "lib/systemd/system",
	"var/lib/rancher/k3s/agent/etc", "var/lib/rancher/rke2/agent/etc"}

// sweep removes Apply's temporary files under sweepTrees and in
// /var/lib/kubelet and dirs (relative to the root), and returns their
// node paths.
func sweep(root *os.Root, dirs ...string) ([]string, error) {
	var removed []string
	var errs []error
	remove := func(p string) {
		switch err := root.Remove(p); {
		case err == nil:
			removed = append(removed, "/"+p)
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, &fs.PathError{Op: "remove", Path: "/" + p, Err: unwrap(err)})
		}
	}
	fsys := root.FS()
	for _, tree := range sweepTrees {
		_ = fs.WalkDir(fsys, tree, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && isTemp(d.Name()) {
				remove(p)
			}
			return nil // an unreadable directory is skipped
		})
	}
	for _, d := range append([]string{"var/lib/kubelet"}, dirs...) {
		entries, _ := fs.ReadDir(fsys, d)
		for _, e := range entries {
			if !e.IsDir() && isTemp(e.Name()) {
				remove(path.Join(d, e.Name()))
			}
		}
	}
	return removed, errors.Join(errs...)
}

// confine returns the path of the node path np relative to dir, every
// symbolic link on the way resolved inside dir as in a chroot.
func confine(dir, np string) (string, error) {
	if climbs(np) {
		return "", &fs.PathError{Op: "resolve", Path: np, Err: ErrOutsideRoot}
	}
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

// climbs reports whether a ".." of the node path np leads above the root
// (a relative np is taken from the root).
func climbs(np string) bool {
	depth := 0
	for el := range strings.SplitSeq(np, "/") {
		switch el {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
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

// mkdirAll makes rel and its parents inside the root, recording each it
// made.
func (r *run) mkdirAll(rel string) error {
	if rel == "." || rel == "" {
		return nil
	}
	fi, err := r.root.Stat(rel)
	if err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: rel, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if err := r.mkdirAll(path.Dir(rel)); err != nil {
		return err
	}
	if err := r.root.Mkdir(rel, 0o755); err != nil {
		return err
	}
	r.made = append(r.made, rel)
	return syncDir(r.root, path.Dir(rel))
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
