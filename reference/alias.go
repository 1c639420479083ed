package reference

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Alias is a rule that makes one repository prefix another spelling of a
// second one. From and To are a registry domain optionally followed by path
// components, such as "k8s.gcr.io", "gcr.io/google-containers" or
// "mirror.corp:5000/k8s". Rules apply on path-component boundaries only: the
// rule k8s.gcr.io → registry.k8s.io does not touch "k8s.gcr.io.evil.com/x",
// and mirror.corp:5000/k8s → registry.k8s.io does not touch
// "mirror.corp:5000/k8sx/pause".
type Alias struct {
	From string
	To   string
}

// Aliases is an immutable set of [Alias] rules. The longest matching From
// applies; the result is never rewritten again. A nil *Aliases has no rules.
// Aliases is safe for concurrent use.
type Aliases struct {
	rules []aliasRule // longest From first
}

type aliasRule struct {
	from, to prefix // to is resolved through the other rules
	src      Alias
	index    int // position in the arguments of NewAliases
}

// prefix is a repository prefix: a domain in lower case and a path, possibly
// empty.
type prefix struct{ domain, path string }

func (p prefix) String() string {
	if p.path == "" {
		return p.domain
	}
	return p.domain + "/" + p.path
}

// covers reports whether p is q or a prefix of q on a component boundary.
func (p prefix) covers(q prefix) bool {
	return p.domain == q.domain && hasPathPrefix(q.path, p.path)
}

func hasPathPrefix(path, pre string) bool {
	return pre == "" || path == pre || (strings.HasPrefix(path, pre) && path[len(pre)] == '/')
}

// rewrite replaces the prefix from of path with to; path must be covered.
func rewrite(path string, from, to prefix) string {
	rest := strings.TrimPrefix(path[len(from.path):], "/")
	switch {
	case to.path == "":
		return rest
	case rest == "":
		return to.path
	}
	return to.path + "/" + rest
}

// DefaultAliases returns the aliases everyone agrees on: the retired
// Kubernetes registries, which serve the same images as registry.k8s.io.
//
//	k8s.gcr.io               → registry.k8s.io
//	gcr.io/google-containers → registry.k8s.io
//	gcr.io/google_containers → registry.k8s.io
//
// Docker Hub's own names (index.docker.io, registry-1.docker.io) are not
// aliases: [Parse] spells them docker.io always.
func DefaultAliases() *Aliases { return defaultAliases() }

// NoAliases returns the empty set: no name is rewritten. Pass it where a
// nil *Aliases would mean the defaults (pin.WithAliases, resolve.Options).
func NoAliases() *Aliases { return noAliases }

var noAliases = &Aliases{}

var defaultAliases = sync.OnceValue(func() *Aliases {
	a, err := NewAliases(
		Alias{From: "k8s.gcr.io", To: "registry.k8s.io"},
		Alias{From: "gcr.io/google-containers", To: "registry.k8s.io"},
		Alias{From: "gcr.io/google_containers", To: "registry.k8s.io"},
	)
	if err != nil {
		panic(err) // constant input
	}
	return a
})

// NewAliases checks rules and returns them as a set. It rejects, all at once
// in a join of *[AliasError]s: a From or To that is not a registry domain
// optionally followed by valid path components; two rules with the same From;
// a rule whose From equals its To or that leads back to itself through other
// rules ([ErrAliasCycle]); and a To that is a proper prefix of another rule's
// From, which would need two rewrites. A To that another rule rewrites
// (a chain, a → b and b → c) is resolved: a rewrites to c.
func NewAliases(rules ...Alias) (*Aliases, error) {
	var errs []*AliasError
	fail := func(i int, err error) { errs = append(errs, &AliasError{Index: i, Rule: rules[i], Err: err}) }

	parsed := make([]aliasRule, 0, len(rules))
	seen := make(map[prefix]int, len(rules))
	for i, r := range rules {
		from, err := parsePrefix(r.From)
		if err != nil {
			fail(i, fmt.Errorf("%w: From: %w", ErrInvalidAlias, err))
			continue
		}
		to, err := parsePrefix(r.To)
		if err != nil {
			fail(i, fmt.Errorf("%w: To: %w", ErrInvalidAlias, err))
			continue
		}
		if bad := firstNotDomain(from, to); bad != "" {
			// "A0" is a domain only because of its uppercase letter, which
			// folding removes.
			fail(i, fmt.Errorf("%w: %q is not a registry domain once case is folded (it needs a '.' or a ':' or to be localhost)", ErrInvalidAlias, bad))
			continue
		}
		if from == to {
			fail(i, fmt.Errorf("%w: From and To are the same repository prefix", ErrAliasCycle))
			continue
		}
		if j, dup := seen[from]; dup {
			fail(i, fmt.Errorf("%w: From %q is also the From of alias %d", ErrInvalidAlias, from, j))
			continue
		}
		seen[from] = i
		parsed = append(parsed, aliasRule{from: from, to: to, src: r, index: i})
	}
	// Check the well-formed rules against each other too, so that one call
	// reports every problem.
	a := &Aliases{rules: parsed}
	a.sort()
	// Resolve chains so that one rewrite is final; a rule met twice while
	// resolving is a cycle.
	resolved := make([]prefix, len(a.rules))
	for i, r := range a.rules {
		cur, visited := r.to, map[int]bool{i: true}
		for {
			j := a.match(cur)
			if j < 0 {
				break
			}
			if visited[j] {
				fail(r.index, fmt.Errorf("%w: To %q is rewritten back through %q", ErrAliasCycle, r.to, a.rules[j].src.From))
				break
			}
			visited[j] = true
			cur = prefix{domain: a.rules[j].to.domain, path: rewrite(cur.path, a.rules[j].from, a.rules[j].to)}
		}
		resolved[i] = cur
	}
	for i := range a.rules {
		a.rules[i].to = resolved[i]
	}
	for _, r := range a.rules {
		for _, s := range a.rules {
			if r.to != s.from && r.to.covers(s.from) {
				fail(r.index, fmt.Errorf("%w: names under To %q are rewritten again by the alias from %q; point both at the final name", ErrInvalidAlias, r.to, s.src.From))
			}
		}
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(x, y *AliasError) int { return cmp.Compare(x.Index, y.Index) })
		joined := make([]error, len(errs))
		for i, e := range errs {
			joined[i] = e
		}
		return nil, errors.Join(joined...)
	}
	return a, nil
}

