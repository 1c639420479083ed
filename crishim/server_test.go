package crishim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
	"github.com/sandboxpin/sandboxpin/pin"
)

// serveShim runs a Shim made by New(o) until the test ends, and returns it;
// the test's failures show its log.
func serveShim(t *testing.T, o Options) *Shim {
	t.Helper()
	log := &runtimetest.SyncBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(log, nil))
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, o)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "Serve; log:\n%s", log)
		case <-time.After(2 * shutdownGrace):
			t.Errorf("Serve did not stop; log:\n%s", log)
		}
	})
	return s
}

// scrape returns GET path from h, and its status code.
func scrape(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, path, nil))
	b, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, string(b)
}

// TestSocketMatchesRuntime checks that the shim's socket gets the mode,
// owner and group of the runtime's.
func TestSocketMatchesRuntime(t *testing.T) {
	t.Parallel()
	runtimePath := startFake(t, newFake())
	require.NoError(t, os.Chmod(runtimePath, 0o640)) //nolint:gosec // G302: a socket mode other than the default, for the shim to copy
	shimPath := filepath.Join(shortTempDir(t), "shim.sock")
	serveShim(t, Options{Listen: shimPath, RuntimeEndpoint: runtimePath, Node: nodeOptions(t.TempDir())})
	want, err := os.Stat(runtimePath)
	require.NoError(t, err)
	got, err := os.Stat(shimPath)
	require.NoError(t, err)
	assert.Equal(t, want.Mode(), got.Mode(), "the shim's socket mode")
	ws, gs := want.Sys().(*syscall.Stat_t), got.Sys().(*syscall.Stat_t) //nolint:forcetypeassert // Linux
	assert.Equal(t, [2]uint32{ws.Uid, ws.Gid}, [2]uint32{gs.Uid, gs.Gid}, "the shim's socket owner and group")
}

// TestMetrics makes calls through the shim and checks what /metrics and
// /healthz say.
func TestMetrics(t *testing.T) {
	t.Parallel()
	runtimePath := startFake(t, newFake())
	root := t.TempDir()
	shimPath := filepath.Join(shortTempDir(t), "shim.sock")
	s := serveShim(t, Options{Listen: shimPath, RuntimeEndpoint: runtimePath, Node: nodeOptions(root),
		Pins: []string{"registry.example.com/infra/*", ""}})
	h := s.Handler()
	code, body := scrape(t, h, "/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)

	ctx := testContext(t)
	conn := dial(t, shimPath)
	images := runtimeapi.NewImageServiceClient(conn)
	for range 2 {
		_, err := images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
		require.NoError(t, err)
	}
	_, err := images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: tagPause}})
	require.NoError(t, err)
	_, err = images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "absent:1"}})
	assert.Equal(t, codes.NotFound, status.Code(err))
	_, err = runtimeapi.NewRuntimeServiceClient(conn).RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{})
	assert.Equal(t, codes.Unimplemented, status.Code(err))
	require.NoError(t, conn.Invoke(ctx, futureMethod, &rawFrame{data: []byte("x")}, new(rawFrame), grpc.ForceCodecV2(rawCodec{})))

	writeConfig(t, root, "version = 3\n[plugins.'io.containerd.cri.v1.images'\n") // malformed
	require.Error(t, s.Reload(ctx))
	writeConfig(t, root, containerdConfig(tagBusy))
	require.NoError(t, s.Reload(ctx))

	_, body = scrape(t, h, "/metrics")
	for _, want := range []string{
		`sandboxpin_shim_calls_total{code="OK",method="/runtime.v1.ImageService/ListImages"} 2`,
		`sandboxpin_shim_calls_total{code="OK",method="/runtime.v1.ImageService/ImageStatus"} 1`,
		`sandboxpin_shim_calls_total{code="NotFound",method="/runtime.v1.ImageService/ImageStatus"} 1`,
		`sandboxpin_shim_calls_total{code="Unimplemented",method="/runtime.v1.RuntimeService/RunPodSandbox"} 1`,
		`sandboxpin_shim_calls_total{code="OK",method="other"} 1`,
		// pause and infra in each list, pause in its status.
		`sandboxpin_shim_images_pinned_total 5`,
		`sandboxpin_shim_rule_reloads_total{result="ok"} 2`,
		`sandboxpin_shim_rule_reloads_total{result="kept"} 1`,
		`sandboxpin_shim_rule_reloads_total{result="failed"} 0`,
		// The sandbox image and the --pin glob ("" is no rule).
		`sandboxpin_shim_rules 2`,
		`sandboxpin_shim_rules_loaded 1`,
		`sandboxpin_shim_runtime_reconnects_total 0`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		assert.Contains(t, body, want+"")
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}

