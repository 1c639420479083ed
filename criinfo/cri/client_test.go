package cri

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/criinfo/cri/fakecri"
)

// The fake runtime (fakecri.Runtime) gives the error paths that a real
// runtime cannot be made to take. The live tests use real containerd.

// delayStatus returns a Hook that holds Status for d, or until the call's
// context ends.
func delayStatus(d time.Duration) func(context.Context, string) error {
	return func(ctx context.Context, method string) error {
		if method != fakecri.MethodStatus {
			return nil
		}
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// shortDir returns a temporary directory with a short path: unix socket
// paths are limited to 108 bytes.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cri")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// junkServer accepts connections and answers with bytes that are not HTTP/2.
func junkServer(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(shortDir(t), "j.sock")
	lis, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			_ = c.Close()
		}
	}()
	return sock
}

// staleSocket returns a socket file that nobody listens on.
func staleSocket(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(shortDir(t), "x.sock")
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	require.NoError(t, err)
	lis.SetUnlinkOnClose(false)
	require.NoError(t, lis.Close())
	return sock
}

func TestDialErrors(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	regular := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(regular, nil, 0o600))
	tests := []struct {
		name     string
		endpoint string // as the caller gives it
		wantErr  error  // sentinel expected with errors.Is
	}{
		{name: "missing", endpoint: "unix://" + filepath.Join(dir, "none.sock"), wantErr: ErrNoSocket},
		{name: "missing bare path", endpoint: filepath.Join(dir, "none.sock"), wantErr: ErrNoSocket},
		{name: "regular file", endpoint: regular, wantErr: ErrNoSocket},
		{name: "stale socket", endpoint: staleSocket(t), wantErr: ErrNoSocket},
		{name: "tcp", endpoint: "tcp://127.0.0.1:1", wantErr: ErrInvalidEndpoint},
		{name: "relative", endpoint: "unix://run/x.sock", wantErr: ErrInvalidEndpoint},
		{name: "empty", endpoint: "", wantErr: ErrInvalidEndpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := Query(ctx, tt.endpoint)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Query(%q) error = %v, want %v", tt.endpoint, err, tt.wantErr)
			}
			var ce *Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.endpoint, ce.Endpoint)
			assert.Equal(t, "dial", ce.RPC)
		})
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fake    *fakecri.Runtime // nil: gRPC without CRI services
		junk    bool             // a socket that does not speak HTTP/2
		want    criinfo.Info
		wantRPC string // RPC named in the error
		wantErr error  // sentinel expected with errors.Is
	}{
		{
			name: "cri-dockerd",
			fake: &fakecri.Runtime{RuntimeName: "docker", RuntimeVersion: "28.0.1", Info: map[string]string{"config": `{"sandboxImage":"registry.k8s.io/pause:3.10"}`}},
			want: criinfo.Info{Runtime: criinfo.RuntimeCRIDockerd, EngineVersion: "28.0.1", SandboxImage: "registry.k8s.io/pause:3.10", SandboxImageReported: true},
		},
		{
			// A CRI server that names itself cri-dockerd states its own
			// version; only "docker" means Docker Engine's.
			name: "cri-dockerd by name",
			fake: &fakecri.Runtime{RuntimeName: "cri-dockerd", RuntimeVersion: "0.5.0", Info: map[string]string{"config": `{"sandboxImage":"registry.k8s.io/pause:3.10"}`}},
			want: criinfo.Info{Runtime: criinfo.RuntimeCRIDockerd, RuntimeVersion: "0.5.0", SandboxImage: "registry.k8s.io/pause:3.10", SandboxImageReported: true},
		},
		{
			name: "cri-o",
			fake: &fakecri.Runtime{RuntimeName: "cri-o", RuntimeVersion: "1.33.0", Info: map[string]string{"config": `{"sandboxImage":"registry.k8s.io/pause:3.10"}`}},
			want: criinfo.Info{Runtime: criinfo.RuntimeCRIO, RuntimeVersion: "1.33.0", SandboxImage: "registry.k8s.io/pause:3.10", SandboxImageReported: true},
		},
		{
			name: "unknown runtime name keeps what Info says",
			fake: &fakecri.Runtime{RuntimeName: "kata", RuntimeVersion: "1", Info: map[string]string{"lastCNILoadStatus": "OK"}},
			want: criinfo.Info{Runtime: criinfo.RuntimeContainerd, RuntimeVersion: "1"},
		},
		{
			name: "no verbose info",
			fake: &fakecri.Runtime{RuntimeName: "containerd", RuntimeVersion: "2.2.9"},
			want: criinfo.Info{Runtime: criinfo.RuntimeContainerd, RuntimeVersion: "2.2.9"},
		},
		{
			name:    "broken config",
			fake:    &fakecri.Runtime{RuntimeName: "containerd", RuntimeVersion: "1.6.20", Info: map[string]string{"config": `{"sandboxImage":3}`}},
			wantRPC: "RuntimeService/Status",
			wantErr: criinfo.ErrInvalidInfo,
		},
		{name: "grpc without cri", wantRPC: "RuntimeService/Version", wantErr: ErrNotCRI},
		{name: "not grpc", junk: true, wantRPC: "RuntimeService/Version", wantErr: ErrNotCRI},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var sock string
			if tt.junk {
				sock = junkServer(t)
			} else {
				sock = fakecri.Serve(t, tt.fake)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := Query(ctx, "unix://"+sock)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Query() error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				var ce *Error
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, tt.wantRPC, ce.RPC)
				assert.Equal(t, "unix://"+sock, ce.Endpoint)
				assert.Zero(t, got)
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestInfoTimeout(t *testing.T) {
	t.Parallel()
	sock := fakecri.Serve(t, &fakecri.Runtime{RuntimeName: "containerd", Hook: delayStatus(time.Minute)})
	c, err := Dial(context.Background(), sock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = c.Info(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "RuntimeService/Status", ce.RPC)
	assert.NotErrorIs(t, err, ErrNotCRI)
}

func TestInfoCanceled(t *testing.T) {
	t.Parallel()
	sock := fakecri.Serve(t, &fakecri.Runtime{RuntimeName: "containerd", Hook: delayStatus(time.Minute)})
	c, err := Dial(context.Background(), sock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = c.Info(ctx)
	assert.ErrorIs(t, err, context.Canceled)
}

// dialTest dials a fake runtime serving r (nil: gRPC without the CRI
// services), closed when the test ends.
func dialTest(t *testing.T, r *fakecri.Runtime) *Client {
	t.Helper()
	c, err := Dial(context.Background(), fakecri.Serve(t, r))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestImages(t *testing.T) {
	t.Parallel()
	c := dialTest(t, &fakecri.Runtime{
		Images: []*runtimeapi.Image{{Id: "sha256:0123", RepoTags: []string{"registry.k8s.io/pause:3.10"}}},
	})
	imgs, err := c.Images(context.Background())
	require.NoError(t, err)
	require.Len(t, imgs, 1)
	assert.Equal(t, []string{"registry.k8s.io/pause:3.10"}, imgs[0].GetRepoTags())

	c2 := dialTest(t, nil)
	_, err = c2.Images(context.Background())
	assert.ErrorIs(t, err, ErrNotCRI)
}

func TestImageStatus(t *testing.T) {
	t.Parallel()
	c := dialTest(t, &fakecri.Runtime{
		Images: []*runtimeapi.Image{{Id: "sha256:0123", RepoTags: []string{"registry.k8s.io/pause:3.10"}}},
	})
	tests := []struct {
		name string
		ref  string // asked for
		want string // image ID found, "" for none
	}{
		{name: "stored name", ref: "registry.k8s.io/pause:3.10", want: "sha256:0123"},
		// The runtime's own lookup applies no alias.
		{name: "alias", ref: "k8s.gcr.io/pause:3.10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			img, err := c.ImageStatus(context.Background(), tt.ref)
			require.NoError(t, err)
			assert.Equal(t, tt.want, img.GetId(), "ImageStatus(%q)", tt.ref)
		})
	}

	c2 := dialTest(t, nil)
	_, err := c2.ImageStatus(context.Background(), "registry.k8s.io/pause:3.10")
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, ErrNotCRI)
	assert.Equal(t, rpcImageStatus, ce.RPC)
}

func TestDefaultEndpoints(t *testing.T) {
	t.Parallel()
	eps := DefaultEndpoints()
	assert.Equal(t, []string{
		"unix:///run/containerd/containerd.sock",
		"unix:///var/run/crio/crio.sock",
		"unix:///run/cri-dockerd.sock",
	}, eps)
	eps[0] = "changed"
	assert.NotEqual(t, "changed", DefaultEndpoints()[0], "DefaultEndpoints must return a fresh slice")
}

// TestClientClosed: after Close, and on a zero or nil Client, every call
// fails with ErrClosed, not context.Canceled (the caller's context is
// alive) and not a panic; Close again returns nil (issue 52).
func TestClientClosed(t *testing.T) {
	t.Parallel()
	r := &fakecri.Runtime{RuntimeName: "containerd"}
	closed := dialTest(t, r)
	require.NoError(t, closed.Close())
	assert.NoError(t, closed.Close(), "a second Close")
	calls := []struct {
		name string
		call func(*Client) error
	}{
		{name: "Info", call: func(c *Client) error { _, err := c.Info(context.Background()); return err }},
		{name: "Images", call: func(c *Client) error { _, err := c.Images(context.Background()); return err }},
		{name: "ImageStatus", call: func(c *Client) error { _, err := c.ImageStatus(context.Background(), "pause"); return err }},
		{name: "Pull", call: func(c *Client) error { _, err := c.Pull(context.Background(), "pause"); return err }},
	}
	clients := []struct {
		name string
		c    *Client
	}{
		{name: "closed", c: closed},
		{name: "zero", c: &Client{}},
		{name: "nil", c: nil},
	}
	for _, cl := range clients {
		for _, tt := range calls {
			t.Run(cl.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				err := tt.call(cl.c)
				assert.ErrorIs(t, err, ErrClosed)
				assert.NotErrorIs(t, err, context.Canceled)
				var ce *Error
				assert.ErrorAs(t, err, &ce)
			})
		}
		assert.NoError(t, cl.c.Close(), "Close on a %s Client", cl.name)
	}
}

// TestClientClosedInFlight: a call that Close interrupts fails with
// ErrClosed, not context.Canceled.
func TestClientClosedInFlight(t *testing.T) {
	t.Parallel()
	c := dialTest(t, &fakecri.Runtime{RuntimeName: "containerd", Hook: delayStatus(time.Minute)})
	time.AfterFunc(100*time.Millisecond, func() { _ = c.Close() })
	_, err := c.Info(context.Background())
	assert.ErrorIs(t, err, ErrClosed)
	assert.NotErrorIs(t, err, context.Canceled)
}
