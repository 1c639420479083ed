package kubelettest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/kubelettest"
)

// restartDelay is how long the shim or the runtime stays down: systemd
// starts a unit with Restart=on-failure again RestartSec after it failed
// (1 s in deploy/systemd/sandboxpin-shim.service), and the start itself
// takes a moment on a busy node.
const restartDelay = 2 * time.Second

// recoveryTimeout bounds the wait for the kubelet to reach the runtime
// again: its CRI connections retry with a backoff of at most 3 s
// (maxBackoffDelay in k8s.io/cri-client pkg/remote_runtime.go at v0.37.2),
// and its image calls come with the eviction manager's rounds, 10 s apart.
const recoveryTimeout = time.Minute

// crashMinimumGCAge is TestShimCrash's imageMinimumGCAge. The app image is
// in no container's use until the kubelet creates the pod's container, and
// the pod never pulls it: with the default 1 s, the second GC round (some
// 20 s after the kubelet's start) removes it whenever a loaded kubelet has
// not created the container by then, and the pod never runs (CI: "the
// static pod's container never ran"). Two minutes is the bound the test
// gives the pod to run.
const crashMinimumGCAge = 2 * time.Minute

// crashTimeout bounds TestShimCrash: the kubelet's start, the victim's
// removal once it is crashMinimumGCAge old, then two outages of about 40 s
// each.
const crashTimeout = crashMinimumGCAge + 6*time.Minute

// The methods whose answers tell that the kubelet reaches the runtime
// again: a PLEG relist is a ListPodSandbox and a ListContainers, both
// unfiltered, every second (GetPods in pkg/kubelet/kuberuntime at v1.37.2).
const (
	methodListSandboxes  = "/runtime.v1.RuntimeService/ListPodSandbox"
	methodListContainers = "/runtime.v1.RuntimeService/ListContainers"
	imageService         = "/runtime.v1.ImageService/"
)

// outage is one way the kubelet loses the runtime for a while.
type outage struct {
	name string
	// down stops the shim or the runtime; up starts it again and waits
	// until it serves.
	down, up func(t testing.TB)
	// shimStays: the shim runs on through the outage, so its call counts
	// go on (else they start again from zero).
	shimStays bool
}

// outageResult is what one outage showed.
type outageResult struct {
	name string
	// relist is the time from up's return to the first relist through
	// the shim that the runtime answered, image the same for the first
	// image call; down is the whole time the kubelet could not relist.
	relist, image, down time.Duration
	// errors are the kubelet's error lines during the outage that it
	// did not log before any outage.
	errors []string
}

// TestShimCrash runs a static pod under a real kubelet through `sandboxpin
// shim` (started from the systemd unit's ExecStart line) in front of
// containerd 1.6.20, which never pins, with image GC rounds every 10 s
// (images crashMinimumGCAge old may go).
// It kills the shim with SIGKILL and starts it again 2 s later, as
// Restart=on-failure would; then it restarts containerd behind the running
// shim. After each: the pod's containers ran on (same IDs, restart counts
// and attempts), the kubelet relisted through the shim again (the time is
// logged), no image was removed (the pause image is in no container's use:
// only the shim's pin keeps it, so a shim that answered unpinned before its
// rules loaded would lose it in the two GC rounds watched), and the
// kubelet logged no error after the outage that it had not logged before.
func TestShimCrash(t *testing.T) {
	t.Parallel()
	kubelettest.Require(t)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), crashTimeout)
	defer cancel()
	n := startPodNode(t, "")
	shim := startShimProcess(t, n.ctrd.Endpoint, n.root)
	k := kubelettest.Start(t, kubelettest.Options{RuntimeEndpoint: shim.Endpoint, MinimumGCAge: crashMinimumGCAge,
		StaticPods: map[string]string{"crash.yaml": appPod("crash", appImage)}})
	if !assert.Eventually(t, func() bool { return slices.Contains(runningContainers(ctx, t, n.ctrd.Endpoint), "app") },
		crashMinimumGCAge, 200*time.Millisecond, "the static pod's container never ran") {
		t.Fatalf("the kubelet's image removals %q and errors %q", k.Lines(kubelettest.RemovingImage("")), kubelettest.ErrorsOf(k.Log()))
	}
	_, err := k.WaitForLog(ctx, kubelettest.RemovingImage(n.victimID))
	require.NoError(t, err, "the kubelet never removed the unpinned %s: no GC rounds", victim)
	before := podState(ctx, t, n.ctrd.Endpoint)
	// The steady errors: those of two GC rounds with the pod running, so
	// that the eviction manager's "cannot evict a critical pod" (the static
	// pod, once it is active under the forced disk pressure) is among them.
	rounds := len(k.Lines(kubelettest.GCRound()))
	_, err = k.WaitForLogCount(ctx, kubelettest.GCRound(), rounds+2)
	require.NoError(t, err, "GC rounds with the pod running")
	baseline := kubelettest.ErrorsOf(k.Log())
	t.Logf("the pod runs (%v after the start); the kubelet's errors so far: %q", time.Since(began).Round(time.Second), baseline)

	outages := []outage{
		{name: "shim SIGKILL", down: shim.kill, up: shim.start},
		{name: "containerd restart", down: n.ctrd.Stop, up: n.ctrd.Restart, shimStays: true},
	}
	var results []outageResult
	for _, o := range outages {
		r := runOutage(ctx, t, k, shim, o, baseline)
		results = append(results, r)
		assert.Equal(t, before, podState(ctx, t, n.ctrd.Endpoint), "%s: the pod's sandbox and containers (ID: state, attempt, restart count)", o.name)
		assert.Empty(t, k.Lines(kubelettest.RemovingImage(n.pauseID)), "%s: the kubelet removed the pause image", o.name)
		assert.Len(t, k.Lines(kubelettest.RemovingImage("")), 1, "%s: the kubelet removed images besides the victim", o.name)
		assert.Equal(t, n.pauseID, imageIDs(ctx, t, n.ctrd.Endpoint)[storedPause], "%s: the runtime lists the pause image", o.name)
		assert.True(t, pinnedByTag(ctx, t, shim.Endpoint)[storedPause], "%s: the pause image is pinned through the shim", o.name)
		if t.Failed() {
			break
		}
	}
	for _, r := range results {
		t.Logf("%s: the kubelet relisted through the shim %v after the restart (%v without a relist), its first image call %v after; %d error lines of the outage: %q",
			r.name, r.relist.Round(10*time.Millisecond), r.down.Round(10*time.Millisecond), r.image.Round(10*time.Millisecond), len(r.errors), distinct(r.errors))
	}
	t.Logf("TestShimCrash took %v", time.Since(began).Round(time.Second))
}

