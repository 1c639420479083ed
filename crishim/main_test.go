package crishim

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Exit codes of runShim, as `sandboxpin shim` has them.
const (
	exitOK    = 0
	exitServe = 1 // the server failed after start-up
	exitUsage = 2 // bad options, or the shim could not start
)

// runShim runs a Shim with o as `sandboxpin shim` does (New, Reload on
// each receive from hup, Serve until ctx ends), logging to w, and returns
// the command's exit code.
func runShim(ctx context.Context, o Options, hup <-chan os.Signal, w io.Writer) int {
	log := slog.New(slog.NewTextHandler(w, nil))
	o.Logger = log
	s, err := New(ctx, o)
	if err != nil {
		log.Error("cannot start", "err", err)
		return exitUsage
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := s.Reload(ctx); err != nil {
					log.Error("reload failed", "err", err)
				}
			}
		}
	}()
	if s.Serve(ctx) != nil {
		return exitServe
	}
	return exitOK
}

// liveFunc is a resolve.LiveRuntime.
type liveFunc func(context.Context) (criinfo.Info, error)

func (f liveFunc) Info(ctx context.Context) (criinfo.Info, error) { return f(ctx) }

// nodeOptions resolves the node under root, as `sandboxpin shim --root`.
func nodeOptions(root string) *resolve.Options {
	return &resolve.Options{Root: resolve.DirFS(root)}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	absent := filepath.Join(t.TempDir(), "absent.sock")
	tests := []struct {
		name    string
		o       Options // the shim's options
		wantErr string  // substring of the error, which wraps ErrInvalidOptions
	}{
		{name: "no options", wantErr: "Listen"},
		{name: "no runtime", o: Options{Listen: "unix:///tmp/x.sock"}, wantErr: "RuntimeEndpoint"},
		{name: "relative listen", o: Options{Listen: "shim.sock", RuntimeEndpoint: absent, Node: nodeOptions("/")}, wantErr: "want unix:///path or /path"},
		{name: "bad pin", o: Options{Listen: "/tmp/x.sock", RuntimeEndpoint: absent, Node: nodeOptions("/"), Pins: []string{"*"}}, wantErr: "Pins: "},
		{name: "no node, no loader", o: Options{Listen: "/tmp/x.sock", RuntimeEndpoint: absent}, wantErr: "no Node and no Loader"},
		{name: "node and loader", o: Options{Listen: "/tmp/x.sock", RuntimeEndpoint: absent, Node: nodeOptions("/"),
			Loader: func(context.Context) (*pin.Matcher, error) { return nil, nil }}, wantErr: "both Node and Loader"},
		{name: "node with its own live runtime", o: Options{Listen: "/tmp/x.sock", RuntimeEndpoint: absent,
			Node: &resolve.Options{Live: liveFunc(nil)}}, wantErr: "Node.Live"},
		{name: "negative grace", o: Options{Listen: "/tmp/x.sock", RuntimeEndpoint: absent, Node: nodeOptions("/"), ShutdownGrace: -time.Second}, wantErr: "ShutdownGrace"},
		// Issue 52: "cannot listen for metrics: ... missing port in address", no sentinel.
		{name: "metrics address without port", o: Options{Listen: "/tmp/x.sock", RuntimeEndpoint: absent, Node: nodeOptions("/"), MetricsListen: "9090"}, wantErr: "MetricsListen"},
		{name: "listen and listener", o: Options{Listen: "/tmp/x.sock", Listener: &net.UnixListener{}, RuntimeEndpoint: absent, Node: nodeOptions("/")}, wantErr: "both Listen and Listener"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(context.Background(), tt.o)
			assert.Nil(t, s)
			require.ErrorIs(t, err, ErrInvalidOptions, "New(%+v)", tt.o)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// waitFor polls cond every 20ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBinary builds the program and runs it in front of the fake runtime:
// it serves, pins the default sandbox image of the runtime it finds (the
// fake says containerd v2.2.9 and reports no sandbox image; the node tree is
// empty), reloads on SIGHUP, stops on SIGTERM with exit 0 and removes its
// socket.
func TestBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a binary")
	}
	dir := shortTempDir(t)
	bin := buildShim(t)

	runtimePath := startFake(t, newFake())
	shimPath := filepath.Join(dir, "shim.sock")
	root := t.TempDir()
	stderr := &runtimetest.SyncBuffer{}
	cmd := exec.Command(bin, "--listen", "unix://"+shimPath, "--runtime-endpoint", "unix://"+runtimePath, "--root", root)
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	waitFor(t, 30*time.Second, "the shim to serve", func() bool { return strings.Contains(stderr.String(), "msg=serving") })

	resp, err := runtimeapi.NewImageServiceClient(dial(t, shimPath)).ListImages(testContext(t), &runtimeapi.ListImagesRequest{})
	require.NoError(t, err)
	got := pinnedByTag(resp.GetImages())
	assert.True(t, got[tagPause], "the default sandbox image of containerd 2.2 is pinned: %v", got)
	assert.False(t, got[tagBusy], "busybox is not pinned: %v", got)
	assert.True(t, got[tagOwn], "the runtime's own pin stays: %v", got)

	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	waitFor(t, 10*time.Second, "the reload", func() bool { return strings.Count(stderr.String(), "pin rules loaded") == 2 })

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "exit status; stderr:\n%s", stderr.String())
	case <-time.After(2 * shutdownGrace):
		t.Fatalf("the shim did not stop on SIGTERM; stderr:\n%s", stderr.String())
	}
	_, err = os.Stat(shimPath)
	assert.ErrorIs(t, err, os.ErrNotExist, "the socket is removed")
	t.Logf("stderr:\n%s", stderr.String())
}

// startRunShim runs runShim with o until the test ends, and returns its log
// and the channel that triggers a reload.
func startRunShim(t *testing.T, o Options) (*runtimetest.SyncBuffer, chan<- os.Signal) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	log := &runtimetest.SyncBuffer{}
	done := make(chan int, 1)
	go func() { done <- runShim(ctx, o, hup, log) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			assert.Equal(t, exitOK, code, "runShim exit code; log:\n%s", log.String())
		case <-time.After(2 * shutdownGrace):
			t.Errorf("runShim did not stop; log:\n%s", log.String())
		}
		path, _ := socketPath(o.Listen)
		_, err := os.Stat(path)
		assert.ErrorIs(t, err, os.ErrNotExist, "the socket is removed")
	})
	waitFor(t, 30*time.Second, "the shim to serve", func() bool {
		select {
		case code := <-done:
			t.Fatalf("runShim exited with %d; log:\n%s", code, log.String())
		default:
		}
		return strings.Contains(log.String(), "msg=serving")
	})
	return log, hup
}
