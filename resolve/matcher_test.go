package resolve

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/pin"
)

func TestResultMatcher(t *testing.T) {
	t.Parallel()
	crio := &Result{Runtime: "cri-o", SandboxImage: "k8s.gcr.io/pause:3.10.1", PinMode: pin.CRIOCompat,
		Pins: []string{"k8s.gcr.io/pause:3.10.1", "quay.io/example/agent*"}}
	tests := []struct {
		name    string
		res     *Result
		extra   []string
		pinned  map[string]string // image → the Source of the rule that pins it, "" for none
		wantErr error
	}{
		{
			name: "CRI-O: the sandbox image under any spelling",
			res:  crio,
			pinned: map[string]string{
				"k8s.gcr.io/pause:3.10.1":      "node (cri-o)",
				"registry.k8s.io/pause:3.10.1": "sandbox image (cri-o)",
				"quay.io/example/agent:2.0":    "node (cri-o)",
				"docker.io/library/busybox:1":  "",
			},
		},
		{
			name: "containerd: Strict pins alone",
			res:  &Result{Runtime: "containerd", SandboxImage: "k8s.gcr.io/pause:3.10.1", PinMode: pin.Strict, Pins: []string{"k8s.gcr.io/pause:3.10.1"}},
			pinned: map[string]string{
				"registry.k8s.io/pause:3.10.1": "node (containerd)",
			},
		},
		{
			name:   "CRI-O: an invalid pause image adds no rule",
			res:    &Result{Runtime: "cri-o", SandboxImage: "Pause:X", PinMode: pin.CRIOCompat, Pins: []string{"Pause:X"}},
			pinned: map[string]string{"pause:x": "node (cri-o)", "docker.io/library/pause:x": ""},
		},
		{
			name:   "nil result: extra alone",
			extra:  []string{"registry.example.com/*"},
			pinned: map[string]string{"registry.example.com/a:1": ExtraSource, "registry.k8s.io/pause:3.10.1": ""},
		},
		{name: "bad extra", res: crio, extra: []string{"*"}, wantErr: pin.ErrInvalidPattern},
		{name: "bad CRI-O pin", res: &Result{Runtime: "cri-o", PinMode: pin.CRIOCompat, Pins: []string{"*"}}, wantErr: pin.ErrInvalidPattern},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := tt.res.Matcher(tt.extra...)
			require.ErrorIs(t, err, tt.wantErr)
			if tt.wantErr != nil {
				assert.Nil(t, m)
				return
			}
			for img, src := range tt.pinned {
				match, ok := m.Explain(tagged(img))
				assert.Equal(t, src != "", ok, "Explain(%q) pinned", img)
				assert.Equal(t, src, match.Source, "Explain(%q).Source", img)
			}
		})
	}
}

// tagged is an image stored under one tag.
type tagged string

func (t tagged) GetId() string            { return "" } //nolint:revive // the cri-api getter name
func (t tagged) GetRepoTags() []string    { return []string{string(t)} }
func (t tagged) GetRepoDigests() []string { return nil }

// TestResultMatcherResolved checks Matcher on a resolved CRI-O tree: the
// examples' crio-node, whose pause_image is an alias spelling.
func TestResultMatcherResolved(t *testing.T) {
	t.Parallel()
	res, err := Resolve(context.Background(), Options{Root: DirFS("../examples/testdata/crio-node")})
	require.NoError(t, err)
	m, err := res.Matcher()
	require.NoError(t, err)
	assert.True(t, m.IsPinned("registry.k8s.io/pause:3.10.1"), "the stored canonical name")
	assert.True(t, m.IsPinned("k8s.gcr.io/pause:3.10.1"), "the configured name")
	assert.False(t, m.IsPinned("registry.k8s.io/pause:3.10"))
}
