package kubelettest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
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

// keptRounds is how many GC rounds after the victim's removal a kept pause
// image must survive.
const keptRounds = 3

// rowTimeout bounds one row: the kubelet starts in seconds, the first GC
// round comes 10 s later and the victim goes in the second; a kept row then
// waits keptRounds more rounds. Five minutes leaves room for a busy machine.
const rowTimeout = 5 * time.Minute

// gcRow is one runtime, sandbox image configuration and path of the kubelet.
type gcRow struct {
	name        string
	version     containerdtest.Version
	configured  string // the sandbox image in containerd's config
	shim        bool   // the kubelet talks to examples/crishim in front of the runtime
	wantDeleted bool   // the kubelet deletes the pause image
}

// gcRows are the rows of issue 19 that need containerd only.
var gcRows = []gcRow{
	// containerd 1.6.20 never sets pinned.
	{name: "containerd-1.6/exact", version: containerdtest.V1, configured: storedPause, wantDeleted: true},
	// containerd 2.x pins by an exact string compare of the configured name.
	{name: "containerd-2.4/alias", version: containerdtest.V24, configured: aliasPause, wantDeleted: true},
	// The control case: the configured name is the stored one.
	{name: "containerd-2.4/exact", version: containerdtest.V24, configured: storedPause},
	// Through the shim, the sandbox image resolved from the live runtime
	// is pinned.
	{name: "containerd-1.6/exact/shim", version: containerdtest.V1, configured: storedPause, shim: true},
}

// TestKubeletGC runs a real kubelet v1.37.2 under disk pressure against real
// containerd and checks which pause images its image GC deletes: the harm
// that sandboxpin exists to prevent, and the shim preventing it.
func TestKubeletGC(t *testing.T) {
	t.Parallel()
	kubelettest.Require(t)
	for _, tt := range gcRows {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runGCRow(t, tt)
		})
	}
}

// runGCRow runs one row: containerd with the pause image and the victim, the
// shim if asked, and a kubelet, until the outcome is known.
func runGCRow(t *testing.T, tt gcRow) {
	ctrd := containerdtest.Start(t, tt.version, containerdtest.Options{SandboxImage: tt.configured})
	ids := ctrd.Import(t, containerdtest.Image{Names: []string{storedPause}}, containerdtest.Image{Names: []string{victim}})
	pauseID, victimID := ids[0], ids[1]

	endpoint := ctrd.Endpoint
	if tt.shim {
		endpoint = startShim(t, ctrd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), rowTimeout)
	defer cancel()
	pinned := pinnedByTag(ctx, t, endpoint)
	t.Logf("%s: the kubelet's endpoint reports %s pinned=%v, %s pinned=%v", tt.name, storedPause, pinned[storedPause], victim, pinned[victim])
	require.Contains(t, pinned, storedPause)
	require.Contains(t, pinned, victim)
	assert.Equal(t, !tt.wantDeleted, pinned[storedPause], "pinned as the kubelet sees it")

	start := time.Now()
	k := kubelettest.Start(t, kubelettest.Options{RuntimeEndpoint: endpoint})
	t.Logf("%s: kubelet started in %v", tt.name, time.Since(start).Round(time.Millisecond))

	line, err := k.WaitForLog(ctx, kubelettest.RemovingImage(victimID))
	require.NoError(t, err, "the kubelet never removed the unpinned %s (%s)", victim, victimID)
	victimGone := time.Since(start)
	t.Logf("%s: %s removed %v after the kubelet's start: %s", tt.name, victim, victimGone.Round(time.Millisecond), line)

	if tt.wantDeleted {
		line, err := k.WaitForLog(ctx, kubelettest.RemovingImage(pauseID))
		require.NoError(t, err, "the kubelet never removed %s (%s)", storedPause, pauseID)
		t.Logf("%s: %s DELETED %v after the kubelet's start: %s", tt.name, storedPause, time.Since(start).Round(time.Millisecond), line)
		assert.NotContains(t, pinnedByTag(ctx, t, ctrd.Endpoint), storedPause, "the runtime still lists the pause image")
		return
	}
	rounds := len(k.Lines(kubelettest.GCRound()))
	_, err = k.WaitForLogCount(ctx, kubelettest.GCRound(), rounds+keptRounds)
	require.NoError(t, err, "GC rounds after the victim's removal")
	assert.Empty(t, k.Lines(kubelettest.RemovingImage(pauseID)), "the kubelet removed the pause image")
	assert.Contains(t, pinnedByTag(ctx, t, ctrd.Endpoint), storedPause, "the runtime lists the pause image")
	t.Logf("%s: %s KEPT through %d GC rounds after the victim's removal, %v after the kubelet's start",
		tt.name, storedPause, keptRounds, time.Since(start).Round(time.Millisecond))
}

