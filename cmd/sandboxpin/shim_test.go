package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo/cri/fakecri"
	"github.com/sandboxpin/sandboxpin/crishim"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
	"github.com/sandboxpin/sandboxpin/resolve"
)

func TestShimFlags(t *testing.T) {
	t.Parallel()
	absent := filepath.Join(t.TempDir(), "absent.sock")
	tests := []struct {
		name       string
		args       []string // after "shim"
		wantCode   int      // exit code
		wantStderr string   // substring of stderr
		wantStdout string   // substring of stdout
	}{
		{name: "help", args: []string{"--help"}, wantCode: exitOK, wantStdout: "sandboxpin shim --listen unix:///path/shim.sock"},
		{name: "help lists metrics", args: []string{"--help"}, wantCode: exitOK, wantStdout: "--metrics-listen ADDR"},
		{name: "no flags", wantCode: exitError, wantStderr: "--listen is required"},
		{name: "no runtime", args: []string{"--listen", "unix:///tmp/x.sock"}, wantCode: exitError, wantStderr: "--runtime-endpoint is required"},
		{name: "extra argument", args: []string{"--listen", "/a", "--runtime-endpoint", "/b", "c"}, wantCode: exitError, wantStderr: `unexpected argument "c"`},
		{name: "unknown flag", args: []string{"--lisen", "/a"}, wantCode: exitError, wantStderr: "unknown flag: --lisen"},
		{name: "relative listen", args: []string{"--listen", "shim.sock", "--runtime-endpoint", absent}, wantCode: exitError, wantStderr: "want unix:///path or /path"},
		{name: "bad pin", args: []string{"--listen", "/tmp/x.sock", "--runtime-endpoint", absent, "--pin", "*"}, wantCode: exitError, wantStderr: "--pin: pattern 0 \"*\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCmd(t, append([]string{"shim"}, tt.args...)...)
			assert.Equal(t, tt.wantCode, code, "shim %q exit code; stderr:\n%s", tt.args, stderr)
			assert.Contains(t, stderr, tt.wantStderr)
			assert.Contains(t, stdout, tt.wantStdout)
		})
	}
}

// TestShimServes runs `sandboxpin shim` in front of a fake containerd 2.2
// with --metrics-listen: ListImages through it pins the runtime's default
// sandbox image, the metrics count the call and the pin, a SIGHUP reloads,
// and the command stops with exit 0 and removes its socket.
func TestShimServes(t *testing.T) {
	t.Parallel()
	runtimePath := fakecri.Serve(t, &fakecri.Runtime{
		RuntimeName: "containerd", RuntimeVersion: "v2.2.9",
		Images: []*runtimeapi.Image{
			{Id: "sha256:" + strings.Repeat("a", 64), RepoTags: []string{"registry.k8s.io/pause:3.10.1"}},
			{Id: "sha256:" + strings.Repeat("b", 64), RepoTags: []string{"docker.io/library/busybox:1.37"}},
		},
	})
	dir, err := os.MkdirTemp("", "sbs")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "shim.sock")
	stderr := &runtimetest.SyncBuffer{}
	o := crishim.Options{Listen: "unix://" + sock, RuntimeEndpoint: "unix://" + runtimePath, Node: nodeOptions(t.TempDir()), MetricsListen: "127.0.0.1:0"}
	o.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	done := make(chan int, 1)
	go func() { done <- serveShim(ctx, o, hup) }()
	t.Cleanup(cancel)

	var addr string
	require.Eventually(t, func() bool {
		_, after, ok := strings.Cut(stderr.String(), "msg=\"serving metrics\" addr=")
		addr, _, _ = strings.Cut(after, "\n")
		return ok
	}, 30*time.Second, 20*time.Millisecond, "the shim to serve; log:\n%s", stderr)

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	resp, err := runtimeapi.NewImageServiceClient(conn).ListImages(ctx, &runtimeapi.ListImagesRequest{})
	require.NoError(t, err)
	pinned := map[string]bool{}
	for _, img := range resp.GetImages() {
		pinned[img.GetRepoTags()[0]] = img.GetPinned()
	}
	assert.Equal(t, map[string]bool{"registry.k8s.io/pause:3.10.1": true, "docker.io/library/busybox:1.37": false}, pinned)

	hup <- os.Interrupt // any value: serveShim only waits for a receive
	// The reload is counted once the loader that logs "pin rules loaded"
	// has returned: wait for the count, not the log line.
	var metrics string
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics") //nolint:noctx // a local test server
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		metrics = string(b)
		return err == nil && strings.Contains(metrics, `sandboxpin_shim_rule_reloads_total{result="ok"} 2`)
	}, 10*time.Second, 20*time.Millisecond, "the reload; log:\n%s", stderr)
	assert.Equal(t, 2, strings.Count(stderr.String(), "pin rules loaded"))

	health := httpGet(t, "http://"+addr+"/healthz")
	assert.Equal(t, "ok\n", health)
	for _, want := range []string{
		`sandboxpin_shim_calls_total{code="OK",method="/runtime.v1.ImageService/ListImages"} 1`,
		`sandboxpin_shim_images_pinned_total 1`,
		`sandboxpin_shim_rules 1`,
		`sandboxpin_shim_rules_loaded 1`,
	} {
		assert.Contains(t, metrics, want)
	}

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, exitOK, code, "log:\n%s", stderr)
	case <-time.After(shimExitGrace):
		t.Fatalf("the shim did not stop; log:\n%s", stderr)
	}
	_, err = os.Stat(sock)
	assert.ErrorIs(t, err, os.ErrNotExist, "the socket is removed")
}

// httpGet returns the body of a 200 answer to GET url.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var b bytes.Buffer
	_, err = io.Copy(&b, resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", url, b.String())
	return b.String()
}

// nodeOptions resolves the node under root, as `sandboxpin shim --root`.
func nodeOptions(root string) *resolve.Options {
	return &resolve.Options{Root: resolve.DirFS(root)}
}
