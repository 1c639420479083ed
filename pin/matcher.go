package pin

import (
	"encoding/json"
	"math/bits"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/sandboxpin/sandboxpin/reference"
)

// Image is the part of a CRI image that matching reads. The generated
// *runtimeapi.Image of k8s.io/cri-api satisfies it.
type Image interface {
	GetId() string
	GetRepoTags() []string
	GetRepoDigests() []string
}

// Match says which rule pinned an image.
type Match struct {
	// Pattern is the pattern exactly as given to Compile.
	Pattern string `json:"pattern"`
	// Source is the label given with WithSource.
	Source string `json:"source,omitempty"`
	// Name is the image's tag, repo digest or ID that matched; for
	// KindLabel, "key=value" of the image's label.
	Name string `json:"name"`
	// Index is the pattern's index in the patterns given to Compile
	// (KindLabel: in WithImageLabels; KindSandbox: -1). JSON leaves it out
	// for the zero Match (no match), so that it does not read as pattern 0.
	Index int `json:"index"`
	// Kind is how the rule matched; JSON holds its name ("tag", "glob").
	// It is zero only in the zero Match, which [Matcher.Explain] returns
	// when no rule pins the image.
	Kind Kind `json:"kind,omitempty"`
}

// MarshalJSON writes m with the keys of its fields' tags, leaving out
// "index" (and "kind") when Kind is zero: a Match that matched nothing
// marshals as {"pattern":"","name":""}, which unmarshals to the zero Match.
func (m Match) MarshalJSON() ([]byte, error) {
	type match Match // the same fields, without this method
	if m.Kind != "" {
		return json.Marshal(match(m))
	}
	return json.Marshal(struct {
		Pattern string `json:"pattern"`
		Source  string `json:"source,omitempty"`
		Name    string `json:"name"`
	}{m.Pattern, m.Source, m.Name})
}

var _ json.Marshaler = Match{}

// Matcher decides whether an image is pinned. Build it with [Compile] or
// [Join]; it is immutable and safe for concurrent use. A nil *Matcher and
// the zero Matcher pin nothing.
type Matcher struct {
	mode Mode
	// isCRIO is mode == ModeCRIOCompat, a bool for the hot path (find):
	// comparing Mode's strings there cost 30-40 % of a miss (measured).
	isCRIO       bool
	aliases      *reference.Aliases
	aliasDomains []string // the domains of the aliases' From prefixes
	// special is a domainBloom of the domains canonicalName must look at
	// closely: Docker Hub's and aliasDomains. Most domains miss it.
	special uint64
	// hubAliased is set when an alias rewrites Docker Hub names: then a
	// familiar name's canonical form is not "docker.io/..." (findFamiliar).
	hubAliased bool
	rules      []rule

	// ModeStrict mode.
	exact         map[string]int     // canonical identities, alias and Docker spellings
	exactBloom    uint64             // keyBloom of exact's keys
	tagKeys       bool               // exact holds "name:tag" keys
	digestKeys    bool               // exact holds "name@digest" keys
	ids           map[string]int     // "sha256:<hex>" and "<hex>" of bare digests and IDs
	globsByDomain map[string][]affix // canonical name prefixes, by their domain
	globDomains   uint64             // domainBloom of globsByDomain's keys
	globList      []domainGlobs      // globsByDomain when it is small, else nil
	domainGlobs   []affix            // prefixes of a domain ("quay.io*")
	keywords      []affix            // lower-case substrings of the canonical name
	rare          []rareGroup        // keywords by their rarest byte; nil: use pairs

	crio    []crioRule       // ModeCRIOCompat mode
	dockerd *criDockerdRules // ModeCRIDockerdCompat mode
	parts   []*Matcher       // Join
	// fast is what a Join asks to answer IsPinned and IsPinnedImage: its
	// ModeStrict parts that share aliases merged into one matcher (see
	// mergeStrict), then its other parts. Nil when merging saves nothing.
	// Explain still asks parts, in order.
	fast []*Matcher
}

type rule struct {
	pattern, source string
	index           int
	kind            Kind
}

type affix struct {
	s     string
	pairs uint64 // pairBloom(s), for keywords
	rule  int
}

