package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

func TestReadCRIO(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		files      map[string]string
		wantNil    bool     // no CRI-O file at all
		wantPause  string   // effective pause_image, "" if unset
		wantOrigin string   // its file:line
		wantPinned []string // effective pinned_images
		wantSet    bool     // pinned_images set by some file
		wantProbs  int      // one-sided problems
		wantFiles  int      // files read
	}{
		{name: "absent", files: map[string]string{}, wantNil: true},
		{
			name:      "main only",
			files:     map[string]string{crioMain: "[crio.image]\npause_image = \"registry.k8s.io/pause:3.10\"\n"},
			wantPause: "registry.k8s.io/pause:3.10", wantOrigin: "/etc/crio/crio.conf:2", wantFiles: 1,
		},
		{
			name: "drop-ins merge keys and replace arrays",
			files: map[string]string{
				crioMain:                          "[crio.image]\npause_image = \"registry.k8s.io/pause:3.10\"\npinned_images = [\"a\", \"b\"]\n",
				"etc/crio/crio.conf.d/10-a.conf":  "[crio.image]\npinned_images = [\"c*\"]\n",
				"etc/crio/crio.conf.d/20-b.conf":  "[crio.runtime]\ndefault_runtime = \"crun\"\n",
				"etc/crio/crio.conf.d/30/x.conf":  "[crio.image]\n\npause_image = \"mirror.example/pause:3.10\"\n",
				"etc/crio/crio.conf.d/05-ro.conf": "[crio.image]\npause_image = \"early.example/pause:1\"\n",
			},
			wantPause: "mirror.example/pause:3.10", wantOrigin: "/etc/crio/crio.conf.d/30/x.conf:3",
			wantPinned: []string{"c*"}, wantSet: true, wantFiles: 5,
		},
		{
			name: "drop-in only, empty pinned list",
			files: map[string]string{
				"etc/crio/crio.conf.d/10-crio.conf": "[crio.image]\npinned_images = []\n",
			},
			wantSet: true, wantFiles: 1,
		},
		{
			name:      "single star panics CRI-O",
			files:     map[string]string{crioMain: "[crio.image]\npinned_images = [\"*\", \"registry.k8s.io/*\"]\n"},
			wantSet:   true,
			wantProbs: 1, wantPinned: []string{"registry.k8s.io/*"}, wantFiles: 1,
		},
		{
			name:      "empty pause_image",
			files:     map[string]string{crioMain: "[crio.image]\npause_image = \"\"\n"},
			wantProbs: 1, wantFiles: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadCRIO(nodetest.MapFS(tt.files))
			require.NoError(t, err)
			if tt.wantNil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			if tt.wantPause == "" {
				assert.Nil(t, got.PauseImage)
			} else if assert.NotNil(t, got.PauseImage) {
				assert.Equal(t, tt.wantPause, got.PauseImage.Value)
				assert.Equal(t, tt.wantOrigin, got.PauseImage.Origin())
			}
			var pinned []string
			for _, p := range got.Pinned {
				pinned = append(pinned, p.Value)
			}
			assert.Equal(t, tt.wantPinned, pinned, "pinned")
			assert.Equal(t, tt.wantSet, got.PinnedSet, "pinned set")
			assert.Len(t, got.Problems, tt.wantProbs, "problems")
			assert.Len(t, got.Files, tt.wantFiles, "files")
		})
	}
}

func TestReadCRIOErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		files    map[string]string
		wantPath string // file the error names
		wantLine int    // line it names
		wantKey  string // key it names
	}{
		{name: "syntax in drop-in", files: map[string]string{
			crioMain: "[crio.image]\n", "etc/crio/crio.conf.d/a.conf": "[crio.image\n"},
			wantPath: "/etc/crio/crio.conf.d/a.conf", wantLine: 1},
		{name: "pinned not array", files: map[string]string{crioMain: "[crio.image]\npinned_images = \"x\"\n"},
			wantPath: "/etc/crio/crio.conf", wantLine: 2, wantKey: "crio.image.pinned_images"},
		{name: "pause not string", files: map[string]string{crioMain: "[crio]\n[crio.image]\npause_image = 1\n"},
			wantPath: "/etc/crio/crio.conf", wantLine: 3, wantKey: "crio.image.pause_image"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadCRIO(nodetest.MapFS(tt.files))
			assert.Nil(t, got)
			require.ErrorIs(t, err, nodefs.ErrInvalidConfig)
			var ce *nodefs.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.wantPath, ce.Path)
			assert.Equal(t, tt.wantLine, ce.Line, "line in %v", err)
			assert.Equal(t, tt.wantKey, ce.Key, "key in %v", err)
		})
	}
}
