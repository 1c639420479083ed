package crishim

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/cridockerdtest"
)

// TestLiveCRIDockerd runs crictl against real cri-dockerd 0.3.14 and 0.4.4
// in front of Docker Engine 20.10.24, straight and through the shim.
// cri-dockerd is started with --pod-infra-container-image
// k8s.gcr.io/pause:3.10.1, the alias of the stored
// registry.k8s.io/pause:3.10.1, which it leaves unpinned (it compares the
// flag with Docker's repo tags as strings). Through the shim, which reads
// the flag from the node's cri-docker.service, the stored pause image is
// pinned and nothing else changes: version, info and the rest of each image
// are the same both ways.
func TestLiveCRIDockerd(t *testing.T) {
	t.Parallel()
	for _, v := range cridockerdtest.Versions() {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			cridockerdtest.Require(t, v) // skips under -short before looking for crictl
			crictl := containerdtest.Crictl(t)
			const (
				configured = "k8s.gcr.io/pause:3.10.1"
				stored     = "registry.k8s.io/pause:3.10.1"
			)
			images := []containerdtest.Image{{Names: []string{stored}}}
			for _, name := range liveImages {
				images = append(images, containerdtest.Image{Names: []string{name}})
			}
			d := cridockerdtest.Start(t, v, cridockerdtest.Options{PodInfraImage: configured, Images: images})
			// d.Dir is laid out as the node's root: the unit holds the flag.
			assertResolves(t, d.Dir, d.Endpoint, configured)

			shimPath := filepath.Join(shortTempDir(t), "shim.sock")
			startRunShim(t, Options{Listen: "unix://" + shimPath, RuntimeEndpoint: d.Endpoint, Node: nodeOptions(d.Dir)})
			assertSameAnswers(t, crictl, d.Endpoint, "unix://"+shimPath)

			direct := crictlImages(t, runCrictl(t, crictl, d.Endpoint, "images", "-o", "json"))
			shimmed := crictlImages(t, runCrictl(t, crictl, "unix://"+shimPath, "images", "-o", "json"))
			require.Len(t, shimmed, len(direct))
			// Docker lists Docker Hub images by their familiar names.
			wantTags := map[string]bool{stored: true, "busybox:1.36": true, "registry.k8s.io/coredns/coredns:v1.11.1": true}
			for i := range direct {
				tag := direct[i].tag()
				before, after := direct[i]["pinned"], shimmed[i]["pinned"]
				t.Logf("cri-dockerd %s: %s pinned %v directly, %v through the shim", v.Release(), tag, before, after)
				require.True(t, wantTags[tag], "unexpected image %s", tag)
				assert.Equal(t, false, before, "cri-dockerd's own pinned for %s", tag)
				assert.Equal(t, tag == stored, after, "pinned through the shim for %s", tag)
				direct[i]["pinned"] = after
				assert.Equal(t, direct[i], shimmed[i], "crictl images entry %d through the shim", i)
			}
		})
	}
}
