package crishim

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
)

// The shim under runtime faults: a runtime that restarts, one that is not
// there yet when the shim starts, and a reload that fails.

// reconnectBound is how long calls may keep failing after the runtime is
// back: the shim's reconnect backoff (reconnectMax) plus slack for a busy
// machine.
const reconnectBound = 10 * time.Second

// gapCalls is how many calls the tests make while the runtime is down.
const gapCalls = 5

// serveFakeAt serves f on a unix socket at path until the returned stop
// is called (or the test ends); stop removes the socket.
func serveFakeAt(tb testing.TB, path string, f *fakeRuntime) (stop func()) {
	tb.Helper()
	lis, err := net.Listen("unix", path)
	require.NoError(tb, err)
	srv := grpc.NewServer(grpc.ForceServerCodecV2(testCodec{}), grpc.UnknownServiceHandler(echo))
	runtimeapi.RegisterRuntimeServiceServer(srv, f)
	runtimeapi.RegisterImageServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	var once sync.Once
	stop = func() { once.Do(srv.Stop) }
	tb.Cleanup(stop)
	return stop
}

// callTimeout bounds each call of these tests.
const callTimeout = 5 * time.Second

func listImages(ctx context.Context, c runtimeapi.ImageServiceClient) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return nil, err
	}
	return pinnedByTag(resp.GetImages()), nil
}

// requireGap checks that image and runtime calls through the shim fail with
// Unavailable, gapCalls times each.
func requireGap(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	ctx := testContext(t)
	images, runtime := runtimeapi.NewImageServiceClient(conn), runtimeapi.NewRuntimeServiceClient(conn)
	for range gapCalls {
		_, err := listImages(ctx, images)
		require.Equal(t, codes.Unavailable, status.Code(err), "ListImages while the runtime is away: %v", err)
		vctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err = runtime.Version(vctx, &runtimeapi.VersionRequest{})
		cancel()
		require.Equal(t, codes.Unavailable, status.Code(err), "Version while the runtime is away: %v", err)
	}
}

// awaitPinned polls ListImages through the shim until it succeeds (within
// reconnectBound) and returns the pins of the first answer.
func awaitPinned(t *testing.T, c runtimeapi.ImageServiceClient) map[string]bool {
	t.Helper()
	ctx := testContext(t)
	deadline := time.Now().Add(reconnectBound)
	for {
		got, err := listImages(ctx, c)
		if err == nil {
			return got
		}
		require.Equal(t, codes.Unavailable, status.Code(err), "while reconnecting: %v", err)
		require.True(t, time.Now().Before(deadline), "the shim did not reach the runtime again within %v: %v", reconnectBound, err)
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRuntimeRestarts stops and starts the fake runtime on the same socket
// three times under a running shim: calls in each gap fail with
// Unavailable, calls after it succeed and pin as before.
func TestRuntimeRestarts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(shortTempDir(t), "rt.sock")
	stop := serveFakeAt(t, path, newFake())
	_, shimPath := startShim(t, path, fixed(testMatcher(t)))
	conn := dial(t, shimPath)
	images := runtimeapi.NewImageServiceClient(conn)
	require.Equal(t, wantPinnedByTag(), awaitPinned(t, images))
	for cycle := range 3 {
		stop()
		requireGap(t, conn)
		start := time.Now()
		stop = serveFakeAt(t, path, newFake())
		assert.Equal(t, wantPinnedByTag(), awaitPinned(t, images), "after restart %d", cycle+1)
		t.Logf("restart %d: serving again after %v", cycle+1, time.Since(start).Round(time.Millisecond))
	}
}

// TestRuntimeLate starts the shim before the runtime's socket exists: it
// serves, answers image calls Unavailable (never unpinned) and other calls
// as the absent runtime makes them fail, and once the runtime appears it
// loads its rules and pins.
func TestRuntimeLate(t *testing.T) {
	t.Parallel()
	dir := shortTempDir(t)
	path := filepath.Join(dir, "rt.sock")
	shimPath := filepath.Join(dir, "shim.sock")
	log, _ := startRunShim(t, Options{Listen: "unix://" + shimPath, RuntimeEndpoint: "unix://" + path, Node: nodeOptions(t.TempDir())})
	assert.Contains(t, log.String(), "the runtime is not reachable yet")
	conn := dial(t, shimPath)
	requireGap(t, conn)
	_, err := listImages(testContext(t), runtimeapi.NewImageServiceClient(conn))
	assert.Contains(t, status.Convert(err).Message(), "no pin rules loaded yet")

	serveFakeAt(t, path, newFake())
	got := awaitPinned(t, runtimeapi.NewImageServiceClient(conn))
	assert.True(t, got[tagPause], "containerd 2.2's default sandbox image is pinned once the runtime is there: %v", got)
	assert.False(t, got[tagBusy], "busybox is not: %v", got)
	waitFor(t, reconnectBound, "the log to say so", func() bool { return strings.Contains(log.String(), "pin rules loaded, image calls served again") })
}

// containerdConfig returns a containerd 2.x config whose sandbox image is
// image.
func containerdConfig(image string) string {
	return "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\nsandbox = '" + image + "'\n"
}

// writeConfig replaces the containerd config under root atomically, so
// that a reload reads the old file or the new one, never half of one.
func writeConfig(t testing.TB, root, content string) {
	t.Helper()
	etc := filepath.Join(root, "etc", "containerd")
	require.NoError(t, os.MkdirAll(etc, 0o750))
	tmp := filepath.Join(etc, ".config.toml.tmp")
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600)) //nolint:gosec // G703: a file in the test's own temporary directory
	require.NoError(t, os.Rename(tmp, filepath.Join(etc, "config.toml")))
}

