package crilive

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/cridockerdtest"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// dockerSpelling is one way to write --pod-infra-container-image for an
// image that `docker load` stored under a given name.
type dockerSpelling struct {
	name       string
	configured func(digest string) string
	stored     string // the name in the archive
	listed     string // the repo tag Docker stores it under
}

// dockerSpellings are the sandbox image spellings tried on cri-dockerd. Images are loaded, never
// pulled: `docker load` records no repo digest, so the digest spellings
// name an image Docker knows by tag only.
var dockerSpellings = []dockerSpelling{
	{name: "exact", stored: "registry.k8s.io/pause:3.10.1", listed: "registry.k8s.io/pause:3.10.1",
		configured: func(string) string { return "registry.k8s.io/pause:3.10.1" }},
	{name: "docker.io/library", stored: "docker.io/library/pause:3.10.1", listed: "pause:3.10.1",
		configured: func(string) string { return "docker.io/library/pause:3.10.1" }},
	{name: "familiar", stored: "docker.io/library/pause:3.10.1", listed: "pause:3.10.1",
		configured: func(string) string { return "pause:3.10.1" }},
	{name: "alias", stored: "registry.k8s.io/pause:3.10.1", listed: "registry.k8s.io/pause:3.10.1",
		configured: func(string) string { return "k8s.gcr.io/pause:3.10.1" }},
	{name: "tagless", stored: "registry.k8s.io/pause:latest", listed: "registry.k8s.io/pause:latest",
		configured: func(string) string { return "registry.k8s.io/pause" }},
	{name: "tag+digest", stored: "registry.k8s.io/pause:3.10.1", listed: "registry.k8s.io/pause:3.10.1",
		configured: func(d string) string { return "registry.k8s.io/pause:3.10.1@" + d }},
	{name: "digest", stored: "registry.k8s.io/pause:3.10.1", listed: "registry.k8s.io/pause:3.10.1",
		configured: func(d string) string { return "registry.k8s.io/pause@" + d }},
}

// dockerPinned is cri-dockerd's own Image.pinned per spelling, as observed
// live on v0.3.14 and v0.4.4 (the same on both): isPinned in core/image.go
// compares the flag with Docker's RepoTags as strings.
var dockerPinned = map[string]bool{
	"exact": true, "docker.io/library": false, "familiar": true, "alias": false,
	"tagless": false, "tag+digest": false, "digest": false,
}

// TestLiveCRIDockerdMatrix starts each cri-dockerd build in front of Docker
// Engine once per spelling of its sandbox image and checks what cri-dockerd
// pins itself, what it reports in Info, and that resolve, reading the very
// unit cri-dockerd runs with and asking it live, names the configured image,
// takes cri-dockerd's own version (not Docker's) and predicts, by a note,
// exactly the spellings cri-dockerd leaves unpinned. The alias row then
// applies the note's fix (`docker tag`) and sees the image pinned.
func TestLiveCRIDockerdMatrix(t *testing.T) {
	t.Parallel()
	for _, v := range cridockerdtest.Versions() {
		for _, sp := range dockerSpellings {
			t.Run(string(v)+"/"+sp.name, func(t *testing.T) {
				t.Parallel()
				img := containerdtest.Image{Names: []string{sp.stored}}
				digest, err := containerdtest.ManifestDigest(img)
				require.NoError(t, err)
				configured := sp.configured(digest)
				d := cridockerdtest.Start(t, v, cridockerdtest.Options{
					PodInfraImage: configured,
					Images:        []containerdtest.Image{img, {Names: []string{"docker.io/library/busybox:1.36"}}},
				})
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				c := dialLive(t, d.Endpoint)

				info, err := c.Info(ctx)
				require.NoError(t, err)
				assert.Equal(t, criinfo.Info{Runtime: criinfo.RuntimeCRIDockerd, EngineVersion: cridockerdtest.EngineVersion,
					SandboxImage: configured, SandboxImageReported: true}, info, "Info")

				own := listedPinned(ctx, t, c)
				require.Contains(t, own, sp.listed, "listed images")
				want := dockerPinned[sp.name]
				t.Logf("MATRIX cri-dockerd %s configured %q stored %q (listed %q): cri-dockerd's own pinned %v",
					v.Release(), configured, sp.stored, sp.listed, own[sp.listed])
				assert.Equal(t, want, own[sp.listed], "cri-dockerd's own pinned for %s configured as %q", sp.listed, configured)
				assert.False(t, own["busybox:1.36"], "busybox is not pinned")

				res := resolveCRIDockerd(ctx, t, d, c)
				assert.Equal(t, configured, res.SandboxImage, "resolved image")
				assert.Equal(t, "cri-dockerd", string(res.Runtime))
				assert.Empty(t, res.Conflicts, "conflicts")
				predicted := false
				for _, n := range res.Notes {
					if predictsUnpinned(n.Kind) {
						predicted = true
					}
				}
				t.Logf("MATRIX cri-dockerd %s %s: sandboxpin predicts unpinned %v", v.Release(), sp.name, predicted)
				assert.Equal(t, !want, predicted, "resolve predicts cri-dockerd leaves it unpinned; notes %q", res.Notes)

				if sp.name == "alias" {
					// The note's fix: store the image under the configured
					// name. cri-dockerd then pins it (every repo tag of the
					// image is the same image).
					d.Tag(t, sp.listed, configured)
					own = listedPinned(ctx, t, c)
					assert.True(t, own[configured], "pinned after docker tag: %v", own)
					assert.True(t, own[sp.listed], "the same image, by its other tag: %v", own)
				}
			})
		}
	}
}