// nameMemo remembers the glob and keyword verdict for the last canonical
// name, since an image's tags and digests usually share one.
type nameMemo struct {
	name      string
	canonical bool // canonicalName(name)
	rule      int  // findAffix(name) when canonical
	set       bool
}

const noRule = -1

// IsPinned reports whether image, a reference, a repo digest or an image
// ID, is pinned. It does not allocate when image is canonical (as
// containerd and CRI-O store names), in Docker's familiar form (as
// cri-dockerd lists them; one a wildcard pins is parsed to confirm it) or
// an ID.
//
// IsPinned judges the one name it is given. A digest spelling of an image
// that a rule pins by tag is not pinned by itself: for example, with the
// rule "registry.k8s.io/pause:3.10",
// IsPinned("registry.k8s.io/pause@sha256:…") is false, since nothing in
// the name says which tag the digest carries. Ask [Matcher.IsPinnedImage]
// with the image's tags, digests and ID, as a runtime stores them, to
// judge an image.
//
// In ModeCRIDockerdCompat mode, a name with an "@" is read as a repo digest
// and any other as a repo tag, which the sandbox image may equal; image
// IDs and labels are not names, and pin nothing here.
func (m *Matcher) IsPinned(image string) bool {
	if m == nil {
		return false
	}
	if m.fast != nil {
		for _, p := range m.fast {
			if p.IsPinned(image) {
				return true
			}
		}
		return false
	}
	if len(m.rules) > 0 && m.find(image, nil) != noRule {
		return true
	}
	for _, p := range m.parts {
		if p.IsPinned(image) {
			return true
		}
	}
	return false
}

// IsPinnedImage reports whether any of img's repo tags, repo digests or its
// ID is pinned. A nil img is not pinned. In ModeCRIOCompat mode, as CRI-O does,
// only the names CRI-O stores count: the repo tags, or the repo digests of an
// image without tags; never the ID. In ModeCRIDockerdCompat mode, as cri-dockerd
// does, the repo tags and repo digests count, and the image's labels when
// img implements [Labeled]; never the ID.
func (m *Matcher) IsPinnedImage(img Image) bool {
	if m != nil && m.fast != nil && img != nil {
		for _, p := range m.fast {
			if p.IsPinnedImage(img) {
				return true
			}
		}
		return false
	}
	_, ok := m.explain(img)
	return ok
}

// Explain reports the first rule that pins img and the name it matched,
// trying repo tags, then repo digests, then the ID (in ModeCRIOCompat mode the
// names IsPinnedImage says). In ModeCRIDockerdCompat mode it tries the sandbox
// image against the repo tags, then the labels, then the repo tags and repo
// digests, and a name's first rule in pattern order.
func (m *Matcher) Explain(img Image) (Match, bool) {
	hit, ok := m.explain(img)
	if !ok {
		return Match{}, false
	}
	r := hit.m.rules[hit.rule]
	name := hit.name
	if r.kind == KindLabel {
		name += "=" + hit.label
	}
	return Match{Pattern: r.pattern, Source: r.source, Name: name, Index: r.index, Kind: r.kind}, true
}

type hit struct {
	m     *Matcher
	rule  int
	name  string
	label string // KindLabel: the label's value; name is its key
}

func (m *Matcher) explain(img Image) (hit, bool) {
	if m == nil || img == nil {
		return hit{}, false
	}
	if m.dockerd != nil {
		return m.explainCRIDockerd(img)
	}
	if len(m.rules) > 0 { // a Join has no rules of its own, only parts
		var memo nameMemo
		for _, s := range img.GetRepoTags() {
			if r := m.find(s, &memo); r != noRule {
				return hit{m: m, rule: r, name: s}, true
			}
		}
		// CRI-O matches its patterns against the names it stores, never the
		// ID: the tags, or the repo digests of an image pulled by digest
		// only. The repo digests it lists beside tags are made up from the
		// tags (internal/storage/image.go, parseImageNames, makeRepoDigests
		// and buildImageResult, cri-o v1.36.3), so "*@*" pins none of those;
		// seen live, TestLiveCRIOCompat in criinfo/cri.
		crio := m.isCRIO
		if !crio || len(img.GetRepoTags()) == 0 {
			for _, s := range img.GetRepoDigests() {
				if r := m.find(s, &memo); r != noRule {
					return hit{m: m, rule: r, name: s}, true
				}
			}
		}
		if id := img.GetId(); id != "" && !crio {
			if r := m.findID(id); r != noRule {
				return hit{m: m, rule: r, name: id}, true
			}
		}
	}
	for _, p := range m.parts {
		if h, ok := p.explain(img); ok {
			return h, true
		}
	}
	return hit{}, false
}

