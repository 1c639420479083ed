package cridockerdtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// spelling is one way to configure --pod-infra-container-image for an image
// stored under another name.
type spelling struct {
	name       string
	configured string // --pod-infra-container-image
	stored     string // the repo tag Docker lists the image under
	stock      bool   // stock v0.4.4 pins it (an exact compare with the repo tags)
	patched    bool   // v0.4.4 with contrib/cri-dockerd/pin.patch pins it
}

// loadedDigest stands for the manifest digest: `docker load` records no repo
// digest, so no digest can match a loaded image (the patch's unit test
// covers a pulled one: TestIsPinned "tag and digest" in the patched tree).
const loadedDigest = "sha256:1ff6c18fbef2045af6b9c16bf034cc421a29027b800e4f9b68ae9b1cb3e9ae07"

// spellings are the sandbox image spellings the patch is tried with. Docker stores a Docker Hub name in its
// familiar form, and a tagless one as ":latest".
var spellings = []spelling{
	{name: "exact", configured: "registry.k8s.io/pause:3.10.1", stored: "registry.k8s.io/pause:3.10.1", stock: true, patched: true},
	{name: "short", configured: "pause:3.10.1", stored: "pause:3.10.1", stock: true, patched: true},
	{name: "docker.io/library", configured: "docker.io/library/pause:3.10.1", stored: "pause:3.10.1", patched: true},
	{name: "alias", configured: "k8s.gcr.io/pause:3.10.1", stored: "registry.k8s.io/pause:3.10.1", patched: true},
	{name: "tagless", configured: "registry.k8s.io/pause", stored: "registry.k8s.io/pause:latest", patched: true},
	{name: "tag+digest", configured: "registry.k8s.io/pause:3.10.1@" + loadedDigest, stored: "registry.k8s.io/pause:3.10.1"},
}

// matrixImages are the images every run loads: each stored spelling is an
// image of its own, beside one that no spelling names.
var matrixImages = []containerdtest.Image{
	{Names: []string{"registry.k8s.io/pause:3.10.1"}},
	{Names: []string{"docker.io/library/pause:3.10.1"}},
	{Names: []string{"registry.k8s.io/pause:latest"}},
	{Names: []string{"docker.io/library/busybox:1.36"}},
}

// TestLivePatchedCRIDockerd runs cri-dockerd 0.4.4 and the same with
// contrib/cri-dockerd/pin.patch, restarted with each spelling of the sandbox
// image, and reads Image.pinned over CRI: stock pins the exact and the short
// name only, patched every spelling of a loaded image, and neither pins any
// other image. `sandboxpin audit` agrees with each build: exit 0 exactly
// where the image is pinned and Docker finds it by the configured name (what
// cri-dockerd looks the sandbox image up by before each pod).
func TestLivePatchedCRIDockerd(t *testing.T) { //nolint:tparallel // the builds run in parallel inside "runs", which must end before the table
	t.Parallel()
	var mu sync.Mutex
	table := map[string]string{}
	t.Run("runs", func(t *testing.T) {
		for _, v := range []Version{V044, V044Pin} {
			t.Run(string(v), func(t *testing.T) {
				t.Parallel()
				Require(t, v)
				bin := runtimetest.Sandboxpin(t)
				c := Start(t, v, Options{PodInfraImage: spellings[0].configured, Images: matrixImages})
				for _, sp := range spellings {
					c.Restart(t, sp.configured)
					got := pinned(t, c)
					want := sp.stock
					if v.Patched() {
						want = sp.patched
					}
					for tag, p := range got {
						assert.Equal(t, want && tag == sp.stored, p, "%s configured %q: pinned of %s", sp.name, sp.configured, tag)
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					_, err := c.docker(ctx, "image", "inspect", sp.configured)
					cancel()
					found := err == nil
					code, out := runtimetest.Audit(t, bin, c.Endpoint, c.Dir)
					assert.Equal(t, got[sp.stored] && found, code == 0, "%s: audit exit %d (pinned %v, found by the configured name %v):\n%s",
						sp.name, code, got[sp.stored], found, out)
					mu.Lock()
					table[string(v)+"/"+sp.name] = fmt.Sprintf("pinned=%v, audit %d", got[sp.stored], code)
					mu.Unlock()
				}
			})
		}
	})
	var b strings.Builder
	fmt.Fprintf(&b, "| spelling | configured | stored (repo tag) | stock 0.4.4 | patched |\n|---|---|---|---|---|\n")
	for _, sp := range spellings {
		fmt.Fprintf(&b, "| %s | `%s` | `%s` | %s | %s |\n", sp.name, strings.Replace(sp.configured, loadedDigest, "sha256:…", 1), sp.stored,
			table[string(V044)+"/"+sp.name], table[string(V044Pin)+"/"+sp.name])
	}
	t.Logf("stock against patched:\n%s", b.String())
}
