package reference

import (
	// go-digest accepts a digest only when its hash is linked into the
	// program; these imports make sha256, sha384 and sha512 digests parse in
	// every binary that uses this package, not only in tests.
	_ "crypto/sha256"
	_ "crypto/sha512"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
)

// Limits on the parts of a reference. Input over them is rejected before any
// other work, so the cost of a parse is bounded whatever the input.
const (
	// MaxPathLength is the longest repository path, "library/" included; the
	// same as distribution/reference's RepositoryNameTotalLengthMax.
	MaxPathLength = 255
	// MaxDomainLength is the longest domain with its port. DNS names are at
	// most 253 bytes; distribution/reference sets no limit.
	MaxDomainLength = 255
	// MaxTagLength is the longest tag, as in the distribution spec.
	MaxTagLength = 128
	// MaxInputLength bounds a whole input: a domain, a path, a tag and a
	// sha512 digest at their limits fit with room to spare.
	MaxInputLength = 1024
)

const (
	dockerHub      = "docker.io"
	officialPrefix = "library/"
	defaultTag     = "latest"
)

// Parse parses s as an image reference and returns its canonical form with
// the registry as written, as distribution/reference and
// go-containerregistry do: Docker Hub's spellings are folded together, but
// no registry alias applies. For example, Parse("pause") names
// "docker.io/library/pause:latest" and Parse("k8s.gcr.io/pause:3.9") names
// "k8s.gcr.io/pause:3.9". Use [Aliases.Parse] to apply aliases. Errors are
// *[ParseError]; see [Aliases.Parse] for the rules.
func Parse(s string) (Ref, error) {
	return parse(s, nil)
}

// Equal reports whether a and b are references to the same image, as
// [Parse] reads them, with no aliases: [Ref.Equal] of their [Parse]. Input
// that does not parse is equal to nothing. To compare under aliases, call
// [Aliases.Equal]: DefaultAliases().Equal(a, b).
func Equal(a, b string) bool {
	return (*Aliases)(nil).Equal(a, b)
}

// ParseImageID parses an image ID: "sha256:" followed by 64 lowercase hex
// digits, or the 64 digits alone. Anything else, a reference or uppercase or
// short hex included, is an error wrapping [ErrInvalidImageID].
func ParseImageID(s string) (digest.Digest, error) {
	hex, prefixed := strings.CutPrefix(s, "sha256:")
	if len(hex) != 64 {
		return "", parseErr(s, min(len(s), len(s)-len(hex)+64), fmt.Errorf("%w: want 64 hex digits, have %d bytes", ErrInvalidImageID, len(hex)))
	}
	for i := 0; i < len(hex); i++ {
		if !isHex(hex[i]) {
			return "", parseErr(s, len(s)-len(hex)+i, fmt.Errorf("%w: %q is not a lowercase hex digit", ErrInvalidImageID, hex[i]))
		}
	}
	if prefixed {
		return digest.Digest(s), nil
	}
	return digest.Digest("sha256:" + s), nil
}

