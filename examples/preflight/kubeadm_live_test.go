package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/criotest"
	"github.com/sandboxpin/sandboxpin/internal/kubeadmtest"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// TestKubeadmSideBySide runs kubeadm v1.37.2's own pre-flight (`kubeadm init
// phase preflight`, every image kubeadm lists already stored in the runtime so
// that nothing is pulled) beside this example and `sandboxpin resolve
// --kubeadm-version` on the same live runtime and node files. The verdicts,
// as asserted below and observed here (containerd 1.6.20, 2.2.9 and 2.4.2,
// CRI-O 1.36.3; on 2.4 resolve reads the version 4 config containerd 2.3
// and later write):
//
//	case                                           | kubeadm v1.37.2 pre-flight                   | examples/preflight and sandboxpin resolve
//	-----------------------------------------------|----------------------------------------------|------------------------------------------------------------
//	a. containerd 1.6, sandbox_image               | warns "sandbox image k8s.gcr.io/pause:3.10.2 | no conflict (exit 0): a note that both name one image
//	   k8s.gcr.io/pause:3.10.2 (alias of kubeadm's |   ... inconsistent"; a string compare, yet   |   through a registry alias; pre-pull lists both names and
//	   registry.k8s.io/pause:3.10.2)               |   not a false alarm offline: containerd 1.6  |   says how to store one image under both (ctr images tag,
//	                                               |   finds its sandbox image by that exact name |   checked here to make the alias name found)
//	b. containerd 2.2 / 2.4, pinned_images.sandbox | silent: containerd 2.x reports no sandbox   | conflict (examples/preflight exit 1) naming
//	   registry.k8s.io/pause:3.10 (not kubeadm's)  |   image in CRI Info, kubeadm logs it at -v=4 |   /etc/containerd/config.toml:LINE, kubeadm's image, and that
//	                                               |                                              |   kubeadm's pre-flight cannot see it; pre-pull lists both
//	c. CRI-O 1.36, pause_image                     | silent: Info reports the same string         | no conflict (exit 0); pre-pull is that one image
//	   registry.k8s.io/pause:3.10.2 (kubeadm's)    |                                              |
//	d. CRI-O 1.36, pause_image                     | warns, as in a (CRI-O reports its raw        | as in a, with `skopeo copy containers-storage:A
//	   k8s.gcr.io/pause:3.10.2                     |   pause_image); CRI-O too finds images by    |   containers-storage:B` as the way to store both names
//	                                               |   exact name                                 |   (checked here)
func TestKubeadmSideBySide(t *testing.T) {
	kubeadmtest.Require(t)
	t.Parallel()
	_, version := kubeadmtest.Binary()
	kubeadmImages := kubeadmtest.ImagesList(t, kubeadmtest.Config{KubernetesVersion: version})
	kubeadmPause := kubeadmtest.PauseImage(kubeadmImages)
	require.Equal(t, "registry.k8s.io/pause:3.10.2", kubeadmPause, "kubeadm %s's pause image", version)

	t.Run("a containerd 1.6 alias spelling", func(t *testing.T) {
		t.Parallel()
		const alias = "k8s.gcr.io/pause:3.10.2"
		c := containerdtest.Start(t, containerdtest.V1, containerdtest.Options{
			SandboxImage: alias,
			Images:       []containerdtest.Image{{Names: append([]string{alias}, kubeadmImages...)}},
		})
		root := containerdRoot(t, c)
		k := preflightKubeadm(t, c.Endpoint, version)
		assert.Equal(t, alias, k.RuntimeSandbox, "kubeadm warns, naming the runtime's image")
		assert.Equal(t, kubeadmPause, k.KubeadmSandbox, "and its own")

		for _, s := range sandboxpinVerdicts(t, root, c.Endpoint, version) {
			assert.Equal(t, exitOK, s.code, "%s: no conflict; stderr: %s", s.tool, s.stderr)
			assert.Empty(t, s.Conflicts, s.tool)
			assert.Equal(t, alias, s.SandboxImage, s.tool)
			assert.Equal(t, []string{alias, kubeadmPause}, s.Prepull, "%s: both exact names", s.tool)
			assert.True(t, hasNote(s.Notes, "registry alias"), "%s notes %q", s.tool, s.Notes)
			assert.True(t, hasNote(s.Notes, "ctr -n k8s.io images tag "+alias+" "+kubeadmPause), "%s notes %q", s.tool, s.Notes)
		}

		// Not a false alarm on an offline node: containerd 1.6 finds an
		// image by the exact name asked for. With only kubeadm's name
		// stored the alias is absent; `ctr images tag` (as the pre-pull
		// note says) makes it present.
		d := containerdtest.Start(t, containerdtest.V1, containerdtest.Options{
			SandboxImage: alias,
			Images:       []containerdtest.Image{{Names: kubeadmImages}},
		})
		assert.False(t, slices.Contains(repoTags(t, d.Socket), alias), "containerd 1.6 does not find %s by %s's name", alias, kubeadmPause)
		_, ctr := containerdtest.Binaries(containerdtest.V1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, ctr, "--address", d.Socket, "-n", "k8s.io", "images", "tag", kubeadmPause, alias).CombinedOutput()
		require.NoError(t, err, "ctr images tag: %s", out)
		assert.Eventually(t, func() bool { return slices.Contains(repoTags(t, d.Socket), alias) }, 30*time.Second, 50*time.Millisecond,
			"after ctr images tag, containerd 1.6 finds %s", alias)
	})

	for _, v := range []containerdtest.Version{containerdtest.V2, containerdtest.V24} {
		t.Run("b "+v.String()+" different pause image", func(t *testing.T) {
			t.Parallel()
			const other = "registry.k8s.io/pause:3.10"
			c := containerdtest.Start(t, v, containerdtest.Options{
				SandboxImage: other,
				Images:       []containerdtest.Image{{Names: append([]string{other}, kubeadmImages...)}},
			})
			root := containerdRoot(t, c)
			line := lineOf(t, filepath.Join(root, "etc", "containerd", "config.toml"), other)
			k := preflightKubeadm(t, c.Endpoint, version)
			assert.Empty(t, k.SandboxWarning, "kubeadm is blind: containerd 2.x reports no sandbox image")

			for _, s := range sandboxpinVerdicts(t, root, c.Endpoint, version) {
				assert.Equal(t, other, s.SandboxImage, s.tool)
				assert.Equal(t, []string{other, kubeadmPause}, s.Prepull, s.tool)
				if s.tool == "examples/preflight" {
					assert.Equal(t, exitConflict, s.code, "%s exit code; stderr: %s", s.tool, s.stderr)
				}
				found := false
				for _, m := range s.Conflicts {
					found = found || (strings.Contains(m.Message, "/etc/containerd/config.toml:"+line) && strings.Contains(m.Message, kubeadmPause) &&
						strings.Contains(m.Message, "kubeadm's pre-flight cannot see it"))
				}
				assert.True(t, found, "%s: a conflict names /etc/containerd/config.toml:%s and %s: %+v", s.tool, line, kubeadmPause, s.Conflicts)
			}
		})
	}

	t.Run("c CRI-O same image", func(t *testing.T) {
		t.Parallel()
		c := criotest.Start(t, criotest.Options{
			PauseImage: kubeadmPause,
			Images:     []containerdtest.Image{{Names: kubeadmImages}},
		})
		k := preflightKubeadm(t, c.Endpoint, version)
		assert.Empty(t, k.SandboxWarning, "kubeadm is quiet: CRI-O reports the same string")
		for _, s := range sandboxpinVerdicts(t, c.Dir, c.Endpoint, version) {
			assert.Equal(t, exitOK, s.code, "%s: quiet; stderr: %s", s.tool, s.stderr)
			assert.Empty(t, s.Conflicts, s.tool)
			assert.Equal(t, kubeadmPause, s.SandboxImage, s.tool)
			assert.Equal(t, []string{kubeadmPause}, s.Prepull, s.tool)
		}
	})

	t.Run("d CRI-O alias spelling", func(t *testing.T) {
		t.Parallel()
		const alias = "k8s.gcr.io/pause:3.10.2"
		c := criotest.Start(t, criotest.Options{
			PauseImage: alias,
			Images:     []containerdtest.Image{{Names: append([]string{alias}, kubeadmImages...)}},
		})
		k := preflightKubeadm(t, c.Endpoint, version)
		assert.Equal(t, alias, k.RuntimeSandbox, "kubeadm warns: CRI-O reports its raw pause_image")
		for _, s := range sandboxpinVerdicts(t, c.Dir, c.Endpoint, version) {
			assert.Equal(t, exitOK, s.code, "%s: no conflict; stderr: %s", s.tool, s.stderr)
			assert.Empty(t, s.Conflicts, s.tool)
			assert.Equal(t, []string{alias, kubeadmPause}, s.Prepull, "%s: both exact names", s.tool)
			assert.True(t, hasNote(s.Notes, "skopeo copy containers-storage:"+alias+" containers-storage:"+kubeadmPause), "%s notes %q", s.tool, s.Notes)
		}

		// CRI-O finds an image by the exact name too; the note's skopeo copy
		// (here with this instance's storage spelled out) adds the name.
		d := criotest.Start(t, criotest.Options{
			PauseImage: alias,
			Images:     []containerdtest.Image{{Names: kubeadmImages}},
		})
		assert.False(t, slices.Contains(repoTags(t, d.Socket), alias), "CRI-O does not find %s by %s's name", alias, kubeadmPause)
		store := "containers-storage:[vfs@" + d.StorageRoot + "+" + d.RunRoot + "]"
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, criotest.DefaultBinaries().Skopeo,
			"--policy", filepath.Join(d.Dir, "etc/containers/policy.json"),
			"copy", "--quiet", store+kubeadmPause, store+alias).CombinedOutput()
		require.NoError(t, err, "skopeo copy: %s", out)
		assert.Eventually(t, func() bool { return slices.Contains(repoTags(t, d.Socket), alias) }, 30*time.Second, 100*time.Millisecond,
			"after skopeo copy, CRI-O finds %s", alias)
	})
}

