package kubelettest_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/cridockerdtest"
	"github.com/sandboxpin/sandboxpin/internal/criotest"
	"github.com/sandboxpin/sandboxpin/internal/kubelettest"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

const (
	// storedPause is the name the pause image is stored under in every row.
	storedPause = "registry.k8s.io/pause:3.10.1"
	// aliasPause is an alias of storedPause (k8s.gcr.io redirects to
	// registry.k8s.io).
	aliasPause = "k8s.gcr.io/pause:3.10.1"
	// victim is an unused, unpinned image that the kubelet must delete in
	// every row: its removal shows that GC rounds ran past the minimum age,
	// so that a pause image still there afterwards was spared, not missed.
	victim = "docker.io/library/busybox:1.36"
)

// keptRounds is how many GC rounds after the victim's removal the pause image
// is watched: a pause image the kubelet does not remove in them is kept. An
// unpinned one goes in the round that removes the victim (both are older
// than the minimum age by then).
const keptRounds = 3

// rowTimeout bounds one row: the kubelet starts in seconds, the first GC
// round comes 10 s later and the victim goes in the second; then keptRounds
// more rounds, and a pod. Six minutes leave room for a busy machine.
const rowTimeout = 6 * time.Minute

// The runtimes of the rows.
const (
	runtimeContainerd = "containerd"
	runtimeCRIO       = "cri-o"
	runtimeCRIDockerd = "cri-dockerd"
)

// gcRow is one runtime, sandbox image configuration and path of the kubelet.
type gcRow struct {
	name       string
	runtime    string                 // runtimeContainerd, runtimeCRIO or runtimeCRIDockerd
	version    containerdtest.Version // containerd's build
	criDockerd cridockerdtest.Version // cri-dockerd's build; V044 when ""
	configured string                 // the sandbox image in the runtime's config
	// shim puts `sandboxpin shim` between the kubelet and the runtime.
	shim bool
	// fix applies what `sandboxpin audit` advises before the kubelet
	// starts (it must advise a change of configuration).
	fix bool
	// wantDeleted: the kubelet deletes the pause image (README.s GC table).
	wantDeleted bool
	// wantPod is what becomes of a hostNetwork static pod started once the
	// GC outcome is known: podRuns, podNoSandbox, podNoSandboxHere, or ""
	// (no pod).
	wantPod string
	// maxAge is the kubelet's imageMaximumGCAge: 0 runs the row under disk
	// pressure, anything else without, the kubelet's periodic image GC
	// removing images by age (ageRows).
	maxAge time.Duration
}

// What becomes of the static pod.
const (
	podRuns      = "Running"
	podNoSandbox = "no sandbox"
	// podNoSandboxHere: the runtime found its sandbox image, but cannot
	// start a sandbox on this machine (cri-dockerd's oom_score_adj -998
	// without CAP_SYS_RESOURCE); not a consequence sandboxpin predicts.
	podNoSandboxHere = "image found, no sandbox here"
)

