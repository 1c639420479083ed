package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
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

// TestReadContainerdPausePull: disable_pause_image_pull of each runtime
// handler, a later file's value overriding an earlier one's.
func TestReadContainerdPausePull(t *testing.T) {
	t.Parallel()
	const rt = "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes."
	fsys := nodetest.MapFS(map[string]string{
		"etc/containerd/config.toml": "version = 4\nimports = ['/etc/containerd/conf.d/*.toml']\n" +
			rt + "kata]\n  disable_pause_image_pull = true\n" +
			rt + "runc]\n  disable_pause_image_pull = true\n" +
			rt + "gvisor]\n  runtime_type = 'io.containerd.runsc.v1'\n",
		"etc/containerd/conf.d/10-runc.toml": "version = 4\n" + rt + "runc]\n  disable_pause_image_pull = false\n",
	})
	cfg, err := ReadContainerd(fsys, "etc/containerd/config.toml", "")
	require.NoError(t, err)
	require.Len(t, cfg.PausePullOff, 1)
	assert.Equal(t, "kata", cfg.PausePullOff[0].Handler)
	assert.Equal(t, "/etc/containerd/config.toml:4", cfg.PausePullOff[0].Origin())

	_, err = ReadContainerd(nodetest.MapFS(map[string]string{
		"etc/containerd/config.toml": "version = 3\n" + rt + "kata]\n  disable_pause_image_pull = 'yes'\n",
	}), "etc/containerd/config.toml", "")
	require.ErrorIs(t, err, nodefs.ErrInvalidConfig)
	assert.ErrorContains(t, err, "/etc/containerd/config.toml:3")
	assert.ErrorContains(t, err, "want a boolean, got a string")
}
