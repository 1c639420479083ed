package containerdtest_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/registrytest"
)

// pinnedLabel is the label containerd's CRI plugin reads into
// Image.pinned: PinnedImageLabelKey and PinnedImageLabelValue in
// pkg/cri/labels/labels.go (v1.7.35) and internal/cri/labels/labels.go
// (v2.4.2). k3sLabel is the label k3s adds beside it to what it imports,
// and clears with it at every start (pkg/agent/containerd/containerd.go,
// clearLabels).
const (
	pinnedLabel = "io.cri-containerd.pinned=pinned"
	k3sLabel    = "io.cattle.k3s.pinned"
)

// TestPinnedLabel configures the sandbox image as registry.k8s.io/pause
// and stores the same image only as k8s.gcr.io/pause, which CRI reports
// unpinned (containerd compares names, not aliases), then labels the stored
// name with containerd's pinned label by hand, as managed node images do
// (`ctr -n k8s.io images label NAME io.cri-containerd.pinned=pinned`).
//
// Seen live on 1.7.35 and 2.4.2 (the facts resolve's ContainerdPinnedLabel
// row cites):
//   - the label makes CRI report the image pinned at once (an ImageUpdate
//     event; 1.7.3–1.7.9 read it only at start-up, containerd#9328);
//   - the label, and so the pin, survives a restart: at start-up the CRI
//     plugin only adds labels (getLabels, then createImageReference or
//     createOrUpdateImageReference, which never clear the pinned label);
//   - a CRI pull of the configured name stores it beside the other and
//     pins it (it matches sandbox_image or pinned_images), and leaves the
//     other name's label alone; it labels the image's ID reference
//     (sha256:…) pinned too, so the image stays pinned after the
//     configured name is removed again;
//   - a re-import of the labelled name with ctr keeps its label where ctr
//     imports client-side (--local; 1.7.35), and drops it, and so the pin,
//     through the transfer service (ctr 2.x's default; 2.4.2): its image
//     store replaces the whole record, and the CRI plugin adds back only
//     its managed label;
//   - `ctr images label NAME KEY=` removes KEY, the command that takes an
//     image out of k3s's start-up clearing.
func TestPinnedLabel(t *testing.T) {
	t.Parallel()
	const (
		configured = "registry.k8s.io/pause:3.10.1"
		stored     = "k8s.gcr.io/pause:3.10.1"
	)
	img := containerdtest.Image{Names: []string{stored}}
	reg := registrytest.Start(t)
	// The registry serves the same image under the configured name's path,
	// so that a CRI pull of it stores the image the node holds already.
	reg.Push(t, configured, img)
	for _, v := range []containerdtest.Version{containerdtest.V17, containerdtest.V24} {
		t.Run(v.String(), func(t *testing.T) {
			t.Parallel()
			c := containerdtest.Start(t, v, containerdtest.Options{SandboxImage: configured, Images: []containerdtest.Image{img}, Registry: reg.Addr})
			_, ctr := containerdtest.Binaries(v)
			run := func(args ...string) string {
				t.Helper()
				out, err := exec.Command(ctr, append([]string{"--address", c.Socket, "-n", "k8s.io"}, args...)...).CombinedOutput()
				require.NoError(t, err, "ctr %s: %s\nlog:\n%s", strings.Join(args, " "), out, c.Log())
				return string(out)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			conn, err := grpc.DialContext(ctx, c.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials())) //nolint:staticcheck // SA1019: NewClient needs grpc 1.63, above this module's floor
			require.NoError(t, err)
			defer conn.Close()
			is := runtimeapi.NewImageServiceClient(conn)

			pinned := func(name string) (isPinned, listed bool) {
				t.Helper()
				resp, err := is.ListImages(ctx, &runtimeapi.ListImagesRequest{})
				require.NoError(t, err)
				for _, im := range resp.GetImages() {
					for _, tag := range im.GetRepoTags() {
						if tag == name {
							return im.GetPinned(), true
						}
					}
				}
				return false, false
			}
			// eventually waits up to 10 s for the CRI plugin, which
			// learns of labels from events, to report want.
			eventually := func(name string, want bool) bool {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for {
					got, listed := pinned(name)
					require.True(t, listed, "%s not listed\nlog:\n%s", name, c.Log())
					if got == want || time.Now().After(deadline) {
						return got
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			labels := func() string { return run("images", "ls", "name=="+stored) }

			got, _ := pinned(stored)
			require.False(t, got, "%s %s pins %s before the label, configured %s", v, v.Release(), stored, configured)

			run("images", "label", stored, pinnedLabel)
			assert.True(t, eventually(stored, true), "%s %s: pinned of %s after `ctr images label`", v, v.Release(), stored)

			c.Restart(t)
			assert.True(t, eventually(stored, true), "%s %s: pinned of %s after a restart", v, v.Release(), stored)
			assert.Contains(t, labels(), pinnedLabel, "label of %s after a restart", stored)

			// The harness imports client-side into 1.7 (ctr --local:
			// client/import.go updates only "target") and through the
			// transfer service into 2.4 (core/transfer/image/imagestore.go
			// Store updates the whole record, labels too).
			c.Import(t, img)
			keeps := v == containerdtest.V17
			if keeps {
				assert.Contains(t, labels(), pinnedLabel, "label of %s after a re-import", stored)
			} else {
				assert.NotContains(t, labels(), pinnedLabel, "label of %s after a re-import", stored)
			}
			assert.Equal(t, keeps, eventually(stored, keeps), "%s %s: pinned of %s after a re-import", v, v.Release(), stored)
			run("images", "label", stored, pinnedLabel)
			require.True(t, eventually(stored, true), "%s %s: pinned of %s labelled again", v, v.Release(), stored)

			run("images", "label", stored, k3sLabel+"=pinned")
			require.Contains(t, labels(), k3sLabel+"=pinned")
			run("images", "label", stored, k3sLabel+"=")
			assert.NotContains(t, labels(), k3sLabel, "`ctr images label %s %s=` removes the label", stored, k3sLabel)
			assert.True(t, eventually(stored, true), "%s %s: pinned of %s after k3s's label went", v, v.Release(), stored)

			// Last: the pull labels the image's ID reference (sha256:…)
			// pinned too, which keeps the image pinned whatever its
			// names' labels say.
			_, err = is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: configured}})
			require.NoError(t, err, "PullImage %s\nlog:\n%s", configured, c.Log())
			assert.True(t, eventually(configured, true), "%s %s: pinned of the pulled %s", v, v.Release(), configured)
			assert.Contains(t, labels(), pinnedLabel, "label of %s after a CRI pull of %s", stored, configured)
			run("images", "rm", configured)
			assert.Contains(t, labels(), pinnedLabel, "label of %s after %s was pulled and removed", stored, configured)
			assert.True(t, eventually(stored, true), "%s %s: pinned of %s after %s was pulled and removed", v, v.Release(), stored, configured)
			t.Logf("%s %s: %s labelled %s is pinned, across a restart and a CRI pull and removal of %s; a re-import keeps it: %v", v, v.Release(), stored, pinnedLabel, configured, keeps)
		})
	}
}