// TestLiveCRIDockerdDefault starts each build without
// --pod-infra-container-image: Info reports the built-in default, which
// must be resolve's table row for that version (RuntimeDefaultImage), and
// cri-dockerd pins it once it is stored.
func TestLiveCRIDockerdDefault(t *testing.T) {
	t.Parallel()
	for _, v := range cridockerdtest.Versions() {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			def, err := resolve.RuntimeDefaultImage("cri-dockerd", v.Release())
			require.NoError(t, err)
			d := cridockerdtest.Start(t, v, cridockerdtest.Options{Images: []containerdtest.Image{{Names: []string{def}}}})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := dialLive(t, d.Endpoint)
			info, err := c.Info(ctx)
			require.NoError(t, err)
			t.Logf("DEFAULT cri-dockerd %s reports %q; the table says %q", v.Release(), info.SandboxImage, def)
			assert.Equal(t, def, info.SandboxImage, "built-in default")
			assert.True(t, listedPinned(ctx, t, c)[def], "the default, stored, is pinned")

			res := resolveCRIDockerd(ctx, t, d, c)
			assert.Equal(t, def, res.SandboxImage)
			assert.Empty(t, res.Conflicts)
		})
	}
}

// TestLiveCRIDockerdVersion answers what a client can learn of
// cri-dockerd's own version: the Version RPC states none (RuntimeName
// "docker", RuntimeVersion Docker Engine's, Version "0.1.0", the kubelet
// API's), the Go build info states none either (built as the Makefile
// builds it: -trimpath keeps the -X stamp out, and a build from the module
// archive is "(devel)"), and only the binary's --version tells. criinfo/cri
// puts Docker's version in EngineVersion, and resolve with a BinaryVersion
// that runs the binary gets cri-dockerd's. With -update it rewrites
// criinfo/testdata/cri-dockerd-<version>-*.json.
func TestLiveCRIDockerdVersion(t *testing.T) {
	t.Parallel()
	for _, v := range cridockerdtest.Versions() {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			d := cridockerdtest.Start(t, v, cridockerdtest.Options{PodInfraImage: "registry.k8s.io/pause:3.10.1"})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := dialLive(t, d.Endpoint)
			rt := rawRuntime(t, d.Endpoint)
			ver, err := rt.Version(ctx, &runtimeapi.VersionRequest{})
			require.NoError(t, err)
			t.Logf("VERSION cri-dockerd %s: %v", v.Release(), ver)
			assert.Equal(t, "0.1.0", ver.GetVersion())
			assert.Equal(t, "docker", ver.GetRuntimeName())
			assert.Equal(t, cridockerdtest.EngineVersion, ver.GetRuntimeVersion())
			assert.Equal(t, "v1", ver.GetRuntimeApiVersion())
			verJSON, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(ver)
			require.NoError(t, err)
			assert.NotContains(t, string(verJSON), v.Release(), "cri-dockerd's version appears nowhere in its Version answer")

			out, err := exec.CommandContext(ctx, v.Binary(), "--version").CombinedOutput()
			require.NoError(t, err)
			assert.Regexp(t, `^cri-dockerd `+strings.ReplaceAll(v.Release(), ".", `\.`)+` \([0-9a-f]{7}\)\n$`, string(out))

			bi, err := buildinfo.ReadFile(v.Binary())
			require.NoError(t, err)
			assert.Equal(t, "(devel)", bi.Main.Version, "main module version")
			for _, s := range bi.Settings {
				assert.NotEqual(t, "-ldflags", s.Key, "-ldflags recorded: %s", s.Value)
			}

			// resolve: the unit names the binary; only running it tells.
			res := resolveCRIDockerd(ctx, t, d, c)
			require.NotEmpty(t, res.Versions)
			assert.Equal(t, resolve.ComponentVersion{Component: "cri-dockerd", Version: v.Release(),
				Origin: "/usr/bin/cri-dockerd (--version)", Used: true}, res.Versions[0])
			for _, n := range res.Notes {
				assert.NotContains(t, n, "cri-dockerd "+cridockerdtest.EngineVersion, "Docker's version taken for cri-dockerd's")
			}

			st, err := rt.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
			require.NoError(t, err)
			keys := make([]string, 0, len(st.GetInfo()))
			for k := range st.GetInfo() {
				keys = append(keys, k)
			}
			assert.Equal(t, []string{"config"}, keys, "cri-dockerd's Info keys")
			raw, crictl := captures(t, st, d.Dir)
			for name, data := range map[string][]byte{"version": append(verJSON, '\n'), "status-info": raw, "info": crictl} {
				golden := filepath.Join(goldenDir, "cri-dockerd-"+v.Release()+"-"+name+".json")
				if *update {
					require.NoError(t, os.WriteFile(golden, data, 0o600))
					t.Logf("wrote %s", golden)
					continue
				}
				want, err := os.ReadFile(golden)
				require.NoError(t, err, "run with -update to write it")
				assert.JSONEq(t, string(want), string(data), "%s (run with -update to rewrite it)", golden)
			}
		})
	}
}