// TestMetricsWaiting checks /healthz and the reload metrics of a shim that
// started before its runtime, and the reconnect once the runtime comes
// back after going away.
func TestMetricsWaiting(t *testing.T) {
	t.Parallel()
	runtimePath := filepath.Join(shortTempDir(t), "rt.sock")
	shimPath := filepath.Join(shortTempDir(t), "shim.sock")
	s := serveShim(t, Options{Listen: shimPath, RuntimeEndpoint: runtimePath, Node: nodeOptions(t.TempDir())})
	h := s.Handler()
	code, body := scrape(t, h, "/healthz")
	assert.Equal(t, http.StatusServiceUnavailable, code, "before the rules: %s", body)
	_, body = scrape(t, h, "/metrics")
	assert.Contains(t, body, `sandboxpin_shim_rule_reloads_total{result="failed"} 1`)
	assert.Contains(t, body, `sandboxpin_shim_rules_loaded 0`)

	stop := serveFakeAt(t, runtimePath, newFake())
	waitFor(t, 10*time.Second, "the rules to load", func() bool { code, _ := scrape(t, h, "/healthz"); return code == http.StatusOK })
	conn := dial(t, shimPath)
	images := runtimeapi.NewImageServiceClient(conn)
	awaitPinned(t, images)
	stop()
	requireGap(t, conn)
	serveFakeAt(t, runtimePath, newFake())
	awaitPinned(t, images)
	_, body = scrape(t, h, "/metrics")
	assert.True(t, strings.Contains(body, "sandboxpin_shim_runtime_reconnects_total 1") ||
		strings.Contains(body, "sandboxpin_shim_runtime_reconnects_total 2"), "one runtime restart: %s",
		grepLines(body, "reconnects"))
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// TestShutdown stops a shim with no call open, which returns at once, and
// one with a GetContainerEvents stream open, which gives the stream
// shutdownGrace and then cuts it off.
func TestShutdown(t *testing.T) {
	t.Parallel()
	runtimePath := startFake(t, newFake())
	for _, tt := range []struct {
		name     string
		stream   bool          // a GetContainerEvents stream is open
		min, max time.Duration // how long Serve takes to return once its context ends
	}{
		{name: "no call open", max: time.Second},
		{name: "an event stream open", stream: true, min: shutdownGrace, max: shutdownGrace + 2*time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(shortTempDir(t), "shim.sock")
			s, err := newShim(context.Background(), nil, path, runtimePath, fixed(testMatcher(t)), newMetrics(), slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- s.Serve(ctx) }()
			conn := dial(t, path)
			_, err = runtimeapi.NewImageServiceClient(conn).ListImages(testContext(t), &runtimeapi.ListImagesRequest{})
			require.NoError(t, err)
			var events grpc.ServerStreamingClient[runtimeapi.ContainerEventResponse]
			if tt.stream {
				events, err = runtimeapi.NewRuntimeServiceClient(conn).GetContainerEvents(testContext(t), &runtimeapi.GetEventsRequest{})
				require.NoError(t, err)
				_, err = events.Recv()
				require.NoError(t, err)
			}

			start := time.Now()
			cancel()
			select {
			case err := <-served:
				require.NoError(t, err)
			case <-time.After(2 * shutdownGrace):
				t.Fatal("Serve did not return")
			}
			took := time.Since(start)
			assert.GreaterOrEqual(t, took, tt.min, "shutdown")
			assert.Less(t, took, tt.max, "shutdown")
			if events != nil {
				for err == nil {
					_, err = events.Recv()
				}
				assert.Equal(t, codes.Unavailable, status.Code(err), "the cut-off stream: %v", err)
			}
		})
	}
}

