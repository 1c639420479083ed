package crilive

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/pin"
)

// TestLiveMarkPinned runs MarkPinned on what real containerd lists: the
// configured sandbox image ends up pinned and nothing else, including on
// containerd 2.2 configured with k8s.gcr.io/pause:3.10.1 while it stores
// registry.k8s.io/pause:3.10.1, which containerd itself leaves unpinned.
func TestLiveMarkPinned(t *testing.T) {
	t.Parallel()
	for _, tc := range liveCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c := startLive(t, tc.version, tc.configured, tc.stored)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			info, err := c.Info(ctx)
			require.NoError(t, err)
			// The sandbox image as a tool learns it: from the runtime when it
			// reports one (containerd 1.x), else from its config file.
			sandbox := tc.configured
			if info.SandboxImageReported {
				sandbox = info.SandboxImage
			}
			m, err := pin.Compile([]string{sandbox})
			require.NoError(t, err)

			imgs, err := c.Images(ctx)
			require.NoError(t, err)
			own := map[string]bool{}
			for _, img := range imgs {
				for _, tag := range img.GetRepoTags() {
					own[tag] = img.GetPinned()
				}
			}
			cri.MarkPinned(m, imgs)
			after := map[string]bool{}
			for _, img := range imgs {
				for _, tag := range img.GetRepoTags() {
					after[tag] = img.GetPinned()
				}
			}
			t.Logf("%s (%s) sandbox %q: runtime pinned %v; after cri.MarkPinned %v", tc.name, info.RuntimeVersion, sandbox, own, after)
			for tag, p := range after {
				assert.Equal(t, tag == tc.stored, p, "Pinned of %s after MarkPinned", tag)
				assert.Equal(t, tag == tc.stored && tc.wantPinned, own[tag], "runtime's own Pinned of %s", tag)
			}
		})
	}
}
