package kubeadmtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/kubeadmtest"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// sandboxCase is how the runtime's sandbox image relates to kubeadm's
// (registry.k8s.io/pause:3.10.2 for v1.37.2).
type sandboxCase struct {
	name       string
	configured string // the runtime's sandbox image
	// stock16: stock kubeadm warns on containerd 1.6.20 (on 2.x it never
	// does: the runtime reports no sandbox image); patched: kubeadm with
	// compare.patch and fallback.patch warns, on both. With compare.patch
	// alone it warns where patched does on 1.6.20, and never on 2.x.
	stock16, patched bool
}

var sandboxCases = []sandboxCase{
	{name: "same", configured: "registry.k8s.io/pause:3.10.2"},
	// A string compare on 1.6.20, which reports its sandbox image; 2.x
	// reports none, so stock says nothing there at all.
	{name: "alias", configured: "k8s.gcr.io/pause:3.10.2", stock16: true},
	{name: "different", configured: "registry.k8s.io/pause:3.10", stock16: true, patched: true},
}

// TestLivePatchedKubeadm runs kubeadm v1.37.2's pre-flight, the same with
// contrib/kubeadm/compare.patch, and with compare.patch and fallback.patch
// ("patched") against containerd 1.6.20 and 2.4.2, each configured with
// kubeadm's own sandbox image, an alias of it and a different image, every
// image kubeadm lists already stored (nothing is pulled). kubeadm sees the
// runtime's config.toml as /etc/containerd: fallback.patch reads it (through
// resolve) where the runtime reports no sandbox image over CRI (containerd
// 2.x). Patched warns exactly for the different image on both; compare.patch
// alone does on 1.6.20 and says nothing on 2.4.2, where it sees nothing; stock
// warns for the alias on 1.6.20 (a string compare) and never on 2.4.2.
// `sandboxpin resolve` on the same node files agrees with the patched build: a
// conflict between the runtime's image and kubeadm's exactly where it warns.
func TestLivePatchedKubeadm(t *testing.T) {
	kubeadmtest.Require(t)
	runtimetest.Require(t, "kubeadm with contrib/kubeadm/compare.patch", kubeadmtest.AvailablePatchedCompare)
	runtimetest.Require(t, "kubeadm with contrib/kubeadm/compare.patch and fallback.patch", kubeadmtest.AvailablePatched)
	if _, err := os.Stat("/etc/containerd"); err != nil {
		t.Skipf("kubeadm sees the runtime's config through a bind mount on /etc/containerd, which does not exist here: %v", err)
	}
	t.Parallel()
	_, version := kubeadmtest.Binary()
	kubeadmImages := kubeadmtest.ImagesList(t, kubeadmtest.Config{KubernetesVersion: version})
	kubeadmPause := kubeadmtest.PauseImage(kubeadmImages)
	require.Equal(t, "registry.k8s.io/pause:3.10.2", kubeadmPause)
	bin := runtimetest.Sandboxpin(t)

	var mu sync.Mutex
	table := map[string]string{}
	t.Run("runs", func(t *testing.T) {
		for _, v := range []containerdtest.Version{containerdtest.V1, containerdtest.V24} {
			for _, sc := range sandboxCases {
				t.Run(v.String()+"/"+sc.name, func(t *testing.T) {
					t.Parallel()
					c := containerdtest.Start(t, v, containerdtest.Options{
						SandboxImage: sc.configured,
						Images:       []containerdtest.Image{{Names: append([]string{sc.configured}, kubeadmImages...)}},
					})
					etc := filepath.Join(t.TempDir(), "etc", "containerd")
					require.NoError(t, os.MkdirAll(etc, 0o750))
					cfg, err := os.ReadFile(filepath.Join(c.Dir, "config.toml"))
					require.NoError(t, err)
					require.NoError(t, os.WriteFile(filepath.Join(etc, "config.toml"), cfg, 0o600)) //nolint:gosec // G703: the test's own temporary directory

					for _, build := range []struct{ name, bin string }{
						{"stock", ""}, {"compare", kubeadmtest.PatchedCompareBinary()}, {"patched", kubeadmtest.PatchedBinary()},
					} {
						r := kubeadmtest.Preflight(t, kubeadmtest.Config{
							Binary: build.bin, EtcContainerd: etc, KubernetesVersion: version, CRISocket: c.Endpoint, Verbosity: 4,
						})
						require.NoError(t, r.Err, "%s kubeadm init phase preflight\nstdout:\n%s\nstderr:\n%s", build.name, r.Stdout, r.Stderr)
						assert.False(t, r.Pulled, "%s kubeadm pulled an image:\n%s", build.name, r.Stderr)
						want := sc.patched
						switch build.name {
						case "stock":
							want = sc.stock16 && v == containerdtest.V1
						case "compare":
							// containerd 2.x reports no sandbox image, and
							// compare.patch reads no config: nothing to check.
							want = sc.patched && v == containerdtest.V1
						}
						assert.Equal(t, want, r.SandboxWarning != "", "%s kubeadm's sandbox warning: %q", build.name, r.SandboxWarning)
						// At -v=4: containerd 2.x reports no sandbox image, and
						// fallback.patch then read it from the config.
						assert.Equal(t, v != containerdtest.V1, strings.Contains(r.Stderr, "failed to detect the sandbox image for local container runtime"),
							"%s: the runtime reports a sandbox image over CRI only on 1.x", build.name)
						assert.NotContains(t, r.Stderr, "failed to read the sandbox image from the container runtime config", build.name)
						if r.SandboxWarning != "" {
							assert.Equal(t, sc.configured, r.RuntimeSandbox, "%s names the runtime's image", build.name)
							assert.Equal(t, kubeadmPause, r.KubeadmSandbox, "%s names its own", build.name)
						}
						cell := "silent"
						if r.SandboxWarning != "" {
							cell = fmt.Sprintf("warns (runtime %q)", r.RuntimeSandbox)
						}
						mu.Lock()
						table[v.String()+"/"+sc.name+"/"+build.name] = cell
						mu.Unlock()
					}

					// sandboxpin resolve on the same files (the config as
					// the node's) with kubeadm's version: a conflict with
					// kubeadm's image exactly where the patched build warns.
					conflicts, out := kubeadmConflicts(t, bin, filepath.Dir(filepath.Dir(etc)), c.Endpoint, version, kubeadmPause)
					assert.Equal(t, sc.patched, conflicts > 0, "sandboxpin resolve:\n%s", out)
				})
			}
		}
	})
	var b strings.Builder
	fmt.Fprintf(&b, "| containerd | runtime's sandbox image | kubeadm v1.37.2 | compare.patch | compare.patch + fallback.patch |\n|---|---|---|---|---|\n")
	for _, v := range []containerdtest.Version{containerdtest.V1, containerdtest.V24} {
		for _, sc := range sandboxCases {
			k := v.String() + "/" + sc.name
			fmt.Fprintf(&b, "| %s | `%s` (%s) | %s | %s | %s |\n", v.Release(), sc.configured, sc.name, table[k+"/stock"], table[k+"/compare"], table[k+"/patched"])
		}
	}
	t.Logf("kubeadm's sandbox image warning, stock against each patch:\n%s", b.String())
}

// kubeadmConflicts runs `sandboxpin resolve -o json` on the node root and
// the live runtime, and counts the conflicts that have kubeadm's pause image
// on one side; it returns resolve's output too.
func kubeadmConflicts(t *testing.T, bin, root, endpoint, version, kubeadmPause string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "resolve", "--root", root, "--runtime-endpoint", endpoint,
		"--kubeadm-version", version, "-o", "json").Output()
	require.NoError(t, err, "sandboxpin resolve: %s", out)
	var res struct {
		Conflicts []struct {
			A, B struct{ Image string }
		}
	}
	require.NoError(t, json.Unmarshal(out, &res), "%s", out)
	n := 0
	for _, c := range res.Conflicts {
		if c.A.Image == kubeadmPause || c.B.Image == kubeadmPause {
			n++
		}
	}
	return n, string(out)
}