// findID matches an image ID: only ID rules (ModeStrict) can pin it.
func (m *Matcher) findID(id string) int {
	if r, ok := m.ids[id]; ok {
		return r
	}
	return noRule
}

// find returns the rule that pins the name s, or noRule.
func (m *Matcher) find(s string, memo *nameMemo) int {
	switch {
	case m.isCRIO:
		return m.findCRIO(s)
	case m.dockerd != nil:
		return m.dockerd.isPinned(s)
	}
	if len(s) > reference.MaxInputLength {
		return noRule // no reference is that long; do not hash or scan it
	}
	if memo == nil {
		memo = &nameMemo{}
	}
	// An image's repo digests usually spell the name of its tags: then the
	// '@' follows that name, which holds none (it ends before any), and
	// needs no search.
	var at int
	known := memo.set && len(s) > len(memo.name) && s[len(memo.name)] == '@' && s[:len(memo.name)] == memo.name
	if known {
		at = len(memo.name)
	} else {
		at = strings.IndexByte(s, '@')
	}
	// Keys are identities: "name:tag" for tag rules, "name@digest" for
	// digest rules, so only one kind can hold s.
	if (at < 0 && m.tagKeys) || (at >= 0 && m.digestKeys) {
		// Most names miss the Bloom filter and skip hashing.
		if m.exactBloom&keyBloom(s) != 0 {
			if r, ok := m.exact[s]; ok {
				return r
			}
		}
	}
	if len(m.ids) > 0 {
		if r, ok := m.ids[s]; ok {
			return r
		}
		if at >= 0 {
			if r, ok := m.ids[s[at+1:]]; ok {
				return r
			}
		}
	}
	end, identityForm := splitName(s, at)
	name := s[:end]
	// A known name is the memo's when nothing follows it but the digest.
	if (!known || end != at) && (!memo.set || memo.name != name) {
		canonical, slash := m.canonicalName(name)
		rule := noRule
		if canonical && (len(m.globsByDomain) > 0 || len(m.domainGlobs) > 0 || len(m.keywords) > 0) {
			rule = m.findAffix(name, slash)
		}
		// Field by field: a composite literal is built on the stack and
		// copied with wide loads that stall on its narrow stores.
		memo.name, memo.canonical, memo.rule, memo.set = name, canonical, rule, true
	}
	if !memo.canonical || !identityForm {
		if identityForm {
			if r, ok := m.findFamiliar(s, name); ok {
				return r
			}
		}
		return m.findParsed(s)
	}
	// s is canonical: the exact lookup above was the whole answer for
	// references; globs and keywords looked at its name.
	if memo.rule != noRule {
		// Confirm that s is well-formed before a wildcard pins it.
		if _, err := m.aliases.Parse(s); err != nil {
			return noRule
		}
	}
	return memo.rule
}

// splitName returns where the repository name in s ends, and whether s has
// a tag or a digest but not both, the form of [reference.Ref.Identity]. at
// is the index of the first '@' in s, or -1.
func splitName(s string, at int) (end int, identityForm bool) {
	end = len(s)
	if at >= 0 {
		end = at
	}
	// A tag is after the last ':' that follows the last '/'. Tags and last
	// path components are short, so look from the end.
	for i := end - 1; i >= 0; i-- {
		switch s[i] {
		case ':':
			return i, at < 0
		case '/':
			return end, at >= 0
		}
	}
	return end, at >= 0
}

