package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/cridockerdtest"
)

// TestLiveCRIDockerd asks real cri-dockerd 0.3.14 and 0.4.4 configured with
// the alias k8s.gcr.io/pause:3.10.1, which they leave unpinned, with the
// node's root at the instance's directory (its cri-docker.service): the
// stored registry.k8s.io/pause:3.10.1 is kept as the node's sandbox image,
// by the alias-aware rule, and Docker's familiar names are read as the
// images they name.
func TestLiveCRIDockerd(t *testing.T) {
	t.Parallel()
	for _, v := range cridockerdtest.Versions() {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			d := cridockerdtest.Start(t, v, cridockerdtest.Options{
				PodInfraImage: "k8s.gcr.io/pause:3.10.1",
				Images: []containerdtest.Image{
					{Names: []string{"registry.k8s.io/pause:3.10.1"}},
					{Names: []string{"docker.io/library/busybox:1.36"}},
					{Names: []string{"docker.io/library/nginx:1.27"}},
				},
			})
			inUse := filepath.Join(t.TempDir(), "in-use.txt")
			require.NoError(t, os.WriteFile(inUse, []byte("docker.io/library/nginx:1.27\n"), 0o600))
			r, stderr := runJSON(t, "--runtime-endpoint", d.Endpoint, "--root", d.Dir, "--in-use", inUse)
			assert.Empty(t, stderr)
			got := map[string]string{}
			for _, img := range r.Images {
				got[img.Image] = img.Reason
			}
			t.Logf("gcfilter on cri-dockerd %s: %q", v.Release(), got)
			assert.Equal(t, map[string]string{
				"busybox:1.36":                 "not pinned and not in use",
				"nginx:1.27":                   "in use: docker.io/library/nginx:1.27 (" + inUse + ":1) names nginx:1.27",
				"registry.k8s.io/pause:3.10.1": `pinned by "k8s.gcr.io/pause:3.10.1" (node (cri-dockerd)) as registry.k8s.io/pause:3.10.1`,
			}, got)
		})
	}
}
