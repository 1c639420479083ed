package containerdtest_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/pin"
)

// stockPinned is containerd 2.4.2's decision in getLabels
// (internal/cri/server/images/image_pull.go, v2.4.2): every value of
// pinned_images compared with the image name, without a break.
func stockPinned(pinned map[string]string, name string) bool {
	is := false
	for _, p := range pinned {
		if p == name {
			is = true
		}
	}
	return is
}

// patchedPinned is contrib/containerd/pin.patch's pinnedImages: the values
// compiled once, then IsPinned, and an exact compare for the values that do
// not compile (none here).
type patchedPinned struct {
	m     *pin.Matcher
	exact []string
}

func newPatchedPinned(pinned map[string]string) (patchedPinned, error) {
	m, err := pin.Compile(slices.Sorted(maps.Values(pinned)), pin.WithMode(pin.ModeStrict))
	return patchedPinned{m: m}, err
}

func (p patchedPinned) isPinned(name string) bool {
	return p.m.IsPinned(name) || slices.Contains(p.exact, name)
}

// pinnedImages returns n pinned_images values: the sandbox image as stored,
// and n-1 other images.
func pinnedImages(n int) map[string]string {
	pinned := map[string]string{"sandbox": "registry.k8s.io/pause:3.10.1"}
	for i := 1; i < n; i++ {
		pinned[fmt.Sprintf("app%d", i)] = fmt.Sprintf("registry.example.com/team%d/app%d:v1.%d", i%10, i, i)
	}
	return pinned
}

// labelNames are the names getLabels is called with for one image: the tag
// (PullImage, and UpdateImage for an imported image), then, for a pulled
// one, UpdateImage for its repo digest and its ID (the references PullImage
// creates); and the name of an image that is not pinned.
var labelNames = []struct {
	name, image string
	stock       bool // stock's answer with pinnedImages(n)
}{
	{name: "tag", image: "registry.k8s.io/pause:3.10.1", stock: true},
	{name: "digest", image: "registry.k8s.io/pause@sha256:35f3af0a585970c047d5b29b3c78a5d01df1f16358920fba40702a1c5f6cf709"},
	{name: "id", image: "sha256:0a7b3c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f"},
	{name: "other", image: "docker.io/library/busybox:1.36"},
}

// TestLabelDecisions checks that the two decisions the benchmark times give
// the answers they should: the same for the stored names, and the patched one
// also for an alias, short and tagless configuration.
func TestLabelDecisions(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 100} {
		pinned := pinnedImages(n)
		p, err := newPatchedPinned(pinned)
		require.NoError(t, err)
		for _, ln := range labelNames {
			assert.Equal(t, ln.stock, stockPinned(pinned, ln.image), "stock, %d pins, %s", n, ln.image)
			assert.Equal(t, ln.stock, p.isPinned(ln.image), "patched, %d pins, %s", n, ln.image)
		}
	}
	for _, tt := range []struct {
		name, configured, stored string
	}{
		{name: "alias", configured: "k8s.gcr.io/pause:3.10.1", stored: "registry.k8s.io/pause:3.10.1"},
		{name: "short", configured: "pause:3.10.1", stored: "docker.io/library/pause:3.10.1"},
		{name: "tagless", configured: "registry.k8s.io/pause", stored: "registry.k8s.io/pause:latest"},
	} {
		pinned := map[string]string{"sandbox": tt.configured}
		p, err := newPatchedPinned(pinned)
		require.NoError(t, err)
		assert.False(t, stockPinned(pinned, tt.stored), "stock, %s", tt.name)
		assert.True(t, p.isPinned(tt.stored), "patched, %s", tt.name)
	}
}

// BenchmarkLabelDecision times, per name getLabels is called with, the
// stock decision (a string compare with every pinned_images value) and the
// patched one, with 1 and 100 values.
func BenchmarkLabelDecision(b *testing.B) {
	for _, n := range []int{1, 100} {
		pinned := pinnedImages(n)
		p, err := newPatchedPinned(pinned)
		require.NoError(b, err)
		for _, ln := range labelNames {
			b.Run(fmt.Sprintf("pins=%d/%s/stock", n, ln.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					stockPinned(pinned, ln.image)
				}
			})
			b.Run(fmt.Sprintf("pins=%d/%s/patched", n, ln.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p.isPinned(ln.image)
				}
			})
		}
	}
}