// gcRows are the rows of issues 19 and 20.
var gcRows = []gcRow{
	// containerd 1.6.20 never sets pinned: no spelling helps; the shim does.
	{name: "containerd-1.6/exact", runtime: runtimeContainerd, version: containerdtest.V1, configured: storedPause, wantDeleted: true, wantPod: podNoSandbox},
	{name: "containerd-1.6/exact/shim", runtime: runtimeContainerd, version: containerdtest.V1, configured: storedPause, shim: true, wantPod: podRuns},
	// containerd 2.x pins by an exact string compare of the configured
	// name, and looks the sandbox image up by that name: through the shim
	// the image is kept, but pods still cannot start offline. The fix
	// audit advises (the stored spelling) does both.
	{name: "containerd-2.4/alias", runtime: runtimeContainerd, version: containerdtest.V24, configured: aliasPause, wantDeleted: true, wantPod: podNoSandbox},
	{name: "containerd-2.4/alias/shim", runtime: runtimeContainerd, version: containerdtest.V24, configured: aliasPause, shim: true, wantPod: podNoSandbox},
	{name: "containerd-2.4/alias/fixed", runtime: runtimeContainerd, version: containerdtest.V24, configured: aliasPause, fix: true, wantPod: podRuns},
	// containerd 2.4.2 with contrib/containerd/pin.patch pins the alias
	// spelling itself: the kubelet keeps the image with no shim.
	// It still looks the sandbox image up by the configured name, as stock
	// does, so pods cannot start offline: audit says so.
	{name: "containerd-2.4-pin/alias", runtime: runtimeContainerd, version: containerdtest.V24Pin, configured: aliasPause, wantPod: podNoSandbox},
	// The control case: the configured name is the stored one; and the
	// same through the shim, to compare the kubelet's errors and relists.
	{name: "containerd-2.4/exact", runtime: runtimeContainerd, version: containerdtest.V24, configured: storedPause, wantPod: podRuns},
	{name: "containerd-2.4/exact/shim", runtime: runtimeContainerd, version: containerdtest.V24, configured: storedPause, shim: true, wantPod: podRuns},
	// CRI-O pins pause_image by the names the image is stored under, and
	// looks it up by the configured name too.
	{name: "cri-o-1.36/alias", runtime: runtimeCRIO, configured: aliasPause, wantDeleted: true, wantPod: podNoSandbox},
	{name: "cri-o-1.36/alias/shim", runtime: runtimeCRIO, configured: aliasPause, shim: true, wantPod: podNoSandbox},
	{name: "cri-o-1.36/alias/fixed", runtime: runtimeCRIO, configured: aliasPause, fix: true, wantPod: podRuns},
	// cri-dockerd 0.4.4 pins by an exact string compare with Docker's repo
	// tags and pulls the configured name for every sandbox
	// (ensureSandboxImageExists in core/sandbox_run.go at v0.4.4), before it
	// asks Docker for the sandbox container, which runc cannot start here
	// (oom_score_adj -998): the pull's failure or success still shows.
	{name: "cri-dockerd-0.4.4/alias", runtime: runtimeCRIDockerd, configured: aliasPause, wantDeleted: true, wantPod: podNoSandbox},
	{name: "cri-dockerd-0.4.4/alias/shim", runtime: runtimeCRIDockerd, configured: aliasPause, shim: true, wantPod: podNoSandbox},
	{name: "cri-dockerd-0.4.4/alias/fixed", runtime: runtimeCRIDockerd, configured: aliasPause, fix: true, wantPod: podNoSandboxHere},
	// cri-dockerd 0.4.4 with contrib/cri-dockerd/pin.patch pins the alias
	// spelling itself: the kubelet keeps the image with no shim.
	// It still pulls the configured name for every sandbox, as stock does.
	{name: "cri-dockerd-0.4.4-pin/alias", runtime: runtimeCRIDockerd, criDockerd: cridockerdtest.V044Pin, configured: aliasPause, wantPod: podNoSandbox},
}

// shimPairs name, for rows through the shim, the direct row with the same
// runtime and outcome (the pause image kept, the pod running): the kubelet
// must log no error through the shim that it does not log there, and its
// PLEG relist latencies are compared.
var shimPairs = map[string]string{
	"containerd-2.4/exact/shim": "containerd-2.4/exact",
}

// gcResult is what one row predicted and observed.
type gcResult struct {
	row         gcRow
	release     string
	auditCode   int     // `sandboxpin audit`'s exit code before GC
	auditFail   string  // its FAIL and FIX lines
	unprotected float64 // serve's sandboxpin_unprotected_images before GC
	storedAs    float64 // audit's sandboxpin_sandbox_image_stored_as_configured before GC
	deleted     bool    // the kubelet removed the pause image
	after       time.Duration
	took        time.Duration
	pod         string // what became of the static pod
	pleg        kubelettest.Histogram
	errors      []string
}

