package remedy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// dropinNode is a sample node whose plan edits two files.
var dropinNode = resolve.Options{RuntimeVersion: "2.4.2", KubeletVersion: "1.35.0", KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"}

// planOf copies the kubelet-flag-dropin node and plans it.
func planOf(t *testing.T, dir string) *Plan {
	t.Helper()
	opts := dropinNode
	opts.Root = resolve.DirFS(dir)
	res, err := resolve.Resolve(context.Background(), opts)
	require.NoError(t, err)
	p, err := For(t.Context(), res, nil, opts.Root)
	require.NoError(t, err)
	require.Len(t, p.Edits, 2)
	require.NoError(t, Verify(context.Background(), p, opts, nil))
	return p
}

func TestApplyKeepsModeAndOwner(t *testing.T) {
	dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
	p := planOf(t, dir)
	target := filepath.Join(dir, p.Edits[0].Path)
	require.NoError(t, os.Chmod(target, 0o640)) //nolint:gosec // G302: a mode to keep, not the default
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(target, 1234, 5678))
	}
	before, err := os.Stat(target)
	require.NoError(t, err)
	at := time.Date(2026, 12, 6, 15, 4, 5, 0, time.UTC)
	require.NoError(t, Apply(context.Background(), p, resolve.DirFS(dir), ApplyOptions{Now: func() time.Time { return at }}))
	after, err := os.Stat(target)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o640), after.Mode().Perm())
	assert.Equal(t, before.Sys().(*syscall.Stat_t).Uid, after.Sys().(*syscall.Stat_t).Uid)
	assert.Equal(t, before.Sys().(*syscall.Stat_t).Gid, after.Sys().(*syscall.Stat_t).Gid)
	b, err := os.ReadFile(filepath.Join(dir, "var/backups/sandboxpin/20261206T150405.000000000Z", p.Edits[0].Path))
	require.NoError(t, err)
	assert.Equal(t, p.Edits[0].Before, b)
	for _, e := range p.Edits {
		assert.True(t, e.Changed)
	}
	entries, err := os.ReadDir(filepath.Dir(target))
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), ".sandboxpin-", "a temporary file is left")
	}
}

// TestApplyRefuses: a file that changed since planning, a FIFO or a
// directory in its place: an error naming the path, and nothing written,
// the other file included.
func TestApplyRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(path string) error
		want  error
	}{
		{"changed", func(p string) error { return os.WriteFile(p, []byte("[Service]\n"), 0o600) }, ErrChanged},
		{"fifo", func(p string) error { _ = os.Remove(p); return syscall.Mkfifo(p, 0o644) }, ErrNotRegular},
		{"directory", func(p string) error { _ = os.Remove(p); return os.Mkdir(p, 0o750) }, ErrNotRegular},
		// One sentinel for reading and writing a node (issue 52).
		{"fifo is resolve's", func(p string) error { _ = os.Remove(p); return syscall.Mkfifo(p, 0o644) }, resolve.ErrNotRegular},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
			p := planOf(t, dir)
			last := p.Edits[len(p.Edits)-1].Path
			require.NoError(t, tc.spoil(filepath.Join(dir, last)))
			orig := readTree(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := Apply(ctx, p, resolve.DirFS(dir), ApplyOptions{})
			require.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), last)
			assert.NotContains(t, err.Error(), dir, "the error names the node path, not the host's")
			assert.Equal(t, orig, readTree(t, dir))
			for _, e := range p.Edits {
				assert.False(t, e.Changed)
			}
		})
	}
}