// isImageID reports whether s is 64 lowercase hex digits, the form that
// distribution/reference refuses as a repository name.
func isImageID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// parse does the work of [Aliases.Parse]; a is nil for no aliases.
func parse(s string, a *Aliases) (Ref, error) {
	if s == "" {
		return Ref{}, parseErr(s, 0, fmt.Errorf("%w: empty", ErrInvalidFormat))
	}
	if len(s) > MaxInputLength {
		return Ref{}, parseErr(s, MaxInputLength, fmt.Errorf("%w: longer than %d bytes", ErrNameTooLong, MaxInputLength))
	}

	// reference := name [ ":" tag ] [ "@" digest ]. No part but the digest
	// may hold an "@", and only a domain's port holds a ":" before the last
	// "/", so the separators can be found from the ends.
	left, dgst := s, ""
	if at := strings.IndexByte(s, '@'); at >= 0 {
		left, dgst = s[:at], s[at+1:]
		if !validDigest(dgst) {
			return Ref{}, parseErr(s, at+1, digestErr(dgst))
		}
	}
	name, tag := left, ""
	if c := strings.LastIndexByte(left, ':'); c > strings.LastIndexByte(left, '/') {
		name, tag = left[:c], left[c+1:]
		if off, err := checkTag(tag); err != nil {
			return Ref{}, parseErr(s, c+1+off, err)
		}
	}
	if name == "" {
		return Ref{}, parseErr(s, 0, fmt.Errorf("%w: no repository name", ErrInvalidFormat))
	}
	if name == s && isImageID(s) {
		return Ref{}, parseErr(s, 0, fmt.Errorf("%w: 64 hex digits are an image ID, not a repository name", ErrInvalidFormat))
	}

	domain, path, pathOff, err := splitName(name)
	if err != nil {
		return Ref{}, parseErr(s, pathOff, err)
	}
	changed := false // whether the canonical string differs from s
	if isDockerHub(domain) {
		changed = domain != dockerHub
		domain = dockerHub
	}
	if pathOff < 0 { // a familiar name: no domain was written
		changed = true
		pathOff = 0
	}
	if off, err := checkPath(path); err != nil {
		return Ref{}, parseErr(s, pathOff+off, err)
	}
	if domain == dockerHub && !strings.Contains(path, "/") {
		path = officialPrefix + path
		changed = true
	}
	if a != nil {
		if d, p, ok := a.apply(domain, path); ok {
			domain, path, changed = d, p, true
			if domain == dockerHub && !strings.Contains(path, "/") {
				path = officialPrefix + path
			}
		}
	}
	if len(path) > MaxPathLength {
		return Ref{}, parseErr(s, min(pathOff+MaxPathLength, len(s)), fmt.Errorf("%w: repository path is %d bytes, more than %d", ErrNameTooLong, len(path), MaxPathLength))
	}
	if tag == "" && dgst == "" {
		tag = defaultTag
		changed = true
	}
	return makeRef(s, changed, domain, path, tag, dgst), nil
}

// makeRef assembles a Ref, reusing s when it is canonical already.
func makeRef(s string, changed bool, domain, path, tag, dgst string) Ref {
	var r Ref
	if domain != "" {
		r.pathStart = len(domain) + 1
	}
	r.nameEnd = r.pathStart + len(path)
	r.tagEnd = r.nameEnd
	if tag != "" {
		r.tagEnd += 1 + len(tag)
	}
	if !changed {
		r.s = s
		return r
	}
	var b strings.Builder
	b.Grow(r.tagEnd + 1 + len(dgst))
	if domain != "" {
		b.WriteString(domain)
		b.WriteByte('/')
	}
	b.WriteString(path)
	if tag != "" {
		b.WriteByte(':')
		b.WriteString(tag)
	}
	if dgst != "" {
		b.WriteByte('@')
		b.WriteString(dgst)
	}
	r.s = b.String()
	return r
}

// splitName splits a repository name into domain and path the way docker
// does: the first component is a domain if it holds a "." or a ":", is
// "localhost", or holds an uppercase letter. pathOff is the offset of path in
// name, or -1 when no domain was written (the domain is then Docker Hub's).
//
// A first component that looks like a domain but is not a valid one (such as
// "a_b.c") makes the whole name a path with no domain, as in
// distribution/reference.
func splitName(name string) (domain, path string, pathOff int, err error) {
	first, rest, found := strings.Cut(name, "/")
	if !found || !looksLikeDomain(first) {
		return dockerHub, name, -1, nil
	}
	if off, derr := checkDomain(first); derr != nil {
		if _, perr := checkPath(name); perr == nil {
			return "", name, 0, nil
		}
		return "", "", off, derr
	}
	return first, rest, len(first) + 1, nil
}

// looksLikeDomain reports whether a first name component is meant as a
// domain: it holds a "." or a ":", is "localhost", or holds an uppercase
// letter (paths cannot).
func looksLikeDomain(first string) bool {
	return first == "localhost" || strings.ContainsAny(first, ".:") || hasUpper(first)
}

func isDockerHub(domain string) bool {
	return strings.EqualFold(domain, dockerHub) ||
		strings.EqualFold(domain, "index.docker.io") ||
		strings.EqualFold(domain, "registry-1.docker.io")
}

