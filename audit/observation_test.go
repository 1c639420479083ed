package audit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// sampleNode resolves the sample node tree of resolve's tests.
func sampleNode(t *testing.T, node string, opts resolve.Options) *resolve.Result {
	t.Helper()
	opts.Root = resolve.DirFS("../resolve/testdata/nodes/" + node)
	res, err := resolve.Resolve(context.Background(), opts)
	require.NoError(t, err)
	return res
}

// TestJudgeObservation checks the lookup's three states, predicted
// offline when not asked, and the observations Judge refuses.
func TestJudgeObservation(t *testing.T) {
	t.Parallel()
	// k3s configures the short name rancher/mirrored-pause:3.6, which
	// containerd stores (and pins) under its full name.
	k3s := sampleNode(t, "k3s", resolve.Options{RuntimeVersion: "2.4.2"})
	const full = "docker.io/rancher/mirrored-pause:3.6"
	pinned := []*ListedImage{{ID: "sha256:1", RepoTags: []string{full}, Pinned: true}}
	tests := []struct {
		name       string
		obs        ListedObservation
		want       Status
		wantStored bool  // Sandbox.StoredAsConfigured
		wantErr    error // with errors.Is, or nil
	}{
		{name: "not asked: predicted", obs: ListedObservation{Images: pinned}, want: StatusOK, wantStored: true},
		{name: "found", obs: ListedObservation{Images: pinned, Lookup: LookupFound}, want: StatusOK, wantStored: true},
		{name: "not found", obs: ListedObservation{Images: pinned, Lookup: LookupNotFound}, want: StatusNotStoredAsConfigured},
		{name: "not asked, nothing stored", obs: ListedObservation{}, want: StatusAbsent},
		{name: "a nil image", obs: ListedObservation{Images: []*ListedImage{nil}}, want: StatusAbsent},
		{name: "found, but no images at all", obs: ListedObservation{Lookup: LookupFound}, wantErr: ErrInvalidObservation},
		{name: "no such lookup", obs: ListedObservation{Images: pinned, Lookup: "maybe"}, wantErr: ErrInvalidObservation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := Judge(k3s, tt.obs)
			require.ErrorIs(t, err, tt.wantErr)
			if tt.wantErr != nil {
				assert.Nil(t, v)
				return
			}
			assert.Equal(t, tt.want, v.Status)
			assert.Equal(t, tt.wantStored, v.Sandbox.StoredAsConfigured)
			assert.Equal(t, tt.obs.Lookup, v.Sandbox.Lookup)
			if tt.want == StatusOK {
				assert.Nil(t, v.Fix, "k3s's config is left alone")
			}
		})
	}
}

// TestJudgeWillNotStart checks that a node whose kubelet does not start is
// no OK node, whatever its images, and that every fix is listed, the most
// urgent first.
func TestJudgeWillNotStart(t *testing.T) {
	t.Parallel()
	const img = "registry.k8s.io/pause:3.10.2"
	images := []*ListedImage{{ID: "sha256:1", RepoTags: []string{img}, Pinned: true}}
	opts := resolve.Options{RuntimeVersion: "2.4.2", KubeletVersion: "1.35.0", KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"}
	res := sampleNode(t, "kubelet-flag-dropin", opts)
	require.NotNil(t, res.Fix)
	require.Equal(t, resolve.KindKubeletRejectsFlag, res.Fix.Answers)

	v, err := Judge(res, ListedObservation{Images: images, Lookup: LookupFound})
	require.NoError(t, err)
	assert.Equal(t, StatusWillNotStart, v.Status)
	assert.False(t, v.Protected())
	assert.True(t, v.Sandbox.Present && v.Sandbox.Pinned && v.Sandbox.StoredAsConfigured, "the sandbox image itself is fine: %+v", v.Sandbox)
	require.NotNil(t, v.Fix)
	assert.Equal(t, *res.Fix, *v.Fix, "the result's most urgent fix")
	require.Len(t, v.Fixes, 2, "the drop-in's flag and the JoinConfiguration's")
	for _, f := range v.Fixes {
		assert.Equal(t, resolve.KindKubeletRejectsFlag, f.Answers)
		assert.Equal(t, resolve.UrgencyStops, f.Urgency)
		assert.Equal(t, resolve.ActionRemove, f.Action)
	}
	assert.Equal(t, "/etc/systemd/system/kubelet.service.d/20-sandbox.conf", v.Fixes[0].Path)
	assert.Equal(t, "/etc/kubernetes/kubeadm.yaml", v.Fixes[1].Path)
	require.Len(t, v.Findings, 2)
	for _, f := range v.Findings {
		assert.Equal(t, resolve.KindKubeletRejectsFlag, f.Kind)
		assert.Equal(t, resolve.ComponentKubelet, f.Component)
	}

	// The same node with an older kubelet: notes only, and OK.
	opts.KubeletVersion = "1.33.0"
	v, err = Judge(sampleNode(t, "kubelet-flag-dropin", opts), ListedObservation{Images: images, Lookup: LookupFound})
	require.NoError(t, err)
	assert.Equal(t, StatusOK, v.Status)
	assert.True(t, v.Protected())
	assert.Empty(t, v.Findings)

	// Both: the node stops, and its sandbox image is unpinned too. The
	// status is the worst; the findings and fixes are all there, in order.
	images[0].Pinned = false
	opts.KubeletVersion = "1.35.0"
	v, err = Judge(res, ListedObservation{Images: images, Lookup: LookupFound})
	require.NoError(t, err)
	assert.Equal(t, StatusWillNotStart, v.Status)
	var kinds []resolve.Kind
	for _, f := range v.Findings {
		kinds = append(kinds, f.Kind)
	}
	assert.Equal(t, []resolve.Kind{resolve.KindKubeletRejectsFlag, resolve.KindKubeletRejectsFlag, resolve.KindSandboxUnpinned}, kinds)
	require.Len(t, v.Fixes, 3)
	assert.Equal(t, resolve.UrgencyUnprotected, v.Fixes[2].Urgency)
	assert.Equal(t, resolve.KindSandboxUnpinned, v.Fixes[2].Answers)
}
