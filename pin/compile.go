package pin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sandboxpin/sandboxpin/reference"
)

// Option configures [Compile].
type Option func(*options)

type options struct {
	aliases *reference.Aliases
	mode    Mode
	source  string
	labels  []string // CRIDockerdCompat: WithImageLabels
	sandbox string   // CRIDockerdCompat: WithSandboxImage
}

// WithAliases sets the registry aliases that Strict patterns and image names
// are canonicalized with. The default, and what nil means, is
// [reference.DefaultAliases], as in every package here; pass
// [reference.NoAliases] for none. ModeCRIOCompat and ModeCRIDockerdCompat
// ignore aliases.
func WithAliases(a *reference.Aliases) Option {
	return func(o *options) { o.aliases = a }
}

// WithMode sets how patterns are read: [ModeStrict] (the default, and what the
// zero Mode means), [ModeCRIOCompat] or [ModeCRIDockerdCompat]. Compile refuses any
// other word with an error wrapping [ErrUnknownMode].
func WithMode(m Mode) Option {
	return func(o *options) { o.mode = m }
}

// WithSource labels the rules, so that [Matcher.Explain] can say where a
// pattern came from, such as "/etc/containerd/config.toml:42".
func WithSource(name string) Option {
	return func(o *options) { o.source = name }
}

