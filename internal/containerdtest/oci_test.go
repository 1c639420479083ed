package containerdtest

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteArchive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	images := []Image{
		{Names: []string{"registry.k8s.io/pause:3.10.1", "k8s.gcr.io/pause:3.10.1"}},
		{Names: []string{"docker.io/library/busybox:1.36"}},
	}
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	idsA, err := WriteArchive(a, images)
	require.NoError(t, err)
	idsB, err := WriteArchive(b, images)
	require.NoError(t, err)
	assert.Equal(t, idsA, idsB, "image IDs are reproducible")
	assert.NotEqual(t, idsA[0], idsA[1], "distinct images get distinct IDs")
	bytesA, err := os.ReadFile(a)
	require.NoError(t, err)
	bytesB, err := os.ReadFile(b)
	require.NoError(t, err)
	assert.Equal(t, bytesA, bytesB, "archives are reproducible")

	// index.json names every reference with the annotation ctr import reads.
	f, err := os.Open(a)
	require.NoError(t, err)
	defer f.Close()
	tr := tar.NewReader(f)
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	files := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		files[h.Name] = true
		if h.Name == "index.json" {
			require.NoError(t, json.NewDecoder(tr).Decode(&index))
		}
	}
	assert.True(t, files["oci-layout"])
	var names []string
	for _, m := range index.Manifests {
		names = append(names, m.Annotations[annotationImageName])
		assert.True(t, files["blobs/sha256/"+m.Digest[len("sha256:"):]], "manifest blob %s", m.Digest)
	}
	assert.Equal(t, []string{"registry.k8s.io/pause:3.10.1", "k8s.gcr.io/pause:3.10.1", "docker.io/library/busybox:1.36"}, names)
}

func TestWriteArchiveNoName(t *testing.T) {
	t.Parallel()
	_, err := WriteArchive(filepath.Join(t.TempDir(), "x.tar"), []Image{{}})
	assert.Error(t, err)
}
