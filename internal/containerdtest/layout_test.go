package containerdtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteLayout(t *testing.T) {
	t.Parallel()
	images := []Image{
		{Names: []string{"registry.k8s.io/pause:3.10.1", "k8s.gcr.io/pause:3.10.1"}},
		{Names: []string{"docker.io/library/busybox:1.36"}},
	}
	dir := t.TempDir()
	ids, err := WriteLayout(dir, images)
	require.NoError(t, err)
	want, err := WriteArchive(filepath.Join(t.TempDir(), "a.tar"), images)
	require.NoError(t, err)
	assert.Equal(t, want, ids, "the same images as WriteArchive")

	index, err := os.ReadFile(filepath.Join(dir, "index.json"))
	require.NoError(t, err)
	var idx struct {
		Manifests []descriptor `json:"manifests"`
	}
	require.NoError(t, json.Unmarshal(index, &idx))
	assert.Len(t, idx.Manifests, 3, "one entry per name")
	for _, id := range ids {
		_, err := os.Stat(filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(id, "sha256:")))
		assert.NoError(t, err, "config blob %s", id)
	}
	_, err = os.Stat(filepath.Join(dir, ".archive.tar"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the archive is removed")
}
