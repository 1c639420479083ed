package distref_test

import (
	"strings"
	"testing"

	dref "github.com/distribution/reference"
	"github.com/sandboxpin/sandboxpin/reference"
)

// dockerHubVariant reports whether the first component of s is a Docker Hub
// domain that distribution/reference keeps as written and reference reads as
// docker.io (a documented difference: reference's doc.go).
func dockerHubVariant(s string) bool {
	first, _, found := strings.Cut(s, "/")
	if !found || first == "docker.io" || first == "index.docker.io" {
		return false
	}
	for _, hub := range []string{"docker.io", "index.docker.io", "registry-1.docker.io"} {
		if strings.EqualFold(first, hub) {
			return true
		}
	}
	return false
}

// FuzzParseDifferential compares reference.Parse, with no aliases, with
// distribution/reference.ParseDockerRef: both accept the same inputs and
// give the same canonical name, tag and digest, but for the documented
// differences (reference's doc.go): Docker Hub's other domains, and the
// input and domain length limits. The seeds are reference's FuzzParse
// corpus; reference's own FuzzParse checks the properties of Parse alone.
func FuzzParseDifferential(f *testing.F) {
	for _, s := range []string{
		"pause", "registry.k8s.io/pause:3.10.1", "k8s.gcr.io/pause:3.9",
		"localhost:5000/x@sha256:" + strings.Repeat("a", 64), "Docker.io/library/x", "registry-1.docker.io/x",
	} {
		f.Add(s)
	}
	var noAliases *reference.Aliases // Parse with no alias rule
	f.Fuzz(func(t *testing.T, s string) {
		want, derr := dref.ParseDockerRef(s)
		got, err := noAliases.Parse(s)
		switch {
		case derr != nil && err == nil:
			t.Fatalf("Parse(%q) = %q, but distribution/reference rejects it: %v", s, got, derr)
		case derr == nil && err != nil:
			if dockerHubVariant(s) || len(s) > reference.MaxInputLength ||
				len(want.Name()) > reference.MaxDomainLength+1+reference.MaxPathLength ||
				len(dref.Domain(want)) > reference.MaxDomainLength {
				return // documented limits
			}
			t.Fatalf("Parse(%q) error %v, but distribution/reference accepts it as %q", s, err, want)
		case derr == nil:
			if dockerHubVariant(s) {
				return
			}
			if want.Name() != got.Name() {
				t.Fatalf("Parse(%q).Name() = %q, distribution/reference %q", s, got.Name(), want.Name())
			}
			if d, ok := want.(dref.Digested); ok {
				if d.Digest() != got.Digest() {
					t.Fatalf("Parse(%q).Digest() = %q, distribution/reference %q", s, got.Digest(), d.Digest())
				}
			} else if tg, ok := want.(dref.Tagged); ok && tg.Tag() != got.Tag() {
				t.Fatalf("Parse(%q).Tag() = %q, distribution/reference %q", s, got.Tag(), tg.Tag())
			}
		}
	})
}