// findFamiliar is find for a Docker Hub name in the form Docker lists it
// ("busybox:1.36", "team/app@sha256:…"), whose exact and ID lookups
// missed. Compile files every exact rule under the familiar form of its
// identity too, so only globs and keywords are left: they are matched
// against the canonical name, "docker.io/library/" or "docker.io/" and
// then name, without building it. ok is false, and findParsed decides,
// when s is not such a name ("library/pause", a domain) or an alias
// rewrites Docker Hub names.
func (m *Matcher) findFamiliar(s, name string) (rule int, ok bool) {
	if m.hubAliased {
		return noRule, false
	}
	slash, upper, dotOrColon := scanDomain(name)
	pre := "docker.io/library/"
	switch {
	case slash < 0:
	case slash == 0 || upper || dotOrColon || name[:slash] == "localhost":
		return noRule, false // a domain, or no name
	case name[:slash] == "library" && strings.IndexByte(name[slash+1:], '/') < 0:
		return noRule, false // Docker lists "library/pause" as "pause"
	default:
		pre = "docker.io/"
	}
	if name == "sha256" {
		// "sha256:<hex>" is an image ID, not a repository "sha256".
		if _, err := reference.ParseImageID(s); err == nil {
			return noRule, true
		}
	}
	r := m.findAffixJoined(pre, name)
	if r != noRule {
		// Confirm that s is well-formed before a wildcard pins it.
		if _, err := m.aliases.Parse(s); err != nil {
			return noRule, true
		}
	}
	return r, true
}

// findAffixJoined is findAffix of the name pre+name, for pre a Docker Hub
// prefix ("docker.io/" or "docker.io/library/"), without building it.
func (m *Matcher) findAffixJoined(pre, name string) int {
	if m.globDomains&domainBloom("docker.io") != 0 {
		for _, g := range m.globsOf("docker.io") {
			if joinedHasPrefix(pre, name, g.s) {
				return g.rule
			}
		}
	}
	for _, g := range m.domainGlobs {
		if joinedHasPrefix(pre, name, g.s) {
			return g.rule
		}
	}
	if len(m.keywords) == 0 {
		return noRule
	}
	// As findKeyword's pair filter: a keyword is in pre+name only if each
	// of its byte pairs is.
	have := pairBloom(pre) | pairBloom(name)
	if name != "" { // the pair across the two, as pairBloom counts it
		have |= 1 << ((uint(pre[len(pre)-1])*31 + uint(name[0])) & 63)
	}
	for _, k := range m.keywords { // in rule order, as findKeyword decides
		if k.pairs&^have == 0 && joinedContains(pre, name, k.s) {
			return k.rule
		}
	}
	return noRule
}

// joinedHasPrefix reports whether a+b starts with p.
func joinedHasPrefix(a, b, p string) bool {
	if len(p) <= len(a) {
		return strings.HasPrefix(a, p)
	}
	return strings.HasPrefix(p, a) && strings.HasPrefix(b, p[len(a):])
}

// joinedContains reports whether a+b contains k: in a, in b, or across
// the two.
func joinedContains(a, b, k string) bool {
	if strings.Contains(a, k) || strings.Contains(b, k) {
		return true
	}
	for i := max(1, len(k)-len(b)); i < len(k) && i <= len(a); i++ {
		if strings.HasSuffix(a, k[:i]) && strings.HasPrefix(b, k[i:]) {
			return true
		}
	}
	return false
}

// findParsed is the slow path for names that are not in canonical form.
func (m *Matcher) findParsed(s string) int {
	if _, err := reference.ParseImageID(s); err == nil {
		return noRule // an image ID, and the ID rules missed it
	}
	ref, err := m.aliases.Parse(s)
	if err != nil {
		return noRule
	}
	id := ref.Identity()
	if r, ok := m.exact[id]; ok {
		return r
	}
	if d := ref.Digest(); d != "" {
		if r, ok := m.ids[string(d)]; ok {
			return r
		}
	}
	// The identity starts with the name, its domain's case folded; globs
	// and keywords compare in lower case (a domain folded to upper case,
	// such as "AB", is the only part that has any).
	name := strings.ToLower(id[:len(ref.Name())])
	return m.findAffix(name, strings.IndexByte(name, '/'))
}