// checkDomain checks host[:port], where host is a DNS name of components
// [a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])? joined by "." or an IPv6 address in
// brackets, and port is decimal digits. It returns the offset of the first bad
// byte.
func checkDomain(d string) (int, error) {
	if len(d) > MaxDomainLength {
		return MaxDomainLength, fmt.Errorf("%w: domain longer than %d bytes", ErrNameTooLong, MaxDomainLength)
	}
	bad := func(i int, what string) (int, error) {
		return i, fmt.Errorf("%w: domain %s", ErrInvalidFormat, what)
	}
	i := 0
	if d != "" && d[0] == '[' {
		i = 1
		for i < len(d) && (isHexAnyCase(d[i]) || d[i] == ':') {
			i++
		}
		if i == 1 || i == len(d) || d[i] != ']' {
			return bad(i, "has a malformed IPv6 address")
		}
		i++
	} else {
		for {
			start := i
			for i < len(d) && (isAlnumAnyCase(d[i]) || d[i] == '-') {
				i++
			}
			if i == start || d[start] == '-' {
				return bad(start, "component must start with a letter or digit")
			}
			if d[i-1] == '-' {
				return bad(i-1, "component must not end with '-'")
			}
			if i == len(d) || d[i] != '.' {
				break
			}
			i++
		}
	}
	if i == len(d) {
		return 0, nil
	}
	if d[i] != ':' {
		return bad(i, fmt.Sprintf("has %q where a ':' port or the end belongs", d[i]))
	}
	i++
	if i == len(d) {
		return bad(i, "port is empty")
	}
	for ; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return bad(i, "port must be decimal digits")
		}
	}
	return 0, nil
}

// checkPath checks path components [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)* joined
// by "/". It returns the offset of the first bad byte.
func checkPath(p string) (int, error) {
	i := 0
	for {
		if off, err := alnumRun(p, i); err != nil {
			return off, err
		}
		for i < len(p) && isAlnum(p[i]) {
			i++
		}
		if i == len(p) {
			return 0, nil
		}
		switch p[i] {
		case '/':
			i++
			continue // a new component
		case '.':
			i++
		case '_':
			i++
			if i < len(p) && p[i] == '_' {
				i++
			}
		case '-':
			for i < len(p) && p[i] == '-' {
				i++
			}
		default:
			if 'A' <= p[i] && p[i] <= 'Z' {
				return i, fmt.Errorf("%w: %q in path", ErrNameContainsUppercase, p[i])
			}
			return i, fmt.Errorf("%w: %q is not allowed in a repository path", ErrInvalidFormat, p[i])
		}
		// A separator must be followed by a letter or digit.
		if off, err := alnumRun(p, i); err != nil {
			return off, err
		}
	}
}

// alnumRun checks that p[i] starts a run of lowercase letters and digits.
func alnumRun(p string, i int) (int, error) {
	switch {
	case i == len(p):
		return i, fmt.Errorf("%w: path component is empty or ends with a separator", ErrInvalidFormat)
	case 'A' <= p[i] && p[i] <= 'Z':
		return i, fmt.Errorf("%w: %q in path", ErrNameContainsUppercase, p[i])
	case !isAlnum(p[i]):
		return i, fmt.Errorf("%w: path component must start with a lowercase letter or digit, not %q", ErrInvalidFormat, p[i])
	}
	return i, nil
}

// validDigest reports whether go-digest accepts d, without its regexps: one
// of the algorithms this package links, then lowercase hex of its length.
func validDigest(d string) bool {
	alg, hex, ok := strings.Cut(d, ":")
	if !ok {
		return false
	}
	var size int
	switch digest.Algorithm(alg) {
	case digest.SHA256:
		size = 64
	case digest.SHA384:
		size = 96
	case digest.SHA512:
		size = 128
	default:
		return false
	}
	if len(hex) != size {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if !isHex(hex[i]) {
			return false
		}
	}
	return true
}

// digestErr explains why d is not a digest, with go-digest's own error.
func digestErr(d string) error {
	if err := digest.Digest(d).Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidDigest, err)
	}
	return fmt.Errorf("%w: algorithm not supported", ErrInvalidDigest)
}

// checkTag checks [\w][\w.-]{0,127}.
func checkTag(t string) (int, error) {
	if t == "" {
		return 0, fmt.Errorf("%w: empty tag", ErrInvalidTag)
	}
	if len(t) > MaxTagLength {
		return MaxTagLength, fmt.Errorf("%w: longer than %d bytes", ErrInvalidTag, MaxTagLength)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if isAlnumAnyCase(c) || c == '_' || (i > 0 && (c == '.' || c == '-')) {
			continue
		}
		return i, fmt.Errorf("%w: %q not allowed here", ErrInvalidTag, c)
	}
	return 0, nil
}

func isAlnum(c byte) bool        { return ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') }
func isAlnumAnyCase(c byte) bool { return isAlnum(c) || ('A' <= c && c <= 'Z') }
func isHex(c byte) bool          { return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') }
func isHexAnyCase(c byte) bool   { return isHex(c) || ('A' <= c && c <= 'F') }