// TestApplyConfined: a link that points off the node is followed inside
// the root, as a chroot would: the host's file is never written.
func TestApplyConfined(t *testing.T) {
	dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
	host := t.TempDir()
	hostFile := filepath.Join(host, "kubeadm.yaml")
	orig, err := os.ReadFile(filepath.Join(dir, "etc/kubernetes/kubeadm.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(hostFile, orig, 0o600)) //nolint:gosec // G703: the test's own temporary directory
	// The node's file is a link to the host's path, which inside the
	// root holds the same file.
	inRoot := filepath.Join(dir, host)
	require.NoError(t, os.MkdirAll(inRoot, 0o750))
	require.NoError(t, os.Rename(filepath.Join(dir, "etc/kubernetes/kubeadm.yaml"), filepath.Join(inRoot, "kubeadm.yaml")))
	require.NoError(t, os.Symlink(hostFile, filepath.Join(dir, "etc/kubernetes/kubeadm.yaml")))
	p := planOf(t, dir)
	require.NoError(t, Apply(context.Background(), p, resolve.DirFS(dir), ApplyOptions{}))
	got, err := os.ReadFile(hostFile)
	require.NoError(t, err)
	assert.Equal(t, orig, got, "the host's file was written")
	got, err = os.ReadFile(filepath.Join(inRoot, "kubeadm.yaml"))
	require.NoError(t, err)
	assert.NotEqual(t, orig, got, "the node's file, the link's target inside the root, was not written")
	fi, err := os.Lstat(filepath.Join(dir, "etc/kubernetes/kubeadm.yaml"))
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSymlink, fi.Mode().Type(), "the link was replaced")
}

// TestApplyLock: a run waits while another holds the root's lock.
func TestApplyLock(t *testing.T) {
	dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
	p := planOf(t, dir)
	unlock, err := lock(context.Background(), dir)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = Apply(ctx, p, resolve.DirFS(dir), ApplyOptions{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	unlock()
	require.NoError(t, Apply(context.Background(), p, resolve.DirFS(dir), ApplyOptions{}))
}

// TestApplyKilled kills a process that applies a plan of two files at
// each step of the writing, and checks that each file is then whole-old
// or whole-new, and that a new run finishes the job and leaves no
// temporary file.
func TestApplyKilled(t *testing.T) {
	if dir := os.Getenv("SANDBOXPIN_KILL_DIR"); dir != "" {
		killedApply(t, dir, os.Getenv("SANDBOXPIN_KILL_NODE"), os.Getenv("SANDBOXPIN_KILL_AT"))
		return
	}
	ref := planOf(t, copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin"))
	var steps int
	require.NoError(t, apply(context.Background(), ref, copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin"),
		ApplyOptions{}, func(string) { steps++ }))
	require.Greater(t, steps, 8)
	for k := range steps {
		t.Run(strconv.Itoa(k), func(t *testing.T) {
			dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
			killAt(t, dir, "kubelet-flag-dropin", k)
			for _, e := range ref.Edits {
				b, err := os.ReadFile(filepath.Join(dir, e.Path))
				require.NoError(t, err)
				if string(b) != string(e.Before) {
					require.Equal(t, string(e.After), string(b), "%s is neither old nor new after a kill at step %d", e.Path, k)
				}
			}
			// A new run plans what is left, finishes, and sweeps the
			// temporary files the killed one left.
			p := planOf2(t, dir, dropinNode)
			require.NoError(t, Apply(context.Background(), p, resolve.DirFS(dir), ApplyOptions{}))
			require.Empty(t, temporaries(t, dir), "a temporary file is left after a kill at step %d", k)
			for _, e := range ref.Edits {
				b, err := os.ReadFile(filepath.Join(dir, e.Path))
				require.NoError(t, err)
				require.Equal(t, string(e.After), string(b))
			}
		})
	}
}

// killAt runs TestApplyKilled's child on the sample node named node,
// copied at dir, and checks that it was killed at step k.
func killAt(t *testing.T, dir, node string, k int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestApplyKilled$", "-test.count=1") //nolint:gosec // G702: this test binary
	cmd.Env = append(os.Environ(), "SANDBOXPIN_KILL_DIR="+dir, "SANDBOXPIN_KILL_NODE="+node, "SANDBOXPIN_KILL_AT="+strconv.Itoa(k))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "the process was not killed: %v\n%s", err, out)
	require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal(), "%s", out)
}

// planOf2 plans the node at dir with opts, whatever is left to do.
func planOf2(t *testing.T, dir string, opts resolve.Options) *Plan {
	t.Helper()
	opts.Root = resolve.DirFS(dir)
	res, err := resolve.Resolve(context.Background(), opts)
	require.NoError(t, err)
	p, err := For(t.Context(), res, nil, opts.Root)
	require.NoError(t, err)
	return p
}

// killedApply applies the plan of the sample node copied at dir and kills
// its own process at step at.
func killedApply(t *testing.T, dir, node, at string) {
	k, err := strconv.Atoi(at)
	require.NoError(t, err)
	var p *Plan
	if node == "k3s" {
		p = k3sPlan(t, dir)
	} else {
		p = planOf(t, dir)
	}
	n := 0
	err = apply(context.Background(), p, dir, ApplyOptions{}, func(s string) {
		if n == k {
			fmt.Fprintln(os.Stderr, "killed at", s)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		}
		n++
	})
	require.NoError(t, err)
	t.Fatalf("not killed: step %d of %d", k, n)
}

// TestApplyReadOnly: on a read-only file system (the node's /etc bind
// mounted read-only onto itself) Apply fails naming the path and writes
// nothing, no backup either. It needs the right to mount (root).
func TestApplyReadOnly(t *testing.T) {
	dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
	p := planOf(t, dir)
	etc := filepath.Join(dir, "etc")
	if err := syscall.Mount(etc, etc, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind mount (%v): run as root", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(etc, 0) })
	require.NoError(t, syscall.Mount(etc, etc, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""))
	orig := readTree(t, dir)
	err := Apply(context.Background(), p, resolve.DirFS(dir), ApplyOptions{})
	require.ErrorIs(t, err, syscall.EROFS)
	assert.Contains(t, err.Error(), p.Edits[0].Path)
	assert.Equal(t, orig, readTree(t, dir), "something was written")
}

// k3sNode is the k3s sample node at a containerd version whose plan edits
// a file and creates a drop-in in a new drop-in directory (config.yaml.d).
var k3sNode = resolve.Options{RuntimeVersion: "2.4.2"}

// k3sPlan plans the k3s sample node copied at dir.
func k3sPlan(t *testing.T, dir string) *Plan {
	t.Helper()
	opts := k3sNode
	opts.Root = resolve.DirFS(dir)
	res, err := resolve.Resolve(context.Background(), opts)
	require.NoError(t, err)
	p, err := For(t.Context(), res, nil, opts.Root)
	require.NoError(t, err)
	require.NoError(t, Verify(context.Background(), p, opts, nil))
	require.True(t, slices.ContainsFunc(p.Edits, func(e Edit) bool { return e.Create }), "the k3s plan creates no file")
	return p
}

// appendTo appends line to the file at name, as `echo >>` does.
func appendTo(t *testing.T, name, line string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(line)
	require.NoError(t, errors.Join(err, f.Close()))
}

// temporaries returns the node paths of every temporary file of Apply
// under dir.
func temporaries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for p := range readTree(t, dir) {
		if strings.Contains(p, ".sandboxpin-") {
			out = append(out, p)
		}
	}
	return out
}

// TestApplyChangedBeforeRename: another writer appends to a file after
// Apply checked it and before it is renamed over (in the window before
// Apply's last check, and between that check and the rename): Apply
// refuses with ErrChanged naming the file, the appended line is kept,
// every other file is as it was, and no backup is left.
func TestApplyChangedBeforeRename(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		at   func(p *Plan) string // the step the writer appends at
		file int                  // the edit whose file it appends to
	}{
		{"first file, before its last check", func(p *Plan) string { return "write " + p.Edits[1].Path }, 0},
		{"first file, between check and rename", func(p *Plan) string { return "rename " + p.Edits[0].Path }, 0},
		{"last file, between check and rename", func(p *Plan) string { return "rename " + p.Edits[1].Path }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
			p := planOf(t, dir)
			target := p.Edits[tc.file].Path
			want := readTree(t, dir)
			want[target] += "# appended by another writer\n"
			at := tc.at(p)
			err := apply(context.Background(), p, dir, ApplyOptions{}, func(s string) {
				if s == at {
					appendTo(t, filepath.Join(dir, target), "# appended by another writer\n")
				}
			})
			require.ErrorIs(t, err, ErrChanged)
			assert.Contains(t, err.Error(), target)
			assert.Equal(t, want, readTree(t, dir), "a byte was lost, or a file or a backup is left")
			assert.NoDirExists(t, filepath.Join(dir, "var/backups"))
			for _, e := range p.Edits {
				assert.False(t, e.Changed)
			}
			assert.Empty(t, p.Backup)
		})
	}
}

