package cri

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/pin"
)

// pauseID is the image ID of the pause image in the MarkPinned tests.
const pauseID = "sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097"

// listedImages returns a fresh ListImages answer: the pause image as
// registry.k8s.io stores it, busybox, and a dangling image with no tags.
func listedImages() []*runtimeapi.Image {
	return []*runtimeapi.Image{
		{Id: pauseID, RepoTags: []string{"registry.k8s.io/pause:3.10.1"}},
		{Id: "sha256:" + "ab" + pauseID[9:], RepoTags: []string{"docker.io/library/busybox:1.36"}},
		{Id: "sha256:" + "cd" + pauseID[9:]},
	}
}

func TestMarkPinned(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		patterns []string // compiled with default options; nil means a nil matcher
		before   []bool   // Pinned as the runtime set it, per listedImages entry
		want     []bool   // Pinned after MarkPinned
	}{
		{name: "exact", patterns: []string{"registry.k8s.io/pause:3.10.1"}, before: []bool{false, false, false}, want: []bool{true, false, false}},
		{name: "alias", patterns: []string{"k8s.gcr.io/pause:3.10.1"}, before: []bool{false, false, false}, want: []bool{true, false, false}},
		{name: "image ID", patterns: []string{pauseID}, before: []bool{false, false, false}, want: []bool{true, false, false}},
		{name: "other tag", patterns: []string{"registry.k8s.io/pause:3.10"}, before: []bool{false, false, false}, want: []bool{false, false, false}},
		{name: "runtime's own pin is kept", patterns: []string{"registry.k8s.io/pause:3.10.1"}, before: []bool{false, true, true}, want: []bool{true, true, true}},
		{name: "nil matcher", patterns: nil, before: []bool{false, true, false}, want: []bool{false, true, false}},
		{name: "empty matcher", patterns: []string{}, before: []bool{true, false, false}, want: []bool{true, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var m *pin.Matcher
			if tt.patterns != nil {
				var err error
				m, err = pin.Compile(tt.patterns)
				require.NoError(t, err)
			}
			imgs := listedImages()
			for i, p := range tt.before {
				imgs[i].Pinned = p
			}
			MarkPinned(m, imgs)
			for i, img := range imgs {
				assert.Equal(t, tt.want[i], img.Pinned, "MarkPinned(%q) Pinned of %v", tt.patterns, img.GetRepoTags())
			}
		})
	}
}

func TestMarkPinnedNilEntries(t *testing.T) {
	t.Parallel()
	m, err := pin.Compile([]string{"registry.k8s.io/pause:3.10.1"})
	require.NoError(t, err)
	imgs := append(listedImages(), nil)
	assert.NotPanics(t, func() { MarkPinned(m, imgs) })
	assert.True(t, imgs[0].Pinned)
	assert.NotPanics(t, func() { MarkPinned(m, nil) })
}