// findAffix matches a canonical name against globs and keywords. The
// name's domain is lower case, and a valid path is too, so keywords (lower
// case) need no folding. slash is the index of the first '/' in name, or -1.
func (m *Matcher) findAffix(name string, slash int) int {
	// Globs whose prefix holds a whole domain are filed under it: one lookup
	// finds the few that can apply.
	// The Bloom filter of their domains spares most names the lookup.
	if slash > 0 && m.globDomains&domainBloom(name[:slash]) != 0 {
		for _, g := range m.globsOf(name[:slash]) {
			if strings.HasPrefix(name, g.s) {
				return g.rule
			}
		}
	}
	for _, g := range m.domainGlobs {
		if strings.HasPrefix(name, g.s) {
			return g.rule
		}
	}
	return m.findKeyword(name)
}

// domainGlobs are the globs of one domain.
type domainGlobs struct {
	domain string
	globs  []affix
}

// maxGlobList is how many domains globList holds at most: comparing a few
// short strings is quicker than hashing one.
const maxGlobList = 8

// globsOf returns the globs filed under domain.
func (m *Matcher) globsOf(domain string) []affix {
	if m.globList == nil {
		return m.globsByDomain[domain]
	}
	for _, d := range m.globList {
		if d.domain == domain {
			return d.globs
		}
	}
	return nil
}

// listGlobs sets globList from globsByDomain, once it is complete.
func (m *Matcher) listGlobs() {
	m.globList = nil
	if len(m.globsByDomain) > maxGlobList {
		return
	}
	for d, gs := range m.globsByDomain {
		m.globList = append(m.globList, domainGlobs{domain: d, globs: gs})
	}
}

func (m *Matcher) findKeyword(name string) int {
	if len(m.keywords) == 0 {
		return noRule
	}
	if m.rare != nil {
		// A keyword is in name only if its rarest byte is: a vectorized
		// IndexByte per group rejects most names without a byte loop.
		best := noRule
		for _, g := range m.rare {
			if strings.IndexByte(name, g.b) < 0 {
				continue
			}
			for _, k := range g.kws { // in rule order
				if best != noRule && k.rule > best {
					break
				}
				if strings.Contains(name, k.s) {
					best = k.rule
					break
				}
			}
		}
		return best
	}
	// A keyword is in name only if each of its byte pairs is: a one-word
	// filter that rejects most keywords before a substring search.
	have := pairBloom(name)
	for _, k := range m.keywords {
		if k.pairs&^have == 0 && strings.Contains(name, k.s) {
			return k.rule
		}
	}
	return noRule
}

// rareGroup holds the keywords whose rarest byte is b.
type rareGroup struct {
	b   byte
	kws []affix
}

// maxRareGroups is how many IndexByte scans findKeyword makes at most
// before the one-pass pair filter is cheaper.
const maxRareGroups = 4

// byteCommonness orders the bytes of image names from the most common; a
// byte not listed is rarer than all of them.
const byteCommonness = "e./-a0123456789:ortisnlcpmudgbhfykwvx_zjq"

// rareGroups groups keywords by their rarest byte, or returns nil when
// there would be more than maxRareGroups groups.
func rareGroups(keywords []affix) []rareGroup {
	var groups []rareGroup
	for _, k := range keywords {
		rarest, rank := k.s[0], -1
		for i := 0; i < len(k.s); i++ {
			r := strings.IndexByte(byteCommonness, k.s[i])
			if r < 0 {
				r = len(byteCommonness)
			}
			if r > rank {
				rarest, rank = k.s[i], r
			}
		}
		i := slices.IndexFunc(groups, func(g rareGroup) bool { return g.b == rarest })
		if i < 0 {
			if len(groups) == maxRareGroups {
				return nil
			}
			groups = append(groups, rareGroup{b: rarest})
			i = len(groups) - 1
		}
		groups[i].kws = append(groups[i].kws, k)
	}
	return groups
}

// pairBloom returns a 64-bit Bloom filter of the adjacent byte pairs of s,
// or of its one byte.
func pairBloom(s string) uint64 {
	if len(s) == 1 {
		return 1 << (s[0] & 63)
	}
	var b uint64
	for i := 1; i < len(s); i++ {
		b |= 1 << ((uint(s[i-1])*31 + uint(s[i])) & 63)
	}
	return b
}