// loaderOf returns a Loader that returns m and no error.
func loaderOf(m *pin.Matcher) Loader {
	return func(context.Context) (*pin.Matcher, error) { return m, nil }
}

// TestNewListenErrors: an address New cannot listen on is an error wrapping
// ErrListen, and ErrInUse when another server holds it (issue 52: they
// wrapped no sentinel).
func TestNewListenErrors(t *testing.T) {
	t.Parallel()
	runtimePath := startFake(t, newFake())
	dir := shortTempDir(t)
	busySock := filepath.Join(dir, "busy.sock")
	busy, err := net.Listen("unix", busySock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = busy.Close() })
	busyPort, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = busyPort.Close() })
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	tests := []struct {
		name      string
		listen    string // Options.Listen
		metrics   string // Options.MetricsListen
		wantInUse bool   // the error wraps ErrInUse
		wantErrno error  // and this cause, or nil
	}{
		{name: "socket in use", listen: busySock, wantInUse: true},
		{name: "not a socket", listen: file},
		{name: "no directory", listen: filepath.Join(dir, "absent", "shim.sock"), wantErrno: syscall.ENOENT},
		{name: "metrics port in use", metrics: busyPort.Addr().String(), wantInUse: true, wantErrno: syscall.EADDRINUSE},
		{name: "metrics host unknown", metrics: "256.0.0.1:0"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := Options{Listen: tt.listen, RuntimeEndpoint: runtimePath, Loader: loaderOf(testMatcher(t)), MetricsListen: tt.metrics}
			if o.Listen == "" {
				o.Listen = filepath.Join(dir, fmt.Sprintf("shim%d.sock", i))
			}
			s, err := New(context.Background(), o)
			assert.Nil(t, s)
			require.ErrorIs(t, err, ErrListen)
			assert.NotErrorIs(t, err, ErrInvalidOptions)
			assert.Equal(t, tt.wantInUse, errors.Is(err, ErrInUse), "ErrInUse in %v", err)
			if tt.wantErrno != nil {
				assert.ErrorIs(t, err, tt.wantErrno)
			}
			if tt.metrics != "" {
				_, serr := os.Stat(o.Listen)
				assert.ErrorIs(t, serr, os.ErrNotExist, "the shim's socket is removed when New fails")
			}
		})
	}
}

// TestLoaderFailures: a Loader that returns (nil, nil) or panics makes New
// (and a later Reload) fail with ErrLoader, without a crash; a Reload keeps
// the rules it had (issue 52: (nil, nil) was taken, and pinned nothing).
func TestLoaderFailures(t *testing.T) {
	t.Parallel()
	runtimePath := startFake(t, newFake())
	tests := []struct {
		name string
		load Loader // the failing Loader
	}{
		{name: "nil matcher, nil error", load: loaderOf(nil)},
		{name: "panic", load: func(context.Context) (*pin.Matcher, error) { panic("loader bug") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(shortTempDir(t), "shim.sock")
			s, err := New(context.Background(), Options{Listen: path, RuntimeEndpoint: runtimePath, Loader: tt.load})
			assert.Nil(t, s)
			require.ErrorIs(t, err, ErrLoader)

			var fail atomic.Bool
			s = serveShim(t, Options{Listen: path, RuntimeEndpoint: runtimePath, Loader: func(ctx context.Context) (*pin.Matcher, error) {
				if fail.Load() {
					return tt.load(ctx)
				}
				return testMatcher(t), nil
			}})
			fail.Store(true)
			require.ErrorIs(t, s.Reload(context.Background()), ErrLoader)
			resp, err := runtimeapi.NewImageServiceClient(dial(t, path)).ListImages(testContext(t), &runtimeapi.ListImagesRequest{})
			require.NoError(t, err)
			assert.Equal(t, wantPinnedByTag(), pinnedByTag(resp.GetImages()), "the previous rules stay")
		})
	}
}

