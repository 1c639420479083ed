package resolve

import (
	"context"
	"encoding/json"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/reference"
)

func TestResultMatcher(t *testing.T) {
	t.Parallel()
	crio := &Result{Runtime: "cri-o", SandboxImage: "k8s.gcr.io/pause:3.10.1", PinMode: pin.ModeCRIOCompat,
		Pins: []string{"k8s.gcr.io/pause:3.10.1", "quay.io/example/agent*"}}
	tests := []struct {
		name    string
		res     *Result
		extra   []string
		pinned  map[string]string // image → the Source of the rule that pins it, "" for none
		wantErr error
	}{
		{
			name: "CRI-O: the sandbox image under any spelling",
			res:  crio,
			pinned: map[string]string{
				"k8s.gcr.io/pause:3.10.1":      "node (cri-o)",
				"registry.k8s.io/pause:3.10.1": "sandbox image (cri-o)",
				"quay.io/example/agent:2.0":    "node (cri-o)",
				"docker.io/library/busybox:1":  "",
			},
		},
		{
			name: "containerd: Strict pins alone",
			res:  &Result{Runtime: "containerd", SandboxImage: "k8s.gcr.io/pause:3.10.1", PinMode: pin.ModeStrict, Pins: []string{"k8s.gcr.io/pause:3.10.1"}},
			pinned: map[string]string{
				"registry.k8s.io/pause:3.10.1": "node (containerd)",
			},
		},
		{
			name:   "CRI-O: an invalid pause image adds no rule",
			res:    &Result{Runtime: "cri-o", SandboxImage: "Pause:X", PinMode: pin.ModeCRIOCompat, Pins: []string{"Pause:X"}},
			pinned: map[string]string{"pause:x": "node (cri-o)", "docker.io/library/pause:x": ""},
		},
		{
			name:   "nil result: extra alone",
			extra:  []string{"registry.example.com/*"},
			pinned: map[string]string{"registry.example.com/a:1": ExtraSource, "registry.k8s.io/pause:3.10.1": ""},
		},
		{
			// Issue 52: Matcher failed on the pin, and audit's verdict with it.
			name: "containerd: a pin reported as an invalid reference adds no rule",
			res: &Result{Runtime: "containerd", SandboxImage: "Registry.K8S.io/Pause:3.10", PinMode: pin.ModeStrict,
				Pins:      []string{"Registry.K8S.io/Pause:3.10", "mirror.example/agent:1.0"},
				Conflicts: []Conflict{{Kind: KindInvalidReference, A: Candidate{Image: "Registry.K8S.io/Pause:3.10"}}}},
			pinned: map[string]string{"mirror.example/agent:1.0": "node (containerd)", "registry.k8s.io/pause:3.10": ""},
		},
		{
			name:    "containerd: an invalid pin no conflict reports is an error",
			res:     &Result{Runtime: "containerd", PinMode: pin.ModeStrict, Pins: []string{"Registry.K8S.io/Pause:3.10"}},
			wantErr: pin.ErrInvalidPattern,
		},
		{name: "bad extra", res: crio, extra: []string{"*"}, wantErr: pin.ErrInvalidPattern},
		{name: "bad CRI-O pin", res: &Result{Runtime: "cri-o", PinMode: pin.ModeCRIOCompat, Pins: []string{"*"}}, wantErr: pin.ErrInvalidPattern},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := tt.res.Matcher(tt.extra...)
			require.ErrorIs(t, err, tt.wantErr)
			if tt.wantErr != nil {
				assert.Nil(t, m)
				return
			}
			for img, src := range tt.pinned {
				match, ok := m.Explain(tagged(img))
				assert.Equal(t, src != "", ok, "Explain(%q) pinned", img)
				assert.Equal(t, src, match.Source, "Explain(%q).Source", img)
			}
		})
	}
}

// tagged is an image stored under one tag.
type tagged string

func (t tagged) GetId() string            { return "" } //nolint:revive // the cri-api getter name
func (t tagged) GetRepoTags() []string    { return []string{string(t)} }
func (t tagged) GetRepoDigests() []string { return nil }

