package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/internal/criservertest"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// TestLookup checks that the lookup is the runtime's own ImageStatus by
// the configured string: no registry alias applies.
func TestLookup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const stored = "registry.k8s.io/pause:3.10.1"
	client, err := cri.Dial(ctx, criservertest.Serve(t, &criservertest.Runtime{
		Images: []*runtimeapi.Image{{Id: "sha256:1", RepoTags: []string{stored}}},
	}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	for ref, want := range map[string]audit.Lookup{stored: audit.LookupFound, "k8s.gcr.io/pause:3.10.1": audit.LookupNotFound, "registry.k8s.io/pause:3.10": audit.LookupNotFound} {
		got, err := lookup(ctx, client, ref)
		require.NoError(t, err)
		assert.Equal(t, want, got, "lookup(%q)", ref)
	}
	down, err := cri.Dial(ctx, criservertest.Serve(t, nil))
	require.NoError(t, err)
	t.Cleanup(func() { _ = down.Close() })
	_, err = lookup(ctx, down, stored)
	assert.ErrorIs(t, err, cri.ErrNotCRI)
}

// TestAliasOnlyVerdict checks the summary and exit code of a sandbox image
// that is pinned but stored only under an alias spelling, as through a
// pinning shim.
func TestAliasOnlyVerdict(t *testing.T) {
	t.Parallel()
	res := &resolve.Result{Runtime: "containerd", SandboxImage: "k8s.gcr.io/pause:3.10.1", Pins: []string{"k8s.gcr.io/pause:3.10.1"}}
	images := []*runtimeapi.Image{{Id: "sha256:1", RepoTags: []string{"registry.k8s.io/pause:3.10.1"}, Pinned: true}}
	v, err := audit.Judge(res, audit.Observation[*runtimeapi.Image]{Images: images, Lookup: audit.LookupNotFound})
	require.NoError(t, err)
	a := nodeAudit{Verdict: v}
	assert.Equal(t, exitCheck, a.exitCode())
	assert.Equal(t, "FAIL: sandbox image k8s.gcr.io/pause:3.10.1 (containerd) is stored only as the alias registry.k8s.io/pause:3.10.1; the runtime pulls it for new pods; on the node: sandboxpin fix", a.summary())
	res.SandboxImage, res.Pins = "registry.k8s.io/pause:3.10.1", []string{"registry.k8s.io/pause:3.10.1"}
	v, err = audit.Judge(res, audit.Observation[*runtimeapi.Image]{Images: images, Lookup: audit.LookupFound})
	require.NoError(t, err)
	a = nodeAudit{Verdict: v}
	assert.Equal(t, exitOK, a.exitCode())
	assert.Equal(t, "OK: containerd pins sandbox image registry.k8s.io/pause:3.10.1", a.summary())
}