// runOutage takes the shim or runtime down for restartDelay, starts it
// again, measures when the kubelet's calls are answered again, watches two
// GC rounds after that, and checks the kubelet's errors: some during the
// outage (it noticed), none after it that is not among steady, its errors
// before any outage.
func runOutage(ctx context.Context, t *testing.T, k *kubelettest.Kubelet, shim *shimProcess, o outage, steady []string) outageResult {
	t.Helper()
	r := outageResult{name: o.name}
	from := logMark(k)
	downAt := time.Now()
	o.down(t)
	time.Sleep(restartDelay)
	base := map[call]float64{}
	if o.shimStays {
		// The runtime is down: no call is answered until it returns.
		base = shimCallsNow(ctx, t, shim)
	}
	o.up(t)
	upAt := time.Now()
	var relistAt, imageAt time.Time
	for relistAt.IsZero() || imageAt.IsZero() {
		calls := shimCallsNow(ctx, t, shim)
		now := time.Now()
		if relistAt.IsZero() && calls[call{methodListSandboxes, "OK"}] > base[call{methodListSandboxes, "OK"}] &&
			calls[call{methodListContainers, "OK"}] > base[call{methodListContainers, "OK"}] {
			relistAt = now
		}
		for c, v := range calls {
			if imageAt.IsZero() && c.code == "OK" && strings.HasPrefix(c.method, imageService) && v > base[c] {
				imageAt = now
			}
		}
		if now.Sub(upAt) > recoveryTimeout {
			t.Fatalf("%s: the kubelet does not reach the runtime through the shim %v after the restart (relisted: %v, image call: %v); shim calls %v",
				o.name, recoveryTimeout, !relistAt.IsZero(), !imageAt.IsZero(), calls)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.relist, r.image, r.down = relistAt.Sub(upAt), imageAt.Sub(upAt), relistAt.Sub(downAt)
	to := logMark(k)
	// Two GC rounds through the shim after the outage: a pause image
	// served unpinned would go in them.
	rounds := len(k.Lines(kubelettest.GCRound()))
	_, err := k.WaitForLogCount(ctx, kubelettest.GCRound(), rounds+2)
	require.NoError(t, err, "%s: GC rounds after the outage", o.name)
	log := k.Log()
	r.errors = without(kubelettest.ErrorsOf(log[from:to]), steady)
	assert.NotEmpty(t, r.errors, "%s: the kubelet logged no error of its own while it could not reach the runtime", o.name)
	assert.Empty(t, without(kubelettest.ErrorsOf(log[to:]), steady), "%s: errors the kubelet logged after the outage and not before it", o.name)
	return r
}

// without returns the lines that are not among known.
func without(lines, known []string) []string {
	var out []string
	for _, l := range lines {
		if !slices.Contains(known, l) {
			out = append(out, l)
		}
	}
	return out
}

// shimCallsNow scrapes the shim's call counts.
func shimCallsNow(ctx context.Context, t *testing.T, shim *shimProcess) map[call]float64 {
	t.Helper()
	body, err := shim.scrape(ctx)
	require.NoError(t, err)
	calls, err := shimCalls(body)
	require.NoError(t, err)
	return calls
}

// logMark returns the length of the kubelet's log up to its last complete
// line.
func logMark(k *kubelettest.Kubelet) int {
	return strings.LastIndexByte(k.Log(), '\n') + 1
}

// podState returns the runtime's pod sandboxes and containers, each ID with
// its state, name, attempt and the restart count the kubelet keeps in its
// annotations: equal before and after, the pod ran on untouched.
func podState(ctx context.Context, t *testing.T, endpoint string) map[string]string {
	t.Helper()
	conn := dial(ctx, t, endpoint)
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	sandboxes, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	require.NoError(t, err)
	containers, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	require.NoError(t, err)
	got := map[string]string{}
	for _, s := range sandboxes.GetItems() {
		got[s.GetId()] = fmt.Sprintf("sandbox %s %s attempt %d", s.GetMetadata().GetName(), s.GetState(), s.GetMetadata().GetAttempt())
	}
	for _, c := range containers.GetContainers() {
		got[c.GetId()] = fmt.Sprintf("container %s %s attempt %d restartCount %s", c.GetMetadata().GetName(), c.GetState(),
			c.GetMetadata().GetAttempt(), c.GetAnnotations()["io.kubernetes.container.restartCount"])
	}
	return got
}

// distinct returns lines without repeats, in order.
func distinct(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}