// TestReloadMalformed reloads the node's rules after its config file
// became malformed: the reload fails, says so, and keeps the previous
// rules; once the file is fixed the next reload takes it.
func TestReloadMalformed(t *testing.T) {
	t.Parallel()
	runtimePath := startFake(t, newFake())
	root := t.TempDir()
	writeConfig(t, root, containerdConfig(tagBusy))
	shimPath := filepath.Join(shortTempDir(t), "shim.sock")
	log, hup := startRunShim(t, Options{Listen: "unix://" + shimPath, RuntimeEndpoint: "unix://" + runtimePath, Node: nodeOptions(root)})
	images := runtimeapi.NewImageServiceClient(dial(t, shimPath))
	ctx := testContext(t)

	steps := []struct {
		name       string
		config     string
		wantLog    string // in the log after the reload
		wantPinned string // the tag pinned by the node's rules
	}{
		{name: "malformed", config: "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images\nsandbox = ", wantLog: "keeping the previous ones", wantPinned: tagBusy},
		{name: "fixed", config: containerdConfig(tagPause), wantLog: "pin rules loaded", wantPinned: tagPause},
	}
	got, err := listImages(ctx, images)
	require.NoError(t, err)
	require.True(t, got[tagBusy], "busybox pinned by the first config: %v", got)
	for _, st := range steps { // sequential: each reload follows the one before
		writeConfig(t, root, st.config)
		before := strings.Count(log.String(), st.wantLog)
		hup <- os.Interrupt // any value
		waitFor(t, reconnectBound, st.name+" reload", func() bool { return strings.Count(log.String(), st.wantLog) > before })
		got, err := listImages(ctx, images)
		require.NoError(t, err, st.name)
		for _, tag := range []string{tagBusy, tagPause} {
			assert.Equal(t, tag == st.wantPinned, got[tag], "%s: %s pinned", st.name, tag)
		}
	}
	assert.Contains(t, log.String(), "config.toml", "the failed reload names the file")
	t.Logf("log:\n%s", log.String())
}

// TestLiveRuntimeRestart runs the shim (runShim, as the binary does) in
// front of a real containerd, stops containerd and starts it again on the
// same socket: calls in the gap fail with Unavailable, a SIGHUP in the gap
// keeps the rules, and after the restart the shim pins again without a
// restart of its own.
func TestLiveRuntimeRestart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		version    containerdtest.Version
		configured string // the sandbox image in containerd's config
	}{
		{name: "containerd-1.6", version: containerdtest.V1, configured: tagPause},
		{name: "containerd-2.2-alias", version: containerdtest.V2, configured: "k8s.gcr.io/pause:3.10.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctrd := containerdtest.Start(t, tt.version, containerdtest.Options{
				SandboxImage: tt.configured,
				Images:       []containerdtest.Image{{Names: []string{tagPause}}, {Names: []string{tagBusy}}},
			})
			root := t.TempDir()
			cfg, err := os.ReadFile(filepath.Join(ctrd.Dir, "config.toml"))
			require.NoError(t, err)
			writeConfig(t, root, string(cfg))
			shimPath := filepath.Join(shortTempDir(t), "shim.sock")
			log, hup := startRunShim(t, Options{Listen: "unix://" + shimPath, RuntimeEndpoint: ctrd.Endpoint, Node: nodeOptions(root)})
			conn := dial(t, shimPath)
			images := runtimeapi.NewImageServiceClient(conn)
			want := map[string]bool{tagPause: true, tagBusy: false}
			require.Equal(t, want, awaitPinned(t, images), "before the restart")

			ctrd.Stop(t)
			requireGap(t, conn)
			hup <- os.Interrupt
			waitFor(t, reconnectBound, "the reload in the gap to fail", func() bool { return strings.Contains(log.String(), "keeping the previous ones") })

			start := time.Now()
			ctrd.Restart(t)
			assert.Equal(t, want, awaitPinned(t, images), "after the restart")
			t.Logf("%s: ready and pinning again %v after the restart began", tt.name, time.Since(start).Round(time.Millisecond))
		})
	}
}
