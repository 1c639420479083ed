package crishim

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// liveImages are stored in every runtime besides the pause image.
var liveImages = []string{"docker.io/library/busybox:1.36", "registry.k8s.io/coredns/coredns:v1.11.1"}

// TestLiveCrictl runs crictl against real containerd 1.6, 1.7, 2.2, 2.3 and 2.4, straight
// and through the shim. The shim pins the sandbox image that the runtime
// leaves unpinned, and nothing else; version, info and the rest of images
// are the same both ways.
func TestLiveCrictl(t *testing.T) {
	t.Parallel()
	crictl := containerdtest.Crictl(t)
	tests := []struct {
		name       string
		version    containerdtest.Version
		configured string // the sandbox image in containerd's config
		stored     string // the name the pause image is stored under
	}{
		// containerd 1.6.20 never sets pinned.
		{name: "containerd-1.6", version: containerdtest.V1, configured: "registry.k8s.io/pause:3.10.1", stored: "registry.k8s.io/pause:3.10.1"},
		// containerd 2.2 compares the configured name as a raw string.
		{name: "containerd-2.2-alias", version: containerdtest.V2, configured: "k8s.gcr.io/pause:3.10.1", stored: "registry.k8s.io/pause:3.10.1"},
		// containerd 1.7.35 normalizes the Docker way, which maps no alias
		// (version 2 config).
		{name: "containerd-1.7-alias", version: containerdtest.V17, configured: "k8s.gcr.io/pause:3.10.1", stored: "registry.k8s.io/pause:3.10.1"},
		// containerd 2.3.7 and 2.4.2 compare strings, like 2.2 (version 4
		// config, socket under io.containerd.server.v1.grpc).
		{name: "containerd-2.3-alias", version: containerdtest.V23, configured: "k8s.gcr.io/pause:3.10.1", stored: "registry.k8s.io/pause:3.10.1"},
		{name: "containerd-2.4-alias", version: containerdtest.V24, configured: "k8s.gcr.io/pause:3.10.1", stored: "registry.k8s.io/pause:3.10.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			images := []containerdtest.Image{{Names: []string{tt.stored}}}
			for _, name := range liveImages {
				images = append(images, containerdtest.Image{Names: []string{name}})
			}
			ctrd := containerdtest.Start(t, tt.version, containerdtest.Options{SandboxImage: tt.configured, Images: images})

			// The node tree holds the config containerd runs with, where
			// package resolve looks for it.
			root := t.TempDir()
			cfg, err := os.ReadFile(filepath.Join(ctrd.Dir, "config.toml"))
			require.NoError(t, err)
			etc := filepath.Join(root, "etc", "containerd")
			require.NoError(t, os.MkdirAll(etc, 0o750))
			require.NoError(t, os.WriteFile(filepath.Join(etc, "config.toml"), cfg, 0o600)) //nolint:gosec // G703: a file in the test's own temporary directory
			assertResolves(t, root, ctrd.Endpoint, tt.configured)

			shimPath := filepath.Join(shortTempDir(t), "shim.sock")
			log, hup := startRunShim(t, Options{Listen: "unix://" + shimPath, RuntimeEndpoint: ctrd.Endpoint, Node: nodeOptions(root)})

			crictlOut := func(endpoint string, args ...string) string {
				t.Helper()
				return runCrictl(t, crictl, endpoint, args...)
			}
			assertSameAnswers(t, crictl, ctrd.Endpoint, "unix://"+shimPath)

			direct := crictlImages(t, crictlOut(ctrd.Endpoint, "images", "-o", "json"))
			shimmed := crictlImages(t, crictlOut("unix://"+shimPath, "images", "-o", "json"))
			require.Len(t, shimmed, len(direct))
			for i := range direct {
				tag := direct[i].tag()
				before, after := direct[i]["pinned"], shimmed[i]["pinned"]
				t.Logf("%s: %s pinned %v directly, %v through the shim", tt.name, tag, before, after)
				assert.Equal(t, false, before, "containerd's own pinned for %s", tag)
				assert.Equal(t, tag == tt.stored, after, "pinned through the shim for %s", tag)
				// Apart from the pin the shim corrects, the same image.
				direct[i]["pinned"] = after
				assert.Equal(t, direct[i], shimmed[i], "crictl images entry %d through the shim", i)
			}

			// A reload resolves again and keeps pinning.
			hup <- os.Interrupt // any value: runShim only waits for a receive
			waitFor(t, 20*time.Second, "the reload", func() bool { return strings.Count(log.String(), "pin rules loaded") == 2 })
			again := crictlImages(t, crictlOut("unix://"+shimPath, "images", "-o", "json"))
			assert.Equal(t, shimmed, again, "crictl images after a reload")
		})
	}
}

// crictlImage is one entry of `crictl images -o json`.
type crictlImage map[string]any

// tag returns the entry's first repo tag.
func (c crictlImage) tag() string {
	tags, _ := c["repoTags"].([]any)
	if len(tags) == 0 {
		return ""
	}
	s, _ := tags[0].(string)
	return s
}

// crictlImages decodes `crictl images -o json`.
func crictlImages(t *testing.T, out string) []crictlImage {
	t.Helper()
	var doc struct {
		Images []crictlImage `json:"images"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), "crictl images -o json:\n%s", out)
	require.NotEmpty(t, doc.Images)
	return doc.Images
}

// assertResolves checks that the node tree at root with the live runtime
// resolves to the configured sandbox image, which the shim then pins.
func assertResolves(t *testing.T, root, endpoint, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	live, err := cri.Dial(ctx, endpoint)
	require.NoError(t, err)
	defer func() { _ = live.Close() }()
	res, err := resolve.Resolve(ctx, resolve.Options{Root: os.DirFS(root), Live: live})
	require.NoError(t, err)
	assert.Equal(t, want, res.SandboxImage, "resolved sandbox image")
	assert.Empty(t, res.Conflicts, "conflicts")
}

// runCrictl runs crictl against endpoint (for both runtime and image
// services, with no user crictl.yaml) and returns its standard output,
// failing the test on an error.
func runCrictl(t *testing.T, crictl, endpoint string, args ...string) string {
	t.Helper()
	args = append([]string{"--runtime-endpoint", endpoint, "--image-endpoint", endpoint, "--timeout", "20s"}, args...)
	cmd := exec.Command(crictl, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "crictl %q: %s", args, stderr.String())
	return string(out)
}

// assertSameAnswers checks that crictl version and info answer the same
// directly and through the shim: the shim changes image answers only.
func assertSameAnswers(t *testing.T, crictl, direct, shim string) {
	t.Helper()
	for _, cmd := range [][]string{{"version"}, {"info"}} {
		assert.Equal(t, runCrictl(t, crictl, direct, cmd...), runCrictl(t, crictl, shim, cmd...), "crictl %s through the shim", cmd)
	}
}