// TestResultMatcherResolved checks Matcher on a resolved CRI-O tree: the
// examples' crio-node, whose pause_image is an alias spelling.
func TestResultMatcherResolved(t *testing.T) {
	t.Parallel()
	res, err := Resolve(context.Background(), Options{Root: DirFS("../examples/testdata/crio-node")})
	require.NoError(t, err)
	m, err := res.Matcher()
	require.NoError(t, err)
	assert.True(t, m.IsPinned("registry.k8s.io/pause:3.10.1"), "the stored canonical name")
	assert.True(t, m.IsPinned("k8s.gcr.io/pause:3.10.1"), "the configured name")
	assert.False(t, m.IsPinned("registry.k8s.io/pause:3.10"))
}

// TestResultAliasRules checks what AliasRules mean, as Resolve sets them
// and as JSON reads them back: nil the defaults, empty none, invalid an
// error from Matcher.
func TestResultAliasRules(t *testing.T) {
	t.Parallel()
	mirrored, err := reference.DefaultAliases().With(reference.Alias{From: "mirror.example.com/k8s", To: "registry.k8s.io"})
	require.NoError(t, err)
	none, err := reference.NewAliases()
	require.NoError(t, err)
	tests := []struct {
		name      string
		opts      *reference.Aliases // Options.Aliases
		wantRules []reference.Alias  // Result.AliasRules
		wantJSON  string             // the "aliases" key in the JSON, "" when absent
		equal     []string           // two names the Result's aliases make one image, nil for none
	}{
		{name: "defaults", opts: nil, equal: []string{"k8s.gcr.io/pause:3.10.1", "registry.k8s.io/pause:3.10.1"}},
		{name: "defaults given", opts: reference.DefaultAliases(), equal: []string{"k8s.gcr.io/pause:3.10.1", "registry.k8s.io/pause:3.10.1"}},
		{name: "a mirror", opts: mirrored, wantRules: mirrored.Rules(), wantJSON: `"aliases":[`,
			equal: []string{"mirror.example.com/k8s/pause:3.10.1", "registry.k8s.io/pause:3.10.1"}},
		{name: "none", opts: none, wantRules: []reference.Alias{}, wantJSON: `"aliases":[]`},
		{name: "NoAliases", opts: reference.NoAliases(), wantRules: []reference.Alias{}, wantJSON: `"aliases":[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Resolve(context.Background(), Options{Root: fstest.MapFS{}, Aliases: tt.opts, Runtime: "containerd", RuntimeVersion: "2.4.2"})
			require.NoError(t, err)
			assert.Equal(t, tt.wantRules, res.AliasRules)
			b, err := json.Marshal(res)
			require.NoError(t, err)
			if tt.wantJSON == "" {
				assert.NotContains(t, string(b), `"aliases"`)
			} else {
				assert.Contains(t, string(b), tt.wantJSON)
			}
			var back Result
			require.NoError(t, json.Unmarshal(b, &back))
			for _, r := range []*Result{res, &back} {
				if tt.equal != nil {
					assert.True(t, r.Aliases().Equal(tt.equal[0], tt.equal[1]), "Aliases().Equal(%q, %q)", tt.equal[0], tt.equal[1])
				} else {
					assert.False(t, r.Aliases().Equal("k8s.gcr.io/pause:3.10.1", "registry.k8s.io/pause:3.10.1"), "no aliases")
				}
			}
		})
	}
	bad := &Result{SandboxImage: "registry.k8s.io/pause:3.10.1", AliasRules: []reference.Alias{{From: "a.example", To: "a.example"}}}
	_, err = bad.Matcher()
	require.ErrorIs(t, err, reference.ErrAliasCycle)
	assert.Same(t, reference.NoAliases(), bad.Aliases(), "invalid rules are none, not the defaults a nil would mean")
	var nilRes *Result
	assert.Equal(t, reference.DefaultAliases(), nilRes.Aliases())
}
