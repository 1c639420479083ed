package reference

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAliasesApply(t *testing.T) {
	t.Parallel()
	a, err := DefaultAliases().With(
		Alias{From: "mirror.corp:5000/k8s", To: "registry.k8s.io"},
		Alias{From: "mirror.corp:5000/hub", To: "docker.io"},
		Alias{From: "old.example/team", To: "new.example/group/team"},
		Alias{From: "chain.example", To: "old.example/team"},
	)
	require.NoError(t, err)
	n := a
	tests := []struct {
		name string
		in   string // input
		want string // canonical form
	}{
		{name: "mirror", in: "mirror.corp:5000/k8s/pause:3.9", want: "registry.k8s.io/pause:3.9"},
		{name: "mirror boundary", in: "mirror.corp:5000/k8sx/pause:3.9", want: "mirror.corp:5000/k8sx/pause:3.9"},
		{name: "mirror deeper", in: "mirror.corp:5000/k8s/sig/x:1", want: "registry.k8s.io/sig/x:1"},
		{name: "mirror domain case", in: "MIRROR.corp:5000/k8s/pause:3.9", want: "registry.k8s.io/pause:3.9"},
		{name: "hub mirror gets library", in: "mirror.corp:5000/hub/busybox", want: "docker.io/library/busybox:latest"},
		{name: "hub mirror user", in: "mirror.corp:5000/hub/user/app:1", want: "docker.io/user/app:1"},
		{name: "into a path", in: "old.example/team/app:1", want: "new.example/group/team/app:1"},
		{name: "chain resolved", in: "chain.example/app:1", want: "new.example/group/team/app:1"},
		{name: "exact prefix name", in: "old.example/team:1", want: "new.example/group/team:1"},
		{name: "defaults kept", in: "k8s.gcr.io/pause:3.9", want: "registry.k8s.io/pause:3.9"},
		{name: "lookalike", in: "k8s.gcr.io.evil.com/pause:3.9", want: "k8s.gcr.io.evil.com/pause:3.9"},
		{name: "digest kept", in: "k8s.gcr.io/pause@sha256:" + hex64, want: "registry.k8s.io/pause@sha256:" + hex64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := n.Parse(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.String(), "Parse(%q)", tt.in)
			again, err := n.Parse(got.String())
			require.NoError(t, err)
			assert.Equal(t, got, again, "aliases apply once: Parse(Parse(%q).String())", tt.in)
		})
	}
}

func TestNewAliasesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		rules   []Alias // input
		wantErr error   // sentinel
		index   int     // AliasError.Index of the first error
	}{
		{name: "empty from", rules: []Alias{{From: "", To: "a.io"}}, wantErr: ErrInvalidAlias},
		{name: "not a domain", rules: []Alias{{From: "mirror", To: "a.io"}}, wantErr: ErrInvalidAlias},
		{name: "trailing slash", rules: []Alias{{From: "a.io/", To: "b.io"}}, wantErr: ErrInvalidAlias},
		{name: "tag in prefix", rules: []Alias{{From: "a.io/x:1", To: "b.io"}}, wantErr: ErrInvalidAlias},
		{name: "uppercase path", rules: []Alias{{From: "a.io/X", To: "b.io"}}, wantErr: ErrInvalidAlias},
		{name: "uppercase-only domain", rules: []Alias{{From: "a.io", To: "MIRROR/x"}}, wantErr: ErrInvalidAlias},
		{name: "self", rules: []Alias{{From: "a.io", To: "A.io"}}, wantErr: ErrAliasCycle},
		{name: "two-cycle", rules: []Alias{{From: "a.io", To: "b.io"}, {From: "b.io", To: "a.io"}}, wantErr: ErrAliasCycle},
		{name: "three-cycle", rules: []Alias{{From: "c.io", To: "d.io"}, {From: "a.io", To: "b.io"}, {From: "b.io", To: "c.io"}, {From: "d.io", To: "a.io"}}, wantErr: ErrAliasCycle},
		{name: "grows forever", rules: []Alias{{From: "a.io", To: "a.io/x"}}, wantErr: ErrAliasCycle},
		{name: "duplicate", rules: []Alias{{From: "a.io", To: "b.io"}, {From: "index.docker.io", To: "x.io"}, {From: "a.io", To: "c.io"}}, wantErr: ErrInvalidAlias, index: 2},
		{name: "overlap", rules: []Alias{{From: "a.io", To: "b.io"}, {From: "b.io/x", To: "c.io"}}, wantErr: ErrInvalidAlias},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := NewAliases(tt.rules...)
			require.Error(t, err)
			assert.Nil(t, a)
			assert.ErrorIs(t, err, tt.wantErr)
			var ae *AliasError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tt.index, ae.Index)
			assert.Contains(t, err.Error(), "alias ")
		})
	}
}

func TestNewAliasesReportsAll(t *testing.T) {
	t.Parallel()
	_, err := NewAliases(Alias{From: "nope", To: "a.io"}, Alias{From: "b.io", To: "b.io"}, Alias{From: "ok.io", To: "fine.io"})
	require.Error(t, err)
	var joined interface{ Unwrap() []error }
	require.True(t, errors.As(err, &joined))
	assert.Len(t, joined.Unwrap(), 2)
}

