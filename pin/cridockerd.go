package pin

import (
	"fmt"
	"strings"
)

// What ModeCRIDockerdCompat reproduces, as read upstream (cri-dockerd#571,
// "Add pinned image selectors to exclude images from kubelet GC", merged
// 2026-09; first released in v0.4.7 per issue 47, a tag this project's
// mirror of Mirantis/cri-dockerd does not hold yet):
//
//   - core/pinned.go newPinnedImageMatcher (read at commit 89da1c1793ab):
//     each --pinned-images entry is strings.TrimSpace'd; "" is skipped; a
//     trailing "*" (strings.TrimSuffix, one star) makes a raw prefix; an
//     entry with "@", or a ":" after its last "/" (hasTagOrDigest), is
//     compared whole with RepoTags and RepoDigests; anything else is a bare
//     repository, compared with refRepository of each RepoTag and
//     RepoDigest. Each --pinned-image-labels entry is trimmed, "" skipped,
//     and cut at its first "=": "key" needs the key, "key=value" both.
//   - core/pinned.go matches: labels first, then RepoTags, then
//     RepoDigests; never the ID. core/pinned_test.go (commit fcde94e77660)
//     agrees; its rows open criDockerdCases.
//   - core/image.go isPinned (read at v0.4.3): the sandbox image is pinned
//     by an exact string compare with RepoTags. The post-#571 image.go was
//     not readable; the PR says "The sandbox image stays pinned
//     unconditionally".
//
// The flag definitions (config/options.go at v0.4.7..v0.4.10) could not be
// read: whether a flag is a pflag StringSlice (comma-separated, also
// repeatable) or a StringArray (repeated only) is not known here;
// resolve reads both forms from the unit.

// criDockerdRules are the rules of a ModeCRIDockerdCompat matcher.
type criDockerdRules struct {
	exact    map[string]int // entries with a tag or a digest
	repos    map[string]int // bare repositories
	prefixes []affix        // raw prefixes, in rule order; "" for "*"
	labels   []labelRule    // in rule order
	sandbox  string         // the sandbox image, "" for none
	sandboxR int            // the sandbox image's rule
}

// labelRule is a --pinned-image-labels selector.
type labelRule struct {
	key, value string
	anyValue   bool // "key" without "="
	rule       int
}

// Labeled is implemented by images that carry their labels, such as a
// Docker image summary or inspect result adapted by the caller. The CRI
// Image of k8s.io/cri-api (runtime/v1 Image, checked at v0.36.6 and
// v0.37.2) has no labels field, so CRI values never match a label rule:
// only a caller that has the Docker labels can match them.
// [Matcher.IsPinnedImage] and [Matcher.Explain] check for this interface at
// run time; the [Image] interface is unchanged.
type Labeled interface {
	GetLabels() map[string]string
}

// WithImageLabels adds cri-dockerd's --pinned-image-labels selectors to a
// [ModeCRIDockerdCompat] matcher: "key" pins an image that has the label key
// with any value, "key=value" one with that value. Entries are trimmed and
// "" is skipped, as cri-dockerd does. [Match.Index] of a label rule is its
// index in selectors. Compile returns an error for selectors in any other
// mode.
func WithImageLabels(selectors ...string) Option {
	return func(o *options) { o.labels = append(o.labels, selectors...) }
}

// WithSandboxImage sets the sandbox image that a [ModeCRIDockerdCompat]
// matcher pins, as cri-dockerd does beside its flags: an image is pinned
// when one of its repo tags equals image exactly, without normalization.
// Give the image cri-dockerd uses (its --pod-infra-container-image, or its
// default); "" adds no rule. [Match.Index] of the sandbox rule is -1.
// Compile returns an error for a sandbox image in any other mode.
func WithSandboxImage(image string) Option {
	return func(o *options) { o.sandbox = image }
}

// addCRIDockerd adds a --pinned-images entry. cri-dockerd accepts every
// entry, so this never fails; [CRIDockerdNeverMatches] tells which cannot
// match.
func (c *compiler) addCRIDockerd(i int, p string) {
	d := c.m.dockerd
	e := strings.TrimSpace(p)
	switch {
	case e == "":
	case strings.HasSuffix(e, "*"):
		d.prefixes = append(d.prefixes, affix{s: strings.TrimSuffix(e, "*"), rule: c.rule(i, p, KindPrefix)})
	case hasTagOrDigest(e):
		if d.exact == nil {
			d.exact = make(map[string]int)
		}
		r := c.rule(i, p, KindExact)
		if _, dup := d.exact[e]; !dup {
			d.exact[e] = r
		}
	default:
		if d.repos == nil {
			d.repos = make(map[string]int)
		}
		r := c.rule(i, p, KindRepository)
		if _, dup := d.repos[e]; !dup {
			d.repos[e] = r
		}
	}
}

// addCRIDockerdLabel adds a --pinned-image-labels entry.
func (c *compiler) addCRIDockerdLabel(i int, p string) {
	e := strings.TrimSpace(p)
	if e == "" {
		return
	}
	key, value, hasValue := strings.Cut(e, "=")
	c.m.dockerd.labels = append(c.m.dockerd.labels, labelRule{key: key, value: value, anyValue: !hasValue, rule: c.rule(i, p, KindLabel)})
}

// hasTagOrDigest reports whether a cri-dockerd entry is compared whole: it
// has an "@", or a ":" after its last "/" (a registry port is not a tag).
func hasTagOrDigest(e string) bool {
	return strings.IndexByte(e, '@') >= 0 || strings.IndexByte(e[strings.LastIndexByte(e, '/')+1:], ':') >= 0
}

