package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

func TestReadContainerd23(t *testing.T) {
	t.Parallel()
	// containerd 2.3+ loading of version 1–3 files (Loader23).
	tests := []struct {
		name        string
		files       map[string]string
		wantSandbox string
		wantMigr    bool
		wantProbs   int
		wantIgnored int
	}{
		{name: "v3 both keys: sandbox_image overrides", files: map[string]string{ctrMain: "version = 3\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = 'a.example/p:1'\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\nsandbox = 'b.example/p:1'\n"},
			wantSandbox: "a.example/p:1", wantMigr: true, wantProbs: 1},
		{name: "v3 both keys equal", files: map[string]string{ctrMain: "version = 3\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = 'a.example/p:1'\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\nsandbox = 'a.example/p:1'\n"},
			wantSandbox: "a.example/p:1", wantMigr: true},
		{name: "v3 drop-in of v4 main migrated", files: map[string]string{
			ctrMain:                        "version = 4\nimports = ['conf.d/*.toml']\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\nsandbox = 'main.example/p:1'\n",
			"etc/containerd/conf.d/a.toml": "version = 3\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = 'drop.example/p:1'\n",
		}, wantSandbox: "drop.example/p:1", wantMigr: true},
		{name: "v4 drop-in of v3 main is fine", files: map[string]string{
			ctrMain:                        "version = 3\nimports = ['conf.d/*.toml']\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\nsandbox = 'main.example/p:1'\n",
			"etc/containerd/conf.d/a.toml": "version = 4\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\nsandbox = 'drop.example/p:1'\n",
		}, wantSandbox: "drop.example/p:1"},
		{name: "v1 cri table", files: map[string]string{ctrMain: "[plugins.cri]\nsandbox_image = 'k8s.gcr.io/pause:3.2'\n"},
			wantSandbox: "k8s.gcr.io/pause:3.2", wantMigr: true},
		{name: "v4 ignores the v2 key", files: map[string]string{ctrMain: "version = 4\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = 'a.example/p:1'\n"},
			wantIgnored: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadContainerdAs(nodetest.MapFS(tt.files), ctrMain, "", Loader23)
			require.NoError(t, err)
			require.NotNil(t, got)
			if tt.wantSandbox == "" {
				assert.Nil(t, got.Sandbox)
			} else if assert.NotNil(t, got.Sandbox) {
				assert.Equal(t, tt.wantSandbox, got.Sandbox.Value)
				assert.Equal(t, tt.wantMigr, got.Migrated, "migrated")
			}
			assert.Len(t, got.Problems, tt.wantProbs, "problems")
			assert.Len(t, got.Ignored, tt.wantIgnored, "ignored")
		})
	}
}
