package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

const ctrMain = "etc/containerd/config.toml"

func TestReadContainerd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		files       map[string]string // fs path -> content
		wantNil     bool              // no config file
		wantVersion int               // version of the main file
		wantSandbox string            // effective sandbox image, "" if none
		wantOrigin  string            // its file:line
		wantMigr    bool              // comes from a sandbox_image key
		wantPinned  map[string]string // pinned_images after merge
		wantIgnored int               // ignored sandbox_image keys
		wantProbs   int               // one-sided problems
		wantDisable bool              // CRI disabled
		wantFiles   int               // files read
	}{
		{name: "absent", files: map[string]string{}, wantNil: true},
		{
			name:        "v1",
			files:       map[string]string{ctrMain: "[plugins.cri]\n  sandbox_image = \"k8s.gcr.io/pause:3.2\"\n"},
			wantVersion: 1, wantSandbox: "k8s.gcr.io/pause:3.2", wantOrigin: "/etc/containerd/config.toml:2", wantMigr: true, wantFiles: 1,
		},
		{
			name: "v2",
			files: map[string]string{ctrMain: `version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
`},
			wantVersion: 2, wantSandbox: "registry.k8s.io/pause:3.9", wantOrigin: "/etc/containerd/config.toml:3", wantMigr: true, wantFiles: 1,
		},
		{
			name: "v2 dotted key",
			files: map[string]string{ctrMain: `version = 2
plugins."io.containerd.grpc.v1.cri".sandbox_image = "registry.k8s.io/pause:3.9"
`},
			wantVersion: 2, wantSandbox: "registry.k8s.io/pause:3.9", wantOrigin: "/etc/containerd/config.toml:2", wantMigr: true, wantFiles: 1,
		},
		{
			name: "v2 with v1 table ignored",
			files: map[string]string{ctrMain: `version = 2
[plugins.cri]
  sandbox_image = "registry.k8s.io/pause:3.9"
`},
			wantVersion: 2, wantIgnored: 1, wantFiles: 1,
		},
		{
			name: "v3 pinned",
			files: map[string]string{ctrMain: `version = 3
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = 'registry.k8s.io/pause:3.10.1'
  mirror = 'mirror.example/pause:3.10.1'
`},
			wantVersion: 3, wantSandbox: "registry.k8s.io/pause:3.10.1", wantOrigin: "/etc/containerd/config.toml:3",
			wantPinned: map[string]string{"sandbox": "registry.k8s.io/pause:3.10.1", "mirror": "mirror.example/pause:3.10.1"}, wantFiles: 1,
		},
		{
			name: "v3 inline table",
			files: map[string]string{ctrMain: `version = 3
[plugins.'io.containerd.cri.v1.images']
  pinned_images = { sandbox = 'registry.k8s.io/pause:3.10' }
`},
			wantVersion: 3, wantSandbox: "registry.k8s.io/pause:3.10", wantOrigin: "/etc/containerd/config.toml:3",
			wantPinned: map[string]string{"sandbox": "registry.k8s.io/pause:3.10"}, wantFiles: 1,
		},
		{
			name: "v3 with v2 sandbox_image ignored",
			files: map[string]string{ctrMain: `version = 3
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
`},
			wantVersion: 3, wantIgnored: 1, wantFiles: 1,
		},
		{
			name: "v3 imports override and merge",
			files: map[string]string{
				ctrMain: `version = 3
imports = ["conf.d/*.toml", "/etc/containerd/extra.toml"]
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = 'registry.k8s.io/pause:3.10.1'
  keep = 'keep.example/a:1'
`,
				"etc/containerd/conf.d/10-a.toml": "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\nsandbox = 'mirror.example/pause:3.10.1'\n",
				"etc/containerd/conf.d/20-b.toml": "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\nextra = 'b.example/b:1'\nsandbox = ''\n",
				"etc/containerd/extra.toml":       "version = 3\n",
			},
			wantVersion: 3, wantSandbox: "mirror.example/pause:3.10.1", wantOrigin: "/etc/containerd/conf.d/10-a.toml:3",
			wantPinned: map[string]string{"sandbox": "mirror.example/pause:3.10.1", "keep": "keep.example/a:1", "extra": "b.example/b:1"},
			wantProbs:  1, wantFiles: 4,
		},
		{
			name: "v2 drop-in of v3 root is migrated",
			files: map[string]string{
				ctrMain:                        "version = 3\nimports = ['conf.d/*.toml']\n",
				"etc/containerd/conf.d/a.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = \"mirror.example/pause:3.10\"\n",
			},
			wantVersion: 3, wantSandbox: "mirror.example/pause:3.10", wantOrigin: "/etc/containerd/conf.d/a.toml:3", wantMigr: true,
			wantPinned: map[string]string{"sandbox": "mirror.example/pause:3.10"}, wantFiles: 2,
		},
		{
			name: "v3 drop-in of v2 root stops containerd",
			files: map[string]string{
				ctrMain:                        "version = 2\nimports = ['conf.d/*.toml']\n",
				"etc/containerd/conf.d/a.toml": "version = 3\n",
			},
			wantVersion: 2, wantProbs: 1, wantFiles: 2,
		},
		{
			name: "missing plain import",
			files: map[string]string{
				ctrMain: "version = 2\nimports = ['/etc/containerd/nope.toml']\n",
			},
			wantVersion: 2, wantProbs: 1, wantFiles: 1,
		},
		{
			name: "import cycle",
			files: map[string]string{
				ctrMain:                     "version = 2\nimports = ['other.toml']\n",
				"etc/containerd/other.toml": "version = 2\nimports = ['config.toml']\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = \"x.example/pause:1\"\n",
			},
			wantVersion: 2, wantSandbox: "x.example/pause:1", wantOrigin: "/etc/containerd/other.toml:4", wantMigr: true, wantFiles: 2,
		},
		{
			name:        "docker's containerd with cri disabled",
			files:       map[string]string{ctrMain: "disabled_plugins = [\"cri\"]\n"},
			wantVersion: 1, wantDisable: true, wantFiles: 1,
		},
		{
			name:        "empty sandbox_image",
			files:       map[string]string{ctrMain: "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = \"\"\n"},
			wantVersion: 2, wantProbs: 1, wantFiles: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadContainerd(nodetest.MapFS(tt.files), ctrMain, "")
			require.NoError(t, err)
			if tt.wantNil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tt.wantVersion, got.Version, "version")
			if tt.wantSandbox == "" {
				assert.Nil(t, got.Sandbox, "sandbox")
			} else if assert.NotNil(t, got.Sandbox, "sandbox") {
				assert.Equal(t, tt.wantSandbox, got.Sandbox.Value)
				assert.Equal(t, tt.wantOrigin, got.Sandbox.Origin())
				assert.Equal(t, tt.wantMigr, got.Migrated, "migrated")
			}
			pinned := map[string]string{}
			for _, p := range got.Pinned {
				pinned[p.Name] = p.Value
			}
			if tt.wantPinned == nil {
				tt.wantPinned = map[string]string{}
			}
			assert.Equal(t, tt.wantPinned, pinned, "pinned")
			assert.Len(t, got.Ignored, tt.wantIgnored, "ignored")
			assert.Len(t, got.Problems, tt.wantProbs, "problems")
			assert.Equal(t, tt.wantDisable, got.Disabled != nil, "disabled")
			assert.Len(t, got.Files, tt.wantFiles, "files")
		})
	}
}

