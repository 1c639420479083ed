package release_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/release"
)

// bins are two stand-in binaries.
var bins = []release.Binary{{Arch: "amd64", Data: []byte("amd64 binary")}, {Arch: "arm64", Data: []byte("arm64 binary")}}

// archive writes the image of bins and returns the archive's files.
func archive(t *testing.T, version string) map[string][]byte {
	t.Helper()
	idx, err := release.Image(version, bins)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, release.WriteArchive(&buf, "ghcr.io/sandboxpin/sandboxpin:"+version, idx))
	files := map[string][]byte{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		require.NoError(t, err)
		assert.Equal(t, int64(0), h.ModTime.Unix(), "%s: time", h.Name)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[h.Name] = b
	}
}

// blob decodes the JSON blob d of files into v.
func blob(t *testing.T, files map[string][]byte, d v1.Hash, v any) {
	t.Helper()
	b, ok := files["blobs/sha256/"+d.Hex]
	require.True(t, ok, "blob %s in the archive", d)
	require.NoError(t, json.Unmarshal(b, v))
}

func TestImage(t *testing.T) {
	t.Parallel()
	files := archive(t, "v1.2.3")
	assert.Equal(t, files, archive(t, "v1.2.3"), "two archives of one input")
	assert.NotEqual(t, files["index.json"], archive(t, "v1.2.4")["index.json"], "another version")

	var layout v1.IndexManifest
	require.NoError(t, json.Unmarshal(files["index.json"], &layout))
	require.Len(t, layout.Manifests, 1)
	assert.Equal(t, "ghcr.io/sandboxpin/sandboxpin:v1.2.3", layout.Manifests[0].Annotations["io.containerd.image.name"])
	assert.Equal(t, "v1.2.3", layout.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	var idx v1.IndexManifest
	blob(t, files, layout.Manifests[0].Digest, &idx)
	require.Len(t, idx.Manifests, len(bins))
	for i, desc := range idx.Manifests {
		assert.Equal(t, &v1.Platform{OS: "linux", Architecture: bins[i].Arch}, desc.Platform)
		var man v1.Manifest
		blob(t, files, desc.Digest, &man)
		var cfg v1.ConfigFile
		blob(t, files, man.Config.Digest, &cfg)
		assert.Equal(t, bins[i].Arch, cfg.Architecture)
		assert.Equal(t, []string{release.Entrypoint}, cfg.Config.Entrypoint)
		assert.Empty(t, cfg.Config.User, "no user: the DaemonSet's securityContext says")
		assert.Equal(t, "v1.2.3", cfg.Config.Labels["org.opencontainers.image.version"])
		require.Len(t, man.Layers, 1)
		zr, err := gzip.NewReader(bytes.NewReader(files["blobs/sha256/"+man.Layers[0].Digest.Hex]))
		require.NoError(t, err)
		tr := tar.NewReader(zr)
		h, err := tr.Next()
		require.NoError(t, err)
		assert.Equal(t, "sandboxpin", h.Name)
		assert.Equal(t, int64(0o755), h.Mode)
		assert.Equal(t, 0, h.Uid)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		assert.Equal(t, bins[i].Data, data)
		_, err = tr.Next()
		assert.ErrorIs(t, err, io.EOF, "the binary is the layer's only file")
	}
}
