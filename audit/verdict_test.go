package audit

import (
	"context"
	"encoding/json"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/reference"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// image is a CRI image as a runtime lists it.
type image struct {
	id      string
	tags    []string
	digests []string
	pinned  bool
}

func (i image) GetId() string            { return i.id } //nolint:revive // the cri-api getter name
func (i image) GetRepoTags() []string    { return i.tags }
func (i image) GetRepoDigests() []string { return i.digests }
func (i image) GetPinned() bool          { return i.pinned }

// looked is the Lookup of a runtime that was asked.
func looked(found bool) Lookup {
	if found {
		return LookupFound
	}
	return LookupNotFound
}

const (
	stored = "registry.k8s.io/pause:3.10.1"
	alias  = "k8s.gcr.io/pause:3.10.1"
	mirror = "harbor.example.com/mirror/pause:3.10.1"
)

// containerd3 is a version 3 containerd config whose sandbox image is img
// (line 3).
func containerd3(img string) fstest.MapFS {
	return fstest.MapFS{"etc/containerd/config.toml": {Data: []byte(
		"version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"" + img + "\"\n")}}
}

// containerd2 is a version 2 containerd config whose sandbox image is img.
func containerd2(img string) fstest.MapFS {
	return fstest.MapFS{"etc/containerd/config.toml": {Data: []byte(
		"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"" + img + "\"\n")}}
}

// resolveNode resolves root with opts.
func resolveNode(t *testing.T, root fstest.MapFS, opts resolve.Options) *resolve.Result {
	t.Helper()
	opts.Root = root
	res, err := resolve.Resolve(context.Background(), opts)
	require.NoError(t, err)
	return res
}

func TestJudge(t *testing.T) {
	t.Parallel()
	mirrored, err := reference.DefaultAliases().With(reference.Alias{From: "harbor.example.com/mirror", To: "registry.k8s.io"})
	require.NoError(t, err)
	tests := []struct {
		name     string
		root     fstest.MapFS    // the node's files
		res      *resolve.Result // instead of resolving root, when not nil
		opts     resolve.Options // besides Root
		images   []image         // ListImages
		stored   bool            // the runtime's own lookup of the configured name finds it
		want     Status
		wantAs   string   // Sandbox.StoredAs
		wantSp   Spelling // Sandbox.Spelling
		wantKind []resolve.Kind
		wantFix  *resolve.Fix // Answers, Action, Path, Line, To, Version compared; nil: no fix
		wantMsg  string       // the fix's message, when not ""
	}{
		{
			name: "pinned as configured", root: containerd3(stored), opts: resolve.Options{RuntimeVersion: "2.2.9"},
			images: []image{{id: "sha256:1", tags: []string{stored}, pinned: true}}, stored: true,
			want: StatusOK, wantAs: stored, wantSp: SpellingExact,
		},
		{
			// A mirror's tag listed first: the name that matched is the
			// configured one, not the first tag.
			name: "the matched tag, not the first", root: containerd2(stored), opts: resolve.Options{RuntimeVersion: "1.6.20"},
			images: []image{{id: "sha256:1", tags: []string{mirror, stored}}}, stored: true,
			want: StatusUnpinned, wantAs: stored, wantSp: SpellingExact, wantKind: []resolve.Kind{resolve.KindSandboxUnpinned, resolve.KindContainerdNeverPins},
			wantFix: &resolve.Fix{Answers: resolve.KindContainerdNeverPins, Action: resolve.ActionUpgrade, Version: "1.6.29"},
			wantMsg: "no configuration can: containerd 1.6.20 never reports Image.pinned",
		},
		{
			name: "an alias spelling, unpinned", root: containerd3(alias), opts: resolve.Options{RuntimeVersion: "2.4.2"},
			images: []image{{id: "sha256:1", tags: []string{"docker.io/library/busybox:1", stored}}},
			want:   StatusUnpinned, wantAs: stored, wantSp: SpellingAlias,
			wantKind: []resolve.Kind{resolve.KindSandboxUnpinned, resolve.KindSandboxNotStoredAsConfigured, resolve.KindContainerdAliasNeverPinned, resolve.KindFrozenRegistry},
			wantFix:  &resolve.Fix{Answers: resolve.KindSandboxUnpinned, Action: resolve.ActionEdit, Location: resolve.Location{Path: "/etc/containerd/config.toml", Line: 3}, To: stored},
			wantMsg:  "configure the sandbox image as " + stored + ", the name it is stored under, in place of " + alias + " (/etc/containerd/config.toml:3)",
		},
		{
			name: "an alias spelling, pinned through a shim", root: containerd3(alias), opts: resolve.Options{RuntimeVersion: "2.4.2"},
			images: []image{{id: "sha256:1", tags: []string{stored}, pinned: true}},
			want:   StatusNotStoredAsConfigured, wantAs: stored, wantSp: SpellingAlias,
			wantKind: []resolve.Kind{resolve.KindSandboxNotStoredAsConfigured, resolve.KindContainerdAliasNeverPinned, resolve.KindFrozenRegistry},
			wantFix:  &resolve.Fix{Answers: resolve.KindSandboxNotStoredAsConfigured, Action: resolve.ActionEdit, Location: resolve.Location{Path: "/etc/containerd/config.toml", Line: 3}, To: stored},
		},
		{
			// Never advise to configure a name on the frozen registry.
			name: "stored only on the frozen registry", root: containerd3(stored), opts: resolve.Options{RuntimeVersion: "2.4.2"},
			images: []image{{id: "sha256:1", tags: []string{alias}}},
			want:   StatusUnpinned, wantAs: alias, wantSp: SpellingAlias, wantKind: []resolve.Kind{resolve.KindSandboxUnpinned, resolve.KindSandboxNotStoredAsConfigured},
			wantFix: &resolve.Fix{Answers: resolve.KindSandboxUnpinned, Action: resolve.ActionPull, To: stored},
			wantMsg: "pull " + stored + " through the runtime's CRI (`crictl pull " + stored + "`)",
		},
		{
			name: "absent", root: containerd3(stored), opts: resolve.Options{RuntimeVersion: "2.4.2"},
			images: []image{{id: "sha256:2", tags: []string{"docker.io/library/busybox:1"}}},
			want:   StatusAbsent, wantKind: []resolve.Kind{resolve.KindSandboxAbsent},
			wantFix: &resolve.Fix{Answers: resolve.KindSandboxAbsent, Action: resolve.ActionPull, To: stored},
		},
		{
			// Present only through an alias of the Result's own: the
			// default aliases do not know the mirror.
			name: "the result's aliases", root: containerd3(mirror), opts: resolve.Options{RuntimeVersion: "2.4.2", Aliases: mirrored},
			images: []image{{id: "sha256:1", tags: []string{stored}, pinned: true}},
			want:   StatusNotStoredAsConfigured, wantAs: stored, wantSp: SpellingAlias,
			wantKind: []resolve.Kind{resolve.KindSandboxNotStoredAsConfigured, resolve.KindContainerdAliasNeverPinned},
			wantFix:  &resolve.Fix{Answers: resolve.KindSandboxNotStoredAsConfigured, Action: resolve.ActionEdit, Location: resolve.Location{Path: "/etc/containerd/config.toml", Line: 3}, To: stored},
		},
		{
			// CRI-O pins a name equal up to case, but looks up the
			// configured string (TestCRIOLive in cmd).
			name: "letter case on CRI-O",
			root: fstest.MapFS{"etc/crio/crio.conf": {Data: []byte("[crio.image]\npause_image = \"REGISTRY.K8S.IO/pause:3.10.1\"\n")}},
			opts: resolve.Options{RuntimeVersion: "1.36.3"}, images: []image{{id: "sha256:1", tags: []string{stored}, pinned: true}},
			want: StatusNotStoredAsConfigured, wantAs: stored, wantSp: SpellingCase, wantKind: []resolve.Kind{resolve.KindSandboxNotStoredAsConfigured},
			wantFix: &resolve.Fix{Answers: resolve.KindSandboxNotStoredAsConfigured, Action: resolve.ActionEdit, Location: resolve.Location{Path: "/etc/crio/crio.conf", Line: 2}, To: stored},
		},
		{
			// By hand: resolve notes an ID as a short name
			// (containerd-short-never-pinned, with a fix that
			// prefixes docker.io/library/).
			name: "by image ID", res: &resolve.Result{Runtime: "containerd", SandboxImage: "sha256:" + hex64, Pins: []string{"sha256:" + hex64}},
			images: []image{{id: "sha256:" + hex64, tags: []string{stored}, pinned: true}}, stored: true,
			want: StatusOK, wantAs: "sha256:" + hex64, wantSp: SpellingExact,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := tt.res
			if res == nil {
				res = resolveNode(t, tt.root, tt.opts)
			}
			v, err := Judge(res, Observation[image]{Images: tt.images, Lookup: looked(tt.stored)})
			require.NoError(t, err)
			assert.Equal(t, tt.want, v.Status)
			assert.Equal(t, tt.want == StatusOK, v.Protected())
			assert.Equal(t, tt.want != StatusAbsent, v.Sandbox.Present)
			assert.Equal(t, tt.wantAs, v.Sandbox.StoredAs)
			assert.Equal(t, tt.wantSp, v.Sandbox.Spelling)
			var kinds []resolve.Kind
			for _, f := range v.Findings {
				kinds = append(kinds, f.Kind)
				assert.NotEmpty(t, f.Message)
			}
			assert.Equal(t, tt.wantKind, kinds)
			if tt.wantFix == nil {
				assert.Nil(t, v.Fix)
				return
			}
			require.NotNil(t, v.Fix)
			got := resolve.Fix{Answers: v.Fix.Answers, Action: v.Fix.Action, Location: resolve.Location{Path: v.Fix.Path, Line: v.Fix.Line}, To: v.Fix.To, Version: v.Fix.Version}
			assert.Equal(t, *tt.wantFix, got)
			assert.Contains(t, v.Fix.Message, tt.wantMsg)
		})
	}
}