// preflightKubeadm runs kubeadm's pre-flight against endpoint and checks
// that it ran through without pulling anything.
func preflightKubeadm(t *testing.T, endpoint, version string) kubeadmtest.PreflightResult {
	t.Helper()
	r := kubeadmtest.Preflight(t, kubeadmtest.Config{KubernetesVersion: version, CRISocket: endpoint})
	require.NoError(t, r.Err, "kubeadm init phase preflight\nstdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	assert.False(t, r.Pulled, "kubeadm pulled an image:\n%s", r.Stderr)
	t.Logf("kubeadm warnings: %q", r.Warnings)
	return r
}

// containerdRoot returns a node root whose /etc/containerd/config.toml is the
// running containerd's config, byte for byte (so lines match).
func containerdRoot(t *testing.T, c *containerdtest.Containerd) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Dir, "config.toml"))
	require.NoError(t, err)
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc", "containerd"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc", "containerd", "config.toml"), b, 0o600)) //nolint:gosec // G703: a file in the test's own temporary directory
	return root
}

// lineOf returns the 1-based line of path that contains s, as a string.
func lineOf(t *testing.T, path, s string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			return strconv.Itoa(i + 1)
		}
	}
	t.Fatalf("%s does not contain %q", path, s)
	return ""
}

// repoTags returns every repo tag the runtime at socket lists.
func repoTags(t *testing.T, socket string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cri.Dial(ctx, socket)
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	imgs, err := c.Images(ctx)
	require.NoError(t, err)
	var tags []string
	for _, img := range imgs {
		tags = append(tags, img.GetRepoTags()...)
	}
	return tags
}

