package reference

import (
	"strings"

	"github.com/opencontainers/go-digest"
)

// Ref is a parsed, canonical image reference: a repository name (domain and
// path), a tag, a digest, or a tag and a digest. Ref is an immutable value:
// copy it freely, compare it with ==, use it as a map key. The zero Ref is not
// a valid reference; [Ref.IsZero] reports it.
//
// Two Refs are == when their canonical strings are the same. Domains keep the
// case they were written in, so use [Ref.Equal] or [Ref.Identity] to compare
// images the way a registry does.
type Ref struct {
	// s is the canonical string, domain/path[:tag][@digest]. The fields
	// below are offsets into it, so that the accessors never allocate and a
	// canonical input is kept as it is.
	s         string
	pathStart int // 0 when there is no domain (see "Quirks" in doc.go)
	nameEnd   int // end of domain/path
	tagEnd    int // end of ":tag", == nameEnd without a tag
}

// IsZero reports whether r is the zero Ref, which no successful parse returns.
func (r Ref) IsZero() bool { return r.s == "" }

// Domain returns the registry host, with its port if it has one, as written
// (case kept), except that the Docker Hub names are spelled "docker.io".
func (r Ref) Domain() string {
	if r.pathStart == 0 {
		return ""
	}
	return r.s[:r.pathStart-1]
}

// Path returns the repository path below the domain. For example, the path of
// "busybox" is "library/busybox".
func (r Ref) Path() string { return r.s[r.pathStart:r.nameEnd] }

// Name returns the repository name, domain/path.
// For example, Parse("pause:3.10") has the name "docker.io/library/pause".
func (r Ref) Name() string { return r.s[:r.nameEnd] }

// Tag returns the tag, or "" when r was written with a digest and no tag.
// A reference written with neither has the tag "latest".
func (r Ref) Tag() string {
	if r.tagEnd == r.nameEnd {
		return ""
	}
	return r.s[r.nameEnd+1 : r.tagEnd]
}

// Digest returns the digest, or "" when r has none. When r has a tag and a
// digest, the digest identifies the image and the tag is for display.
func (r Ref) Digest() digest.Digest {
	if r.tagEnd == len(r.s) {
		return ""
	}
	return digest.Digest(r.s[r.tagEnd+1:])
}

// String returns the canonical, fully qualified form, name[:tag][@digest].
// For example, Parse("pause").String() == "docker.io/library/pause:latest".
func (r Ref) String() string { return r.s }

// Familiar returns the short form that docker prints: without the
// "docker.io/" domain and, for official images, without "library/". The
// domain stays when the path's first component would read as a domain
// ("docker.io/0.0/x"), where distribution/reference's familiar form does not
// parse back to the same name.
// For example, the familiar form of "docker.io/library/pause:3.10" is
// "pause:3.10".
func (r Ref) Familiar() string {
	if r.Domain() != dockerHub {
		return r.s
	}
	rest := r.s[r.pathStart:]
	if first, _, _ := strings.Cut(r.Path(), "/"); looksLikeDomain(first) {
		// "docker.io/0.0/x" must keep its domain, or "0.0" becomes one.
		return r.s
	}
	if after, ok := strings.CutPrefix(rest, officialPrefix); ok {
		name, _, _ := cutAny(after, ":@")
		if !strings.Contains(name, "/") {
			return after
		}
	}
	return rest
}

// Identity returns the string that two references of the same image share:
// the name, with the domain's case folded, followed by "@digest" when r has a
// digest and ":tag" otherwise. Identity parses back to the same image:
// Parse(r.Identity()).Equal(r) for every r that Parse returns.
//
// A domain is folded to lower case, except one that reads as a domain only
// because of its uppercase letters ("A0/x", no '.', no ':', not
// "localhost"): in lower case it would name a Docker Hub repository
// ("a0/x" is docker.io/a0/x), so it is folded to upper case instead.
//
// It does not allocate when the domain is lower case already and r does not
// carry both a tag and a digest.
func (r Ref) Identity() string {
	dom := r.Domain()
	folded := foldDomain(dom)
	same := r.tagEnd == r.nameEnd || r.tagEnd == len(r.s) // a tag or a digest, not both
	switch {
	case folded == dom && same:
		return r.s
	case folded == dom:
		return r.s[:r.nameEnd] + r.s[r.tagEnd:]
	case same:
		return folded + r.s[r.pathStart-1:]
	default:
		return folded + r.s[r.pathStart-1:r.nameEnd] + r.s[r.tagEnd:]
	}
}

// foldDomain returns the case-folded form of a domain that [Parse] accepted
// (see [Ref.Identity]): d itself when it has no uppercase letter, else d in
// lower case when that still reads as a domain, else d in upper case.
func foldDomain(d string) string {
	if !hasUpper(d) {
		return d
	}
	if lower := strings.ToLower(d); looksLikeDomain(lower) {
		return lower
	}
	return strings.ToUpper(d)
}

// Equal reports whether r and o name the same image: the same name (domain
// case folded) and the same digest when either has one, otherwise the same tag.
// So "pause:3.9" and "pause:3.9@sha256:…" are not equal, and two references
// with different tags but one digest are. Aliases apply when a Ref is parsed
// ([Aliases.Parse]), never here: this is the one meaning of Equal in the
// package ([Equal] and [Aliases.Equal] compare the Refs they parse with it).
func (r Ref) Equal(o Ref) bool {
	return r.Identity() == o.Identity()
}

// MarshalText returns the canonical string; "" for the zero Ref.
func (r Ref) MarshalText() ([]byte, error) { return []byte(r.s), nil }

// UnmarshalText parses text as [Parse] does, keeping the registry as written.
// Empty text is the zero Ref ("" means "none", as for every type of this
// project), so that the zero Ref round-trips through JSON.
func (r *Ref) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*r = Ref{}
		return nil
	}
	p, err := Parse(string(text))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// cutAny cuts s around the first byte that is in any of seps.
func cutAny(s, seps string) (before, after string, found bool) {
	if i := strings.IndexAny(s, seps); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}
