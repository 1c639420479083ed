package audit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// TestPinnedImagesFix checks that on cri-dockerd 0.4.7 and later the fix
// for a sandbox image the runtime does not pin is its --pinned-images flag,
// not the shim, and that older releases keep the shim.
func TestPinnedImagesFix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		version    string         // cri-dockerd's
		images     []*ListedImage // what the runtime lists
		wantAction resolve.Action
		wantTo     string // the fix's To
	}{
		{name: "stored as configured, unpinned: its command line pins it, it has not read it", version: "0.4.7",
			images:     []*ListedImage{{ID: "sha256:1", RepoTags: []string{"registry.k8s.io/pause:3.10"}}},
			wantAction: resolve.ActionRestart},
		{name: "stored only under the frozen registry's alias: a pull, not a pin of that name", version: "0.4.7",
			images:     []*ListedImage{{ID: "sha256:1", RepoTags: []string{"k8s.gcr.io/pause:3.10"}}},
			wantAction: resolve.ActionPull, wantTo: "registry.k8s.io/pause:3.10"},
		{name: "0.4.4 keeps the shim", version: "0.4.4",
			images:     []*ListedImage{{ID: "sha256:1", RepoTags: []string{"registry.k8s.io/pause:3.10"}}},
			wantAction: resolve.ActionShim},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := resolve.DirFS("../resolve/testdata/nodes/cri-dockerd-0.4.7-pinned")
			res, err := resolve.Resolve(context.Background(), resolve.Options{Root: root, RuntimeVersion: tt.version})
			require.NoError(t, err)
			v, err := Judge(res, ListedObservation{Images: tt.images})
			require.NoError(t, err)
			require.NotNil(t, v.Fix)
			assert.Equal(t, StatusUnpinned, v.Status)
			var got *resolve.Fix
			for i, f := range v.Fixes {
				if f.Answers == resolve.KindSandboxUnpinned {
					got = &v.Fixes[i]
				}
			}
			require.NotNil(t, got, "fixes %v", v.Fixes)
			assert.Equal(t, tt.wantAction, got.Action, "%s", got.Message)
			assert.Equal(t, tt.wantTo, got.To)
			if tt.wantAction == resolve.ActionAdd {
				assert.Equal(t, "--pinned-images", got.Flag)
				assert.Equal(t, "/etc/systemd/system/cri-docker.service.d/10-pins.conf:3", got.Where())
			}
		})
	}
}
