package reference

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tt := range goodRefs {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := DefaultAliases().Parse(tt.in)
			require.NoError(t, err, "Parse(%q)", tt.in)
			assert.Equal(t, tt.want, got.String(), "Parse(%q) under the default aliases", tt.in)
			plain, err := Parse(tt.in)
			require.NoError(t, err, "Parse(%q)", tt.in)
			noAliases, _ := (*Aliases)(nil).Parse(tt.in)
			assert.Equal(t, noAliases, plain, "Parse(%q) keeps the registry as written", tt.in)
			got = plain
			again, err := Parse(got.String())
			require.NoError(t, err, "Parse(%q)", got.String())
			assert.Equal(t, got, again, "Parse(Parse(%q).String())", tt.in)
			fam, err := Parse(got.Familiar())
			require.NoError(t, err, "Parse(Familiar %q)", got.Familiar())
			assert.Equal(t, got, fam, "Parse(%q.Familiar())", tt.in)
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range badRefs {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.in)
			require.Error(t, err, "Parse(%q) = %q", tt.in, got)
			assert.True(t, got.IsZero(), "Parse(%q) returned %q with an error", tt.in, got)
			assert.ErrorIs(t, err, tt.wantErr)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.in, pe.Input)
			assert.Equal(t, tt.offset, pe.Offset, "offset in %v", err)
			assert.Less(t, len(err.Error()), 300, "error message should stay short for long input")
		})
	}
}

func TestParseParts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                       string
		in                         string // input
		domain, path, tag, familar string // expected parts
		digest                     digest.Digest
	}{
		{name: "familiar", in: "pause", domain: "docker.io", path: "library/pause", tag: "latest", familar: "pause:latest"},
		{name: "user", in: "docker.io/user/app:1", domain: "docker.io", path: "user/app", tag: "1", familar: "user/app:1"},
		{name: "nested library", in: "library/a/b:1", domain: "docker.io", path: "library/a/b", tag: "1", familar: "library/a/b:1"},
		{name: "k8s", in: "k8s.gcr.io/pause@sha256:" + hex64, domain: "k8s.gcr.io", path: "pause", digest: "sha256:" + hex64, familar: "k8s.gcr.io/pause@sha256:" + hex64},
		{name: "both", in: "a.io/b:c@sha256:" + hex64, domain: "a.io", path: "b", tag: "c", digest: "sha256:" + hex64, familar: "a.io/b:c@sha256:" + hex64},
		{name: "no domain quirk", in: "a_b.c/d:e", domain: "", path: "a_b.c/d", tag: "e", familar: "a_b.c/d:e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.domain, r.Domain(), "Domain")
			assert.Equal(t, tt.path, r.Path(), "Path")
			assert.Equal(t, strings.TrimPrefix(tt.domain+"/"+tt.path, "/"), r.Name(), "Name")
			assert.Equal(t, tt.tag, r.Tag(), "Tag")
			assert.Equal(t, tt.digest, r.Digest(), "Digest")
			assert.Equal(t, tt.familar, r.Familiar(), "Familiar")
		})
	}
}

func TestParseKeepsCanonicalInput(t *testing.T) { //nolint:paralleltest // AllocsPerRun refuses parallel tests
	in := "registry.k8s.io/pause:3.10"
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Parse(in); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "Parse of a canonical reference should not allocate")
}

func TestParseImageID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string        // input
		want digest.Digest // "" when an error is expected
	}{
		{name: "prefixed", in: "sha256:" + hex64, want: "sha256:" + hex64},
		{name: "bare", in: hex64, want: "sha256:" + hex64},
		{name: "uppercase", in: strings.ToUpper(hex64)},
		{name: "short", in: "sha256:" + hex64[:12]},
		{name: "short bare", in: hex64[:12]},
		{name: "sha512", in: "sha512:" + hex128},
		{name: "reference", in: "registry.k8s.io/pause:3.10"},
		{name: "empty", in: ""},
		{name: "long", in: strings.Repeat("a", 1<<20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseImageID(tt.in)
			assert.Equal(t, tt.want, got)
			if tt.want == "" {
				assert.ErrorIs(t, err, ErrInvalidImageID)
				var pe *ParseError
				assert.ErrorAs(t, err, &pe)
				return
			}
			assert.NoError(t, err)
		})
	}
}

