package main

import (
	"context"
	"io"
	"log/slog"
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
)

// crioNode is a CRI-O node whose pause_image is the alias spelling
// k8s.gcr.io/pause:3.10.1 and whose pinned_images holds
// quay.io/example/agent* (examples/testdata/README.md).
const crioNode = "../../examples/testdata/crio-node"

// TestMatcherAgreesOnCRIO runs every consumer of resolve.Result.Matcher on
// one CRI-O node and its fake runtime: `check --resolve`, `audit`, serve's
// audit and the shim pin the same images. CRI-O's own compare pins the
// pause image only under the configured alias, so a consumer without the
// Strict sandbox-image rule would leave registry.k8s.io/pause:3.10.1 out.
func TestMatcherAgreesOnCRIO(t *testing.T) {
	t.Parallel()
	want := map[string]bool{ // stored name → pinned
		"registry.k8s.io/pause:3.10.1":   true, // the sandbox image, stored under its canonical name
		"quay.io/example/agent:2.0":      true, // pinned_images, CRI-O's unanchored glob
		"docker.io/library/busybox:1.36": false,
	}
	var images []*runtimeapi.Image
	for i, tag := range []string{"registry.k8s.io/pause:3.10.1", "quay.io/example/agent:2.0", "docker.io/library/busybox:1.36"} {
		images = append(images, &runtimeapi.Image{Id: "sha256:" + strings.Repeat(string(rune('a'+i)), 64), RepoTags: []string{tag}})
	}
	sock := fakecri.Serve(t, &fakecri.Runtime{
		RuntimeName: "cri-o", RuntimeVersion: "1.36.3", Images: images,
		Info: map[string]string{"config": `{"sandboxImage":"k8s.gcr.io/pause:3.10.1"}`},
	})
	node := []string{"--root", crioNode, "--runtime-endpoint", "unix://" + sock}

	t.Run("check", func(t *testing.T) {
		t.Parallel()
		var names []string
		for n := range want {
			names = append(names, n)
		}
		_, stdout, stderr := runCmd(t, append(append([]string{"check", "--resolve"}, node...), names...)...)
		got := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			name, verdict, _ := strings.Cut(line, ": ")
			got[name] = strings.HasPrefix(verdict, "pinned by")
		}
		assert.Equal(t, want, got, "check output:\n%s%s", stdout, stderr)
	})

	// audit -o prometheus and serve share auditNode. (audit's text table
	// predicts the runtime's own verdict instead, see runAudit.)
	t.Run("audit -o prometheus", func(t *testing.T) {
		t.Parallel()
		code, stdout, stderr := runCmd(t, append([]string{"audit", "-o", "prometheus"}, node...)...)
		assert.Equal(t, exitCheck, code, "the fake CRI-O pins nothing itself; stderr:\n%s", stderr)
		fams := parseExposition(t, strings.NewReader(stdout))
		assert.InDelta(t, float64(pinnedIn(want)), mustGauge(t, fams, metricMustPin), 0, stdout)
		assert.InDelta(t, float64(pinnedIn(want)), mustGauge(t, fams, metricUnprotected), 0, stdout)
	})

	t.Run("serve", func(t *testing.T) {
		t.Parallel()
		n := nodeFlags{root: crioNode, endpoint: "unix://" + sock}
		a := auditNode(context.Background(), &n)
		require.NoError(t, a.Err)
		assert.Equal(t, pinnedIn(want), a.Verdict.MustPin, "images serve counts as must-pin")
		assert.Equal(t, pinnedIn(want), a.Verdict.Unprotected, "the fake CRI-O pins nothing itself")
	})

	t.Run("shim", func(t *testing.T) {
		t.Parallel()
		dir, err := os.MkdirTemp("", "sba")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		shimSock := filepath.Join(dir, "shim.sock")
		o := crishim.Options{Listen: "unix://" + shimSock, RuntimeEndpoint: "unix://" + sock, Node: nodeOptions(crioNode),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() { done <- serveShim(ctx, o, make(chan os.Signal)) }()
		t.Cleanup(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(shimExitGrace):
				t.Error("the shim did not stop")
			}
		})
		conn, err := grpc.NewClient("unix://"+shimSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		got := map[string]bool{}
		require.Eventually(t, func() bool {
			resp, err := runtimeapi.NewImageServiceClient(conn).ListImages(ctx, &runtimeapi.ListImagesRequest{})
			if err != nil {
				return false // the shim is not up, or has no rules yet
			}
			for _, img := range resp.GetImages() {
				got[img.GetRepoTags()[0]] = img.GetPinned()
			}
			return true
		}, 30*time.Second, 20*time.Millisecond)
		assert.Equal(t, want, got, "pinned through the shim")
	})
}

// pinnedIn counts the images want pins.
func pinnedIn(want map[string]bool) int {
	n := 0
	for _, p := range want {
		if p {
			n++
		}
	}
	return n
}