// Compile builds a [Matcher] from patterns. Bad patterns are reported at
// once, as a join of *[PatternError]s that quote the pattern (its first 80
// bytes) and its index: the first 10 of them, then one error wrapping
// [ErrInvalidPattern] that counts the rest. A nil Option is ignored.
//
// # Strict patterns
//
//   - A reference with a tag, such as "registry.k8s.io/pause:3.10" or
//     "pause:3.10" (no tag means ":latest"): pins images with a repo tag that
//     names the same image after canonicalization and aliases.
//   - A reference with a digest ("repo@sha256:…" or "repo:tag@sha256:…"):
//     pins images with a repo digest of an equivalent repository and that
//     digest.
//   - A bare digest or image ID ("sha256:…" or 64 hex digits): pins the image
//     with that ID and any image with a repo digest of that digest.
//   - "prefix*": pins images whose canonical name (domain/path, no tag)
//     starts with the canonical prefix. Aliases apply both ways:
//     "k8s.gcr.io/*" pins registry.k8s.io images, and "gcr.io/*" pins the
//     registry.k8s.io images that gcr.io/google-containers also serves. A
//     prefix without "/" is a domain when it looks like one ("quay.io*") and
//     a Docker Hub official image otherwise ("nginx*").
//   - "*text*": pins images whose canonical name contains text, case folded.
//   - "" is ignored (CRI-O's way to say "nothing pinned").
//   - "*", "**", "*x", "x**" and any other "*" are errors.
//
// # CRIOCompat patterns
//
// As CRI-O reads pinned_images: "*text*" is a case-insensitive substring
// ("**" pins everything), "text*" an unanchored case-insensitive substring
// too, and anything else a case-insensitive whole-string match, a "*" inside
// it being literal. Names are compared raw, without normalization or aliases,
// and "" matches nothing. As in CRI-O, an image's names are its repo tags,
// or its repo digests when it has no tag; never its ID. Where CRI-O panics at start-up ("*", or a pattern
// that is not UTF-8), Compile returns an error.
//
// # CRIDockerdCompat patterns
//
// As cri-dockerd 0.4.7 and later read --pinned-images (cri-dockerd#571).
// Each pattern is trimmed of white space, and then:
//
//   - "" pins nothing and is no rule;
//   - "text*" pins a repo tag or repo digest that starts with text, raw and
//     case-sensitive ("*" alone pins every image that has a name; only one
//     trailing "*" is removed, other "*"s are literal);
//   - a pattern with an "@", or with a ":" after its last "/", pins the repo
//     tag or repo digest equal to it;
//   - anything else is a bare repository: it pins every repo tag and repo
//     digest of it ("localhost:5000/app" pins "localhost:5000/app:1").
//
// Nothing is normalized and no alias applies. Docker lists its names in
// familiar form ("nginx:1.27"), so "docker.io/library/nginx:1.27" pins
// nothing: [CRIDockerdNeverMatches] says which patterns cannot match, and
// Compile accepts them, as cri-dockerd does. [WithImageLabels] adds the
// --pinned-image-labels selectors and [WithSandboxImage] the sandbox image
// cri-dockerd pins beside them. The image ID is never compared.
func Compile(patterns []string, opts ...Option) (*Matcher, error) {
	o := options{}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.aliases == nil {
		o.aliases = reference.DefaultAliases()
	}
	if o.mode == "" {
		o.mode = ModeStrict
	}
	if !o.mode.Known() {
		return nil, fmt.Errorf("pin: mode %q: %w: want %q, %q or %q", o.mode, ErrUnknownMode, ModeStrict, ModeCRIOCompat, ModeCRIDockerdCompat)
	}
	if o.mode != ModeCRIDockerdCompat && (len(o.labels) > 0 || o.sandbox != "") {
		return nil, fmt.Errorf("pin: image labels and a sandbox image need mode %s, not %s", ModeCRIDockerdCompat, o.mode)
	}
	c := compiler{
		m: &Matcher{
			mode:    o.mode,
			isCRIO:  o.mode == ModeCRIOCompat,
			aliases: o.aliases,
		},
		source: o.source,
	}
	if o.mode == ModeStrict {
		c.resolved = o.aliases.Resolved()
		for _, a := range c.resolved {
			d, _, _ := strings.Cut(a.From, "/")
			if !slices.Contains(c.m.aliasDomains, d) {
				c.m.aliasDomains = append(c.m.aliasDomains, d)
			}
		}
		hub := []string{"docker.io", "index.docker.io", "registry-1.docker.io"}
		for _, d := range append(hub, c.m.aliasDomains...) {
			if d != "" {
				c.m.special |= domainBloom(d)
			}
		}
		for _, d := range c.m.aliasDomains {
			c.m.hubAliased = c.m.hubAliased || slices.ContainsFunc(hub, func(h string) bool { return strings.EqualFold(h, d) })
		}
	}
	if o.mode == ModeCRIDockerdCompat {
		c.m.dockerd = &criDockerdRules{sandbox: o.sandbox}
		if o.sandbox != "" {
			c.m.dockerd.sandboxR = c.rule(-1, o.sandbox, KindSandbox)
		}
		for i, p := range o.labels {
			c.addCRIDockerdLabel(i, p)
		}
	}
	var errs []error
	more := 0 // bad patterns past maxReported
	for i, p := range patterns {
		var err error
		switch o.mode {
		case ModeCRIOCompat:
			err = c.addCRIO(i, p)
		case ModeCRIDockerdCompat:
			c.addCRIDockerd(i, p)
		default:
			err = c.addStrict(i, p)
		}
		switch {
		case err == nil:
		case len(errs) < maxReported:
			errs = append(errs, &PatternError{Index: i, Pattern: p, Err: err})
		default:
			more++
		}
	}
	if more > 0 {
		errs = append(errs, fmt.Errorf("%w: %d more", ErrInvalidPattern, more))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	c.m.rare = rareGroups(c.m.keywords)
	c.m.listGlobs()
	return c.m, nil
}

type compiler struct {
	m        *Matcher
	resolved []reference.Alias
	source   string
}

func (c *compiler) rule(i int, p string, k Kind) int {
	c.m.rules = append(c.m.rules, rule{pattern: p, source: c.source, index: i, kind: k})
	return len(c.m.rules) - 1
}

func (c *compiler) addExact(key string, r int) {
	if c.m.exact == nil {
		c.m.exact = make(map[string]int)
	}
	if _, dup := c.m.exact[key]; !dup {
		c.m.exact[key] = r
		c.m.exactBloom |= keyBloom(key)
	}
}

func (c *compiler) addID(d string, r int) {
	if c.m.ids == nil {
		c.m.ids = make(map[string]int)
	}
	for _, k := range []string{d, strings.TrimPrefix(d, "sha256:")} {
		if _, dup := c.m.ids[k]; !dup {
			c.m.ids[k] = r
		}
	}
}

func (c *compiler) addStrict(i int, p string) error {
	if p == "" {
		return nil
	}
	if strings.Contains(p, "*") {
		return c.addWildcard(i, p)
	}
	if id, err := reference.ParseImageID(p); err == nil {
		c.addID(string(id), c.rule(i, p, KindImageID))
		return nil
	}
	if d, hex, ok := strings.Cut(p, ":"); ok && (d == "sha384" || d == "sha512") && !strings.ContainsAny(hex, "/:@") {
		// A bare digest of another algorithm: a repo digest may carry it.
		if _, err := reference.Parse("x@" + p); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidPattern, err)
		}
		c.addID(p, c.rule(i, p, KindImageID))
		return nil
	}
	ref, err := c.m.aliases.Parse(p)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidPattern, err)
	}
	kind := KindTag
	if ref.Digest() != "" {
		kind = KindDigest
	}
	r := c.rule(i, p, kind)
	c.m.tagKeys = c.m.tagKeys || kind == KindTag
	c.m.digestKeys = c.m.digestKeys || kind == KindDigest
	for _, v := range append([]reference.Ref{ref}, c.m.aliases.Variants(ref)...) {
		id := v.Identity()
		c.addExact(id, r)
		// How Docker lists it: findFamiliar relies on finding every
		// identity under its familiar form too.
		if f, err := reference.Parse(id); err == nil && f.Familiar() != id {
			c.addExact(f.Familiar(), r)
		}
	}
	return nil
}

