package reference

import "strings"

// Normalizer parses and compares references under a set of [Aliases]. It is
// immutable and safe for concurrent use. A nil *Normalizer applies no aliases.
type Normalizer struct {
	aliases *Aliases
}

// NewNormalizer returns a Normalizer that applies a. A nil a applies none;
// pass [DefaultAliases] (or a set built on it with [Aliases.With]) for the
// usual Kubernetes registry aliases.
func NewNormalizer(a *Aliases) *Normalizer {
	return &Normalizer{aliases: a}
}

// Aliases returns the aliases n applies, possibly nil.
func (n *Normalizer) Aliases() *Aliases {
	if n == nil {
		return nil
	}
	return n.aliases
}

// Parse parses s and returns its canonical form with n's aliases applied.
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
func (n *Normalizer) Parse(s string) (Ref, error) {
	return parse(s, n.Aliases())
}

// Equal reports whether a and b reference the same image: the same canonical
// name after aliases (domain case folded) and the same digest when either has
// one, otherwise the same tag. Input that does not parse is equal to nothing.
// For example, under the default aliases "k8s.gcr.io/pause:3.9" equals
// "registry.k8s.io/pause:3.9", and "pause:3.9" does not equal
// "pause:3.9@sha256:…".
func (n *Normalizer) Equal(a, b string) bool {
	ra, err := n.Parse(a)
	if err != nil {
		return false
	}
	rb, err := n.Parse(b)
	if err != nil {
		return false
	}
	return ra.Equal(rb)
}

// NormalizePrefix returns the canonical form of a repository prefix: a
// domain with optional path components ("k8s.gcr.io", "docker.io/library"),
// or path components alone, which name a Docker Hub namespace ("library",
// "myuser"). The domain's case is folded as in [Ref.Identity] (lower case,
// but upper case for a domain such as "AB" that reads as one only for its
// uppercase letters), so that the result reads back as the same prefix; Docker Hub is spelled
// docker.io and n's aliases apply, so under the default aliases
// NormalizePrefix("k8s.gcr.io") == "registry.k8s.io". Unlike [Normalizer.Parse],
// a single component that is not a domain gets no "library/".
func (n *Normalizer) NormalizePrefix(s string) (string, error) {
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
	if a := n.Aliases(); a != nil {
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
