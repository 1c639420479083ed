package resolve

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// assertKinds checks that every note and conflict of res has a kind.
func assertKinds(t *testing.T, res *Result) {
	t.Helper()
	for _, n := range res.Notes {
		assert.NotEmpty(t, n.Kind, "note %q", n.Message)
	}
	for _, c := range res.Conflicts {
		assert.NotEmpty(t, c.Kind, "conflict %q", c.Message)
	}
}

// TestFactKinds checks that every release fact has its own kind.
func TestFactKinds(t *testing.T) {
	t.Parallel()
	require.Len(t, factKinds, int(releases.CRIDockerdPinsFlags)+1, "a kind for every fact, the last one included")
	seen := map[Kind]bool{}
	for f, k := range factKinds {
		assert.NotEmpty(t, k, "fact %d", f)
		assert.False(t, seen[k], "kind %q twice", k)
		assert.Equal(t, strings.ToLower(string(k)), string(k))
		seen[k] = true
	}
}

// sampleNode is examples/testdata/node: a version 3 containerd config whose
// sandbox image is spelled on k8s.gcr.io, and a kubelet flag for another.
var sampleNode = map[string]string{
	"etc/containerd/config.toml":        "version = 3\n\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"k8s.gcr.io/pause:3.10.1\"\n",
	"var/lib/kubelet/kubeadm-flags.env": "KUBELET_KUBEADM_ARGS=\"--pod-infra-container-image=registry.k8s.io/pause:3.9\"\n",
}

func TestFix(t *testing.T) {
	t.Parallel()
	const sandboxKey = `plugins."io.containerd.cri.v1.images".pinned_images.sandbox`
	tests := []struct {
		name         string
		files        map[string]string
		opts         Options
		want         Fix      // Message is a substring
		wantKinds    []Kind   // kinds some note or conflict has
		wantConflict string   // a substring of the first conflict
		wantVersions []string // "component version [used] [assumed]" of Versions
	}{
		{
			// Versions unknown: the change right at every version, never
			// the k8s.gcr.io spelling, and the flag removed, not set.
			name: "the sample node", files: sampleNode,
			want: Fix{Answers: KindContainerdAliasNeverPinned, Action: ActionEdit, Location: Location{Path: "/etc/containerd/config.toml", Line: 4, Key: sandboxKey},
				From: "k8s.gcr.io/pause:3.10.1", To: "registry.k8s.io/pause:3.10.1", Urgency: UrgencyUnprotected, Message: "set the sandbox image at /etc/containerd/config.toml:4"},
			wantKinds:    []Kind{KindVersionUnknown, KindContainerdAliasNeverPinned, KindFrozenRegistry, KindKubeletFlagSet, KindKubeletFlagDiffers},
			wantConflict: "remove the flag from /var/lib/kubelet/kubeadm-flags.env (kubelet 1.29 to 1.34 ignore it",
		},
		{
			name: "a kubelet that still reads the flag", files: sampleNode, opts: Options{RuntimeVersion: "2.2.9", KubeletVersion: "v1.28.4"},
			want: Fix{Answers: KindContainerdAliasNeverPinned, Action: ActionEdit, Location: Location{Path: "/etc/containerd/config.toml", Line: 4, Key: sandboxKey},
				From: "k8s.gcr.io/pause:3.10.1", To: "registry.k8s.io/pause:3.10.1", Urgency: UrgencyUnprotected},
			wantKinds:    []Kind{KindContainerdAliasNeverPinned, KindFrozenRegistry, KindKubeletFlagDiffers},
			wantConflict: "set the flag in /var/lib/kubelet/kubeadm-flags.env to k8s.gcr.io/pause:3.10.1, or remove it",
		},
		{
			// The kubelet does not start: that comes first.
			name: "a kubelet that rejects the flag", files: sampleNode, opts: Options{RuntimeVersion: "2.2.9", KubeletVersion: "1.35.0"},
			want: Fix{Answers: KindKubeletRejectsFlag, Action: ActionRemove, Location: Location{Path: "/var/lib/kubelet/kubeadm-flags.env", Line: 1,
				Key: "KUBELET_KUBEADM_ARGS", Flag: "--pod-infra-container-image"}, From: "registry.k8s.io/pause:3.9", Urgency: UrgencyStops, Message: "will not start"},
			wantKinds:    []Kind{KindKubeletRejectsFlag},
			wantConflict: "kubelet 1.35.0 no longer has --pod-infra-container-image and will not start",
		},
		{
			name:  "a release that never pins",
			files: map[string]string{"etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.10.1\"\n"},
			opts:  Options{RuntimeVersion: "1.6.20"},
			want: Fix{Answers: KindContainerdNeverPins, Action: ActionUpgrade, Component: "containerd", Version: "1.6.29", Urgency: UrgencyUnprotected,
				Message: "upgrade containerd from 1.6.20 to 1.6.29 or later"},
			wantKinds:    []Kind{KindContainerdNeverPins},
			wantVersions: []string{"containerd 1.6.20 used"},
		},
		{
			name: "kubeadm's version assumed from the config",
			files: map[string]string{
				"etc/containerd/config.toml": "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"registry.k8s.io/pause:3.10\"\n",
				"etc/kubeadm.yaml":           "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.34.1\n",
			},
			opts: Options{RuntimeVersion: "2.2.9", KubeadmConfigPath: "/etc/kubeadm.yaml"},
			want: Fix{Answers: KindKubeadmDiffers, Action: ActionEdit, Location: Location{Path: "/etc/containerd/config.toml", Line: 3},
				From: "registry.k8s.io/pause:3.10", To: "registry.k8s.io/pause:3.10.1", Urgency: UrgencyOther},
			wantKinds:    []Kind{KindVersionAssumed, KindKubeadmDiffers},
			wantVersions: []string{"containerd 2.2.9 used", "kubeadm v1.34.1 used assumed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Root = nodetest.MapFS(tt.files)
			res, err := Resolve(context.Background(), opts)
			require.NoError(t, err)
			assertKinds(t, res)
			require.NotNil(t, res.Fix, "notes %q, conflicts %v", res.Notes, res.Conflicts)
			got := *res.Fix
			// Fix is the first of Fixes, which go most urgent first.
			require.NotEmpty(t, res.Fixes)
			assert.Equal(t, got, res.Fixes[0], "Fix is Fixes[0]")
			assert.True(t, slices.IsSortedFunc(res.Fixes, func(a, b Fix) int { return a.Urgency.Compare(b.Urgency) }), "Fixes %v", res.Fixes)
			assert.Contains(t, got.Message, tt.want.Message)
			got.Message, tt.want.Message = "", ""
			if tt.want.Key == "" {
				got.Key = ""
			}
			assert.Equal(t, tt.want, got)
			kinds := map[Kind]bool{}
			for _, n := range res.Notes {
				kinds[n.Kind] = true
			}
			for _, c := range res.Conflicts {
				kinds[c.Kind] = true
			}
			for _, k := range tt.wantKinds {
				assert.True(t, kinds[k], "no finding of kind %q: notes %q", k, res.Notes)
			}
			if tt.wantConflict != "" && assert.NotEmpty(t, res.Conflicts) {
				assert.Contains(t, res.Conflicts[0].Message, tt.wantConflict)
			}
			for _, want := range tt.wantVersions {
				found := false
				for _, v := range res.Versions {
					words := []string{string(v.Component), v.Version}
					if v.Used {
						words = append(words, "used")
					}
					if v.Assumed {
						words = append(words, "assumed")
					}
					found = found || strings.Join(words, " ") == want
				}
				assert.True(t, found, "no version %q in %+v", want, res.Versions)
			}
		})
	}
}