// badTOML are containerd/CRI-O files that must fail with a *nodefs.ConfigError.
var badTOML = []struct {
	name     string
	content  string
	wantLine int    // line the error names
	wantKey  string // key the error names, "" for syntax errors
}{
	{name: "syntax", content: "version = 2\n[plugins\n", wantLine: 2},
	{name: "duplicate key", content: "version = 2\nversion = 3\n", wantLine: 2, wantKey: "version"},
	{name: "bad version", content: "version = \"two\"\n", wantLine: 1, wantKey: "version"},
	{name: "version 5", content: "version = 5\n", wantLine: 1, wantKey: "version"},
	{name: "sandbox not a string", content: "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = 3\n", wantLine: 3,
		wantKey: `plugins."io.containerd.grpc.v1.cri".sandbox_image`},
	{name: "pinned not a table", content: "version = 3\n[plugins.'io.containerd.cri.v1.images']\npinned_images = 'x'\n", wantLine: 3,
		wantKey: `plugins."io.containerd.cri.v1.images".pinned_images`},
	{name: "imports not strings", content: "imports = [1]\n", wantLine: 1, wantKey: "imports"},
}

func TestReadContainerdErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range badTOML {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadContainerd(nodetest.MapFS(map[string]string{ctrMain: tt.content}), ctrMain, "")
			assert.Nil(t, got)
			require.ErrorIs(t, err, nodefs.ErrInvalidConfig)
			var ce *nodefs.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "/etc/containerd/config.toml", ce.Path)
			assert.Equal(t, tt.wantLine, ce.Line, "line in %v", err)
			assert.Equal(t, tt.wantKey, ce.Key, "key in %v", err)
		})
	}
}