// canonicalName reports whether name, if valid at all, is a canonical
// repository name: a lower-case domain that is not a Docker Hub alias,
// "library/" where Docker Hub needs it, and no registry alias to apply, and
// where its first '/' is (-1 if it has none). It only looks, it does not
// validate: callers confirm wildcard matches with a parse.
func (m *Matcher) canonicalName(name string) (canonical bool, slash int) {
	slash, upper, dotOrColon := scanDomain(name)
	if slash <= 0 {
		return false, slash // familiar, or not a name
	}
	domain := name[:slash]
	if upper || !dotOrColon && domain != "localhost" {
		return false, slash
	}
	if m.special&domainBloom(domain) == 0 {
		return true, slash // not Docker Hub's, not an alias's
	}
	switch domain {
	case "docker.io":
		return strings.IndexByte(name[slash+1:], '/') >= 0, slash // else "library/" is missing
	case "index.docker.io", "registry-1.docker.io":
		return false, slash
	}
	for _, d := range m.aliasDomains {
		if d == domain {
			return !m.aliases.Rewrites(name), slash
		}
	}
	return true, slash
}

// domainBloom returns a one-bit Bloom filter key of a non-empty domain, from
// its length and its first and last bytes: domains that differ in any of
// these (most do) get different bits more often than not.
func domainBloom(d string) uint64 {
	return 1 << ((uint(len(d))*31 + uint(d[0])*7 + uint(d[len(d)-1])) & 63)
}

// keyBloom returns a one-bit Bloom filter key of s, from its length and
// two of its bytes; 0 for "", which is no key.
func keyBloom(s string) uint64 {
	if s == "" {
		return 0
	}
	return 1 << ((uint(len(s))*31 + uint(s[len(s)-1])*7 + uint(s[len(s)/2])) & 63)
}

// scanDomain looks at s up to its first '/', eight bytes at a time: it
// returns that index (-1 if s has no '/'), and whether the bytes before it
// hold an ASCII upper-case letter, and a '.' or a ':'. These are what tell a
// domain from a Docker Hub path component, in one pass.
func scanDomain(s string) (slash int, upper, dotOrColon bool) {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	var up, dc uint64 // high bits of the bytes seen so far, as below
	for off := 0; off < len(s); off += 8 {
		var x uint64
		if w := s[off:]; len(w) >= 8 {
			w = w[:8] // one bounds check for the eight loads, which combine
			x = uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
				uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		} else {
			for i := len(w) - 1; i >= 0; i-- { // zero padding: no byte looked for is 0
				x = x<<8 | uint64(w[i])
			}
		}
		// Per byte, on its low seven bits (no carry crosses bytes): the
		// high bit of geA is set from 'A' up, of gtZ above 'Z'; bytes with
		// their own high bit set are not ASCII.
		low := x &^ high
		geA := low + (0x80-'A')*ones
		gtZ := low + (0x80-'Z'-1)*ones
		u := geA &^ gtZ &^ x
		// (v-ones)&^v has the high bit set of each byte of v that is zero,
		// and maybe of bytes above one that is: borrows only run upwards,
		// so its lowest set bit is exact, and so is whether any byte below
		// a limit is zero.
		d, c, sl := x^('.'*ones), x^(':'*ones), x^('/'*ones)
		dc1 := (d-ones)&^d | (c-ones)&^c
		if sl = (sl - ones) &^ sl & high; sl != 0 {
			b := bits.TrailingZeros64(sl) &^ 7 // the '/' byte's first bit
			keep := uint64(1)<<b - 1
			up |= u & keep
			dc |= dc1 & keep
			return off + b/8, up&high != 0, dc&high != 0
		}
		up |= u
		dc |= dc1
	}
	return -1, up&high != 0, dc&high != 0
}

// Len returns the number of rules m holds: the patterns given to Compile,
// summed over a Join's parts, less the "" ones in ModeStrict mode, which are
// ignored (in ModeCRIOCompat mode "" is a rule, as CRI-O compiles it: it pins
// only an empty name, which no image has). In ModeCRIDockerdCompat mode, blank
// patterns and label selectors are no rules, and the sandbox image and each
// label selector are one. A nil m has none.
func (m *Matcher) Len() int {
	if m == nil {
		return 0
	}
	n := len(m.rules)
	for _, p := range m.parts {
		n += p.Len()
	}
	return n
}

