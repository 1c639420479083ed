package audit

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo"
)

// TestPredictLookup checks the offline prediction of the runtime's own
// lookup of its configured sandbox image.
func TestPredictLookup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		runtime criinfo.Runtime // resolve.Result.Runtime
		config  string          // the configured sandbox image
		id      string          // the stored image's ID, "sha256:1" if ""
		tags    []string        // the stored image's tags
		want    bool
	}{
		{name: "exact", runtime: "containerd", config: stored, tags: []string{stored}, want: true},
		{name: "alias: no registry alias applies", runtime: "containerd", config: alias, tags: []string{stored}},
		{name: "Docker Hub short name on containerd", runtime: "containerd", config: "pause:3.10.1", tags: []string{"docker.io/library/pause:3.10.1"}, want: true},
		{name: "k3s's short name on containerd", runtime: "containerd", config: "rancher/mirrored-pause:3.6", tags: []string{"docker.io/rancher/mirrored-pause:3.6"}, want: true},
		{name: "Docker Hub short name on cri-dockerd", runtime: "cri-dockerd", config: "docker.io/library/pause:3.10.1", tags: []string{"pause:3.10.1"}, want: true},
		{name: "CRI-O looks up the string as written", runtime: "cri-o", config: "pause:3.10.1", tags: []string{"docker.io/library/pause:3.10.1"}},
		{name: "letter case", runtime: "cri-o", config: "REGISTRY.K8S.IO/pause:3.10.1", tags: []string{stored}},
		{name: "other tag", runtime: "containerd", config: stored, tags: []string{"registry.k8s.io/pause:3.10"}},
		{name: "by ID", runtime: "containerd", config: "sha256:" + hex64, id: "sha256:" + hex64, want: true},
		{name: "nothing configured", runtime: "containerd", config: "", tags: []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := tt.id
			if id == "" {
				id = "sha256:1"
			}
			got := PredictLookup(tt.runtime, tt.config, []*ListedImage{{ID: id, RepoTags: tt.tags}, nil})
			assert.Equal(t, tt.want, got, "PredictLookup(%q, %q, %q)", tt.runtime, tt.config, tt.tags)
		})
	}
	assert.False(t, PredictLookup[Image]("containerd", stored, []Image{nil}), "a nil Image")
	assert.False(t, PredictLookup[*ListedImage]("containerd", stored, nil), "no images")
}

func TestLookupText(t *testing.T) {
	t.Parallel()
	for _, l := range []Lookup{LookupNotAsked, LookupFound, LookupNotFound} {
		var got Lookup
		require.NoError(t, json.Unmarshal([]byte(`"`+string(l)+`"`), &got), "Unmarshal(%q)", l)
		assert.Equal(t, l, got)
	}
	for _, bad := range []string{"Found", "not found", "not_found"} {
		var got Lookup
		err := json.Unmarshal([]byte(`"`+bad+`"`), &got)
		assert.ErrorIs(t, err, ErrInvalidObservation, "Unmarshal(%q)", bad)
		assert.Empty(t, got)
	}
}
