package resolve

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

// hasKind reports whether res has a note or a conflict of kind k.
func hasKind(res *Result, k Kind) bool {
	return slices.ContainsFunc(res.Notes, func(n Note) bool { return n.Kind == k }) ||
		slices.ContainsFunc(res.Conflicts, func(c Conflict) bool { return c.Kind == k })
}

// v3 is a containerd version 3 config with the sandbox image img.
func v3(img string) map[string]string {
	return map[string]string{"etc/containerd/config.toml": "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"" + img + "\"\n"}
}

func TestEndOfLife(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     Options // Root is set by the test
		wantEOL  []string
		wantAsOf string // Result.SupportAsOf
	}{
		{name: "2.2 past its end on the table's day", opts: Options{RuntimeVersion: "2.2.10"}, wantEOL: []string{"containerd"}, wantAsOf: "2026-12-06"},
		{name: "2.2 before its end", opts: Options{RuntimeVersion: "2.2.10", Today: time.Date(2026, 11, 6, 23, 0, 0, 0, time.UTC)}, wantAsOf: "2026-11-06"},
		{name: "2.4 within support", opts: Options{RuntimeVersion: "2.4.2"}, wantAsOf: "2026-12-06"},
		{name: "2.4 past its end on a later day", opts: Options{RuntimeVersion: "2.4.2", Today: time.Date(2027, 5, 17, 0, 0, 0, 0, time.UTC)},
			wantEOL: []string{"containerd"}, wantAsOf: "2027-05-17"},
		{name: "1.7 through September 2026", opts: Options{RuntimeVersion: "1.7.30", Today: time.Date(2026, 9, 30, 12, 0, 0, 0, time.UTC)}, wantAsOf: "2026-09-30"},
		{name: "a line no row knows", opts: Options{RuntimeVersion: "2.5.0"}, wantAsOf: "2026-12-06"},
		{name: "kubelet and kubeadm outside the three newest minors", opts: Options{RuntimeVersion: "2.4.2", KubeletVersion: "1.34.3", KubeadmVersion: "v1.33.1"},
			wantEOL: []string{"kubelet", "kubeadm"}, wantAsOf: "2026-12-06"},
		{name: "kubelet 1.35 and a 1.38 pre-release", opts: Options{RuntimeVersion: "2.4.2", KubeletVersion: "1.35.0", KubeadmVersion: "v1.38.0-beta.0"}, wantAsOf: "2026-12-06"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Root = nodetest.MapFS(v3("registry.k8s.io/pause:3.10.1"))
			res, err := Resolve(context.Background(), opts)
			require.NoError(t, err)
			var got []string
			for _, n := range res.Notes {
				if n.Kind == KindEndOfLife {
					got = append(got, string(n.Component))
					assert.NotEmpty(t, n.Version, "the note names the version")
				}
			}
			assert.Equal(t, tt.wantEOL, got, "components past their end of life; notes %q", res.Notes)
			assert.Equal(t, tt.wantAsOf, res.SupportAsOf.Format(time.DateOnly), "SupportAsOf")
		})
	}
}