// TestApplyConcurrentWriter: a goroutine appends lines to a file while
// Apply writes it, again and again: every line survives, and Apply either
// wrote (the file is the edit's After and the lines) or refused with
// ErrChanged (the file is as it was, and the lines; or, when lines went
// both into the original and into the new file, the file is left as it
// is and the backup holds the original with the lines that went there).
func TestApplyConcurrentWriter(t *testing.T) {
	t.Parallel()
	src := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
	ref := planOf(t, src)
	start := time.Now()
	require.NoError(t, Apply(context.Background(), ref, resolve.DirFS(copyTree(t, src)), ApplyOptions{}))
	took := time.Since(start)
	counts := map[bool]int{}
	for run := range 40 {
		dir := copyTree(t, src)
		p := &Plan{Edits: slices.Clone(ref.Edits)} // the same node paths and bytes
		e := p.Edits[run%2]
		target := filepath.Join(dir, e.Path)
		stop, done := make(chan struct{}), make(chan string)
		go func() {
			var lines strings.Builder
			defer func() { done <- lines.String() }()
			// Start anywhere from before Apply reads to after it is done.
			time.Sleep(time.Duration(mrand.Int64N(int64(2 * took)))) //nolint:gosec // G404: a test's timing jitter, no secret
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				line := fmt.Sprintf("# line %d\n", i)
				f, err := os.OpenFile(target, os.O_APPEND|os.O_WRONLY, 0)
				if err == nil {
					_, err = f.WriteString(line)
					err = errors.Join(err, f.Close())
				}
				if err == nil {
					lines.WriteString(line)
				}
				time.Sleep(time.Duration(mrand.Int64N(int64(200 * time.Microsecond)))) //nolint:gosec // G404: a test's timing jitter, no secret
			}
		}()
		err := Apply(context.Background(), p, resolve.DirFS(dir), ApplyOptions{})
		time.Sleep(time.Millisecond)
		close(stop)
		lines := <-done
		b, rerr := os.ReadFile(target)
		require.NoError(t, rerr)
		switch {
		case err != nil && strings.Contains(err.Error(), "left as it is"):
			// Written into the original and, after the rename, into the
			// new file: the file is kept as it is, and the original, with
			// what went into it, in the backup.
			require.ErrorIs(t, err, ErrChanged, "run %d", run)
			kept, kerr := os.ReadFile(filepath.Join(dir, p.Backup, e.Path))
			require.NoError(t, kerr)
			require.True(t, strings.HasPrefix(string(kept), string(e.Before)) && strings.HasPrefix(string(b), string(e.After)), "run %d", run)
			require.Equal(t, lines, string(kept[len(e.Before):])+string(b[len(e.After):]), "run %d refused, and lost a line", run)
		case err != nil:
			require.ErrorIs(t, err, ErrChanged, "run %d", run)
			require.Equal(t, string(e.Before)+lines, string(b), "run %d refused, and lost a line", run)
		default:
			require.Equal(t, string(e.After)+lines, string(b), "run %d wrote, and lost a line", run)
		}
		counts[err == nil]++
	}
	t.Logf("written %d, refused %d", counts[true], counts[false])
}