func hasNote(notes []resolve.Note, sub string) bool {
	for _, n := range notes {
		if strings.Contains(n.Message, sub) {
			return true
		}
	}
	return false
}

// verdict is what one of sandboxpin's tools said, from its JSON output (the
// example's report and `sandboxpin resolve -o json` share these keys).
type verdict struct {
	tool, stderr string
	code         int
	SandboxImage string `json:"sandboxImage"`
	Conflicts    []struct {
		Message string `json:"message"`
	} `json:"conflicts"`
	Notes   []resolve.Note `json:"notes"`
	Prepull []string       `json:"prepull"`
}

// sandboxpinVerdicts runs this example and `sandboxpin resolve` on root and
// endpoint with kubeadm version.
func sandboxpinVerdicts(t *testing.T, root, endpoint, version string) []verdict {
	t.Helper()
	args := []string{"--root", root, "--runtime-endpoint", endpoint, "--kubeadm-version", version, "-o", "json"}
	var out, errOut bytes.Buffer
	pf := verdict{tool: "examples/preflight", code: run(args, &out, &errOut)}
	pf.stderr = errOut.String()
	if pf.code != exitError {
		require.NoError(t, json.Unmarshal(out.Bytes(), &pf), "preflight output:\n%s", out.String())
	}

	bin := sandboxpinBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"resolve"}, args...)...)
	out.Reset()
	errOut.Reset()
	cmd.Stdout, cmd.Stderr = &out, &errOut
	sp := verdict{tool: "sandboxpin resolve"}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "run %s", bin)
		sp.code = ee.ExitCode()
	}
	sp.stderr = errOut.String()
	if sp.code != exitError {
		require.NoError(t, json.Unmarshal(out.Bytes(), &sp), "sandboxpin resolve output:\n%s", out.String())
	}
	t.Logf("%s: exit %d, conflicts %+v, prepull %q", pf.tool, pf.code, pf.Conflicts, pf.Prepull)
	t.Logf("%s: exit %d, conflicts %+v, prepull %q", sp.tool, sp.code, sp.Conflicts, sp.Prepull)
	return []verdict{pf, sp}
}

// binDir holds the sandboxpin command built for the live test; TestMain
// removes it.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// sandboxpinBuild builds the sandboxpin command once per test binary (from
// the workspace: go.work ties cmd to this module's siblings).
var sandboxpinBuild = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "sandboxpin-bin")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "sandboxpin")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/sandboxpin/sandboxpin/cmd/sandboxpin").CombinedOutput()
	if err != nil {
		return "", &buildError{err: err, out: string(out)}
	}
	return bin, nil
})

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build sandboxpin: " + e.err.Error() + "\n" + e.out }

func sandboxpinBinary(t *testing.T) string {
	t.Helper()
	bin, err := sandboxpinBuild()
	require.NoError(t, err)
	return bin
}