func TestCRIDockerdPinnedImages(t *testing.T) {
	t.Parallel()
	unit := func(flags string) map[string]string {
		return map[string]string{"lib/systemd/system/cri-docker.service": "[Service]\nExecStart=/usr/bin/cri-dockerd --container-runtime-endpoint fd:// " +
			"--pod-infra-container-image=registry.k8s.io/pause:3.10 " + flags + "\n"}
	}
	tests := []struct {
		name      string
		version   string   // cri-dockerd's
		flags     string   // on its ExecStart
		wantMode  pin.Mode // Result.PinMode
		wantPins  []string // Result.Pins
		wantKinds []Kind   // kinds of notes or conflicts
		wantFixTo string   // To of a fix answering KindCRIDockerdPinNeverMatches
	}{
		{name: "0.4.4 has no such flags", version: "0.4.4", flags: "--pinned-images=nginx:1.27", wantMode: pin.ModeStrict,
			wantPins: []string{"registry.k8s.io/pause:3.10"}, wantKinds: []Kind{KindCRIDockerdNoPinFlags}},
		{name: "0.4.7 without flags", version: "0.4.7", wantMode: pin.ModeCRIDockerdCompat,
			wantPins: []string{"registry.k8s.io/pause:3.10"}, wantKinds: []Kind{KindCRIDockerdPinsFlags}},
		{name: "0.4.4 without flags", version: "0.4.4", wantMode: pin.ModeStrict, wantPins: []string{"registry.k8s.io/pause:3.10"}},
		{name: "an entry equal to the sandbox image stays an entry", version: "0.4.10", flags: "--pinned-images=registry.k8s.io/pause:3.10,nginx",
			wantMode: pin.ModeCRIDockerdCompat, wantPins: []string{"registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10", "nginx"}},
		{name: "an official image in full", version: "0.4.7", flags: "--pinned-images=docker.io/library/nginx",
			wantMode: pin.ModeCRIDockerdCompat, wantPins: []string{"registry.k8s.io/pause:3.10", "docker.io/library/nginx"},
			wantKinds: []Kind{KindCRIDockerdPinNeverMatches}, wantFixTo: "nginx"},
		{name: "a prefix on Docker Hub gets no fix", version: "0.4.7", flags: "--pinned-images=docker.io/team/*",
			wantMode: pin.ModeCRIDockerdCompat, wantPins: []string{"registry.k8s.io/pause:3.10", "docker.io/team/*"},
			wantKinds: []Kind{KindCRIDockerdPinNeverMatches}},
		{name: "library/ before an official image", version: "0.4.7", flags: "--pinned-images library/redis:7",
			wantMode: pin.ModeCRIDockerdCompat, wantPins: []string{"registry.k8s.io/pause:3.10", "library/redis:7"},
			wantKinds: []Kind{KindCRIDockerdPinNeverMatches}, wantFixTo: "redis:7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Resolve(context.Background(), Options{Root: nodetest.MapFS(unit(tt.flags)), RuntimeVersion: tt.version})
			require.NoError(t, err)
			assert.Equal(t, tt.wantMode, res.PinMode, "PinMode")
			assert.Equal(t, tt.wantPins, res.Pins, "Pins")
			for _, k := range tt.wantKinds {
				assert.True(t, hasKind(res, k), "no finding of kind %q in %q %v", k, res.Notes, res.Conflicts)
			}
			fixTo := ""
			for _, f := range res.Fixes {
				if f.Answers == KindCRIDockerdPinNeverMatches {
					fixTo = f.To
					assert.Equal(t, ActionEdit, f.Action)
					assert.Equal(t, "--pinned-images", f.Flag)
					assert.Equal(t, "ExecStart", f.Key)
				}
			}
			assert.Equal(t, tt.wantFixTo, fixTo, "fix")
		})
	}
}

// TestRuntimeMatcherCRIDockerd checks that the runtime's own matcher pins
// the sandbox image as cri-dockerd does (an exact repo tag), while Matcher
// also pins its other spellings.
func TestRuntimeMatcherCRIDockerd(t *testing.T) {
	t.Parallel()
	const digest = "sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a"
	res := &Result{SandboxImage: "registry.k8s.io/pause@" + digest, Runtime: "cri-dockerd", PinMode: pin.ModeCRIDockerdCompat,
		Pins: []string{"registry.k8s.io/pause@" + digest, "nginx"}, PinLabels: []string{"tier=system"}}
	own, err := res.RuntimeMatcher()
	require.NoError(t, err)
	stored := image{tags: []string{"registry.k8s.io/pause:3.10"}, digests: []string{"registry.k8s.io/pause@" + digest}}
	_, ok := own.Explain(stored)
	assert.False(t, ok, "cri-dockerd compares its sandbox image with repo tags only, which hold no digest")
	assert.True(t, own.IsPinnedImage(image{tags: []string{"nginx:1.27"}}), "a bare repository pins every tag")
	must, err := res.Matcher()
	require.NoError(t, err)
	assert.True(t, must.IsPinnedImage(stored), "the sandbox image must be pinned under any name")
	var nilRes *Result
	m, err := nilRes.RuntimeMatcher()
	require.NoError(t, err)
	assert.False(t, m.IsPinned("nginx:1.27"))
}

// image is a pin.Image.
type image struct{ tags, digests []string }

func (i image) GetId() string            { return "sha256:" + "1" } //nolint:revive // the cri-api getter name
func (i image) GetRepoTags() []string    { return i.tags }
func (i image) GetRepoDigests() []string { return i.digests }

var _ pin.Image = image{}

func TestActionAddText(t *testing.T) {
	t.Parallel()
	var a Action
	require.NoError(t, a.UnmarshalText([]byte("add")))
	assert.Equal(t, ActionAdd, a)
	require.NoError(t, a.UnmarshalText([]byte("append")), "a later version's action decodes")
	assert.Equal(t, Action("append"), a)
	assert.False(t, a.Known())
}