// Join returns a Matcher that pins what any of ms pins, trying them in
// order. Nil matchers are skipped. Use it to combine rules compiled in
// different modes or from different sources.
func Join(ms ...*Matcher) *Matcher {
	j := &Matcher{}
	for _, m := range ms {
		if m != nil {
			j.parts = append(j.parts, m)
		}
	}
	j.fast = fastParts(j.parts)
	return j
}

// fastParts returns the leaves of the Joins in parts with the ModeStrict ones
// that share the first ModeStrict leaf's aliases merged into one matcher, or
// nil when fewer than two merge: one walk of an image's names then asks all
// of their rules at once, instead of one walk per part.
func fastParts(parts []*Matcher) []*Matcher {
	var leaves []*Matcher
	var collect func(ms []*Matcher)
	collect = func(ms []*Matcher) {
		for _, m := range ms {
			switch {
			case m.parts != nil:
				collect(m.parts)
			case len(m.rules) > 0:
				leaves = append(leaves, m)
			}
		}
	}
	collect(parts)
	var same, rest []*Matcher
	for _, l := range leaves {
		if l.mode == ModeStrict && (len(same) == 0 || l.aliases == same[0].aliases) {
			same = append(same, l)
		} else {
			rest = append(rest, l)
		}
	}
	if len(same) < 2 {
		return nil
	}
	return append([]*Matcher{mergeStrict(same)}, rest...)
}

// mergeStrict returns one ModeStrict matcher that pins what any of ms (ModeStrict,
// with the same aliases) pins. Its rules are ms's in order; where two rules
// hold the same key, the first wins, as it would in a Join.
func mergeStrict(ms []*Matcher) *Matcher {
	first := ms[0]
	out := &Matcher{
		mode:         ModeStrict,
		aliases:      first.aliases,
		aliasDomains: first.aliasDomains,
		special:      first.special,
		hubAliased:   first.hubAliased,
	}
	for _, m := range ms {
		off := len(out.rules)
		out.rules = append(out.rules, m.rules...)
		out.tagKeys = out.tagKeys || m.tagKeys
		out.digestKeys = out.digestKeys || m.digestKeys
		out.exact = mergeKeys(out.exact, m.exact, off)
		out.exactBloom |= m.exactBloom
		out.ids = mergeKeys(out.ids, m.ids, off)
		for d, gs := range m.globsByDomain {
			if out.globsByDomain == nil {
				out.globsByDomain = make(map[string][]affix)
			}
			out.globsByDomain[d] = append(out.globsByDomain[d], offset(gs, off)...)
		}
		out.globDomains |= m.globDomains
		out.domainGlobs = append(out.domainGlobs, offset(m.domainGlobs, off)...)
		out.keywords = append(out.keywords, offset(m.keywords, off)...)
	}
	out.rare = rareGroups(out.keywords)
	out.listGlobs()
	return out
}

// mergeKeys adds the keys of from, their rules moved by off, to into; a key
// into already holds keeps its rule.
func mergeKeys(into, from map[string]int, off int) map[string]int {
	if len(from) == 0 {
		return into
	}
	if into == nil {
		into = make(map[string]int, len(from))
	}
	for k, r := range from {
		if _, dup := into[k]; !dup {
			into[k] = r + off
		}
	}
	return into
}

// offset returns a copy of as with their rules moved by off.
func offset(as []affix, off int) []affix {
	out := make([]affix, len(as))
	for i, a := range as {
		a.rule += off
		out[i] = a
	}
	return out
}

// Set holds the current Matcher for a runtime that reloads its
// configuration: readers call Load on every request without locks, and a
// reload calls Store. The zero Set is ready to use and pins nothing.
type Set struct {
	p atomic.Pointer[Matcher]
}

// Load returns the current Matcher, nil (which pins nothing) before the
// first Store.
func (s *Set) Load() *Matcher { return s.p.Load() }

// Store makes m the current Matcher.
func (s *Set) Store(m *Matcher) { s.p.Store(m) }