// listedPinned returns cri-dockerd's own Image.pinned by repo tag.
func listedPinned(ctx context.Context, t *testing.T, c *cri.Client) map[string]bool {
	t.Helper()
	imgs, err := c.Images(ctx)
	require.NoError(t, err)
	m := map[string]bool{}
	for _, im := range imgs {
		for _, tag := range im.GetRepoTags() {
			m[tag] = im.GetPinned()
		}
	}
	return m
}

// resolveCRIDockerd resolves d's node root (its unit and binary) with the
// live cri-dockerd, running the binary for its version as the CLI does on a
// live node.
func resolveCRIDockerd(ctx context.Context, t *testing.T, d *cridockerdtest.CRIDockerd, c *cri.Client) *resolve.Result {
	t.Helper()
	res, err := resolve.Resolve(ctx, resolve.Options{Root: resolve.DirFS(d.Dir), Live: c,
		BinaryVersion: func(ctx context.Context, component, path string) (string, error) {
			out, err := exec.CommandContext(ctx, filepath.Join(d.Dir, path), "--version").Output()
			if err != nil {
				return "", err
			}
			f := strings.Fields(string(out))
			if len(f) < 2 || f[0] != component {
				return "", fmt.Errorf("unexpected --version output %q", out)
			}
			return f[1], nil
		}})
	require.NoError(t, err)
	return res
}
