package nodefs

import (
	"context"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listingFS is a file system whose directories list only through its
// ReadDir, as remedy's overlay does for a directory that only its plan adds.
type listingFS struct{ fstest.MapFS }

// plainDir hides the ReadDir of a directory file.
type plainDir struct{ fs.File }

func (l listingFS) Open(name string) (fs.File, error) {
	f, err := l.MapFS.Open(name)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return plainDir{f}, nil
	}
	return f, nil
}

func TestSourceReadDir(t *testing.T) {
	t.Parallel()
	m := fstest.MapFS{"d/b": {}, "d/a": {}}
	tests := []struct {
		name    string
		fsys    fs.FS
		want    []string
		wantErr bool
	}{
		{name: "directory file lists", fsys: m, want: []string{"a", "b"}},
		{name: "file system lists", fsys: listingFS{m}, want: []string{"a", "b"}},
		{name: "nothing lists", fsys: struct{ fs.FS }{listingFS{m}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			list, err := NewBudget(context.Background(), tt.fsys).Source().ReadDir("d")
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, e := range list {
				names = append(names, e.Name())
			}
			assert.Equal(t, tt.want, names)
		})
	}
}