// With returns a new set with the rules of a followed by more, checked as
// [NewAliases] checks them. For example, DefaultAliases().With(Alias{From:
// "mirror.corp:5000/k8s", To: "registry.k8s.io"}) adds a mirror.
func (a *Aliases) With(more ...Alias) (*Aliases, error) {
	return NewAliases(append(a.Rules(), more...)...)
}

// Rules returns a copy of the rules as they were given, longest From first.
func (a *Aliases) Rules() []Alias {
	if a == nil {
		return nil
	}
	out := make([]Alias, len(a.rules))
	for i, r := range a.rules {
		out[i] = r.src
	}
	return out
}

// Variants returns the spellings of r that these aliases rewrite to r: for
// "registry.k8s.io/pause:3.9" under the defaults, "k8s.gcr.io/pause:3.9" and
// the two gcr.io forms. r itself is not included, and a name that another,
// longer rule would send elsewhere is left out.
func (a *Aliases) Variants(r Ref) []Ref {
	if a == nil || r.IsZero() || r.pathStart == 0 {
		return nil
	}
	name := prefix{domain: strings.ToLower(r.Domain()), path: r.Path()}
	var out []Ref
	for _, rule := range a.rules {
		if !rule.to.covers(name) {
			continue
		}
		v := prefix{domain: rule.from.domain, path: rewrite(name.path, rule.to, rule.from)}
		if v.path == "" || len(v.path) > MaxPathLength {
			continue
		}
		// Keep v only if it really normalizes to r.
		if d, p, ok := a.apply(v.domain, v.path); !ok || !strings.EqualFold(d, r.Domain()) || p != r.Path() {
			continue
		}
		out = append(out, makeRef("", true, v.domain, v.path, r.Tag(), string(r.Digest())))
	}
	return out
}

// apply rewrites domain/path with the longest matching rule.
func (a *Aliases) apply(domain, path string) (string, string, bool) {
	if a == nil {
		return domain, path, false
	}
	for _, r := range a.rules {
		if !strings.EqualFold(domain, r.from.domain) || !hasPathPrefix(path, r.from.path) {
			continue
		}
		if p := rewrite(path, r.from, r.to); p != "" {
			return r.to.domain, p, true
		}
	}
	return domain, path, false
}

// match returns the index of the rule that rewrites p, or -1.
func (a *Aliases) match(p prefix) int {
	for i, r := range a.rules {
		if r.from.covers(p) {
			return i
		}
	}
	return -1
}

func (a *Aliases) sort() {
	slices.SortStableFunc(a.rules, func(x, y aliasRule) int {
		return cmp.Or(
			cmp.Compare(len(y.from.path), len(x.from.path)),
			cmp.Compare(x.from.String(), y.from.String()),
		)
	})
}

// firstNotDomain returns the first domain of ps that does not look like a
// domain in lower case, or "".
func firstNotDomain(ps ...prefix) string {
	for _, p := range ps {
		if !looksLikeDomain(p.domain) {
			return p.domain
		}
	}
	return ""
}

// parsePrefix parses a registry domain followed by optional path components.
func parsePrefix(s string) (prefix, error) {
	if s == "" {
		return prefix{}, parseErr(s, 0, fmt.Errorf("%w: empty", ErrInvalidFormat))
	}
	if len(s) > MaxDomainLength+1+MaxPathLength {
		return prefix{}, parseErr(s, MaxDomainLength+1+MaxPathLength, ErrNameTooLong)
	}
	domain, path, _ := strings.Cut(s, "/")
	if !looksLikeDomain(domain) {
		return prefix{}, parseErr(s, 0, fmt.Errorf("%w: %q is not a registry domain (it needs a '.' or a ':' or to be localhost)", ErrInvalidFormat, domain))
	}
	if off, err := checkDomain(domain); err != nil {
		return prefix{}, parseErr(s, off, err)
	}
	if strings.Contains(s, "/") {
		if off, err := checkPath(path); err != nil {
			return prefix{}, parseErr(s, len(domain)+1+off, err)
		}
	}
	domain = strings.ToLower(domain)
	if isDockerHub(domain) {
		domain = dockerHub
	}
	return prefix{domain: domain, path: path}, nil
}

// Resolved returns the rules in the form they are applied: From and To
// canonical (domain in lower case, Docker Hub spelled docker.io) and each To
// resolved through chains. Longest From first.
func (a *Aliases) Resolved() []Alias {
	if a == nil {
		return nil
	}
	out := make([]Alias, len(a.rules))
	for i, r := range a.rules {
		out[i] = Alias{From: r.from.String(), To: r.to.String()}
	}
	return out
}

// Rewrites reports whether a rule applies to the repository name
// domain/path, which callers use to tell a canonical name from one that
// must be parsed. It does not allocate.
func (a *Aliases) Rewrites(name string) bool {
	if a == nil {
		return false
	}
	domain, path, _ := strings.Cut(name, "/")
	_, _, ok := a.apply(domain, path)
	return ok
}
