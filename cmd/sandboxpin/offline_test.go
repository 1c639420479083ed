package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFindsByName checks the offline prediction of the runtime's own
// lookup of its configured sandbox image.
func TestFindsByName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		runtime string
		config  string   // the configured sandbox image
		tags    []string // the stored image's tags
		want    bool
	}{
		{name: "exact", runtime: "containerd", config: "registry.k8s.io/pause:3.10.1", tags: []string{"registry.k8s.io/pause:3.10.1"}, want: true},
		{name: "alias: no registry alias applies", runtime: "containerd", config: "k8s.gcr.io/pause:3.10.1", tags: []string{"registry.k8s.io/pause:3.10.1"}},
		{name: "Docker Hub short name on containerd", runtime: "containerd", config: "pause:3.10.1", tags: []string{"docker.io/library/pause:3.10.1"}, want: true},
		{name: "Docker Hub short name on cri-dockerd", runtime: "cri-dockerd", config: "docker.io/library/pause:3.10.1", tags: []string{"pause:3.10.1"}, want: true},
		{name: "CRI-O looks up the string as written", runtime: "cri-o", config: "pause:3.10.1", tags: []string{"docker.io/library/pause:3.10.1"}},
		{name: "letter case", runtime: "cri-o", config: "REGISTRY.K8S.IO/pause:3.10.1", tags: []string{"registry.k8s.io/pause:3.10.1"}},
		{name: "other tag", runtime: "containerd", config: "registry.k8s.io/pause:3.10.1", tags: []string{"registry.k8s.io/pause:3.10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := findsByName(tt.runtime, tt.config, []*crictlImage{{ID: "sha256:1", RepoTags: tt.tags}})
			assert.Equal(t, tt.want, got, "findsByName(%q, %q, %q)", tt.runtime, tt.config, tt.tags)
		})
	}
}

func TestReadImages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	images, err := readImages("testdata/offline/images.json")
	require.NoError(t, err)
	require.Len(t, images, 2)
	assert.Equal(t, []string{"harbor.example.com/mirror/pause:3.10.1", "registry.k8s.io/pause:3.10.1"}, images[0].GetRepoTags())
	assert.False(t, images[0].GetPinned())
	for name, tt := range map[string]struct{ content, want string }{
		"syntax":     {"{\"images\": [", "offset 12"},
		"no images":  {"{}", `no "images" key`},
		"wrong type": {`{"images": {}}`, "cannot unmarshal"},
	} {
		_, err := readImages(write(name+".json", tt.content))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tt.want, name)
		assert.Contains(t, err.Error(), "crictl images -o json", name)
	}
	_, err = readImages(filepath.Join(dir, "absent.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
