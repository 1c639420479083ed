package containerdtest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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
	"github.com/sandboxpin/sandboxpin/internal/registrytest"
)

// spelling is one way to write the configured sandbox image of an image
// stored under another name.
type spelling struct {
	name       string
	configured func(digest string) string // the sandbox image in the config, given the manifest digest
	stored     string                     // the name the image is pulled or imported under
}

// spellings are those of internal/crilive's TestLiveMatrix.
var spellings = []spelling{
	{name: "exact", stored: "registry.k8s.io/pause:3.10.1",
		configured: func(string) string { return "registry.k8s.io/pause:3.10.1" }},
	{name: "alias", stored: "registry.k8s.io/pause:3.10.1",
		configured: func(string) string { return "k8s.gcr.io/pause:3.10.1" }},
	{name: "short", stored: "docker.io/library/pause:3.10.1",
		configured: func(string) string { return "pause:3.10.1" }},
	{name: "tagless", stored: "registry.k8s.io/pause:latest",
		configured: func(string) string { return "registry.k8s.io/pause" }},
	{name: "tag+digest", stored: "registry.k8s.io/pause:3.10.1",
		configured: func(d string) string { return "registry.k8s.io/pause:3.10.1@" + d }},
}

// other is an image that no spelling names: pulled or imported beside the
// sandbox image, it must stay unpinned.
const other = "docker.io/library/busybox:1.36"

// The two ways an image gets into containerd's store.
const (
	routePulled   = "pulled"   // CRI PullImage, from registrytest
	routeImported = "imported" // ctr images import (the air-gap route)
)

// pulledPinned is the runtime's own Image.pinned for an image pulled through
// CRI, per build and spelling, as observed live. It equals what criinfo/cri's
// TestLiveMatrix observes for imported images: none of these builds is one of
// those that pin only what CRI pulls (1.6.22–1.6.28 and 1.7.3–1.7.13: see the
// README's table). V24Pin is containerd 2.4.2 with contrib/containerd/pin.patch.
var pulledPinned = map[containerdtest.Version]map[string]bool{
	containerdtest.V1:     {"exact": false, "alias": false, "short": false, "tagless": false, "tag+digest": false},
	containerdtest.V17:    {"exact": true, "alias": false, "short": true, "tagless": true, "tag+digest": false},
	containerdtest.V2:     {"exact": true, "alias": false, "short": false, "tagless": false, "tag+digest": false},
	containerdtest.V23:    {"exact": true, "alias": false, "short": false, "tagless": false, "tag+digest": false},
	containerdtest.V24:    {"exact": true, "alias": false, "short": false, "tagless": false, "tag+digest": false},
	containerdtest.V24Pin: {"exact": true, "alias": true, "short": true, "tagless": true, "tag+digest": true},
}

// pushAll serves every stored image of spellings, and other, from a new
// registry, and returns it with the manifest digest of each name.
func pushAll(t *testing.T) (*registrytest.Registry, map[string]string) {
	t.Helper()
	reg := registrytest.Start(t)
	digests := map[string]string{}
	for _, sp := range spellings {
		if _, ok := digests[sp.stored]; !ok {
			digests[sp.stored] = reg.Push(t, sp.stored, containerdtest.Image{Names: []string{sp.stored}})
		}
	}
	digests[other] = reg.Push(t, other, containerdtest.Image{Names: []string{other}})
	return reg, digests
}

// observed is what one runtime reported.
type observed struct {
	pinned, otherPinned bool
	endpoint, config    string // the CRI endpoint and the config file it runs with
}

// runRoute starts v configured with sp, puts sp.stored and other into it by
// route, and returns what ListImages says of them.
func runRoute(t *testing.T, v containerdtest.Version, sp spelling, route string, reg *registrytest.Registry, digests map[string]string) observed {
	t.Helper()
	opts := containerdtest.Options{SandboxImage: sp.configured(digests[sp.stored]), Registry: reg.Addr}
	if route == routeImported {
		opts.Images = []containerdtest.Image{{Names: []string{sp.stored}}, {Names: []string{other}}}
	}
	ctrd := containerdtest.Start(t, v, opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := grpc.DialContext(ctx, ctrd.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials())) //nolint:staticcheck // SA1019: NewClient needs grpc 1.63, above this module's floor
	require.NoError(t, err)
	defer conn.Close()
	is := runtimeapi.NewImageServiceClient(conn)
	if route == routePulled {
		for _, ref := range []string{sp.stored, other} {
			_, err := is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
			require.NoError(t, err, "PullImage %s from %s\nlog:\n%s", ref, reg.Addr, ctrd.Log())
		}
	}
	resp, err := is.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	require.NoError(t, err)
	pinned := map[string]bool{}
	for _, img := range resp.GetImages() {
		for _, tag := range img.GetRepoTags() {
			pinned[tag] = img.GetPinned()
		}
	}
	require.Contains(t, pinned, sp.stored, "listed images")
	require.Contains(t, pinned, other, "listed images")
	return observed{pinned: pinned[sp.stored], otherPinned: pinned[other], endpoint: ctrd.Endpoint, config: filepath.Join(ctrd.Dir, "config.toml")}
}

