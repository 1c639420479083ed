package kubelettest_test

import (
	"context"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/kubelettest"
)

// ageMaximum is the rows' imageMaximumGCAge. Any age under
// kubelettest.ImageGCPeriod gives the same outcome: the kubelet's second
// periodic round removes every unused, unpinned image. The kubelet only
// refuses an age that is not above imageMinimumGCAge (validation.go in
// pkg/kubelet/apis/config/validation at v1.37.2).
const ageMaximum = time.Minute

// ageRowTimeout bounds one age row: the kubelet starts in seconds, its
// second GC round comes kubelettest.ImageGCPeriod later, then the pod (up
// to 2 min) and its relists.
const ageRowTimeout = kubelettest.ImageGCPeriod + 5*time.Minute

// ageRows are the image-age rows: imageMaximumGCAge (KEP-4210, stable in
// v1.35: keps/sig-node/4210-max-image-gc-age/kep.yaml; the ImageMaximumGCAge
// feature gate GA and locked on in pkg/features/kube_features.go at v1.37.2)
// and no disk pressure, as on an idle node. No pod runs before GC, so the
// pause image is as unused as on a CRI-O node with drop_infra_ctr.
var ageRows = []gcRow{
	{name: "containerd-1.6/exact/age", runtime: runtimeContainerd, version: containerdtest.V1, configured: storedPause, maxAge: ageMaximum, wantDeleted: true, wantPod: podNoSandbox},
	{name: "containerd-1.6/exact/shim/age", runtime: runtimeContainerd, version: containerdtest.V1, configured: storedPause, shim: true, maxAge: ageMaximum, wantPod: podRuns},
	{name: "containerd-2.4/alias/age", runtime: runtimeContainerd, version: containerdtest.V24, configured: aliasPause, maxAge: ageMaximum, wantDeleted: true, wantPod: podNoSandbox},
	{name: "containerd-2.4/alias/shim/age", runtime: runtimeContainerd, version: containerdtest.V24, configured: aliasPause, shim: true, maxAge: ageMaximum, wantPod: podNoSandbox},
}

// TestKubeletAgeGC runs a real kubelet v1.37.2 with imageMaximumGCAge and no
// disk pressure against real containerd 1.6.20 and 2.4.2, directly and
// through `sandboxpin shim`, and checks that its periodic image GC removes an
// unpinned pause image by age alone, as audit and serve predicted. Each row
// takes kubelettest.ImageGCPeriod (5 min) and more; they run in parallel,
// beside TestKubeletGC.
func TestKubeletAgeGC(t *testing.T) { //nolint:tparallel // the rows run in parallel inside "rows", which must end before the table
	t.Parallel()
	kubelettest.Require(t)
	results := runGCRows(t, ageRows)
	t.Logf("predicted × observed (imageMaximumGCAge %v, no disk pressure, GC every %v):\n%s",
		ageMaximum, kubelettest.ImageGCPeriod, resultTable(ageRows, results))
}

// kubeletOptions configures the kubelet of row tt: under disk pressure, or
// with imageMaximumGCAge and none.
func kubeletOptions(endpoint string, tt gcRow) kubelettest.Options {
	if tt.maxAge == 0 {
		return kubelettest.Options{RuntimeEndpoint: endpoint}
	}
	return kubelettest.Options{RuntimeEndpoint: endpoint, NoDiskPressure: true, MaximumGCAge: tt.maxAge, VModule: kubelettest.GCRoundVModule}
}

// waitAgeRound waits until the periodic GC round that logged removed (the
// victim's removal) ends: an unpinned pause image goes in that same round.
func waitAgeRound(ctx context.Context, t *testing.T, k *kubelettest.Kubelet, removed string) {
	t.Helper()
	either := regexp.MustCompile(regexp.QuoteMeta(removed) + "|" + kubelettest.GCRoundDone().String())
	for {
		lines := k.Lines(either)
		if i := slices.Index(lines, removed); i >= 0 && i < len(lines)-1 {
			t.Logf("the GC round ends: %s", lines[i+1])
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the GC round that removed the victim did not end: %v", ctx.Err())
		case <-k.Exited():
			t.Fatal("the kubelet exited")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkAgeRemovals checks that the kubelet removed images by age alone: no
// disk pressure round, and its own count of removals by reason (the victim,
// and the pause image when deleted).
func checkAgeRemovals(ctx context.Context, t *testing.T, k *kubelettest.Kubelet, deleted bool) {
	t.Helper()
	assert.Empty(t, k.Lines(kubelettest.GCRound()), "the eviction manager ran image GC: the node was under disk pressure")
	assert.Empty(t, k.Lines(regexp.MustCompile(`"Disk usage on image filesystem is over the high threshold`)), "image GC by disk usage")
	body, err := k.Get(ctx, "/metrics")
	require.NoError(t, err)
	want := 1.0
	if deleted {
		want = 2
	}
	age, err := kubelettest.GaugeOf(body, `kubelet_image_garbage_collected_total{reason="age"}`)
	require.NoError(t, err)
	assert.Equal(t, want, age, "images the kubelet removed by age")
	if space, err := kubelettest.GaugeOf(body, `kubelet_image_garbage_collected_total{reason="space"}`); err == nil {
		assert.Zero(t, space, "images the kubelet removed for space")
	}
}
