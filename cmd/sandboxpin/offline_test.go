package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/audit"
)

// TestReadImages checks the file handling around audit.ReadImages: the
// flag and the path in every error, the library's error kept.
func TestReadImages(t *testing.T) {
	t.Parallel()
	images, err := readImages("testdata/offline/images.json")
	require.NoError(t, err)
	require.Len(t, images, 2)
	assert.Equal(t, []string{"harbor.example.com/mirror/pause:3.10.1", "registry.k8s.io/pause:3.10.1"}, images[0].GetRepoTags())

	p := filepath.Join(t.TempDir(), "images.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"images": [`), 0o600))
	_, err = readImages(p)
	require.ErrorIs(t, err, audit.ErrInvalidImages)
	var ie *audit.ImagesError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, int64(12), ie.Offset)
	assert.Contains(t, err.Error(), "--images "+p+": offset 12")

	_, err = readImages(filepath.Join(t.TempDir(), "absent.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "--images")
}