// TestJudgeInvalidSandbox: a sandbox image that is no valid reference is a
// verdict, not an error (issue 52: Judge failed on Result.Matcher and the
// CLI printed UNKNOWN): the node will not start, the finding is the
// conflict with its file and line, the fix is the edit there, and nothing
// asks to pull the invalid name.
func TestJudgeInvalidSandbox(t *testing.T) {
	t.Parallel()
	const bad = "Registry.K8S.io/Pause:3.10"
	tests := []struct {
		name   string
		images []image // ListImages
	}{
		{name: "the valid spelling stored", images: []image{{id: "sha256:1", tags: []string{"registry.k8s.io/pause:3.10"}, pinned: true}}},
		{name: "no image"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := resolveNode(t, containerd3(bad), resolve.Options{RuntimeVersion: "2.2.9"})
			v, err := Judge(res, Observation[image]{Images: tt.images, Lookup: LookupNotFound})
			require.NoError(t, err)
			assert.Equal(t, StatusWillNotStart, v.Status)
			assert.False(t, v.Sandbox.Present)
			require.NotEmpty(t, v.Findings)
			assert.Equal(t, resolve.KindInvalidReference, v.Findings[0].Kind)
			assert.Equal(t, "/etc/containerd/config.toml:3", v.Findings[0].Origin())
			require.NotNil(t, v.Fix)
			assert.Equal(t, resolve.KindInvalidReference, v.Fix.Answers)
			assert.Equal(t, resolve.ActionEdit, v.Fix.Action)
			assert.Equal(t, resolve.Location{Path: "/etc/containerd/config.toml", Line: 3}, resolve.Location{Path: v.Fix.Path, Line: v.Fix.Line})
			for _, f := range v.Findings {
				assert.NotEqual(t, resolve.KindSandboxAbsent, f.Kind, "no pre-pull of an invalid name: %s", f.Message)
			}
			for _, f := range v.Fixes {
				assert.NotEqual(t, resolve.ActionPull, f.Action, "no pull of an invalid name: %s", f.Message)
			}
			assert.NotContains(t, res.Prepull, bad)
		})
	}
}