// TestKubeletGC runs a real kubelet v1.37.2 under disk pressure against real
// containerd, CRI-O and cri-dockerd, directly and through `sandboxpin shim`, and checks
// which pause images its image GC deletes: the harm that sandboxpin exists
// to prevent, the shim and the advised fix preventing it, and that audit and
// serve predicted each outcome.
func TestKubeletGC(t *testing.T) { //nolint:tparallel // the rows run in parallel inside "rows", which must end before the comparisons
	t.Parallel()
	kubelettest.Require(t)
	results := runGCRows(t, gcRows)
	t.Logf("predicted × observed (imageMinimumGCAge %v, GC every %v under disk pressure):\n%s",
		kubelettest.DefaultMinimumGCAge, kubelettest.GCInterval, resultTable(gcRows, results))
	for shim, direct := range shimPairs {
		s, d := results[shim], results[direct]
		if s == nil || d == nil {
			continue
		}
		t.Run("shim-vs-direct/"+shim, func(t *testing.T) {
			var extra []string
			for _, e := range s.errors {
				if !slices.Contains(d.errors, e) {
					extra = append(extra, e)
				}
			}
			assert.Empty(t, extra, "errors the kubelet logs through the shim and not direct (direct: %q)", d.errors)
			require.NotZero(t, s.pleg.Count)
			require.NotZero(t, d.pleg.Count)
			t.Logf("PLEG relist: through the shim %v mean over %d relists, direct %v over %d: ratio %.2f",
				s.pleg.Mean(), s.pleg.Count, d.pleg.Mean(), d.pleg.Count, float64(s.pleg.Mean())/float64(d.pleg.Mean()))
			// A relay that serialised or stalled calls would show here; a
			// few hundred µs per relist are the shim's own cost.
			assert.Less(t, float64(s.pleg.Mean())/float64(d.pleg.Mean()), 10.0, "PLEG relists through the shim")
		})
	}
}

// runGCRows runs rows in parallel in a subtest "rows", and returns their
// results by name once all have ended.
func runGCRows(t *testing.T, rows []gcRow) map[string]*gcResult {
	var mu sync.Mutex
	results := map[string]*gcResult{}
	t.Run("rows", func(t *testing.T) {
		for _, tt := range rows {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				r := runGCRow(t, tt)
				mu.Lock()
				results[tt.name] = r
				mu.Unlock()
			})
		}
	})
	return results
}

// resultTable formats the rows' results, in the order of rows.
func resultTable(rows []gcRow, results map[string]*gcResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| row | runtime | configured | kubelet talks to | audit (exit) | serve unprotected | stored as configured | kubelet did | static pod | row took |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range rows {
		r := results[row.name]
		if r == nil {
			continue
		}
		path := "runtime"
		if row.shim {
			path = "sandboxpin shim"
		}
		predicted := "OK"
		if r.auditCode != 0 {
			predicted = "FAIL"
		}
		did := "kept"
		if r.deleted {
			did = fmt.Sprintf("DELETED after %v", r.after.Round(time.Second))
		}
		configured := row.configured
		if row.fix {
			configured += " → fixed"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s (%d) | %.0f | %.0f | %s | %s | %v |\n",
			row.name, r.release, configured, path, predicted, r.auditCode, r.unprotected, r.storedAs, did, orDash(shortPod(r.pod, row.configured)), r.took.Round(time.Second))
	}
	return b.String()
}