// TestApplyKilledCreates kills a process that applies a plan that edits a
// file and creates one in a new drop-in directory, at each step of the
// writing: each file is whole-old or whole-new (or absent, when new), the
// drop-in directory never holds a temporary file (CRI-O and k3s read
// drop-in directories), and after the next run no temporary file is left
// anywhere.
func TestApplyKilledCreates(t *testing.T) {
	src := "../resolve/testdata/nodes/k3s"
	ref := k3sPlan(t, copyTree(t, src))
	var steps int
	require.NoError(t, apply(context.Background(), ref, copyTree(t, src), ApplyOptions{}, func(string) { steps++ }))
	for k := range steps {
		t.Run(strconv.Itoa(k), func(t *testing.T) {
			dir := copyTree(t, src)
			killAt(t, dir, "k3s", k)
			for _, e := range ref.Edits {
				b, err := os.ReadFile(filepath.Join(dir, e.Path))
				if e.Create && errors.Is(err, fs.ErrNotExist) {
					continue
				}
				require.NoError(t, err)
				if string(b) != string(e.Before) {
					require.Equal(t, string(e.After), string(b), "%s is neither old nor new after a kill at step %d", e.Path, k)
				}
				if strings.HasSuffix(filepath.Dir(e.Path), ".d") {
					entries, _ := os.ReadDir(filepath.Join(dir, filepath.Dir(e.Path)))
					for _, d := range entries {
						require.NotContains(t, d.Name(), ".sandboxpin-", "a temporary file in a drop-in directory")
					}
				}
			}
			// (The next plan does not always finish the job: once
			// k3s's config.toml is written, resolve finds nothing
			// that asks for the drop-in.)
			p := planOf2(t, dir, k3sNode)
			require.NoError(t, Apply(context.Background(), p, resolve.DirFS(dir), ApplyOptions{}))
			require.Empty(t, temporaries(t, dir), "after a kill at step %d", k)
		})
	}
}

