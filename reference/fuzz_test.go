package reference

import (
	"errors"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
)

// FuzzParse checks the properties of Parse: errors are ParseErrors with an
// offset inside the input and a zero Ref; every form of a parsed Ref parses
// back to the same image. The differential fuzz against
// distribution/reference is internal/distref's FuzzParseDifferential (in
// the test harness module, so that importers never require it).
func FuzzParse(f *testing.F) {
	for _, tt := range goodRefs {
		f.Add(tt.in)
	}
	for _, tt := range badRefs {
		if len(tt.in) < 4096 {
			f.Add(tt.in)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			if !r.IsZero() {
				t.Fatalf("Parse(%q) = %q with error %v", s, r, err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Input != s || pe.Offset < 0 || pe.Offset > len(s) {
				t.Fatalf("Parse(%q) error %#v is not a ParseError with an offset inside the input", s, err)
			}
		} else {
			again, err := Parse(r.String())
			if err != nil || again != r {
				t.Fatalf("Parse(Parse(%q).String() = %q) = %q, %v", s, r, again, err)
			}
			// Every name handed out parses back to the same image, with the
			// same identity (what pin keys on).
			for _, form := range []string{r.String(), r.Familiar(), r.Identity()} {
				back, err := Parse(form)
				if err != nil || back.Identity() != r.Identity() {
					t.Fatalf("Parse(%q), a form of Parse(%q) = %q: identity %q, %v; want %q", form, s, r, back.Identity(), err, r.Identity())
				}
			}
			if p, err := DefaultAliases().NormalizePrefix(r.Name()); err == nil {
				if again, err := DefaultAliases().NormalizePrefix(p); err != nil || again != p {
					t.Fatalf("NormalizePrefix(%q) = %q, which reads back as %q, %v", r.Name(), p, again, err)
				}
			}
			if !Equal(s, s) {
				t.Fatalf("Equal(%q, %q) = false", s, s)
			}
		}
	})
}

func FuzzEqual(f *testing.F) {
	f.Add("k8s.gcr.io/pause:3.9", "registry.k8s.io/pause:3.9")
	f.Add("busybox", "registry-1.docker.io/library/busybox:latest")
	f.Add("pause:3.9", "pause:3.9@sha256:"+hex64)
	f.Add("REGISTRY.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9")
	for i := 1; i < len(goodRefs); i++ {
		f.Add(goodRefs[i-1].in, goodRefs[i].in)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		// One meaning of Equal: Ref.Equal of the Refs that Parse, or an
		// *Aliases' Parse, reads; symmetric either way.
		for _, al := range []*Aliases{nil, DefaultAliases()} {
			eq := al.Equal(a, b)
			if eq != al.Equal(b, a) {
				t.Fatalf("%v.Equal(%q, %q) = %v but not the other way round", al, a, b, eq)
			}
			if al == nil && eq != Equal(a, b) {
				t.Fatalf("Equal(%q, %q) = %v, nil *Aliases says %v", a, b, Equal(a, b), eq)
			}
			ra, erra := al.Parse(a)
			rb, errb := al.Parse(b)
			if erra != nil || errb != nil {
				if eq {
					t.Fatalf("Equal(%q, %q) = true, but they do not both parse", a, b)
				}
				continue
			}
			if eq != ra.Equal(rb) || eq != (ra.Identity() == rb.Identity()) {
				t.Fatalf("Equal(%q, %q) = %v, Identity %q vs %q", a, b, eq, ra.Identity(), rb.Identity())
			}
			if eq != al.Equal(ra.String(), rb.String()) {
				t.Fatalf("Equal(%q, %q) = %v, but Equal of their canonical forms differs", a, b, eq)
			}
			if eq && !DefaultAliases().Equal(a, b) {
				t.Fatalf("Equal(%q, %q) without aliases, but not with them", a, b)
			}
		}
	})
}

func FuzzParseImageID(f *testing.F) {
	f.Add(hex64)
	f.Add("sha256:" + hex64)
	f.Add("sha512:" + hex128)
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseImageID(s)
		if err != nil {
			if id != "" || !errors.Is(err, ErrInvalidImageID) {
				t.Fatalf("ParseImageID(%q) = %q, %v", s, id, err)
			}
			return
		}
		if verr := id.Validate(); verr != nil || id.Algorithm() != "sha256" {
			t.Fatalf("ParseImageID(%q) = %q, which go-digest rejects: %v", s, id, verr)
		}
		if again, err := ParseImageID(id.String()); err != nil || again != id {
			t.Fatalf("ParseImageID(%q) = %q, %v", id, again, err)
		}
	})
}

func FuzzNewAliases(f *testing.F) {
	f.Add("k8s.gcr.io", "registry.k8s.io", "mirror.corp:5000/k8s", "registry.k8s.io", "k8s.gcr.io/pause:3.9")
	f.Add("a.io", "b.io", "b.io", "a.io", "a.io/x")
	f.Add("a.io", "b.io/x", "b.io", "c.io", "a.io/y:1")
	f.Fuzz(func(t *testing.T, from1, to1, from2, to2, ref string) {
		a, err := NewAliases(Alias{From: from1, To: to1}, Alias{From: from2, To: to2})
		if err != nil {
			var ae *AliasError
			if a != nil || !errors.As(err, &ae) {
				t.Fatalf("NewAliases error %v with %v", err, a)
			}
			return
		}
		n := a
		r, err := n.Parse(ref)
		if err != nil {
			return
		}
		again, err := n.Parse(r.String())
		if err != nil || again != r {
			t.Fatalf("aliases %v: Parse(Parse(%q).String() = %q) = %q, %v", a.Rules(), ref, r, again, err)
		}
		if id, err := n.Parse(r.Identity()); err != nil || id.Identity() != r.Identity() {
			t.Fatalf("aliases %v: Parse(%q), the identity of %q, = %q, %v", a.Rules(), r.Identity(), ref, id.Identity(), err)
		}
		for _, v := range a.Variants(r) {
			if back, err := n.Parse(v.String()); err != nil || !back.Equal(r) {
				t.Fatalf("aliases %v: variant %q of %q parses to %q, %v", a.Rules(), v, r, back, err)
			}
		}
	})
}

func FuzzValidDigest(f *testing.F) {
	f.Add("sha256:" + hex64)
	f.Add("sha384:" + hex96)
	f.Add("sha512:" + hex128)
	f.Add("sha256:" + strings.ToUpper(hex64))
	f.Add("md5:" + hex64)
	f.Fuzz(func(t *testing.T, d string) {
		if got, want := validDigest(d), digest.Digest(d).Validate() == nil; got != want {
			t.Fatalf("validDigest(%q) = %v, go-digest Validate says %v", d, got, want)
		}
	})
}