// shortPod shortens what became of the static pod for the table.
func shortPod(pod, configured string) string {
	if strings.HasPrefix(pod, podNoSandbox+":") {
		return podNoSandbox + " (pull of " + configured + " fails)"
	}
	if strings.HasPrefix(pod, podNoSandboxHere+":") {
		return podNoSandboxHere + " (oom_score_adj -998)"
	}
	return pod
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// node is a runtime under test as a row needs it.
type node struct {
	release  string
	endpoint string // the runtime's own socket
	root     string // a node root holding the runtime's config (--root)
	// configure rewrites the runtime's config to use image in place of
	// old, in the runtime and in root, and restarts the runtime.
	configure func(t *testing.T, old, image string)
}

// runGCRow runs one row until its outcome is known, and checks it against the
// table and the predictions.
func runGCRow(t *testing.T, tt gcRow) *gcResult {
	began := time.Now()
	timeout := rowTimeout
	if tt.maxAge > 0 {
		timeout = ageRowTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var n *node
	switch tt.runtime {
	case runtimeContainerd:
		n = startContainerd(t, tt)
	case runtimeCRIO:
		n = startCRIO(t, tt)
	case runtimeCRIDockerd:
		n = startCRIDockerd(t, tt)
	default:
		t.Fatalf("unknown runtime %q", tt.runtime)
	}
	res := &gcResult{row: tt, release: n.release}
	ids := imageIDs(ctx, t, n.endpoint)
	pauseID, victimID := ids[storedPause], ids[victim]
	require.NotEmpty(t, pauseID, "the runtime does not list %s", storedPause)
	require.NotEmpty(t, victimID, "the runtime does not list %s", victim)

	if tt.fix {
		code, out := audit(t, n.endpoint, n.root)
		require.Equal(t, 1, code, "audit before the fix:\n%s", out)
		m := regexp.MustCompile(`(?m)^FIX: configure the sandbox image as (\S+), the name it is stored under, in place of (\S+) `).FindStringSubmatch(out)
		require.NotNil(t, m, "audit advises no spelling:\n%s", out)
		require.Equal(t, tt.configured, m[2])
		t.Logf("%s: applying audit's advice: %s", tt.name, failLines(out))
		n.configure(t, m[2], m[1])
	}
	endpoint := n.endpoint
	if tt.shim {
		endpoint = startShim(t, n.endpoint, n.root)
	}

	// The predictions, before the kubelet runs.
	var out string
	res.auditCode, out = audit(t, endpoint, n.root)
	res.auditFail = failLines(out)
	require.Contains(t, []int{0, 1}, res.auditCode, "audit:\n%s", out)
	res.unprotected = serveUnprotected(t, endpoint, n.root)
	res.storedAs = fleetMetrics(t, tt.name, endpoint, n.root, res.auditCode)
	t.Logf("%s: predicted before GC: audit exit %d %s; serve sandboxpin_unprotected_images %.0f", tt.name, res.auditCode, res.auditFail, res.unprotected)
	if tt.version == containerdtest.V1 && tt.runtime == runtimeContainerd && !tt.shim {
		// No configuration fixes 1.6.20: the advice must say so, and name
		// the two ways out.
		assert.Regexp(t, `FIX: no configuration can: containerd 1\.6\.20\S* never reports Image\.pinned .*upgrade containerd or pin it through a CRI shim`, out)
	}
	pinned := pinnedByTag(ctx, t, endpoint)
	t.Logf("%s: the kubelet's endpoint reports %s pinned=%v", tt.name, storedPause, pinned[storedPause])

	start := time.Now()
	k := kubelettest.Start(t, kubeletOptions(endpoint, tt))
	t.Logf("%s: kubelet started in %v", tt.name, time.Since(start).Round(time.Millisecond))
	line, err := k.WaitForLog(ctx, kubelettest.RemovingImage(victimID))
	require.NoError(t, err, "the kubelet never removed the unpinned %s (%s)", victim, victimID)
	t.Logf("%s: %s removed %v after the kubelet's start: %s", tt.name, victim, time.Since(start).Round(time.Millisecond), line)
	if tt.maxAge > 0 {
		waitAgeRound(ctx, t, k, line)
	} else {
		rounds := len(k.Lines(kubelettest.GCRound()))
		_, err = k.WaitForLogCount(ctx, kubelettest.GCRound(), rounds+keptRounds)
		require.NoError(t, err, "GC rounds after the victim's removal")
	}
	if lines := k.Lines(kubelettest.RemovingImage(pauseID)); len(lines) > 0 {
		res.deleted, res.after = true, logTime(lines[0]).Sub(start)
		t.Logf("%s: %s DELETED: %s", tt.name, storedPause, lines[0])
		assert.NotContains(t, pinnedByTag(ctx, t, n.endpoint), storedPause, "the runtime still lists the pause image")
		assert.Zero(t, fleetMetrics(t, tt.name+afterGC, endpoint, n.root, 1), "stored as configured after the deletion")
	} else {
		t.Logf("%s: %s KEPT through the GC rounds that removed the victim and followed (%d under disk pressure)", tt.name, storedPause, keptRounds)
		assert.Contains(t, pinnedByTag(ctx, t, n.endpoint), storedPause, "the runtime lists the pause image")
	}

	podFailed := false
	if tt.wantPod != "" {
		res.pod = runPod(ctx, t, k, n.endpoint, tt)
		podFailed = strings.SplitN(res.pod, ":", 2)[0] == podNoSandbox
		assert.Equal(t, tt.wantPod, strings.SplitN(res.pod, ":", 2)[0], "the static pod")
	}

	// The verdicts: the table, audit (the image is deleted, or
	// pods cannot start offline), serve (the image is deleted).
	assert.Equal(t, tt.wantDeleted, res.deleted, "the kubelet deleted the pause image")
	assert.Equal(t, res.deleted || podFailed, res.auditCode == 1, "audit predicted (exit %d) %s", res.auditCode, res.auditFail)
	assert.Equal(t, res.deleted, res.unprotected >= 1, "serve predicted sandboxpin_unprotected_images %.0f", res.unprotected)
	// The gauge is 0 exactly where a pod cannot start offline although
	// the pause image was kept.
	if res.storedAs == 0 {
		assert.True(t, podFailed, "sandboxpin_sandbox_image_stored_as_configured 0, yet the pod got its sandbox: %s", res.pod)
	}
	if podFailed && !res.deleted {
		assert.Zero(t, res.storedAs, "the pause image was kept and the pod got no sandbox, yet sandboxpin_sandbox_image_stored_as_configured is 1")
	}
	if tt.maxAge > 0 {
		checkAgeRemovals(ctx, t, k, res.deleted)
	}

	if res.pod == podRuns && tt.runtime == runtimeCRIO {
		res.pod += "; " + infraPod(ctx, t, k)
	}
	if strings.HasPrefix(res.pod, podRuns) {
		// Relists with a running pod; the kubelet relists every second.
		body, err := k.Get(ctx, "/metrics")
		require.NoError(t, err)
		res.pleg, err = kubelettest.HistogramOf(body, "kubelet_pleg_relist_duration_seconds")
		require.NoError(t, err)
	}
	res.errors = k.Errors()
	res.took = time.Since(began)
	return res
}

// consequencePod is a hostNetwork static pod whose only container runs the
// pause image, never pulled.
const consequencePod = `apiVersion: v1
kind: Pod
metadata:
  name: consequence
  namespace: default
spec:
  hostNetwork: true
  containers:
  - name: app
    image: ` + storedPause + `
    imagePullPolicy: Never
`

// sandboxFailed matches the kubelet's log line when the runtime cannot make a
// pod's sandbox (RunPodSandbox in pkg/kubelet/kuberuntime at v1.37.2).
var sandboxFailed = regexp.MustCompile(`"RunPodSandbox from runtime service failed".*`)

// runPod starts consequencePod once the GC outcome is known and returns what
// became of it: podRuns, or podNoSandbox and the kubelet's error. With the
// pause image deleted, or stored under another name than the configured
// one, the runtime pulls it for the sandbox and cannot (it is offline).
func runPod(ctx context.Context, t *testing.T, k *kubelettest.Kubelet, endpoint string, tt gcRow) string {
	require.NoError(t, k.AddStaticPod("consequence.yaml", consequencePod))
	deadline := time.Now().Add(2 * time.Minute)
	for len(runningContainers(ctx, t, endpoint)) == 0 {
		if lines := k.Lines(sandboxFailed); len(lines) > 0 {
			t.Logf("%s: the static pod gets no sandbox: %s", tt.name, lines[0])
			msg := lines[0]
			if m := regexp.MustCompile(`err="(.*)"$`).FindStringSubmatch(lines[0]); m != nil {
				msg = m[1]
			}
			if tt.wantPod == podNoSandboxHere {
				// The sandbox image was there; runc could not set the
				// sandbox's oom_score_adj -998 (no CAP_SYS_RESOURCE).
				assert.Contains(t, lines[0], "can't get final child's PID from pipe")
				return podNoSandboxHere + ": " + msg
			}
			// The runtime tried to pull the sandbox image, and could not.
			assert.Regexp(t, `(?i)pull`, lines[0])
			assert.Contains(t, lines[0], tt.configured)
			return podNoSandbox + ": " + msg
		}
		if time.Now().After(deadline) {
			t.Fatalf("the static pod's container is not running after 2 min, and the kubelet logged no sandbox failure")
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("%s: the static pod runs", tt.name)
	// Ten relists with the pod running.
	time.Sleep(10 * time.Second)
	require.NotEmpty(t, runningContainers(ctx, t, endpoint), "the container stopped")
	return podRuns
}

// sharedPIDPod is a hostNetwork static pod that shares its PID namespace:
// CRI-O then runs an infra (pause) container for it.
const sharedPIDPod = `apiVersion: v1
kind: Pod
metadata:
  name: shared-pid
  namespace: default
spec:
  hostNetwork: true
  shareProcessNamespace: true
  containers:
  - name: app
    image: ` + storedPause + `
    imagePullPolicy: Never
`

// infraPod starts sharedPIDPod on CRI-O and returns its fate. CRI-O 1.36.3
// runs pods without an infra container (drop_infra_ctr, default true in
// pkg/config/config.go) unless they share their PID namespace
// (NeedsInfra in internal/lib/sandbox/sandbox_linux.go), so the pods above
// run here without CAP_SYS_RESOURCE. An infra container gets oom_score_adj
// -998 (PodInfraOOMAdj in server/sandbox_run.go, set unconditionally in
// server/sandbox_run_linux.go), and CRI-O has no option like containerd's
// restrict_oom_score_adj: on this machine runc cannot start it.
func infraPod(ctx context.Context, t *testing.T, k *kubelettest.Kubelet) string {
	require.NoError(t, k.AddStaticPod("shared-pid.yaml", sharedPIDPod))
	line, err := k.WaitForLog(ctx, regexp.MustCompile(`CreatePodSandbox.*shared-pid-.*failed to update /proc/self/oom_score_adj: Permission denied`))
	if err != nil {
		t.Errorf("the pod that shares its PID namespace got no sandbox failure for oom_score_adj: %v; errors: %q", err, k.Errors())
		return "shared-PID pod: unknown"
	}
	t.Logf("%s: CRI-O cannot start the infra container of a pod that shares its PID namespace: %s", "cri-o", line)
	return "shared-PID pod: no sandbox (infra container oom_score_adj -998)"
}

// runningContainers returns the names of the runtime's running containers.
func runningContainers(ctx context.Context, t *testing.T, endpoint string) []string {
	t.Helper()
	conn := dial(ctx, t, endpoint)
	defer conn.Close()
	resp, err := runtimeapi.NewRuntimeServiceClient(conn).ListContainers(ctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}},
	})
	require.NoError(t, err)
	var names []string
	for _, c := range resp.GetContainers() {
		names = append(names, c.GetMetadata().GetName())
	}
	return names
}

// removePodsAtCleanup stops and removes every pod sandbox of the runtime at
// endpoint when the test ends: registered after the runtime starts and
// before the kubelet, it runs after the kubelet stops and before the runtime
// does, so that no shim or pause process outlives the test.
func removePodsAtCleanup(t *testing.T, endpoint string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn := dial(ctx, t, endpoint)
		defer conn.Close()
		containerdtest.RemoveSandboxes(t, runtimeapi.NewRuntimeServiceClient(conn))
	})
}

