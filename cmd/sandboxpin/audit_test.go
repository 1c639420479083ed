package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/internal/criservertest"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// TestFixAdvice checks the FIX line audit prints under a FAIL for an image
// the runtime stores but does not pin.
func TestFixAdvice(t *testing.T) {
	t.Parallel()
	const stored, alias = "registry.k8s.io/pause:3.10.1", "k8s.gcr.io/pause:3.10.1"
	stores := &runtimeapi.Image{Id: "sha256:1", RepoTags: []string{"docker.io/library/other:1", stored}}
	never := "containerd 1.6.20 " + neverPins + " (fixed in 1.6.22 and 1.7.3): upgrade containerd or pin it through a CRI shim"
	tests := []struct {
		name    string
		res     resolve.Result
		sandbox *runtimeapi.Image
		want    string
	}{
		{
			name: "a release that never pins: no spelling helps",
			res: resolve.Result{SandboxImage: alias, Notes: []string{"other", never},
				Candidates: []resolve.Candidate{{Image: alias, Source: resolve.ContainerdConfig, Origin: "/etc/containerd/config.toml:3", Role: resolve.RuntimeUses}}},
			sandbox: stores,
			want:    "no configuration can: " + never,
		},
		{
			name: "an alias spelling: the stored name, where it is configured",
			res: resolve.Result{SandboxImage: alias, Candidates: []resolve.Candidate{
				{Image: "registry.k8s.io/pause:3.10.2", Source: resolve.RuntimeDefault, Origin: "containerd 2.4.2", Role: resolve.RuntimeUses},
				{Image: alias, Source: resolve.KubeletFlags, Origin: "/var/lib/kubelet/kubeadm-flags.env:1", Role: resolve.KubeletProtects},
				{Image: alias, Source: resolve.ContainerdConfig, Origin: "/etc/containerd/config.toml:7", Role: resolve.RuntimeUses},
			}},
			sandbox: stores,
			want:    "configure the sandbox image as " + stored + ", the name it is stored under, in place of " + alias + " (/etc/containerd/config.toml:7)",
		},
		{
			name: "a tagless spelling on containerd: the stored name:tag, and why (containerd#13314)",
			res: resolve.Result{Runtime: "containerd", SandboxImage: "registry.k8s.io/pause", Candidates: []resolve.Candidate{
				{Image: "registry.k8s.io/pause", Source: resolve.ContainerdConfig, Origin: "/etc/containerd/config.toml:7", Role: resolve.RuntimeUses},
			}},
			sandbox: &runtimeapi.Image{Id: "sha256:1", RepoTags: []string{"registry.k8s.io/pause:latest"}},
			want: "configure the sandbox image as registry.k8s.io/pause:latest, the name it is stored under, in place of registry.k8s.io/pause " +
				"(/etc/containerd/config.toml:7): containerd 2.x compares pinned_images as strings and never pins a name without a tag (containerd#13314)",
		},
		{
			name:    "an alias spelling from the built-in default",
			res:     resolve.Result{SandboxImage: alias, Candidates: []resolve.Candidate{{Image: alias, Source: resolve.RuntimeDefault, Origin: "containerd 1.6.8", Role: resolve.RuntimeUses}}},
			sandbox: stores,
			want:    "configure the sandbox image as " + stored + ", the name it is stored under, in place of " + alias + " (where the runtime's config names it)",
		},
		{
			name:    "the exact name, still not pinned: a shim or an upgrade, with the notes",
			res:     resolve.Result{SandboxImage: stored, Notes: []string{"containerd 1.6.25 pins the sandbox image only when its CRI plugin pulls it"}},
			sandbox: stores,
			want:    "run a pinning CRI shim in front of the runtime, or upgrade the runtime; containerd 1.6.25 pins the sandbox image only when its CRI plugin pulls it",
		},
		{
			name:    "no notes",
			res:     resolve.Result{SandboxImage: stored},
			sandbox: &runtimeapi.Image{Id: "sha256:1", RepoTags: []string{stored}},
			want:    "run a pinning CRI shim in front of the runtime, or upgrade the runtime",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, fixAdvice(&tt.res, tt.sandbox))
		})
	}
}

// TestStoredAsConfigured checks that the lookup is the runtime's own
// ImageStatus by the configured string: no registry alias applies.
func TestStoredAsConfigured(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const stored = "registry.k8s.io/pause:3.10.1"
	client, err := cri.Dial(ctx, criservertest.Serve(t, &criservertest.Runtime{
		Images: []*runtimeapi.Image{{Id: "sha256:1", RepoTags: []string{stored}}},
	}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	for ref, want := range map[string]bool{stored: true, "k8s.gcr.io/pause:3.10.1": false, "registry.k8s.io/pause:3.10": false} {
		got, err := storedAsConfigured(ctx, client, ref)
		require.NoError(t, err)
		assert.Equal(t, want, got, "storedAsConfigured(%q)", ref)
	}
	down, err := cri.Dial(ctx, criservertest.Serve(t, nil))
	require.NoError(t, err)
	t.Cleanup(func() { _ = down.Close() })
	_, err = storedAsConfigured(ctx, down, stored)
	assert.ErrorIs(t, err, cri.ErrNotCRI)
}

// TestAliasOnlyVerdict checks the verdict on a sandbox image that is pinned
// but stored only under an alias spelling, as through a pinning shim.
func TestAliasOnlyVerdict(t *testing.T) {
	t.Parallel()
	a := nodeAudit{Runtime: "containerd", SandboxImage: "k8s.gcr.io/pause:3.10.1",
		Sandbox: &runtimeapi.Image{Id: "sha256:1", RepoTags: []string{"registry.k8s.io/pause:3.10.1"}, Pinned: true}}
	assert.Equal(t, exitCheck, a.exitCode())
	assert.Equal(t, "FAIL: sandbox image k8s.gcr.io/pause:3.10.1 (containerd) is stored only as the alias registry.k8s.io/pause:3.10.1; the runtime pulls it for new pods", a.summary())
	a.SandboxImage, a.StoredAsConfigured = "registry.k8s.io/pause:3.10.1", true
	assert.Equal(t, exitOK, a.exitCode())
	assert.Equal(t, "OK: containerd pins sandbox image registry.k8s.io/pause:3.10.1", a.summary())
}
