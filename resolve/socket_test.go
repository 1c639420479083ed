package resolve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestContainerdEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		files      map[string]string
		want       string
		wantOrigin string
	}{
		{name: "no config", files: map[string]string{}},
		{name: "v2 grpc address", files: map[string]string{ctrMain: "version = 2\n[grpc]\n  address = \"/run/k8s/c.sock\"\n"},
			want: "unix:///run/k8s/c.sock", wantOrigin: "/etc/containerd/config.toml:3"},
		{name: "v1 without version", files: map[string]string{ctrMain: "[grpc]\naddress = \"/run/k8s/c.sock\"\n"},
			want: "unix:///run/k8s/c.sock", wantOrigin: "/etc/containerd/config.toml:2"},
		{name: "v3 grpc address", files: map[string]string{ctrMain: "version = 3\n[grpc]\naddress = '/run/c3.sock'\n"},
			want: "unix:///run/c3.sock", wantOrigin: "/etc/containerd/config.toml:3"},
		{name: "v4 plugin table", files: map[string]string{ctrMain: "version = 4\n[plugins.'io.containerd.server.v1.grpc']\naddress = '/run/c4.sock'\n"},
			want: "unix:///run/c4.sock", wantOrigin: "/etc/containerd/config.toml:3"},
		{name: "v4 ignores [grpc]", files: map[string]string{ctrMain: "version = 4\n[grpc]\naddress = '/run/ignored.sock'\n"}},
		{name: "v3 ignores the v4 table", files: map[string]string{ctrMain: "version = 3\n[plugins.'io.containerd.server.v1.grpc']\naddress = '/run/c4.sock'\n"}},
		{name: "drop-in overrides", files: map[string]string{
			ctrMain:                        "version = 4\nimports = ['conf.d/*.toml']\n[plugins.'io.containerd.server.v1.grpc']\naddress = '/run/a.sock'\n",
			"etc/containerd/conf.d/b.toml": "version = 4\n[plugins.'io.containerd.server.v1.grpc']\naddress = '/run/b.sock'\n",
		}, want: "unix:///run/b.sock", wantOrigin: "/etc/containerd/conf.d/b.toml:3"},
		{name: "CRI disabled", files: map[string]string{ctrMain: "version = 2\ndisabled_plugins = ['io.containerd.grpc.v1.cri']\n[grpc]\naddress = '/run/docker.sock'\n"}},
		{name: "k3s first", files: map[string]string{
			"var/lib/rancher/k3s/agent/etc/containerd/config.toml": "version = 3\n[grpc]\naddress = '/run/k3s/containerd/containerd.sock'\n",
			ctrMain: "version = 2\n[grpc]\naddress = '/run/other.sock'\n",
		}, want: "unix:///run/k3s/containerd/containerd.sock", wantOrigin: "/var/lib/rancher/k3s/agent/etc/containerd/config.toml:3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, origin, err := ContainerdEndpoint(mapFS(tt.files))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantOrigin, origin)
		})
	}
	_, _, err := ContainerdEndpoint(mapFS(map[string]string{ctrMain: "version = 9\n"}))
	require.ErrorIs(t, err, ErrInvalidConfig)
}

func TestReadContainerd23(t *testing.T) {
	t.Parallel()
	// containerd 2.3+ loading of version 1–3 files (loader23).
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
			got, err := readContainerdAs(mapFS(tt.files), ctrMain, "", loader23)
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