// pinnedByTag returns the runtime's images at endpoint by repo tag, with
// their pinned flag.
func pinnedByTag(ctx context.Context, t *testing.T, endpoint string) map[string]bool {
	t.Helper()
	conn, err := grpc.DialContext(ctx, endpoint, grpc.WithTransportCredentials(insecure.NewCredentials())) //nolint:staticcheck // SA1019: NewClient needs grpc 1.63, above this module's floor
	require.NoError(t, err)
	defer conn.Close()
	resp, err := runtimeapi.NewImageServiceClient(conn).ListImages(ctx, &runtimeapi.ListImagesRequest{})
	require.NoError(t, err, "ListImages at %s", endpoint)
	got := map[string]bool{}
	for _, img := range resp.GetImages() {
		for _, tag := range img.GetRepoTags() {
			got[tag] = img.GetPinned()
		}
	}
	return got
}

// shimDir holds the shim binary once shimBinary has built it.
var shimDir struct {
	sync.Mutex
	path string
}

// shimBinary builds examples/crishim once per test binary.
var shimBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "sbk-shim")
	if err != nil {
		return "", err
	}
	shimDir.Lock()
	shimDir.path = dir
	shimDir.Unlock()
	bin := filepath.Join(dir, "crishim")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Built from the workspace (go.work): the live tests do not run in the
	// floor and newest runs, which set GOWORK=off.
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/sandboxpin/sandboxpin/examples/crishim").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build examples/crishim: %w\n%s", err, out)
	}
	return bin, nil
})

// TestMain removes the shim binary, if a test built it.
func TestMain(m *testing.M) {
	code := m.Run()
	shimDir.Lock()
	if shimDir.path != "" {
		_ = os.RemoveAll(shimDir.path)
	}
	shimDir.Unlock()
	os.Exit(code)
}

// startShim starts examples/crishim in front of ctrd, resolving the sandbox
// image from a node tree that holds ctrd's config and from the live runtime,
// and returns the shim's endpoint.
func startShim(t *testing.T, ctrd *containerdtest.Containerd) string {
	t.Helper()
	bin, err := shimBinary()
	require.NoError(t, err)
	root := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join(ctrd.Dir, "config.toml"))
	require.NoError(t, err)
	etc := filepath.Join(root, "etc", "containerd")
	require.NoError(t, os.MkdirAll(etc, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(etc, "config.toml"), cfg, 0o600)) //nolint:gosec // G703: a file in the test's own temporary directory
	dir, err := os.MkdirTemp("/tmp", "sbs")
	require.NoError(t, err)
	sock := filepath.Join(dir, "shim.sock")
	stderr := &runtimetest.SyncBuffer{}
	cmd := exec.Command(bin, "--listen", "unix://"+sock, "--runtime-endpoint", ctrd.Endpoint, "--root", root)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("crishim log:\n%s", stderr.String())
		}
		_ = os.RemoveAll(dir)
	})
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(stderr.String(), "msg=serving") || !strings.Contains(stderr.String(), "pin rules loaded") {
		select {
		case <-exited:
			t.Fatalf("crishim exited:\n%s", stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("crishim did not serve with rules:\n%s", stderr.String())
		}
	}
	t.Logf("crishim: %s", firstLine(stderr.String(), regexp.MustCompile(`pin rules loaded`)))
	return "unix://" + sock
}

// firstLine returns the first line of s that matches re.
func firstLine(s string, re *regexp.Regexp) string {
	i := slices.IndexFunc(strings.Split(s, "\n"), re.MatchString)
	if i < 0 {
		return ""
	}
	return strings.Split(s, "\n")[i]
}