// startContainerd starts containerd for tt with the pause image (runnable)
// and the victim.
func startContainerd(t *testing.T, tt gcRow) *node {
	pause, err := pauseBinary()
	require.NoError(t, err)
	ctrd := containerdtest.Start(t, tt.version, containerdtest.Options{
		SandboxImage: tt.configured,
		// Pods need both here: no CAP_SYS_RESOURCE, and no pull may
		// leave the machine.
		RestrictOOMScoreAdj: tt.wantPod != "",
		Offline:             tt.wantPod != "",
	})
	if tt.wantPod != "" && tt.version != containerdtest.V1 && tt.version.Shim() == "" {
		t.Skipf("%v: pods need containerd %s's own containerd-shim-runc-v2; run `bash scripts/deps.sh`", tt.version, tt.version.Release())
	}
	ctrd.Import(t, containerdtest.Image{Names: []string{storedPause}, Executable: pause}, containerdtest.Image{Names: []string{victim}})
	removePodsAtCleanup(t, ctrd.Endpoint)
	root := t.TempDir()
	cfgPath := filepath.Join(ctrd.Dir, "config.toml")
	nodeCfg := filepath.Join(root, "etc", "containerd", "config.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(nodeCfg), 0o750))
	copyFile(t, cfgPath, nodeCfg)
	release := "containerd " + tt.version.Release()
	if tt.version == containerdtest.V24Pin {
		release += " + contrib/containerd/pin.patch"
	}
	return &node{
		release:  release,
		endpoint: ctrd.Endpoint,
		root:     root,
		configure: func(t *testing.T, old, image string) {
			cfg, err := os.ReadFile(cfgPath)
			require.NoError(t, err)
			q := func(s string) string { return fmt.Sprintf("%q", s) }
			require.Equal(t, 1, strings.Count(string(cfg), q(old)), "the config names %s once:\n%s", old, cfg)
			require.NoError(t, os.WriteFile(cfgPath, []byte(strings.Replace(string(cfg), q(old), q(image), 1)), 0o600)) //nolint:gosec // G703: the runtime's config in the test's own temporary directory
			copyFile(t, cfgPath, nodeCfg)
			ctrd.Restart(t)
		},
	}
}

// startCRIO starts CRI-O for tt with the pause image and the victim.
func startCRIO(t *testing.T, tt gcRow) *node {
	criotest.Require(t)
	pause, err := pauseBinary()
	require.NoError(t, err)
	c := criotest.Start(t, criotest.Options{
		PauseImage: tt.configured,
		Images:     []containerdtest.Image{{Names: []string{storedPause}, Executable: pause}, {Names: []string{victim}}},
		Offline:    tt.wantPod != "",
	})
	removePodsAtCleanup(t, c.Endpoint)
	return &node{
		release:  "CRI-O " + strings.TrimPrefix(criotest.Version, "v"),
		endpoint: c.Endpoint,
		root:     c.Dir,
		configure: func(t *testing.T, _, image string) {
			c.Configure(t, image, nil)
			c.Reload(t)
		},
	}
}

// startCRIDockerd starts Docker Engine and cri-dockerd 0.4.4 (or
// tt.criDockerd) for tt with the pause image and the victim. dockerd is
// always offline (its own network namespace with loopback only), so a pull
// fails at once.
func startCRIDockerd(t *testing.T, tt gcRow) *node {
	v := cmp.Or(tt.criDockerd, cridockerdtest.V044)
	cridockerdtest.Require(t, v)
	pause, err := pauseBinary()
	require.NoError(t, err)
	d := cridockerdtest.Start(t, v, cridockerdtest.Options{
		PodInfraImage: tt.configured,
		Images:        []containerdtest.Image{{Names: []string{storedPause}, Executable: pause}, {Names: []string{victim}}},
	})
	removePodsAtCleanup(t, d.Endpoint)
	release := "cri-dockerd " + v.Release()
	if v.Patched() {
		release += " + contrib/cri-dockerd/pin.patch"
	}
	return &node{
		release:  release,
		endpoint: d.Endpoint,
		root:     d.Dir,
		// The unit's flag changes, and cri-dockerd restarts.
		configure: func(t *testing.T, _, image string) { d.Restart(t, image) },
	}
}

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, b, 0o600)) //nolint:gosec // G703: a file in the test's own temporary directory
}

