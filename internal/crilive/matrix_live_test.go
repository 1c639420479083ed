package crilive

import (
	"context"
	"os"
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

// spelling is one way to write the configured sandbox image for an image
// stored (imported with `ctr images import`) under a given name.
type spelling struct {
	name       string
	configured func(digest string) string // the sandbox image in the config
	stored     string                     // the name the image is imported under
}

// matrixSpellings are the spellings of issue 9's matrix. The image is
// imported, never pulled through CRI: the air-gap route.
var matrixSpellings = []spelling{
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

// matrixPinned is the runtime's own Image.pinned for the stored image, per
// build and spelling, as observed live (criinfo/testdata/README.md has the
// table). containerd 1.6.20 never pins; 1.7.35 compares after Docker-style
// normalization, so short and tagless names pin but an alias does not and
// name:tag@digest is compared as name@digest; 2.x compares strings.
var matrixPinned = map[containerdtest.Version]map[string]bool{
	containerdtest.V1:  {"exact": false, "alias": false, "short": false, "tagless": false, "tag+digest": false},
	containerdtest.V17: {"exact": true, "alias": false, "short": true, "tagless": true, "tag+digest": false},
	containerdtest.V2:  {"exact": true, "alias": false, "short": false, "tagless": false, "tag+digest": false},
	containerdtest.V23: {"exact": true, "alias": false, "short": false, "tagless": false, "tag+digest": false},
	containerdtest.V24: {"exact": true, "alias": false, "short": false, "tagless": false, "tag+digest": false},
}

// predictsUnpinned reports whether a note of kind k is one by which resolve
// predicts that the runtime will not pin its sandbox image.
func predictsUnpinned(k resolve.Kind) bool {
	switch k {
	case resolve.KindContainerdNeverPins, resolve.KindContainerdPinsCRIPulls, resolve.KindContainerdTaglessNeverPinned,
		resolve.KindContainerdAliasNeverPinned, resolve.KindContainerdTagDigestNeverPinned, resolve.KindContainerdTagDigestDropsTag,
		resolve.KindContainerdShortNeverPinned, resolve.KindCRIDockerdNeverPins, resolve.KindCRIDockerdAliasNeverPinned,
		resolve.KindCRIDockerdDigestOnlyNeverPinned, resolve.KindCRIDockerdDigestNeverPinned, resolve.KindCRIDockerdOtherSpelling,
		resolve.KindCRIONeverPins, resolve.KindCRIOShortNeverPinned, resolve.KindCRIOAliasNeverPinned:
		return true
	}
	return false
}

// TestLiveMatrix starts every containerd build once per spelling of its
// sandbox image (25 runtimes, in parallel), and checks what the runtime pins
// itself, what it reports in Info, and that resolve, reading the very config
// the runtime runs with and asking it live, names the configured image and
// predicts, by a note, exactly the cases the runtime leaves unpinned.
func TestLiveMatrix(t *testing.T) {
	t.Parallel()
	for _, v := range containerdtest.Versions() {
		for _, sp := range matrixSpellings {
			t.Run(v.String()+"/"+sp.name, func(t *testing.T) {
				t.Parallel()
				img := containerdtest.Image{Names: []string{sp.stored}}
				digest, err := containerdtest.ManifestDigest(img)
				require.NoError(t, err)
				configured := sp.configured(digest)
				ctrd := containerdtest.Start(t, v, containerdtest.Options{
					SandboxImage: configured,
					Images:       []containerdtest.Image{img, {Names: []string{"docker.io/library/busybox:1.36"}}},
				})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				c, err := cri.Dial(ctx, ctrd.Endpoint)
				require.NoError(t, err)
				defer func() { _ = c.Close() }()

				info, err := c.Info(ctx)
				require.NoError(t, err)
				assert.True(t, strings.HasPrefix(strings.TrimPrefix(info.RuntimeVersion, "v"), v.Release()),
					"RuntimeVersion %q, want %s", info.RuntimeVersion, v.Release())
				// Only containerd 1.x reports its sandbox image, verbatim.
				if v == containerdtest.V1 || v == containerdtest.V17 {
					assert.True(t, info.SandboxImageReported, "SandboxImageReported")
					assert.Equal(t, configured, info.SandboxImage)
				} else {
					assert.False(t, info.SandboxImageReported, "SandboxImageReported")
				}

				imgs, err := c.Images(ctx)
				require.NoError(t, err)
				own := map[string]bool{}
				for _, im := range imgs {
					for _, tag := range im.GetRepoTags() {
						own[tag] = im.GetPinned()
					}
				}
				require.Contains(t, own, sp.stored, "listed images")
				wantPinned := matrixPinned[v][sp.name]
				t.Logf("MATRIX %s %s configured %q stored %q: runtime's own pinned %v", v, v.Release(), configured, sp.stored, own[sp.stored])
				assert.Equal(t, wantPinned, own[sp.stored], "runtime's own pinned for %s configured as %q", sp.stored, configured)
				assert.False(t, own["docker.io/library/busybox:1.36"], "busybox is not pinned")

				// resolve over the config the runtime runs with, and the runtime.
				cfg, err := os.ReadFile(filepath.Join(ctrd.Dir, "config.toml"))
				require.NoError(t, err)
				root := t.TempDir()
				etc := filepath.Join(root, "etc", "containerd")
				require.NoError(t, os.MkdirAll(etc, 0o750))
				require.NoError(t, os.WriteFile(filepath.Join(etc, "config.toml"), cfg, 0o600)) //nolint:gosec // G703: the test's own temporary directory
				res, err := resolve.Resolve(ctx, resolve.Options{Root: os.DirFS(root), Live: c})
				require.NoError(t, err)
				assert.Equal(t, configured, res.SandboxImage, "resolved image")
				assert.Equal(t, "containerd", string(res.Runtime))
				assert.Empty(t, res.Conflicts, "conflicts")
				// Candidates: the config file's line, the live report (1.x
				// only) and the build's default.
				def, err := resolve.RuntimeDefaultImage("containerd", v.Release())
				require.NoError(t, err)
				bySource := map[resolve.Source][]string{}
				for _, cand := range res.Candidates {
					bySource[cand.Source] = append(bySource[cand.Source], cand.Image)
					if cand.Source == resolve.SourceContainerdConfig {
						assert.Regexp(t, `^/etc/containerd/config\.toml:[0-9]+$`, cand.Origin)
					}
				}
				want := map[resolve.Source][]string{resolve.SourceContainerdConfig: {configured}, resolve.SourceRuntimeDefault: {def}}
				if info.SandboxImageReported {
					want[resolve.SourceRuntimeInfo] = []string{configured}
				}
				assert.Equal(t, want, bySource, "candidates by source")
				predicted := false
				for _, n := range res.Notes {
					if predictsUnpinned(n.Kind) {
						predicted = true
					}
				}
				assert.Equal(t, !wantPinned, predicted, "resolve predicts the runtime leaves it unpinned; notes %q", res.Notes)

				// The socket resolve reads from the config is the one it serves.
				ep, _, err := resolve.ContainerdEndpoint(os.DirFS(root))
				require.NoError(t, err)
				assert.Equal(t, ctrd.Endpoint, ep, "ContainerdEndpoint")
			})
		}
	}
}

// TestLiveV3Migration answers issue 9's question live: in a version 3 config
// that sets both [plugins."io.containerd.grpc.v1.cri"] sandbox_image (A) and
// pinned_images.sandbox (B), which does each containerd use? The runtime
// pins the image it uses, so the pinned one tells. 2.2.9 ignores A and uses
// B; 2.3.7 and 2.4.2 migrate the file to version 4, moving A over B. resolve,
// given the version live, agrees and reports the conflict.
func TestLiveV3Migration(t *testing.T) {
	t.Parallel()
	const (
		legacy = "mirror.example.com/k8s/pause:3.10.1" // A
		pinned = "registry.k8s.io/pause:3.10.1"        // B
	)
	for _, tc := range []struct {
		version containerdtest.Version
		uses    string
	}{
		{containerdtest.V2, pinned},
		{containerdtest.V23, legacy},
		{containerdtest.V24, legacy},
	} {
		t.Run(tc.version.String(), func(t *testing.T) {
			t.Parallel()
			ctrd := containerdtest.Start(t, tc.version, containerdtest.Options{
				SandboxImage:  pinned,
				ConfigVersion: 3,
				ExtraTOML:     "\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"" + legacy + "\"\n",
				Images:        []containerdtest.Image{{Names: []string{pinned}}, {Names: []string{legacy}}},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := cri.Dial(ctx, ctrd.Endpoint)
			require.NoError(t, err)
			defer func() { _ = c.Close() }()
			imgs, err := c.Images(ctx)
			require.NoError(t, err)
			own := map[string]bool{}
			for _, im := range imgs {
				for _, tag := range im.GetRepoTags() {
					own[tag] = im.GetPinned()
				}
			}
			t.Logf("V3MIGRATION %s: pinned %v", tc.version.Release(), own)
			assert.Equal(t, map[string]bool{pinned: tc.uses == pinned, legacy: tc.uses == legacy}, own,
				"containerd %s uses (pins) %s", tc.version.Release(), tc.uses)

			cfg, err := os.ReadFile(filepath.Join(ctrd.Dir, "config.toml"))
			require.NoError(t, err)
			root := t.TempDir()
			etc := filepath.Join(root, "etc", "containerd")
			require.NoError(t, os.MkdirAll(etc, 0o750))
			require.NoError(t, os.WriteFile(filepath.Join(etc, "config.toml"), cfg, 0o600)) //nolint:gosec // G703: the test's own temporary directory
			res, err := resolve.Resolve(ctx, resolve.Options{Root: os.DirFS(root), Live: c})
			require.NoError(t, err)
			assert.Equal(t, tc.uses, res.SandboxImage, "resolved image")
			require.Len(t, res.Conflicts, 1, "the key whose meaning depends on the version")
			assert.Contains(t, res.Conflicts[0].Message, "sandbox_image")
		})
	}
}