// repositoryOf returns name without its digest (from the first "@") and
// then without its tag (from the last ":" after the last "/"), as
// cri-dockerd's refRepository does. For example,
// repositoryOf("localhost:5000/app:1") == "localhost:5000/app".
func repositoryOf(name string) string {
	if at := strings.IndexByte(name, '@'); at >= 0 {
		name = name[:at]
	}
	start := strings.LastIndexByte(name, '/') + 1
	if colon := strings.LastIndexByte(name[start:], ':'); colon >= 0 {
		name = name[:start+colon]
	}
	return name
}

// find returns the first rule that pins the repo tag or repo
// digest s, or noRule. The sandbox image is not among them: it is compared
// with repo tags only.
func (d *criDockerdRules) find(s string) int {
	best := noRule
	if r, ok := d.exact[s]; ok {
		best = r
	}
	if len(d.repos) > 0 {
		if r, ok := d.repos[repositoryOf(s)]; ok && (best == noRule || r < best) {
			best = r
		}
	}
	for _, p := range d.prefixes {
		if best != noRule && p.rule > best {
			break
		}
		if strings.HasPrefix(s, p.s) {
			return p.rule
		}
	}
	return best
}

// findLabel returns the first label rule that img's labels match, and the
// value of the label it matched.
func (d *criDockerdRules) findLabel(img Image) (rule int, value string) {
	if len(d.labels) == 0 {
		return noRule, ""
	}
	l, ok := img.(Labeled)
	if !ok {
		return noRule, ""
	}
	labels := l.GetLabels()
	if len(labels) == 0 {
		return noRule, ""
	}
	for _, sel := range d.labels {
		if v, ok := labels[sel.key]; ok && (sel.anyValue || v == sel.value) {
			return sel.rule, v
		}
	}
	return noRule, ""
}

// explainCRIDockerd is explain for a ModeCRIDockerdCompat matcher: the
// sandbox image against repo tags, the labels, then each repo tag and each
// repo digest; never the ID, which cri-dockerd does not compare.
func (m *Matcher) explainCRIDockerd(img Image) (hit, bool) {
	d := m.dockerd
	if d.sandbox != "" {
		for _, s := range img.GetRepoTags() {
			if s == d.sandbox {
				return hit{m: m, rule: d.sandboxR, name: s}, true
			}
		}
	}
	if r, v := d.findLabel(img); r != noRule {
		return hit{m: m, rule: r, name: d.labelKey(r), label: v}, true
	}
	for _, names := range [2][]string{img.GetRepoTags(), img.GetRepoDigests()} {
		for _, s := range names {
			if r := d.find(s); r != noRule {
				return hit{m: m, rule: r, name: s}, true
			}
		}
	}
	return hit{}, false
}

// labelKey returns the key of label rule r.
func (d *criDockerdRules) labelKey(r int) string {
	for _, l := range d.labels {
		if l.rule == r {
			return l.key
		}
	}
	return ""
}

// isPinnedCRIDockerd is IsPinned in ModeCRIDockerdCompat mode: s is a repo
// digest if it has an "@", else a repo tag, which the sandbox image may
// equal.
func (d *criDockerdRules) isPinned(s string) int {
	if d.sandbox != "" && s == d.sandbox && strings.IndexByte(s, '@') < 0 {
		return d.sandboxR
	}
	return d.find(s)
}

// CRIDockerdNeverMatches reports whether a --pinned-images entry can never
// match a name that Docker lists, and why. cri-dockerd accepts such entries
// silently; callers report them. Docker lists RepoTags and RepoDigests in
// their familiar form, "nginx:1.27" and "team/app@sha256:…", never with
// "docker.io/" or "index.docker.io/" in front nor "library/" before an
// official image, and cri-dockerd compares raw strings. For example,
// CRIDockerdNeverMatches("docker.io/library/nginx:1.27") reports true and
// CRIDockerdNeverMatches("nginx:1.27") false.
//
// Docker familiarizes names as distribution/reference does (normalize.go,
// splitDockerDomain and familiarizeName, read at v0.6.0): "index.docker.io"
// becomes "docker.io", which is then dropped with "library/".
//
// The entry is trimmed as cri-dockerd trims it; "" is no rule and never
// reported. A prefix ("text*") is reported when no familiar name can start
// with it.
func CRIDockerdNeverMatches(pattern string) (reason string, never bool) {
	e := strings.TrimSpace(pattern)
	if e == "" {
		return "", false
	}
	prefix := strings.HasSuffix(e, "*")
	s := strings.TrimSuffix(e, "*")
	for _, hub := range [...]string{"docker.io/", "index.docker.io/"} {
		if strings.HasPrefix(s, hub) {
			as := ""
			if h := familiarHint(s[len(hub):]); h != "" {
				as = fmt.Sprintf(" (as %q)", h)
			}
			return fmt.Sprintf("Docker lists Docker Hub images without %q%s, and cri-dockerd compares raw strings", hub, as), true
		}
	}
	if prefix {
		// A prefix of "library/x" also starts "library/x/y", which Docker
		// lists as it is.
		return "", false
	}
	if rest, ok := strings.CutPrefix(s, "library/"); ok {
		name := rest
		if hasTagOrDigest(s) {
			name = repositoryOf(rest)
		}
		if name != "" && strings.IndexByte(name, '/') < 0 {
			return fmt.Sprintf("Docker lists official images without \"library/\" (as %q), and cri-dockerd compares raw strings", rest), true
		}
	}
	return "", false
}

// familiarHint returns how Docker lists the Docker Hub path p.
func familiarHint(p string) string {
	if rest, ok := strings.CutPrefix(p, "library/"); ok && strings.IndexByte(repositoryOf(rest), '/') < 0 {
		return rest
	}
	return p
}