// klogTime matches the time stamp of a klog line: "I1203 17:05:41.123456".
var klogTime = regexp.MustCompile(`^[IWEF](\d{4} \d\d:\d\d:\d\d\.\d{6})`)

// logTime returns the time a klog line was written (this year, UTC), or the
// zero time.
func logTime(line string) time.Time {
	m := klogTime.FindStringSubmatch(line)
	if m == nil {
		return time.Time{}
	}
	ts, err := time.Parse("0102 15:04:05.000000", m[1])
	if err != nil {
		return time.Time{}
	}
	now := time.Now().UTC()
	return ts.AddDate(now.Year(), 0, 0)
}

// failLines returns audit's FAIL, FIX and OK lines.
func failLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "FAIL: ") || strings.HasPrefix(l, "FIX: ") || strings.HasPrefix(l, "OK: ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, " ")
}

// audit runs `sandboxpin audit` against endpoint with the node root and
// args, and returns its exit code and standard output.
func audit(t *testing.T, endpoint, root string, args ...string) (int, string) {
	t.Helper()
	bin, err := sandboxpinBinary()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"audit", "--runtime-endpoint", endpoint, "--root", root}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("audit: %v\n%s", err, stderr.String())
	}
	if code == 2 {
		t.Fatalf("audit failed: %s", stderr.String())
	}
	return code, stdout.String()
}