func TestAliasesVariants(t *testing.T) {
	t.Parallel()
	a, err := DefaultAliases().With(
		Alias{From: "mirror.corp:5000/k8s", To: "registry.k8s.io"},
		Alias{From: "k8s.gcr.io/special", To: "special.example"},
	)
	require.NoError(t, err)
	n := a
	r, err := n.Parse("registry.k8s.io/pause:3.9")
	require.NoError(t, err)
	var got []string
	for _, v := range a.Variants(r) {
		got = append(got, v.String())
		back, err := n.Parse(v.String())
		require.NoError(t, err)
		assert.Equal(t, r, back, "variant %q normalizes back", v)
	}
	assert.ElementsMatch(t, []string{
		"k8s.gcr.io/pause:3.9",
		"gcr.io/google-containers/pause:3.9",
		"gcr.io/google_containers/pause:3.9",
		"mirror.corp:5000/k8s/pause:3.9",
	}, got)

	shadowed, err := n.Parse("registry.k8s.io/special/x:1")
	require.NoError(t, err)
	for _, v := range a.Variants(shadowed) {
		assert.NotEqual(t, "k8s.gcr.io/special/x:1", v.String(), "a longer rule sends that spelling elsewhere")
	}
	assert.Nil(t, (*Aliases)(nil).Variants(r))
	assert.Nil(t, (*Aliases)(nil).Rules())
}

// TestNilAliases: a nil *Aliases has no rules, and its methods do what the
// package-level functions do; aliases apply only through an *Aliases.
func TestNilAliases(t *testing.T) {
	t.Parallel()
	var n *Aliases
	r, err := n.Parse("k8s.gcr.io/pause:3.9")
	require.NoError(t, err)
	assert.Equal(t, "k8s.gcr.io/pause:3.9", r.String(), "no aliases")
	assert.False(t, n.Equal("k8s.gcr.io/pause:3.9", "registry.k8s.io/pause:3.9"))
	assert.False(t, Equal("k8s.gcr.io/pause:3.9", "registry.k8s.io/pause:3.9"))
	assert.True(t, DefaultAliases().Equal("k8s.gcr.io/pause:3.9", "registry.k8s.io/pause:3.9"))
	assert.True(t, Equal("busybox", "index.docker.io/library/busybox:latest"), "Docker Hub's spellings are no alias")
	p, err := n.NormalizePrefix("k8s.gcr.io")
	require.NoError(t, err)
	assert.Equal(t, "k8s.gcr.io", p)
}

func TestNormalizePrefix(t *testing.T) {
	t.Parallel()
	n := DefaultAliases()
	tests := []struct {
		in, want string // prefix and its canonical form; want "" for an error
	}{
		{in: "k8s.gcr.io", want: "registry.k8s.io"},
		{in: "K8S.gcr.io/sig", want: "registry.k8s.io/sig"},
		{in: "gcr.io/google-containers", want: "registry.k8s.io"},
		{in: "gcr.io", want: "gcr.io"},
		{in: "index.docker.io/library", want: "docker.io/library"},
		{in: "library", want: "docker.io/library"},
		{in: "myuser/team", want: "docker.io/myuser/team"},
		{in: "localhost:5000", want: "localhost:5000"},
		{in: ""},
		{in: "a.io/"},
		{in: "a.io/B"},
		{in: "Upper", want: "UPPER"},   // a domain only for its uppercase letters: "upper" is a namespace
		{in: "Up/per", want: "UP/per"}, // the same, with a path
		{in: "LocalHost", want: "localhost"},
		{in: "a__"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := n.NormalizePrefix(tt.in)
			if tt.want == "" {
				var pe *ParseError
				assert.ErrorAs(t, err, &pe, "NormalizePrefix(%q) = %q", tt.in, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "NormalizePrefix(%q)", tt.in)
			again, err := n.NormalizePrefix(got)
			require.NoError(t, err)
			assert.Equal(t, got, again, "NormalizePrefix(%q) does not read back", got)
		})
	}
}

func TestAliasesRewritesAndResolved(t *testing.T) { //nolint:paralleltest // AllocsPerRun refuses parallel tests
	a := DefaultAliases()
	assert.True(t, a.Rewrites("k8s.gcr.io/pause"))
	assert.True(t, a.Rewrites("K8S.GCR.IO/pause"))
	assert.True(t, a.Rewrites("gcr.io/google-containers/pause"))
	assert.False(t, a.Rewrites("gcr.io/google-containersx/pause"))
	assert.False(t, a.Rewrites("registry.k8s.io/pause"))
	assert.False(t, (*Aliases)(nil).Rewrites("k8s.gcr.io/pause"))
	allocs := testing.AllocsPerRun(10, func() { a.Rewrites("registry.k8s.io/pause") })
	assert.Zero(t, allocs)
	chained, err := NewAliases(Alias{From: "A.io", To: "b.io"}, Alias{From: "b.io", To: "c.io/x"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []Alias{{From: "a.io", To: "c.io/x"}, {From: "b.io", To: "c.io/x"}}, chained.Resolved())
}