// TestLivePulledMatrix pulls the sandbox image through CRI, from a registry
// on loopback, into every containerd build configured with each spelling of
// it, and checks the runtime's own pinned flag: the route that criinfo/cri's
// TestLiveMatrix, which imports, does not take.
func TestLivePulledMatrix(t *testing.T) { //nolint:tparallel // the runs are parallel inside "versions", which must end before the summary
	t.Parallel()
	reg, digests := pushAll(t)
	var mu sync.Mutex
	var lines []string
	t.Run("versions", func(t *testing.T) {
		for _, v := range append(containerdtest.Versions(), containerdtest.V24Pin) {
			for _, sp := range spellings {
				t.Run(v.String()+"/"+sp.name, func(t *testing.T) {
					t.Parallel()
					got := runRoute(t, v, sp, routePulled, reg, digests)
					mu.Lock()
					lines = append(lines, fmt.Sprintf("%s %s pulled %s configured %q: pinned %v", v, v.Release(), sp.stored, sp.configured(digests[sp.stored]), got.pinned))
					mu.Unlock()
					assert.Equal(t, pulledPinned[v][sp.name], got.pinned, "pinned of pulled %s, configured %q", sp.stored, sp.configured(digests[sp.stored]))
					assert.False(t, got.otherPinned, "pinned of pulled %s", other)
				})
			}
		}
	})
	sort.Strings(lines)
	t.Logf("PULLED MATRIX\n%s", strings.Join(lines, "\n"))
}

// TestLivePatchedContainerd runs containerd 2.4.2 and the same with
// contrib/containerd/pin.patch side by side, configured with every spelling
// of the stored pause image, the image pulled through CRI or imported with
// ctr: stock pins only the exact name, patched every spelling, by both
// routes, and never the other image. `sandboxpin audit` then says OK for
// the patched build wherever containerd can also find its sandbox image by
// the configured name (every spelling but the alias, which it looks up by
// exact name: see cmd/sandboxpin's storedAs), and FAIL for the stock build
// wherever it does not pin.
func TestLivePatchedContainerd(t *testing.T) { //nolint:tparallel // the runs are parallel inside "runs", which must end before the table
	t.Parallel()
	reg, digests := pushAll(t)
	var mu sync.Mutex
	table := map[string]bool{}
	t.Run("runs", func(t *testing.T) {
		for _, v := range []containerdtest.Version{containerdtest.V24, containerdtest.V24Pin} {
			for _, sp := range spellings {
				for _, route := range []string{routePulled, routeImported} {
					t.Run(v.String()+"/"+sp.name+"/"+route, func(t *testing.T) {
						t.Parallel()
						got := runRoute(t, v, sp, route, reg, digests)
						mu.Lock()
						table[v.String()+"/"+sp.name+"/"+route] = got.pinned
						mu.Unlock()
						want := pulledPinned[v][sp.name]
						if route == routeImported && sp.name == "tag+digest" {
							// ctr import stores the image under its tag
							// only: it has no repo digest for a digest
							// pattern to match (sandboxpin's own verdict
							// agrees), and the runtime finds no image by
							// the configured name.
							want = false
						}
						assert.Equal(t, want, got.pinned, "pinned of %s %s, configured %q", route, sp.stored, sp.configured(digests[sp.stored]))
						assert.False(t, got.otherPinned, "pinned of %s %s", route, other)

						code, out := audit(t, got.endpoint, got.config)
						wantCode := 1
						if want && sp.name != "alias" {
							wantCode = 0
						}
						assert.Equal(t, wantCode, code, "sandboxpin audit:\n%s", out)
					})
				}
			}
		}
	})
	var b strings.Builder
	fmt.Fprintf(&b, "| spelling | configured | stored | stock 2.4.2 pulled | stock imported | patched pulled | patched imported |\n|---|---|---|---|---|---|---|\n")
	for _, sp := range spellings {
		cell := func(v containerdtest.Version, route string) string {
			p, ok := table[v.String()+"/"+sp.name+"/"+route]
			if !ok {
				return "-"
			}
			return fmt.Sprintf("pinned=%v", p)
		}
		fmt.Fprintf(&b, "| %s | `%s` | `%s` | %s | %s | %s | %s |\n", sp.name, sp.configured("sha256:…"), sp.stored,
			cell(containerdtest.V24, routePulled), cell(containerdtest.V24, routeImported),
			cell(containerdtest.V24Pin, routePulled), cell(containerdtest.V24Pin, routeImported))
	}
	t.Logf("stock against patched:\n%s", b.String())
}

// audit runs `sandboxpin audit` against endpoint on a node root that holds
// config as /etc/containerd/config.toml, and returns its exit code and
// output. Exit 2 (an error) fails the test.
func audit(t *testing.T, endpoint, config string) (int, string) {
	t.Helper()
	bin, err := sandboxpinBinary()
	require.NoError(t, err)
	cfg, err := os.ReadFile(config)
	require.NoError(t, err)
	root := t.TempDir()
	etc := filepath.Join(root, "etc", "containerd")
	require.NoError(t, os.MkdirAll(etc, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(etc, "config.toml"), cfg, 0o600)) //nolint:gosec // G703: the test's own temporary directory
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "audit", "--runtime-endpoint", endpoint, "--root", root)
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

// binDir holds the sandboxpin command the tests build; TestMain removes it.
var binDir = sync.OnceValues(func() (string, error) { return os.MkdirTemp("", "sbc-bin") })

// sandboxpinBinary is cmd/sandboxpin built from the workspace (go.work):
// the live tests do not run in the floor and newest runs, which set
// GOWORK=off.
var sandboxpinBinary = sync.OnceValues(func() (string, error) {
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "sandboxpin")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/sandboxpin/sandboxpin/cmd/sandboxpin").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
})

// TestMain removes what the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := binDir(); err == nil {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}