// servingAddr is what serve logs once it listens.
var servingAddr = regexp.MustCompile(`msg=serving addr=(\S+)`)

// serveUnprotected runs `sandboxpin serve` against endpoint with the node
// root, scrapes /metrics once and returns sandboxpin_unprotected_images.
func serveUnprotected(t *testing.T, endpoint, root string) float64 {
	t.Helper()
	bin, err := sandboxpinBinary()
	require.NoError(t, err)
	log := &runtimetest.SyncBuffer{}
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--runtime-endpoint", endpoint, "--root", root, "--min-interval", "0", "--interval", "1h")
	cmd.Stderr = log
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	require.Eventually(t, func() bool { return servingAddr.MatchString(log.String()) }, 30*time.Second, 10*time.Millisecond, "serve did not log its address:\n%s", log)
	url := "http://" + servingAddr.FindStringSubmatch(log.String())[1] + "/metrics"
	out, err := exec.Command("curl", "-fsS", "--max-time", "30", url).Output()
	require.NoError(t, err, "GET %s; serve log:\n%s", url, log)
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "sandboxpin_") {
			got = append(got, line)
		}
	}
	require.Contains(t, got, "sandboxpin_audit_success 1", "serve's audit failed:\n%s\nlog:\n%s", strings.Join(got, "\n"), log)
	v, err := kubelettest.GaugeOf(string(out), "sandboxpin_unprotected_images")
	require.NoError(t, err)
	return v
}

