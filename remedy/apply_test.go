package remedy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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
	p, err := For(res, nil, opts.Root)
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
	require.NoError(t, Apply(context.Background(), p, dir, ApplyOptions{Now: func() time.Time { return at }}))
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
			p := planOf(t, dir)
			last := p.Edits[len(p.Edits)-1].Path
			require.NoError(t, tc.spoil(filepath.Join(dir, last)))
			orig := readTree(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := Apply(ctx, p, dir, ApplyOptions{})
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
	require.NoError(t, Apply(context.Background(), p, dir, ApplyOptions{}))
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
	err = Apply(ctx, p, dir, ApplyOptions{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	unlock()
	require.NoError(t, Apply(context.Background(), p, dir, ApplyOptions{}))
}

// TestApplyKilled kills a process that applies a plan of two files at
// each step of the writing, and checks that each file is then whole-old
// or whole-new, and that a new run finishes the job.
func TestApplyKilled(t *testing.T) {
	if dir := os.Getenv("SANDBOXPIN_KILL_DIR"); dir != "" {
		killedApply(t, dir, os.Getenv("SANDBOXPIN_KILL_AT"))
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
			cmd := exec.Command(os.Args[0], "-test.run=^TestApplyKilled$", "-test.count=1") //nolint:gosec // G702: this test binary
			cmd.Env = append(os.Environ(), "SANDBOXPIN_KILL_DIR="+dir, "SANDBOXPIN_KILL_AT="+strconv.Itoa(k))
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "the process was not killed: %v\n%s", err, out)
			require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal(), "%s", out)
			for _, e := range ref.Edits {
				b, err := os.ReadFile(filepath.Join(dir, e.Path))
				require.NoError(t, err)
				if string(b) != string(e.Before) {
					require.Equal(t, string(e.After), string(b), "%s is neither old nor new after a kill at step %d", e.Path, k)
				}
			}
			// A new run plans what is left, finishes, and sweeps the
			// temporary files the killed one left.
			p := planOf2(t, dir)
			require.NoError(t, Apply(context.Background(), p, dir, ApplyOptions{}))
			if len(p.Edits) > 0 {
				for _, e := range ref.Edits {
					entries, err := os.ReadDir(filepath.Dir(filepath.Join(dir, e.Path)))
					require.NoError(t, err)
					for _, d := range entries {
						require.NotContains(t, d.Name(), ".sandboxpin-", "a temporary file is left after a kill at step %d", k)
					}
				}
			}
			for _, e := range ref.Edits {
				b, err := os.ReadFile(filepath.Join(dir, e.Path))
				require.NoError(t, err)
				require.Equal(t, string(e.After), string(b))
			}
		})
	}
}

// planOf2 plans the node at dir, whatever is left to do.
func planOf2(t *testing.T, dir string) *Plan {
	t.Helper()
	opts := dropinNode
	opts.Root = resolve.DirFS(dir)
	res, err := resolve.Resolve(context.Background(), opts)
	require.NoError(t, err)
	p, err := For(res, nil, opts.Root)
	require.NoError(t, err)
	return p
}

// killedApply applies the plan of dir and kills its own process at step
// at.
func killedApply(t *testing.T, dir, at string) {
	k, err := strconv.Atoi(at)
	require.NoError(t, err)
	p := planOf(t, dir)
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
	t.Fatalf("not killed: step %d of %d (%s)", k, n, strings.Repeat(".", 0))
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
	err := Apply(context.Background(), p, dir, ApplyOptions{})
	require.ErrorIs(t, err, syscall.EROFS)
	assert.Contains(t, err.Error(), p.Edits[0].Path)
	assert.Equal(t, orig, readTree(t, dir), "something was written")
}