// TestServeTwice: Serve runs once; a second call, or one after Close,
// returns ErrClosed at once and leaves a serving shim serving.
func TestServeTwice(t *testing.T) {
	t.Parallel()
	runtimePath := startFake(t, newFake())
	path := filepath.Join(shortTempDir(t), "shim.sock")
	s := serveShim(t, Options{Listen: path, RuntimeEndpoint: runtimePath, Loader: loaderOf(testMatcher(t))})
	images := runtimeapi.NewImageServiceClient(dial(t, path))
	_, err := images.ListImages(testContext(t), &runtimeapi.ListImagesRequest{})
	require.NoError(t, err, "the first Serve serves")
	require.ErrorIs(t, s.Serve(context.Background()), ErrClosed)
	_, err = images.ListImages(testContext(t), &runtimeapi.ListImagesRequest{})
	require.NoError(t, err, "the first Serve still serves")

	closed, err := New(context.Background(), Options{Listen: filepath.Join(shortTempDir(t), "shim.sock"), RuntimeEndpoint: runtimePath,
		Loader: loaderOf(testMatcher(t))})
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	assert.ErrorIs(t, closed.Serve(context.Background()), ErrClosed)
}

// TestListener: the shim serves on a listener it is given (systemd socket
// activation), leaves its file and mode alone, and closes it when it stops
// or when New fails.
func TestListener(t *testing.T) {
	t.Parallel()
	runtimePath := startFake(t, newFake())
	require.NoError(t, os.Chmod(runtimePath, 0o640)) //nolint:gosec // G302: a mode for the shim not to copy
	path := filepath.Join(shortTempDir(t), "activated.sock")
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	lis.SetUnlinkOnClose(false) // as a listener of file descriptor 3 from systemd
	require.NoError(t, os.Chmod(path, 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, Options{Listener: lis, RuntimeEndpoint: runtimePath, Loader: loaderOf(testMatcher(t))})
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	resp, err := runtimeapi.NewImageServiceClient(dial(t, path)).ListImages(testContext(t), &runtimeapi.ListImagesRequest{})
	require.NoError(t, err)
	assert.Equal(t, wantPinnedByTag(), pinnedByTag(resp.GetImages()))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the given socket keeps its mode")
	cancel()
	require.NoError(t, <-served)
	_, err = os.Stat(path)
	require.NoError(t, err, "the shim does not remove a socket it did not make")
	_, err = lis.Accept()
	require.ErrorIs(t, err, net.ErrClosed, "the shim closes the listener when it stops")

	for _, o := range []Options{
		{Listener: mustListen(t), Listen: path, RuntimeEndpoint: runtimePath, Loader: loaderOf(testMatcher(t))},
		{Listener: mustListen(t), RuntimeEndpoint: runtimePath, Loader: loaderOf(nil)},
	} {
		_, err := New(context.Background(), o)
		require.Error(t, err)
		_, err = o.Listener.Accept()
		assert.ErrorIs(t, err, net.ErrClosed, "New closes the listener when it fails")
	}
}

// mustListen returns a unix listener in a temporary directory.
func mustListen(t *testing.T) net.Listener {
	t.Helper()
	lis, err := net.Listen("unix", filepath.Join(shortTempDir(t), "l.sock"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = lis.Close() })
	return lis
}

// TestCollector registers the shim's metrics on a registry of one's own,
// beside that registry's Go and process collectors.
func TestCollector(t *testing.T) {
	t.Parallel()
	runtimePath := startFake(t, newFake())
	s := serveShim(t, Options{Listen: filepath.Join(shortTempDir(t), "shim.sock"), RuntimeEndpoint: runtimePath,
		Loader: loaderOf(testMatcher(t))})
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(collectors.NewGoCollector()))
	require.NoError(t, reg.Register(s.Collector()))
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for _, name := range []string{metricReloads, metricReconnects, metricRules, metricLoaded, "go_goroutines"} {
		assert.True(t, got[name], "%s gathered", name)
	}
	assert.False(t, got["process_resident_memory_bytes"], "the shim's Collector has no process collector of its own")
}
