package remedy

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// TestRestore: Restore after Apply gives every file its original bytes,
// mode and owner and removes the files Apply created, keeping the
// backups; a file another writer changed after Apply (or whose backup
// changed) is refused with ErrChanged and left as it is, the others
// restored.
func TestRestore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		node string
		plan func(*testing.T, string) *Plan
		// after runs between Apply and Restore; it returns the node
		// paths it changed, which Restore must leave as they are.
		after   func(*testing.T, string, *Plan) []string
		wantErr error
	}{
		{name: "replaced files", node: "kubelet-flag-dropin", plan: planOf},
		{name: "a created drop-in", node: "k3s", plan: k3sPlan},
		{name: "a created drop-in removed already", node: "k3s", plan: k3sPlan,
			after: func(t *testing.T, dir string, p *Plan) []string {
				for _, e := range p.Edits {
					if e.Create {
						require.NoError(t, os.Remove(filepath.Join(dir, e.Path)))
					}
				}
				return nil
			}},
		{name: "a file changed after Apply", node: "kubelet-flag-dropin", plan: planOf, wantErr: ErrChanged,
			after: func(t *testing.T, dir string, p *Plan) []string {
				appendTo(t, filepath.Join(dir, p.Edits[0].Path), "# another writer\n")
				return []string{p.Edits[0].Path}
			}},
		{name: "a created file changed after Apply", node: "k3s", plan: k3sPlan, wantErr: ErrChanged,
			after: func(t *testing.T, dir string, p *Plan) []string {
				for _, e := range p.Edits {
					if e.Create {
						appendTo(t, filepath.Join(dir, e.Path), "# another writer\n")
						return []string{e.Path}
					}
				}
				return nil
			}},
		{name: "a replaced file removed after Apply", node: "kubelet-flag-dropin", plan: planOf, wantErr: ErrChanged,
			after: func(t *testing.T, dir string, p *Plan) []string {
				require.NoError(t, os.Remove(filepath.Join(dir, p.Edits[1].Path)))
				return []string{p.Edits[1].Path}
			}},
		{name: "a backup changed", node: "kubelet-flag-dropin", plan: planOf, wantErr: ErrChanged,
			after: func(t *testing.T, dir string, p *Plan) []string {
				appendTo(t, filepath.Join(dir, p.Backup, p.Edits[1].Path), "# changed\n")
				return []string{p.Edits[1].Path}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := copyTree(t, "../resolve/testdata/nodes/"+tt.node)
			p := tt.plan(t, dir)
			stats := map[string]fs.FileInfo{}
			for i, e := range p.Edits {
				if e.Create {
					continue
				}
				name := filepath.Join(dir, e.Path)
				require.NoError(t, os.Chmod(name, fs.FileMode(0o600+0o40*i)))
				if os.Geteuid() == 0 {
					require.NoError(t, os.Chown(name, 1234+i, 5678+i))
				}
				fi, err := os.Stat(name)
				require.NoError(t, err)
				stats[e.Path] = fi
			}
			orig := readTree(t, dir)
			require.NoError(t, Apply(context.Background(), p, resolve.DirFS(dir), ApplyOptions{}))
			var left []string
			if tt.after != nil {
				left = tt.after(t, dir, p)
			}
			written := readTree(t, dir)

			err := Restore(context.Background(), p, resolve.DirFS(dir))
			after := readTree(t, dir)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				for _, l := range left {
					assert.Contains(t, err.Error(), l)
				}
			} else {
				require.NoError(t, err)
			}
			for _, e := range p.Edits {
				kept := false
				for _, l := range left {
					kept = kept || l == e.Path
				}
				assert.Equal(t, kept, e.Changed, "%s: Changed", e.Path)
				if kept {
					assert.Equal(t, written[e.Path], after[e.Path], "%s: not left as it was", e.Path)
					continue
				}
				if e.Create {
					assert.NoFileExists(t, filepath.Join(dir, e.Path))
					continue
				}
				assert.Equal(t, string(e.Before), after[e.Path], e.Path)
				fi, err := os.Stat(filepath.Join(dir, e.Path))
				require.NoError(t, err)
				want := stats[e.Path]
				assert.Equal(t, want.Mode().Perm(), fi.Mode().Perm(), e.Path)
				assert.Equal(t, want.Sys().(*syscall.Stat_t).Uid, fi.Sys().(*syscall.Stat_t).Uid, e.Path)
				assert.Equal(t, want.Sys().(*syscall.Stat_t).Gid, fi.Sys().(*syscall.Stat_t).Gid, e.Path)
			}
			if p.Backup != "" {
				assert.DirExists(t, filepath.Join(dir, p.Backup), "the backups are kept")
			}
			assert.Empty(t, temporaries(t, dir))
			for p2 := range after {
				if strings.HasPrefix(p2, DefaultBackupDir+"/") {
					delete(after, p2)
				}
			}
			if tt.wantErr == nil {
				assert.Equal(t, orig, after, "the node is not as it was")
			}
		})
	}
}

// TestRestoreRefuses: a plan Apply never wrote is nothing to restore, and
// a root that is not a resolve.DirFS cannot be written.
func TestRestoreRefuses(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, "../resolve/testdata/nodes/kubelet-flag-dropin")
	p := planOf(t, dir)
	orig := readTree(t, dir)
	require.NoError(t, Restore(context.Background(), p, resolve.DirFS(dir)))
	require.NoError(t, Restore(context.Background(), nil, resolve.DirFS(dir)))
	assert.Equal(t, orig, readTree(t, dir))
	require.ErrorIs(t, Restore(context.Background(), p, os.DirFS(dir)), resolve.ErrNoRoot)
}
