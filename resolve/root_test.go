package resolve_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// TestNoRoot: a root that is not there is an error that wraps ErrNoRoot and
// names the root, from Resolve and the endpoint functions alike; a nil
// file system, which their docs allow, is one too and no panic.
func TestNoRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	missing := filepath.Join(dir, "nonexistent")
	tests := []struct {
		name  string
		root  fs.FS  // the node's root
		named string // what the error must name, "" for nothing
	}{
		{name: "missing directory", root: resolve.DirFS(missing), named: missing},
		{name: "a file", root: resolve.DirFS(file), named: file},
		{name: "nil", root: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls := map[string]func() error{
				"ContainerdEndpoint": func() error { _, _, err := resolve.ContainerdEndpoint(tt.root); return err },
				"KubeletEndpoint":    func() error { _, _, err := resolve.KubeletEndpoint(tt.root); return err },
			}
			if tt.root != nil { // a nil Options.Root means the host's "/"
				calls["Resolve"] = func() error {
					res, err := resolve.Resolve(context.Background(), resolve.Options{Root: tt.root})
					assert.Nil(t, res)
					return err
				}
			}
			for name, call := range calls {
				err := call()
				assert.ErrorIs(t, err, resolve.ErrNoRoot, name)
				var ce *resolve.ConfigError
				assert.False(t, errors.As(err, &ce), "%s: %v is a ConfigError about a file in the root", name, err)
				if tt.named != "" {
					assert.ErrorContains(t, err, tt.named, name)
				}
			}
		})
	}
}

// TestEmptyRootIsNoRootError: a root that exists but holds nothing is not
// ErrNoRoot: every source is absent.
func TestEmptyRootIsNoRootError(t *testing.T) {
	t.Parallel()
	for _, root := range []fs.FS{resolve.DirFS(t.TempDir()), fstest.MapFS{}} {
		_, err := resolve.Resolve(context.Background(), resolve.Options{Root: root})
		assert.NotErrorIs(t, err, resolve.ErrNoRoot)
		_, _, err = resolve.ContainerdEndpoint(root)
		assert.NoError(t, err)
	}
}

func TestFixWhereNil(t *testing.T) {
	t.Parallel()
	var f *resolve.Fix
	assert.Empty(t, f.Where())
	assert.Equal(t, "/etc/containerd/config.toml:3", (&resolve.Fix{Location: resolve.Location{Path: "/etc/containerd/config.toml", Line: 3}}).Where())
}