func TestRefEqualAndIdentity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		a, b  string // two references
		want  bool   // same image under the default aliases
		alias bool   // want holds only under them: Equal says false
	}{
		{name: "k8s aliases", a: "k8s.gcr.io/pause:3.9", b: "registry.k8s.io/pause:3.9", want: true, alias: true},
		{name: "gcr alias", a: "gcr.io/google-containers/pause:3.9", b: "k8s.gcr.io/pause:3.9", want: true, alias: true},
		{name: "docker forms", a: "busybox", b: "registry-1.docker.io/library/busybox:latest", want: true},
		{name: "index", a: "index.docker.io/library/busybox", b: "library/busybox:latest", want: true},
		{name: "domain case", a: "REGISTRY.k8s.io/pause:3.9", b: "registry.k8s.io/pause:3.9", want: true},
		{name: "tag case", a: "registry.k8s.io/pause:RC", b: "registry.k8s.io/pause:rc", want: false},
		{name: "tag vs tag+digest", a: "pause:3.9", b: "pause:3.9@sha256:" + hex64, want: false},
		{name: "digest identifies", a: "pause:3.9@sha256:" + hex64, b: "pause@sha256:" + hex64, want: true},
		{name: "digest beats tag", a: "pause:3.9@sha256:" + hex64, b: "pause:3.10@sha256:" + hex64, want: true},
		{name: "other tag", a: "pause:3.9", b: "pause:3.10", want: false},
		{name: "lookalike domain", a: "k8s.gcr.io.evil.com/pause:3.9", b: "registry.k8s.io/pause:3.9", want: false},
		{name: "bad input", a: "pause:", b: "pause:", want: false},
		// A first component that is a domain only for its uppercase letters
		// is not the Docker Hub namespace of the same letters in lower case.
		{name: "dotless upper domain", a: "A0000000/0", b: "a0000000/0:latest", want: false},
		{name: "dotless upper domain case", a: "Ab/x", b: "aB/x:latest", want: true},
		{name: "LOCALHOST", a: "LOCALHOST/x", b: "localhost/x", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, DefaultAliases().Equal(tt.a, tt.b), "DefaultAliases().Equal(%q, %q)", tt.a, tt.b)
			assert.Equal(t, tt.want, DefaultAliases().Equal(tt.b, tt.a), "DefaultAliases().Equal(%q, %q)", tt.b, tt.a)
			assert.Equal(t, tt.want && !tt.alias, Equal(tt.a, tt.b), "Equal(%q, %q)", tt.a, tt.b)
			assert.Equal(t, tt.want && !tt.alias, Equal(tt.b, tt.a), "Equal(%q, %q)", tt.b, tt.a)
			ra, erra := DefaultAliases().Parse(tt.a)
			rb, errb := DefaultAliases().Parse(tt.b)
			if erra == nil && errb == nil {
				assert.Equal(t, tt.want, ra.Identity() == rb.Identity(), "Identity %q vs %q", ra.Identity(), rb.Identity())
				for _, r := range []Ref{ra, rb} {
					back, err := Parse(r.Identity())
					if assert.NoError(t, err, "Parse(%q)", r.Identity()) {
						assert.Equal(t, r.Identity(), back.Identity(), "Parse(%q).Identity()", r.Identity())
					}
				}
			}
		})
	}
}

func TestRefText(t *testing.T) {
	t.Parallel()
	var r Ref
	require.NoError(t, r.UnmarshalText([]byte("k8s.gcr.io/pause:3.9")))
	b, err := r.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "k8s.gcr.io/pause:3.9", string(b), "the registry as written, as Parse keeps it")
	err = r.UnmarshalText([]byte("Bad"))
	assert.True(t, errors.Is(err, ErrNameContainsUppercase))
	assert.Equal(t, "k8s.gcr.io/pause:3.9", r.String(), "a failed UnmarshalText leaves the Ref as it was")
}

func mustParse(t *testing.T, s string) Ref {
	t.Helper()
	r, err := Parse(s)
	require.NoError(t, err)
	return r
}

// TestZeroRefJSON: the zero Ref marshals as "" and "" unmarshals to it
// (before issue 52 it was ErrInvalidFormat), alone and as a field.
func TestZeroRefJSON(t *testing.T) {
	t.Parallel()
	type holder struct {
		Image Ref `json:"image"`
	}
	tests := []struct {
		name string
		in   holder // marshalled, then unmarshalled over a set Ref
		want string // its JSON
	}{
		{name: "zero", in: holder{}, want: `{"image":""}`},
		{name: "set", in: holder{Image: mustParse(t, "k8s.gcr.io/pause:3.9")}, want: `{"image":"k8s.gcr.io/pause:3.9"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tt.in)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(b))
			back := holder{Image: mustParse(t, "nginx")}
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, tt.in, back)
		})
	}
}

func TestZeroRef(t *testing.T) {
	t.Parallel()
	var r Ref
	assert.True(t, r.IsZero())
	assert.Empty(t, r.String())
	assert.Empty(t, r.Name())
	assert.Empty(t, r.Tag())
	assert.Empty(t, r.Digest())
	assert.Empty(t, r.Familiar())
	assert.True(t, r.Equal(Ref{}))
}
