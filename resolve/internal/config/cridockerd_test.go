package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

const (
	unitLib = "lib/systemd/system/cri-docker.service"
	unitEtc = "etc/systemd/system/cri-docker.service"
)

func TestReadCRIDockerd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		files      map[string]string
		wantNil    bool   // no unit
		wantImage  string // --pod-infra-container-image, "" if absent
		wantOrigin string // its file:line
		wantFiles  int    // unit + drop-ins read
		wantNotes  int    // notes
	}{
		{name: "absent", files: map[string]string{}, wantNil: true},
		{
			name: "packaged unit without flag",
			files: map[string]string{unitLib: "[Unit]\nDescription=CRI Interface for Docker\n[Service]\n" +
				"ExecStart=/usr/bin/cri-dockerd --container-runtime-endpoint fd://\n"},
			wantFiles: 1,
		},
		{
			name: "flag with = in unit",
			files: map[string]string{unitLib: "[Service]\n" +
				"ExecStart=/usr/bin/cri-dockerd --container-runtime-endpoint fd:// --pod-infra-container-image=registry.k8s.io/pause:3.10\n"},
			wantImage: "registry.k8s.io/pause:3.10", wantOrigin: "/lib/systemd/system/cri-docker.service:2", wantFiles: 1,
		},
		{
			name: "drop-in resets ExecStart, continuation lines, space form",
			files: map[string]string{
				unitLib: "[Service]\nExecStart=/usr/bin/cri-dockerd --pod-infra-container-image=old.example/pause:1\n",
				"etc/systemd/system/cri-docker.service.d/10-pause.conf": "[Service]\nExecStart=\nExecStart=/usr/bin/cri-dockerd \\\n" +
					"  --container-runtime-endpoint fd:// \\\n  --pod-infra-container-image \"mirror.example/pause:3.9\"\n",
			},
			wantImage: "mirror.example/pause:3.9", wantOrigin: "/etc/systemd/system/cri-docker.service.d/10-pause.conf:5", wantFiles: 2,
		},
		{
			name: "etc unit masks lib unit; drop-in ordering by name across dirs",
			files: map[string]string{
				unitLib: "[Service]\nExecStart=/usr/bin/cri-dockerd --pod-infra-container-image=lib.example/pause:1\n",
				unitEtc: "[Service]\nExecStart=/usr/bin/cri-dockerd --pod-infra-container-image=etc.example/pause:1\n",
				"lib/systemd/system/cri-docker.service.d/20-b.conf": "[Service]\nExecStart=\nExecStart=-/usr/bin/cri-dockerd --pod-infra-container-image=b.example/pause:1\n",
				"etc/systemd/system/cri-docker.service.d/10-a.conf": "[Service]\nExecStart=\nExecStart=/usr/bin/cri-dockerd --pod-infra-container-image=a.example/pause:1\n",
				"etc/systemd/system/cri-docker.service.d/20-b.conf": "[Service]\nEnvironment=X=1\n",
			},
			wantImage: "a.example/pause:1", wantOrigin: "/etc/systemd/system/cri-docker.service.d/10-a.conf:3", wantFiles: 3,
		},
		{
			name:      "ExecStart outside [Service] ignored",
			files:     map[string]string{unitLib: "[Unit]\nExecStart=/x --pod-infra-container-image=x/y:1\n[Service]\nExecStart=/usr/bin/cri-dockerd\n"},
			wantFiles: 1,
		},
		{
			name:      "two ExecStart without reset",
			files:     map[string]string{unitLib: "[Service]\nExecStart=/a --pod-infra-container-image=a/p:1\nExecStart=/b --pod-infra-container-image=b/p:1\n"},
			wantImage: "b/p:1", wantOrigin: "/lib/systemd/system/cri-docker.service:3", wantFiles: 1, wantNotes: 1,
		},
		{
			name:      "environment variable",
			files:     map[string]string{unitLib: "[Service]\nExecStart=/a --pod-infra-container-image=${PAUSE}\n"},
			wantFiles: 1, wantNotes: 1,
		},
		{
			name: "variable from an environment file",
			files: map[string]string{unitLib: "[Service]\nEnvironment=PAUSE=a/p:1\nEnvironmentFile=-/etc/default/cri-docker\nExecStart=/a --pod-infra-container-image=${PAUSE}\n",
				"etc/default/cri-docker": "# x\nPAUSE=\"b/p:2\"\n"},
			wantImage: "b/p:2", wantOrigin: "/etc/default/cri-docker:2", wantFiles: 2,
		},
		{
			name:      "flags from a split variable",
			files:     map[string]string{unitLib: "[Service]\nEnvironment=\"OPTS=--network-plugin=cni --pod-infra-container-image c/p:3\"\nExecStart=/a $OPTS\n"},
			wantImage: "c/p:3", wantOrigin: "/lib/systemd/system/cri-docker.service:2", wantFiles: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadCRIDockerd(nodetest.MapFS(tt.files))
			require.NoError(t, err)
			if tt.wantNil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			if tt.wantImage == "" {
				assert.Nil(t, got.PauseImage)
			} else if assert.NotNil(t, got.PauseImage) {
				assert.Equal(t, tt.wantImage, got.PauseImage.Value)
				assert.Equal(t, tt.wantOrigin, got.PauseImage.Origin())
			}
			assert.Len(t, got.Files, tt.wantFiles, "files")
			assert.Len(t, got.Notes, tt.wantNotes, "notes")
		})
	}
}

func TestReadCRIDockerdErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		content  string
		wantLine int // line the error names
	}{
		{name: "unterminated quote", content: "[Service]\nExecStart=/a \\\n --x \"oops\n", wantLine: 3},
		{name: "bad section", content: "[Service\nExecStart=/a\n", wantLine: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadCRIDockerd(nodetest.MapFS(map[string]string{unitLib: tt.content}))
			require.ErrorIs(t, err, nodefs.ErrInvalidConfig)
			var ce *nodefs.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "/"+unitLib, ce.Path)
			assert.Equal(t, tt.wantLine, ce.Line, "line in %v", err)
		})
	}
}