const hex64 = "7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa"

// TestJudgeCounts checks the must-pin and unprotected counts and the
// finding for an image other than the sandbox image that the node's rules
// pin and the runtime does not.
func TestJudgeCounts(t *testing.T) {
	t.Parallel()
	res := &resolve.Result{Runtime: "containerd", SandboxImage: stored, Pins: []string{stored, "busybox:1"}, Conflicts: []resolve.Conflict{
		{Kind: resolve.KindKubeadmDiffers, Message: "kubeadm pre-pulls another image"},
		{Kind: resolve.KindConfigMistake, Message: "a key containerd ignores"},
	}}
	images := []image{
		{id: "sha256:1", tags: []string{stored}, pinned: true},
		{id: "sha256:2", tags: []string{"docker.io/library/busybox:1"}},
		{id: "sha256:3", tags: []string{"docker.io/library/nginx:1"}},
	}
	v, err := Judge(res, Observation[image]{Images: images, Lookup: LookupFound})
	require.NoError(t, err)
	assert.Equal(t, StatusOK, v.Status, "the status speaks of the sandbox image")
	assert.Equal(t, 2, v.MustPin)
	assert.Equal(t, 1, v.Unprotected)
	assert.Equal(t, 2, v.Conflicts)
	require.Len(t, v.Findings, 3, "the image, then the result's conflicts")
	assert.Equal(t, resolve.KindImageUnprotected, v.Findings[0].Kind)
	assert.Equal(t, resolve.KindKubeadmDiffers, v.Findings[1].Kind)
	require.Len(t, v.Images, 3)
	assert.True(t, v.Images[0].Sandbox)
	assert.Equal(t, &Rule{Pattern: "busybox:1", Source: "node (containerd)", Name: "docker.io/library/busybox:1"}, v.Images[1].Rule)
	assert.Nil(t, v.Images[2].Rule)
	assert.False(t, v.Images[2].MustPin)
}

