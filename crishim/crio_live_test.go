package crishim

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/criotest"
)

// TestLiveCRIO runs crictl against a real CRI-O 1.36.3, straight and through
// the shim. CRI-O is configured by drop-ins with pause_image
// k8s.gcr.io/pause:3.10.1, the alias of the stored
// registry.k8s.io/pause:3.10.1, which CRI-O leaves unpinned, and
// pinned_images ["*busybox*"], which CRI-O pins itself. Through the shim the
// stored pause image is pinned and every pin CRI-O set stays; version, info
// and the rest of each image are the same both ways.
func TestLiveCRIO(t *testing.T) {
	t.Parallel()
	criotest.Require(t) // skips under -short before looking for crictl
	crictl := containerdtest.Crictl(t)
	const (
		configured = "k8s.gcr.io/pause:3.10.1"
		stored     = "registry.k8s.io/pause:3.10.1"
	)
	images := []containerdtest.Image{{Names: []string{stored}}}
	for _, name := range liveImages {
		images = append(images, containerdtest.Image{Names: []string{name}})
	}
	c := criotest.Start(t, criotest.Options{
		DropIns: map[string]string{
			"10-pause.conf": "[crio.image]\npause_image = \"" + configured + "\"\n",
			"20-pins.conf":  "[crio.image]\npinned_images = [\"*busybox*\"]\n",
		},
		Images: images,
	})
	// c.Dir is laid out as the node's root: etc/crio/crio.conf and
	// crio.conf.d, as CRI-O reads them.
	assertResolves(t, c.Dir, c.Endpoint, configured)

	// The node's pinned_images reproduce CRI-O (pin.ModeCRIOCompat: the alias
	// does not pin the stored name); the shim adds the sandbox image as a
	// strict, alias-aware rule of its own, so no --pin is needed.
	shimPath := filepath.Join(shortTempDir(t), "shim.sock")
	startRunShim(t, Options{Listen: "unix://" + shimPath, RuntimeEndpoint: c.Endpoint, Node: nodeOptions(c.Dir)})

	crictlOut := func(endpoint string, args ...string) string {
		t.Helper()
		return runCrictl(t, crictl, endpoint, args...)
	}
	assertSameAnswers(t, crictl, c.Endpoint, "unix://"+shimPath)

	direct := crictlImages(t, crictlOut(c.Endpoint, "images", "-o", "json"))
	shimmed := crictlImages(t, crictlOut("unix://"+shimPath, "images", "-o", "json"))
	require.Len(t, shimmed, len(direct))
	wantOwn := map[string]bool{stored: false, "docker.io/library/busybox:1.36": true, "registry.k8s.io/coredns/coredns:v1.11.1": false}
	for i := range direct {
		tag := direct[i].tag()
		before, after := direct[i]["pinned"], shimmed[i]["pinned"]
		t.Logf("CRI-O: %s pinned %v directly, %v through the shim", tag, before, after)
		own, ok := wantOwn[tag]
		require.True(t, ok, "unexpected image %s", tag)
		assert.Equal(t, own, before, "CRI-O's own pinned for %s", tag)
		assert.Equal(t, own || tag == stored, after, "pinned through the shim for %s", tag)
		direct[i]["pinned"] = after
		assert.Equal(t, direct[i], shimmed[i], "crictl images entry %d through the shim", i)
	}
}