// TestSweep: temporary files of killed runs, old-style ones beside a file
// in a drop-in directory (which CRI-O reads) included, are removed by
// Sweep and by Apply with an empty plan; nothing else is.
func TestSweep(t *testing.T) {
	t.Parallel()
	strays := []string{
		"etc/crio/crio.conf.d/.99-sandboxpin.conf.sandboxpin-0123456789ab", // an old run's, beside the file
		"etc/crio/.99-sandboxpin.conf.sandboxpin-a1b2c3d4e5f6",             // a new run's, above the drop-in directory
		"etc/crio/crio.conf.d/10-crio.conf.sandboxpin-restore",             // an old run's rollback
		"etc/systemd/system/kubelet.service.d/.20-sandbox.conf.sandboxpin-00112233aabb",
		"var/lib/kubelet/.kubeadm-flags.env.sandboxpin-ffeeddccbbaa",
	}
	keep := []string{
		"etc/crio/crio.conf.d/.hidden.sandboxpin-notours",
		"etc/crio/crio.conf.d/x.sandboxpin-0123456789ab",
		"var/lib/kubelet/pods/p/.x.sandboxpin-0123456789ab", // a pod's volume is not walked
	}
	for _, by := range []string{"Sweep", "Apply"} {
		t.Run(by, func(t *testing.T) {
			t.Parallel()
			dir := copyTree(t, "../resolve/testdata/nodes/crio-dropins")
			for _, f := range append(slices.Clone(strays), keep...) {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o750))
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("[crio.image]\npause_image = \"x\"\n"), 0o600))
			}
			if by == "Sweep" {
				removed, err := Sweep(context.Background(), resolve.DirFS(dir))
				require.NoError(t, err)
				want := make([]string, len(strays))
				for i, s := range strays {
					want[i] = "/" + s
				}
				assert.ElementsMatch(t, want, removed)
			} else {
				require.NoError(t, Apply(context.Background(), &Plan{}, resolve.DirFS(dir), ApplyOptions{}))
			}
			for _, f := range strays {
				assert.NoFileExists(t, filepath.Join(dir, f))
			}
			for _, f := range keep {
				assert.FileExists(t, filepath.Join(dir, f))
			}
			assert.NoDirExists(t, filepath.Join(dir, "var/backups"))
		})
	}
}

// TestApplyTemporariesOutsideDropIns: while Apply writes, a drop-in
// directory holds no file but the node's and the plan's.
func TestApplyTemporariesOutsideDropIns(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, "../resolve/testdata/nodes/k3s")
	p := k3sPlan(t, dir)
	seen := 0
	require.NoError(t, apply(context.Background(), p, dir, ApplyOptions{}, func(s string) {
		for _, e := range p.Edits {
			d := filepath.Dir(e.Path)
			if !strings.HasSuffix(d, ".d") {
				continue
			}
			entries, _ := os.ReadDir(filepath.Join(dir, d))
			for _, f := range entries {
				seen++
				assert.Equal(t, filepath.Base(e.Path), f.Name(), "at %s", s)
			}
		}
	}))
	assert.Positive(t, seen)
}

