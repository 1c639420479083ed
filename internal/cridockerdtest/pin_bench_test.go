package cridockerdtest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/pin"
)

// stockIsPinned is cri-dockerd 0.4.4's decision (isPinned in core/image.go
// at v0.4.4): the sandbox image compared with each repo tag.
func stockIsPinned(image string, tags []string) bool {
	pinned := false
	for _, tag := range tags {
		if tag == image {
			pinned = true
			break
		}
	}
	return pinned
}

// patchedIsPinned is contrib/cri-dockerd/pin.patch's dockerService.isPinned
// with its matcher compiled once from the sandbox image.
func patchedIsPinned(m *pin.Matcher, id string, tags, digests []string) bool {
	return slices.ContainsFunc(tags, m.IsPinned) || slices.ContainsFunc(digests, m.IsPinned) || m.IsPinned(id)
}

// dockerImage is an image as Docker lists it: familiar repo tags and repo
// digests.
type dockerImage struct {
	name          string
	id            string
	tags, digests []string
	stock         bool // stock's answer for sandbox image registry.k8s.io/pause:3.10.1
}

const benchDigest = "sha256:1ff6c18fbef2045af6b9c16bf034cc421a29027b800e4f9b68ae9b1cb3e9ae07"

var dockerImages = []dockerImage{
	{name: "sandbox", id: "sha256:0a7b3c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f",
		tags: []string{"registry.k8s.io/pause:3.10.1"}, digests: []string{"registry.k8s.io/pause@" + benchDigest}, stock: true},
	{name: "other", id: "sha256:1a7b3c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f",
		tags: []string{"busybox:1.36"}, digests: []string{"busybox@sha256:2ff6c18fbef2045af6b9c16bf034cc421a29027b800e4f9b68ae9b1cb3e9ae07"}},
	{name: "other, 10 tags", id: "sha256:2a7b3c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f",
		tags: func() []string {
			var tags []string
			for i := range 10 {
				tags = append(tags, fmt.Sprintf("registry.example.com/team/app:v1.%d", i))
			}
			return tags
		}()},
	{name: "untagged", id: "sha256:3a7b3c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f",
		digests: []string{"registry.example.com/team/app@sha256:3ff6c18fbef2045af6b9c16bf034cc421a29027b800e4f9b68ae9b1cb3e9ae07"}},
}

// TestPinDecisions checks that the two decisions the benchmark times give
// the answers they should: the same for the exact name, and the patched
// one also for the alias.
func TestPinDecisions(t *testing.T) {
	t.Parallel()
	for _, sandbox := range []string{"registry.k8s.io/pause:3.10.1", "k8s.gcr.io/pause:3.10.1"} {
		m, err := pin.Compile([]string{sandbox}, pin.WithMode(pin.ModeStrict))
		require.NoError(t, err)
		for _, img := range dockerImages {
			exact := sandbox == "registry.k8s.io/pause:3.10.1"
			assert.Equal(t, img.stock && exact, stockIsPinned(sandbox, img.tags), "stock, %s, %s", sandbox, img.name)
			assert.Equal(t, img.stock, patchedIsPinned(m, img.id, img.tags, img.digests), "patched, %s, %s", sandbox, img.name)
		}
	}
}

// BenchmarkPinDecision times the decision per image that ListImages and
// ImageStatus make, stock against patched, for the sandbox image
// registry.k8s.io/pause:3.10.1.
func BenchmarkPinDecision(b *testing.B) {
	const sandbox = "registry.k8s.io/pause:3.10.1"
	m, err := pin.Compile([]string{sandbox}, pin.WithMode(pin.ModeStrict))
	require.NoError(b, err)
	for _, img := range dockerImages {
		b.Run(img.name+"/stock", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				stockIsPinned(sandbox, img.tags)
			}
		})
		b.Run(img.name+"/patched", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				patchedIsPinned(m, img.id, img.tags, img.digests)
			}
		})
	}
}