// TestNoFix checks that a node without a finding to act on has no fix.
func TestNoFix(t *testing.T) {
	t.Parallel()
	res, err := Resolve(context.Background(), Options{
		Root: nodetest.MapFS(map[string]string{"etc/containerd/config.toml": "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"registry.k8s.io/pause:3.10.1\"\n"}),
		Live: fakeLive{info: criinfo.Info{Runtime: "containerd", RuntimeVersion: "v2.2.9"}},
	})
	require.NoError(t, err)
	assert.Nil(t, res.Fix, "notes %q", res.Notes)
	assert.Equal(t, SourceContainerdConfig, res.Winner.Source)
	assert.Equal(t, 3, res.Winner.Line)
}

// TestNoteJSON checks the JSON form of a note and a conflict: the kind is
// there, under a stable key.
func TestNoteJSON(t *testing.T) {
	t.Parallel()
	res, err := Resolve(context.Background(), Options{Root: nodetest.MapFS(sampleNode)})
	require.NoError(t, err)
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var got struct {
		Notes []struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"notes"`
		Conflicts []struct {
			Kind   string `json:"kind"`
			Origin string `json:"origin"`
		} `json:"conflicts"`
		Fix struct {
			Answers string `json:"answers"`
			Action  string `json:"action"`
			To      string `json:"to"`
		} `json:"fix"`
		Winner struct {
			Key string `json:"key"`
		} `json:"winner"`
	}
	require.NoError(t, json.Unmarshal(b, &got), string(b))
	require.NotEmpty(t, got.Notes)
	for _, n := range got.Notes {
		assert.NotEmpty(t, n.Kind, n.Message)
	}
	require.Len(t, got.Conflicts, 1)
	assert.Equal(t, "kubelet-flag-differs", got.Conflicts[0].Kind)
	assert.Equal(t, "/var/lib/kubelet/kubeadm-flags.env:1", got.Conflicts[0].Origin)
	assert.Equal(t, "containerd-alias-never-pinned", got.Fix.Answers)
	assert.Equal(t, "edit", got.Fix.Action)
	assert.Equal(t, "registry.k8s.io/pause:3.10.1", got.Fix.To)
	assert.Equal(t, `plugins."io.containerd.cri.v1.images".pinned_images.sandbox`, got.Winner.Key)
}

// urgencies are the words Urgency.UnmarshalText takes, in order of
// urgency, and some it refuses.
var (
	urgencies    = []Urgency{UrgencyStops, UrgencyUnprotected, UrgencyOther}
	badUrgencies = []string{"STOPS", "very urgent", " stops"}
)

func TestUrgency(t *testing.T) {
	t.Parallel()
	for i, u := range urgencies {
		for j, v := range urgencies {
			assert.Equal(t, cmp.Compare(i, j), u.Compare(v), "%q.Compare(%q)", u, v)
		}
		var got Urgency
		require.NoError(t, got.UnmarshalText([]byte(u)))
		assert.Equal(t, u, got)
	}
	assert.Equal(t, 0, Urgency("").Compare(UrgencyOther), "a Fix made by hand counts as other")
	for _, s := range badUrgencies {
		var got Urgency
		err := json.Unmarshal([]byte(`"`+s+`"`), &got)
		assert.True(t, errors.Is(err, ErrInvalidUrgency), "Unmarshal(%q) error = %v, want %v", s, err, ErrInvalidUrgency)
		assert.Empty(t, got)
	}
}

// TestKinds: every kind is listed once and Known, reads back through
// UnmarshalText (JSON from this version decodes), and malformed kinds are
// errors while a new, well-formed one is accepted (the set is open).
func TestKinds(t *testing.T) {
	t.Parallel()
	kinds := Kinds()
	seen := map[Kind]bool{}
	for _, k := range kinds {
		assert.False(t, seen[k], "%q listed twice", k)
		seen[k] = true
		var back Kind
		require.NoError(t, back.UnmarshalText([]byte(k)), "%q", k)
		assert.Equal(t, k, back)
		assert.True(t, k.Known(), "%q", k)
	}
	assert.True(t, seen[KindKubeletRejectsFlag] && seen[KindSandboxAbsent] && seen[KindPrepullTwoNames])
	kinds[0] = "changed"
	assert.NotEqual(t, Kind("changed"), Kinds()[0], "Kinds returns a new slice")
	var k Kind
	assert.NoError(t, k.UnmarshalText([]byte("a-kind-of-2027")))
	for _, bad := range []string{"-x", "x-", "a--b", "Upper", "a b", "a_b"} {
		assert.Error(t, k.UnmarshalText([]byte(bad)), "%q", bad)
	}
	var a Action
	assert.NoError(t, json.Unmarshal([]byte(`"pull"`), &a))
	assert.Equal(t, ActionPull, a)
	assert.NoError(t, json.Unmarshal([]byte(`"reboot"`), &a), "a later version's action decodes")
	assert.Equal(t, Action("reboot"), a)
	assert.False(t, a.Known())
}

// TestOriginIsLocations checks that a Note and a Conflict hold their
// position once: JSON's "origin" is derived from the Location when
// written and ignored when read, so the two cannot disagree.
func TestOriginIsLocations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		in         string // JSON read
		wantOrigin string // Origin() after reading
		wantOut    string // a fragment of the JSON written again
	}{
		{name: "they disagreed", in: `{"kind":"config-mistake","origin":"/a:1","path":"/b","line":2,"message":"m"}`,
			wantOrigin: "/b:2", wantOut: `"origin":"/b:2","path":"/b","line":2`},
		{name: "origin alone is no position", in: `{"kind":"config-mistake","origin":"/a:1","message":"m"}`,
			wantOut: `"kind":"config-mistake","message":"m"`},
		{name: "a path without a line", in: `{"kind":"config-mistake","path":"/b","message":"m"}`,
			wantOrigin: "/b", wantOut: `"origin":"/b","path":"/b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var n Note
			require.NoError(t, json.Unmarshal([]byte(tt.in), &n))
			assert.Equal(t, tt.wantOrigin, n.Origin())
			b, err := json.Marshal(n)
			require.NoError(t, err)
			assert.Contains(t, string(b), tt.wantOut)

			var c Conflict
			require.NoError(t, json.Unmarshal([]byte(`{"a":{"image":"x"},`+tt.in[1:]), &c))
			assert.Equal(t, tt.wantOrigin, c.Origin())
			b, err = json.Marshal(c)
			require.NoError(t, err)
			assert.Contains(t, string(b), tt.wantOut)
		})
	}
}