// TestApplyRollbackKeepsModeAndOwner: a run refused after it renamed a
// file puts the file back with its mode and owner (the original itself);
// a new file takes the mode of its directory without execute bits and
// group or other write, and its directory's owner. It needs root to chown.
func TestApplyRollbackKeepsModeAndOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
	p := planOf(t, dir)
	first := filepath.Join(dir, p.Edits[0].Path)
	require.NoError(t, os.Chmod(first, 0o640)) //nolint:gosec // G302: a mode to keep
	require.NoError(t, os.Chown(first, 1234, 2345))
	before, err := os.Stat(first)
	require.NoError(t, err)
	err = apply(context.Background(), p, dir, ApplyOptions{}, func(s string) {
		if s == "rename "+p.Edits[1].Path {
			appendTo(t, filepath.Join(dir, p.Edits[1].Path), "\n")
		}
	})
	require.ErrorIs(t, err, ErrChanged)
	after, err := os.Stat(first)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o640), after.Mode().Perm())
	assert.Equal(t, uint32(1234), after.Sys().(*syscall.Stat_t).Uid)
	assert.Equal(t, uint32(2345), after.Sys().(*syscall.Stat_t).Gid)
	assert.True(t, os.SameFile(before, after), "not the original file")
	assert.Equal(t, string(p.Edits[0].Before), string(must(os.ReadFile(first))))

	// A new file: its directory's mode and owner.
	dir = copyTree(t, "../resolve/testdata/nodes/crio-1.37-kubeadm-1.37")
	dropins := filepath.Join(dir, "etc/crio/crio.conf.d")
	require.NoError(t, os.Mkdir(dropins, 0o750))
	require.NoError(t, os.Chmod(dropins, 0o770)) //nolint:gosec // G302: group write, not given to the file
	require.NoError(t, os.Chown(dropins, 1234, 2345))
	opts := resolve.Options{Root: resolve.DirFS(dir), RuntimeVersion: "1.37.0", KubeadmVersion: "v1.37.2"}
	res, err := resolve.Resolve(context.Background(), opts)
	require.NoError(t, err)
	p, err = For(t.Context(), res, nil, opts.Root)
	require.NoError(t, err)
	require.Len(t, p.Edits, 1)
	require.True(t, p.Edits[0].Create)
	require.NoError(t, Apply(context.Background(), p, resolve.DirFS(dir), ApplyOptions{}))
	fi, err := os.Stat(filepath.Join(dir, p.Edits[0].Path))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o640), fi.Mode().Perm())
	assert.Equal(t, uint32(1234), fi.Sys().(*syscall.Stat_t).Uid)
	assert.Equal(t, uint32(2345), fi.Sys().(*syscall.Stat_t).Gid)
	assert.Empty(t, p.Backup, "a backup for a new file")
	assert.NoDirExists(t, filepath.Join(dir, "var/backups"))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestApplyNoEmptyBackup: a run that writes nothing leaves no backup
// directory, nor the parents it made; one that writes names its backup
// directory in Plan.Backup.
func TestApplyNoEmptyBackup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		spoil func(dir string, p *Plan) func(string)
		want  error
	}{
		{"first rename fails", func(dir string, p *Plan) func(string) {
			return func(s string) {
				if s == "write "+p.Edits[1].Path {
					// A directory in the place of the first file: its rename fails.
					name := filepath.Join(dir, p.Edits[0].Path)
					_ = os.Remove(name)
					_ = os.Mkdir(name, 0o750)
				}
			}
		}, ErrNotRegular},
		{"canceled", func(string, *Plan) func(string) { return func(string) {} }, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
			p := planOf(t, dir)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			step := tc.spoil(dir, p)
			err := apply(ctx, p, dir, ApplyOptions{}, func(s string) {
				step(s)
				if errors.Is(tc.want, context.Canceled) && strings.HasPrefix(s, "write ") {
					cancel()
				}
			})
			require.ErrorIs(t, err, tc.want)
			assert.NoDirExists(t, filepath.Join(dir, "var/backups"), "a backup directory without a backup")
			assert.Empty(t, p.Backup)
			assert.Empty(t, temporaries(t, dir))
		})
	}
	dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
	p := planOf(t, dir)
	at := time.Date(2026, 12, 6, 15, 4, 5, 0, time.UTC)
	require.NoError(t, Apply(context.Background(), p, resolve.DirFS(dir), ApplyOptions{Now: func() time.Time { return at }}))
	assert.Equal(t, "/var/backups/sandboxpin/20261206T150405.000000000Z", p.Backup)
}

