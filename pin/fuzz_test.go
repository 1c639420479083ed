package pin

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sandboxpin/sandboxpin/reference"
)

func FuzzCompile(f *testing.F) {
	for _, tt := range strictCases {
		f.Add(strings.Join(tt.patterns, "\n"), tt.image)
	}
	// Docker Hub names as Docker lists them, against globs and keywords
	// that reach across "docker.io/library/".
	for _, name := range []string{"busybox:1.36", "team/app@sha256:" + hexA, "library/busybox:1", "library/a/b:1", "sha256:" + hexA} {
		f.Add("*o/lib*\ndocker.io/library/b*\n*box*\nmirror.example.com/official/x:1", name)
		f.Add("docker.io/*\nd*\n*io/team/a*\n*y/busybox:1*", name)
	}
	f.Fuzz(func(t *testing.T, patterns, name string) {
		list := strings.Split(patterns, "\n")
		m, err := Compile(list)
		if err != nil {
			var pe *PatternError
			if m != nil || !errors.As(err, &pe) || !errors.Is(err, ErrInvalidPattern) || list[pe.Index] != pe.Pattern {
				t.Fatalf("Compile(%q) = %v, %v", list, m, err)
			}
			return
		}
		// A pattern pins the image whose only tag is its canonical form.
		for _, p := range list {
			if p == "" || strings.Contains(p, "*") {
				continue
			}
			if _, err := reference.ParseImageID(p); err == nil {
				if !m.IsPinnedImage(image{id: "sha256:" + strings.TrimPrefix(p, "sha256:")}) {
					t.Fatalf("Compile(%q) does not pin the image with ID %q", list, p)
				}
				continue
			}
			ref, err := reference.Parse(p)
			if err != nil {
				continue // a bare sha384/sha512 digest
			}
			img := image{tags: []string{ref.String()}}
			if ref.Digest() != "" {
				img = image{digests: []string{ref.Identity()}}
			}
			if !m.IsPinnedImage(img) {
				t.Fatalf("Compile(%q) does not pin %q, the canonical form of %q", list, ref, p)
			}
		}
		checkCanonical(t, m, name)
		checkJoin(t, m, list, name)
		// With an alias into Docker Hub: familiar names still answer as
		// their canonical form does.
		if ma, err := Compile(list, WithAliases(hubMirror)); err == nil {
			checkCanonical(t, ma, name)
		}
	})
}

// hubMirror has a rule whose To is Docker Hub's, and one whose From is.
var hubMirror = func() *reference.Aliases {
	a, err := reference.NewAliases(
		reference.Alias{From: "mirror.example.com/official", To: "docker.io/library"},
		reference.Alias{From: "k8s.gcr.io", To: "registry.k8s.io"},
	)
	if err != nil {
		panic(err)
	}
	return a
}()

