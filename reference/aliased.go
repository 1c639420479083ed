package reference

import "strings"

// The methods of this file parse and compare under a set of aliases; the
// package-level [Parse] and [Equal] apply none. A nil *Aliases has no rules:
// its methods then do what the package-level functions do.

// Parse parses s and returns its canonical form with a's rules applied, so
// that DefaultAliases().Parse("k8s.gcr.io/pause:3.9") names
// registry.k8s.io/pause:3.9.
// Errors are *[ParseError] wrapping one of the sentinel errors.
//
// # Rules
//
//   - The first component (before the first "/") is a domain if it holds a "."
//     or a ":", is "localhost", or holds an uppercase letter; otherwise the
//     domain is docker.io, and a single component gets "library/".
//   - index.docker.io and registry-1.docker.io (any case) are docker.io.
//   - Paths must be lower case; domains keep their case (it is folded only
//     when comparing); tags are case-sensitive.
//   - No tag and no digest means ":latest". With a tag and a digest, both
//     are kept and the digest identifies the image.
//   - "sha256:<64 hex>" is repository docker.io/library/sha256 with that
//     tag, as in distribution/reference; use [ParseImageID] first when the
//     input may be an image ID.
func (a *Aliases) Parse(s string) (Ref, error) {
	return parse(s, a)
}

// Equal reports whether x and y reference the same image under a's rules:
// [Ref.Equal] of their [Aliases.Parse]. Input that does not parse is equal to
// nothing. For example, DefaultAliases().Equal("k8s.gcr.io/pause:3.9",
// "registry.k8s.io/pause:3.9") is true, and no set of aliases makes
// "pause:3.9" equal "pause:3.9@sha256:…".
func (a *Aliases) Equal(x, y string) bool {
	rx, err := a.Parse(x)
	if err != nil {
		return false
	}
	ry, err := a.Parse(y)
	if err != nil {
		return false
	}
	return rx.Equal(ry)
}

// NormalizePrefix returns the canonical form of a repository prefix: a
// domain with optional path components ("k8s.gcr.io", "docker.io/library"),
// or path components alone, which name a Docker Hub namespace ("library",
// "myuser"). The domain's case is folded as in [Ref.Identity] (lower case,
// but upper case for a domain such as "AB" that reads as one only for its
// uppercase letters), so that the result reads back as the same prefix; Docker Hub is spelled
// docker.io and a's rules apply, so
// DefaultAliases().NormalizePrefix("k8s.gcr.io") == "registry.k8s.io". Unlike [Aliases.Parse],
// a single component that is not a domain gets no "library/".
func (a *Aliases) NormalizePrefix(s string) (string, error) {
	first, _, _ := strings.Cut(s, "/")
	if s == "" || !looksLikeDomain(first) {
		if len(s) > MaxPathLength {
			return "", parseErr(s, MaxPathLength, ErrNameTooLong)
		}
		if off, err := checkPath(s); err != nil {
			return "", parseErr(s, off, err)
		}
		s = dockerHub + "/" + s
	}
	p, err := parsePrefix(s)
	if err != nil {
		return "", err
	}
	if a != nil {
		if i := a.match(p); i >= 0 {
			r := a.rules[i]
			p = prefix{domain: r.to.domain, path: rewrite(p.path, r.from, r.to)}
		}
	}
	if !looksLikeDomain(p.domain) {
		// parsePrefix put it in lower case, where it would read as a Docker
		// Hub namespace; no alias rule has such a domain (NewAliases
		// refuses them), so none applied.
		p.domain = strings.ToUpper(p.domain)
	}
	return p.String(), nil
}