// TestApplyIdentical: an edit whose bytes are the file's is not written:
// no rename (the file is the same inode), no backup, not Changed.
func TestApplyIdentical(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
	p := planOf(t, dir)
	e := &p.Edits[0]
	e.After, e.Changes, e.Diff = e.Before, nil, ""
	p.Edits = p.Edits[:1]
	name := filepath.Join(dir, e.Path)
	before, err := os.Stat(name)
	require.NoError(t, err)
	require.NoError(t, Apply(context.Background(), p, resolve.DirFS(dir), ApplyOptions{}))
	after, err := os.Stat(name)
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "rewritten")
	assert.False(t, e.Changed)
	assert.Empty(t, p.Backup)
	assert.NoDirExists(t, filepath.Join(dir, "var/backups"))
}

// TestForNoIdenticalEdit: a file whose changes give back its bytes is no
// Edit of the plan.
func TestForNoIdenticalEdit(t *testing.T) {
	t.Parallel()
	b := []byte("a = 1\nb = 2\n")
	f := &file{path: "/etc/x.toml", component: "containerd", before: b, t: splitText(b)}
	f.change("k", resolve.Location{}, hunk{start: 1, n: 1, repl: []string{"b = 2\n"}}, "the same")
	p := &planner{res: &resolve.Result{}, files: map[string]*file{f.path: f}, order: []string{f.path}}
	plan, err := p.finish()
	require.NoError(t, err)
	assert.Empty(t, plan.Edits)
	assert.Empty(t, plan.Steps, "a restart for no edit")
}

// TestApplyBackupDir: a backup directory reached through an absolute
// symbolic link inside the node is followed inside the root, as a chroot
// would; one whose ".." leads above the root is refused with
// ErrOutsideRoot, before anything is written.
func TestApplyBackupDir(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "data/backups"), 0o750))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "var"), 0o750))
	require.NoError(t, os.Symlink("/data/backups", filepath.Join(dir, "var/backups")))
	p := planOf(t, dir)
	at := time.Date(2026, 12, 6, 15, 4, 5, 0, time.UTC)
	require.NoError(t, Apply(context.Background(), p, resolve.DirFS(dir), ApplyOptions{Now: func() time.Time { return at }}))
	assert.Equal(t, "/data/backups/sandboxpin/20261206T150405.000000000Z", p.Backup)
	b, err := os.ReadFile(filepath.Join(dir, p.Backup, p.Edits[0].Path))
	require.NoError(t, err)
	assert.Equal(t, string(p.Edits[0].Before), string(b))

	for _, bd := range []string{"../outside", "/../outside", "/var/../../outside"} {
		dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
		p := planOf(t, dir)
		orig := readTree(t, dir)
		err := Apply(context.Background(), p, resolve.DirFS(dir), ApplyOptions{BackupDir: bd})
		require.ErrorIs(t, err, ErrOutsideRoot, bd)
		assert.Contains(t, err.Error(), bd)
		assert.Equal(t, orig, readTree(t, dir))
		assert.NoDirExists(t, filepath.Join(filepath.Dir(dir), "outside"))
	}
}

// TestApplyCrossDevice: a drop-in directory that is a mount point of its
// own (bind mounted onto itself): its file's temporary files, in the
// directory above, cannot be renamed into it. Apply fails with an error
// wrapping EXDEV that names the path, and the tree is as it was, with no
// backup. It needs the right to mount (root).
func TestApplyCrossDevice(t *testing.T) {
	dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
	p := planOf(t, dir)
	dropins := filepath.Join(dir, "etc/systemd/system/kubelet.service.d")
	require.Equal(t, "/etc/systemd/system/kubelet.service.d/20-sandbox.conf", p.Edits[0].Path)
	if err := syscall.Mount(dropins, dropins, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind mount (%v): run as root", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dropins, 0) })
	orig := readTree(t, dir)
	err := Apply(context.Background(), p, resolve.DirFS(dir), ApplyOptions{})
	require.ErrorIs(t, err, syscall.EXDEV)
	assert.Contains(t, err.Error(), p.Edits[0].Path)
	assert.Equal(t, orig, readTree(t, dir))
	assert.NoDirExists(t, filepath.Join(dir, "var/backups"))
}