// checkJoin checks that the Join of list's halves, compiled apart, pins
// what m, list compiled at once, pins, and that its merged fast path
// agrees with Explain, which asks each half in turn.
func checkJoin(t *testing.T, m *Matcher, list []string, name string) {
	t.Helper()
	a, err := Compile(list[:len(list)/2], WithSource("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Compile(list[len(list)/2:], WithSource("b"))
	if err != nil {
		t.Fatal(err)
	}
	j := Join(a, Join(b, nil))
	if got, want := j.IsPinned(name), m.IsPinned(name); got != want {
		t.Fatalf("Join of %q: IsPinned(%q) = %v, Compile: %v", list, name, got, want)
	}
	img := image{id: name, tags: []string{name}, digests: []string{name}}
	_, explained := j.Explain(img)
	if got, want := j.IsPinnedImage(img), m.IsPinnedImage(img); got != want || got != explained {
		t.Fatalf("Join of %q: IsPinnedImage(%q) = %v, Compile: %v, Explain: %v", list, name, got, want, explained)
	}
}

// checkCanonical checks IsPinned(x) == IsPinned(canonical(x)).
func checkCanonical(t *testing.T, m *Matcher, name string) {
	t.Helper()
	got := m.IsPinned(name)
	if _, err := reference.ParseImageID(name); err == nil {
		return
	}
	ref, err := m.aliases.Parse(name) // with m's aliases
	if err != nil {
		if got && !strings.Contains(name, "@") {
			t.Fatalf("IsPinned(%q) = true, but it does not parse: %v", name, err)
		}
		return
	}
	if canon := m.IsPinned(ref.Identity()); canon != got {
		t.Fatalf("IsPinned(%q) = %v, but IsPinned(%q) = %v", name, got, ref.Identity(), canon)
	}
}

// checkImage checks IsPinnedImage against IsPinned of each name, on images
// whose tag and repo digest share a repository name, as runtimes list them:
// the case where a digest's name is taken from the tag's.
func checkImage(t *testing.T, m *Matcher, name string) {
	t.Helper()
	end, _ := splitName(name, strings.IndexByte(name, '@'))
	base := name[:end]
	for _, img := range []image{
		{tags: []string{name}, digests: []string{base + "@sha256:" + hexA}},
		{tags: []string{base + ":1"}, digests: []string{name}},
		{tags: []string{name}, digests: []string{name, base + "@" + name}},
		{tags: []string{base}, digests: []string{base + "@", name + "@sha256:" + hexA}},
	} {
		want := false
		for _, n := range append(slices.Clone(img.tags), img.digests...) {
			want = want || m.IsPinned(n)
		}
		if got := m.IsPinnedImage(img); got != want {
			t.Fatalf("IsPinnedImage(%+v) = %v, but IsPinned of its names says %v", img, got, want)
		}
	}
}

func FuzzIsPinned(f *testing.F) {
	m, err := Compile(benchPatterns(50))
	if err != nil {
		f.Fatal(err)
	}
	for _, tt := range strictCases {
		f.Add(tt.image)
	}
	f.Add("registry.example.com/team7/app:7.0")
	f.Add("REGISTRY7.example.org/x:1")
	f.Fuzz(func(t *testing.T, name string) {
		checkCanonical(t, m, name)
		checkImage(t, m, name)
	})
}

func FuzzCRIOCompat(f *testing.F) {
	for _, tt := range crioCases {
		f.Add(strings.Join(tt.patterns, "\n"), tt.image)
	}
	f.Fuzz(func(t *testing.T, patterns, name string) {
		list := strings.Split(patterns, "\n")
		m, err := Compile(list, WithMode(ModeCRIOCompat))
		crioPanics := false
		for _, p := range list {
			crioPanics = crioPanics || p == "*" || !utf8.ValidString(p)
		}
		if crioPanics != (err != nil) {
			t.Fatalf("Compile(%q, ModeCRIOCompat) error %v, but CRI-O panics: %v", list, err, crioPanics)
		}
		if err != nil {
			return
		}
		if got, want := m.IsPinned(name), crioRegexpBaseline(list, name); got != want {
			t.Fatalf("CRIOCompat %q IsPinned(%q) = %v, CRI-O's regexps say %v", list, name, got, want)
		}
	})
}

// FuzzCRIDockerdCompat compares ModeCRIDockerdCompat with criDockerdReference,
// cri-dockerd's rules written out one entry at a time. Every argument but
// sandbox is a list, one item a line; labels are "key=value" lines.
func FuzzCRIDockerdCompat(f *testing.F) {
	for _, tt := range criDockerdCases {
		var labels []string
		for k, v := range tt.img.labels {
			labels = append(labels, k+"="+v)
		}
		f.Add(strings.Join(tt.patterns, "\n"), strings.Join(tt.selectors, "\n"), tt.sandbox,
			strings.Join(tt.img.tags, "\n"), strings.Join(tt.img.digests, "\n"), strings.Join(labels, "\n"))
	}
	f.Fuzz(func(t *testing.T, patterns, selectors, sandbox, tags, digests, labels string) {
		lines := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, "\n")
		}
		pl, sl := lines(patterns), lines(selectors)
		img := labeledImage{image: image{id: "sha256:" + hexA, tags: lines(tags), digests: lines(digests)}}
		for _, l := range lines(labels) {
			if img.labels == nil {
				img.labels = make(map[string]string)
			}
			k, v, _ := strings.Cut(l, "=")
			img.labels[k] = v
		}
		m, err := Compile(pl, WithMode(ModeCRIDockerdCompat), WithImageLabels(sl...), WithSandboxImage(sandbox))
		if err != nil {
			t.Fatalf("Compile(%q, %q, %q, ModeCRIDockerdCompat) = %v; cri-dockerd accepts every entry", pl, sl, sandbox, err)
		}
		want := criDockerdReference(pl, sl, sandbox, img.tags, img.digests, img.labels)
		if got := m.IsPinnedImage(img); got != want {
			t.Fatalf("CRIDockerdCompat %q %q %q: IsPinnedImage(%+v) = %v, the reference says %v", pl, sl, sandbox, img, got, want)
		}
		match, ok := m.Explain(img)
		if ok != want {
			t.Fatalf("CRIDockerdCompat %q: Explain(%+v) = %+v, %v, want ok %v", pl, img, match, ok, want)
		}
		if ok && match.Kind != KindLabel && match.Kind != KindSandbox {
			// The rule Explain names pins the name it names, alone.
			alone := criDockerdReference([]string{pl[match.Index]}, nil, "", []string{match.Name}, nil, nil)
			if pl[match.Index] != match.Pattern || !alone {
				t.Fatalf("CRIDockerdCompat %q: Explain(%+v) = %+v, which does not pin its name", pl, img, match)
			}
		}
		if j := Join(nil, m); j.IsPinnedImage(img) != want {
			t.Fatalf("Join(%q).IsPinnedImage(%+v) != %v", pl, img, want)
		}
		// IsPinned reads a name with an "@" as a repo digest, else as a repo tag.
		for _, n := range slices.Concat(img.tags, img.digests) {
			ts, ds := []string{n}, []string(nil)
			if strings.Contains(n, "@") {
				ts, ds = nil, ts
			}
			if got, want := m.IsPinned(n), criDockerdReference(pl, nil, sandbox, ts, ds, nil); got != want {
				t.Fatalf("CRIDockerdCompat %q sandbox %q: IsPinned(%q) = %v, the reference says %v", pl, sandbox, n, got, want)
			}
		}
		// A pattern CRIDockerdNeverMatches reports pins no name Docker lists.
		for _, p := range pl {
			reason, never := CRIDockerdNeverMatches(p)
			if never != (reason != "") {
				t.Fatalf("CRIDockerdNeverMatches(%q) = %q, %v", p, reason, never)
			}
			if !never {
				continue
			}
			for _, n := range slices.Concat(img.tags, img.digests) {
				// Not a name Docker lists. Familiar keeps "docker.io/" where
				// the path would read as a domain ("docker.io/0.0/x"), but
				// Docker drops it there too (distribution/reference
				// familiarizeName, v0.6.0) and lists "0.0/x".
				ref, err := reference.Parse(n)
				if err != nil || ref.Familiar() != n || strings.HasPrefix(n, "docker.io/") {
					continue
				}
				if criDockerdReference([]string{p}, nil, "", []string{n}, nil, nil) {
					t.Fatalf("CRIDockerdNeverMatches(%q) = %q, but it pins %q, as Docker lists it", p, reason, n)
				}
			}
		}
	})
}