// dial connects to a CRI endpoint.
func dial(ctx context.Context, t *testing.T, endpoint string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.DialContext(ctx, endpoint, grpc.WithTransportCredentials(insecure.NewCredentials())) //nolint:staticcheck // SA1019: NewClient needs grpc 1.63, above this module's floor
	require.NoError(t, err)
	return conn
}

// listImages returns the images of the runtime at endpoint.
func listImages(ctx context.Context, t *testing.T, endpoint string) []*runtimeapi.Image {
	t.Helper()
	conn := dial(ctx, t, endpoint)
	defer conn.Close()
	resp, err := runtimeapi.NewImageServiceClient(conn).ListImages(ctx, &runtimeapi.ListImagesRequest{})
	require.NoError(t, err, "ListImages at %s", endpoint)
	return resp.GetImages()
}

// pinnedByTag returns the runtime's images at endpoint by repo tag (and by
// its full name, see fullName), with their pinned flag.
func pinnedByTag(ctx context.Context, t *testing.T, endpoint string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for _, img := range listImages(ctx, t, endpoint) {
		for _, tag := range img.GetRepoTags() {
			got[tag], got[fullName(tag)] = img.GetPinned(), img.GetPinned()
		}
	}
	return got
}

// imageIDs returns the runtime's image IDs by repo tag (and by its full
// name): the IDs the kubelet logs when it removes an image.
func imageIDs(ctx context.Context, t *testing.T, endpoint string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, img := range listImages(ctx, t, endpoint) {
		for _, tag := range img.GetRepoTags() {
			got[tag], got[fullName(tag)] = img.GetId(), img.GetId()
		}
	}
	return got
}

// fullName expands the familiar names Docker lists (cri-dockerd passes
// Docker's repo tags on: busybox:1.36) into the full ones the other
// runtimes list (docker.io/library/busybox:1.36).
func fullName(tag string) string {
	first, rest, ok := strings.Cut(tag, "/")
	switch {
	case !ok:
		return "docker.io/library/" + tag
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		return "docker.io/" + first + "/" + rest
	}
	return tag
}

// TestMain removes what the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	removeBuilds()
	os.Exit(code)
}

// startShim starts `sandboxpin shim` in front of the runtime at endpoint
// (startShimProcess) and returns the shim's endpoint.
func startShim(t *testing.T, endpoint, root string) string {
	t.Helper()
	return startShimProcess(t, endpoint, root).Endpoint
}

// firstLine returns the first line of s that matches re.
func firstLine(s string, re *regexp.Regexp) string {
	lines := strings.Split(s, "\n")
	i := slices.IndexFunc(lines, re.MatchString)
	if i < 0 {
		return ""
	}
	return lines[i]
}