// addWildcard adds "prefix*" and "*text*".
func (c *compiler) addWildcard(i int, p string) error {
	inner := strings.Trim(p, "*")
	stars := strings.Count(p, "*")
	switch {
	case inner == "":
		return fmt.Errorf("%w: %s would pin every image; list the images instead", ErrInvalidPattern, quote(p))
	case strings.Contains(inner, "*"):
		return fmt.Errorf("%w: '*' may only end a pattern (\"prefix*\") or surround one (\"*text*\")", ErrInvalidPattern)
	case p[0] == '*' && p[len(p)-1] == '*' && stars == 2:
		kw := strings.ToLower(inner)
		// A one-byte keyword has no byte pair to filter names by.
		var pairs uint64
		if len(kw) > 1 {
			pairs = pairBloom(kw)
		}
		c.m.keywords = append(c.m.keywords, affix{s: kw, pairs: pairs, rule: c.rule(i, p, KindKeyword)})
		return nil
	case p[0] == '*':
		return fmt.Errorf("%w: a leading '*' needs a trailing one (\"*text*\"); suffix globs are not supported", ErrInvalidPattern)
	case stars > 1:
		return fmt.Errorf("%w: only one trailing '*' is allowed", ErrInvalidPattern)
	}
	canon, plain, err := c.globPrefixes(inner)
	if err != nil {
		return err
	}
	r := c.rule(i, p, KindGlob)
	c.addGlob(canon, r)
	// A name that an alias rewrites into canonical form is pinned if its
	// written form starts with the prefix: "gcr.io/*" covers
	// gcr.io/google-containers, which is registry.k8s.io.
	for _, a := range c.resolved {
		if strings.HasPrefix(a.From+"/", plain) {
			c.addGlob(a.To+"/", r)
		}
	}
	return nil
}

func (c *compiler) addGlob(prefix string, r int) {
	domain, _, whole := strings.Cut(prefix, "/")
	if !whole {
		if !slices.ContainsFunc(c.m.domainGlobs, func(g affix) bool { return g.s == prefix }) {
			c.m.domainGlobs = append(c.m.domainGlobs, affix{s: prefix, rule: r})
		}
		return
	}
	if c.m.globsByDomain == nil {
		c.m.globsByDomain = make(map[string][]affix)
	}
	if domain != "" {
		c.m.globDomains |= domainBloom(domain)
	}
	if !slices.ContainsFunc(c.m.globsByDomain[domain], func(g affix) bool { return g.s == prefix }) {
		c.m.globsByDomain[domain] = append(c.m.globsByDomain[domain], affix{s: prefix, rule: r})
	}
}

// globPrefixes returns the canonical prefix of a glob, with and without
// aliases applied.
func (c *compiler) globPrefixes(inner string) (canon, plain string, err error) {
	complete, partial := "", inner
	if slash := strings.LastIndexByte(inner, '/'); slash >= 0 {
		complete, partial = inner[:slash], inner[slash+1:]
	}
	for j := 0; j < len(partial); j++ {
		if ch := partial[j]; !nameByte(ch, complete == "") {
			return "", "", fmt.Errorf("%w: %q is not allowed in a repository name", ErrInvalidPattern, ch)
		}
	}
	if complete == "" {
		// The same rule as for references: a first component with a '.', a
		// ':' or an uppercase letter, or "localhost", is a domain.
		if strings.ContainsAny(partial, ".:") || strings.HasPrefix(partial, "localhost") || strings.ToLower(partial) != partial {
			lower := strings.ToLower(partial)
			return lower, lower, nil // a domain prefix
		}
		return "docker.io/library/" + partial, "docker.io/library/" + partial, nil
	}
	canonComplete, err := c.m.aliases.NormalizePrefix(complete)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrInvalidPattern, err)
	}
	plainComplete, err := (*reference.Aliases)(nil).NormalizePrefix(complete)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrInvalidPattern, err)
	}
	// Names are matched in lower case (findAffix); NormalizePrefix folds a
	// domain such as "AB" to upper case so that it reads back as a domain.
	return strings.ToLower(canonComplete) + "/" + partial, strings.ToLower(plainComplete) + "/" + partial, nil
}

// nameByte reports whether c may appear in the last, partial component of
// a glob prefix; uppercase only in a domain.
func nameByte(c byte, inDomain bool) bool {
	switch {
	case 'a' <= c && c <= 'z', '0' <= c && c <= '9', strings.IndexByte("._-:[]", c) >= 0:
		return true
	case 'A' <= c && c <= 'Z':
		return inDomain
	}
	return false
}

func (c *compiler) addCRIO(i int, p string) error {
	if !utf8.ValidString(p) {
		return fmt.Errorf("%w: not valid UTF-8 (CRI-O fails to start with it)", ErrInvalidPattern)
	}
	var kind Kind
	var text string
	switch {
	case p == "*":
		return fmt.Errorf("%w: %q makes CRI-O panic at start-up; \"**\" pins everything", ErrInvalidPattern, p)
	case strings.HasPrefix(p, "*") && strings.HasSuffix(p, "*"):
		kind, text = KindKeyword, p[1:len(p)-1]
	case strings.HasSuffix(p, "*"):
		kind, text = KindContains, p[:len(p)-1]
	default:
		kind, text = KindExact, p
	}
	c.m.crio = append(c.m.crio, crioRule{text: text, ascii: isASCII(text), exact: kind == KindExact, rule: c.rule(i, p, kind)})
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