func TestJudgeNoSandboxImage(t *testing.T) {
	t.Parallel()
	for _, res := range []*resolve.Result{nil, {}, {Runtime: "containerd"}} {
		v, err := Judge(res, Observation[image]{})
		assert.Nil(t, v)
		assert.ErrorIs(t, err, resolve.ErrNoSandboxImage)
	}
	res, resolveErr := resolve.Resolve(context.Background(), resolve.Options{
		Root: fstest.MapFS{"etc/containerd/config.toml": {Data: []byte("version = 3\n")}}})
	require.ErrorIs(t, resolveErr, resolve.ErrNoSandboxImage, "Resolve says so first, with the partial result")
	require.NotNil(t, res)
	_, err := Judge(res, Observation[image]{})
	require.ErrorIs(t, err, resolve.ErrNoSandboxImage)
	assert.Contains(t, err.Error(), "cannot tell containerd's sandbox image", "the result's note says why")
	assert.EqualError(t, err, resolveErr.Error(), "Judge says what Resolve said (Result.Err)")
}

// TestZeroVerdictJSON: the zero Verdict decodes from its own JSON and
// encodes to the same JSON again (before issue 52: `audit: unknown status
// ""`).
func TestZeroVerdictJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Verdict{})
	require.NoError(t, err)
	var back Verdict
	require.NoError(t, json.Unmarshal(b, &back))
	again, err := json.Marshal(back)
	require.NoError(t, err)
	assert.JSONEq(t, string(b), string(again))
	assert.Equal(t, Status(""), back.Status)
	assert.False(t, back.Protected())
}

// TestStatusSpellingText: the words decode, a later version's too; text
// that is no word is an error.
func TestStatusSpellingText(t *testing.T) {
	t.Parallel()
	for _, s := range []Status{StatusWillNotStart, StatusAbsent, StatusUnpinned, StatusNotStoredAsConfigured, StatusOK} {
		var got Status
		require.NoError(t, json.Unmarshal([]byte(`"`+string(s)+`"`), &got))
		assert.Equal(t, s, got)
	}
	var st Status
	assert.Error(t, json.Unmarshal([]byte(`"Fine"`), &st))
	require.NoError(t, json.Unmarshal([]byte(`""`), &st), `"" is the zero Status (issue 52)`)
	assert.Equal(t, Status(""), st)
	var sp Spelling
	assert.NoError(t, json.Unmarshal([]byte(`"case"`), &sp))
	assert.Equal(t, SpellingCase, sp)
	assert.Error(t, json.Unmarshal([]byte(`"other spelling"`), &sp))
}
