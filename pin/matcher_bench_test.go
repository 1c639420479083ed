package pin

import (
	"fmt"
	"testing"
)

// The benchmark images: canonical names as containerd stores them, two tags
// and two digests each.
var (
	benchHit = &image{
		id:      "sha256:" + hexA,
		tags:    []string{"registry.k8s.io/pause:3.10.1", "registry.k8s.io/pause:latest"},
		digests: []string{"registry.k8s.io/pause@sha256:" + hexA, "registry.k8s.io/pause@sha256:" + hexB},
	}
	benchMiss = &image{
		id:      "sha256:" + hexB,
		tags:    []string{"quay.io/team/app:1.2.3", "quay.io/team/app:stable"},
		digests: []string{"quay.io/team/app@sha256:" + hexB, "quay.io/team/app@sha256:" + hexA},
	}
	benchGlobHit = &image{
		id:      "sha256:" + hexB,
		tags:    []string{"registry7.example.org/x/y:1", "registry7.example.org/x/y:2"},
		digests: []string{"registry7.example.org/x/y@sha256:" + hexB, "registry7.example.org/x/y@sha256:" + hexA},
	}
)

// benchPatterns returns n exact pins (the pause image among them), 10 globs
// and 5 keywords.
func benchPatterns(n int) []string {
	p := []string{"registry.k8s.io/pause:3.10.1"}
	for i := 1; i < n; i++ {
		p = append(p, fmt.Sprintf("registry.example.com/team%d/app:%d.0", i, i))
	}
	for i := range 10 {
		p = append(p, fmt.Sprintf("registry%d.example.org/*", i))
	}
	for i := range 5 {
		p = append(p, fmt.Sprintf("*keyword%d*", i))
	}
	return p
}

func benchMatcher(tb testing.TB, n int) *Matcher {
	tb.Helper()
	m, err := Compile(benchPatterns(n))
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// BenchmarkIsPinnedImage is the hot path: 1,000 exact pins, 10 globs and 5
// keywords, canonical images, beside the regexp baseline in the same run.
func BenchmarkIsPinnedImage(b *testing.B) {
	m := benchMatcher(b, 1000)
	for _, c := range []struct {
		name string
		img  *image
	}{{"hit", benchHit}, {"miss", benchMiss}, {"glob-hit", benchGlobHit}} {
		b.Run("sandboxpin/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.IsPinnedImage(c.img)
			}
		})
	}

	// Baseline (a), parsing every name with distribution/reference, is
	// internal/distref's BenchmarkIsPinnedImage (beside this matcher, in
	// one run): a test's requirement would be every importer's.

	// Baseline (b): CRI-O's approach, one compiled regexp per pattern, 100
	// patterns, every name tried against each.
	res := compileCRIORegexps(benchPatterns(85))
	regexpAll := func(img *image) bool {
		for _, names := range [][]string{img.tags, img.digests, {img.id}} {
			for _, s := range names {
				for _, re := range res {
					if re.MatchString(s) {
						return true
					}
				}
			}
		}
		return false
	}
	b.Run("baseline-regexp100/miss", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			regexpAll(benchMiss)
		}
	})
	b.Run("baseline-regexp100/hit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			regexpAll(benchHit)
		}
	})
}

// BenchmarkIsPinnedImageScale shows that the cost does not grow with the
// number of exact pins.
func BenchmarkIsPinnedImageScale(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		m := benchMatcher(b, n)
		b.Run(fmt.Sprintf("pins=%d/miss", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.IsPinnedImage(benchMiss)
			}
		})
	}
}

// BenchmarkIsPinned covers single names of each class, hostile ones included.
func BenchmarkIsPinned(b *testing.B) {
	m := benchMatcher(b, 1000)
	long := "registry.k8s.io/pause:" + string(make([]byte, 64<<10))
	for _, c := range []struct{ name, in string }{
		{"canonical-hit", "registry.k8s.io/pause:3.10.1"},
		{"canonical-miss", "quay.io/team/app:1.2.3"},
		{"alias-hit", "k8s.gcr.io/pause:3.10.1"},
		{"docker-familiar", "nginx:1.27"},
		{"docker-familiar-digest", "team/app@sha256:" + hexA},
		{"docker-library", "library/nginx:1.27"},
		{"image-id", "sha256:" + hexA},
		{"hostile-64KiB-tag", long},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.IsPinned(c.in)
			}
		})
	}
}

// BenchmarkMark10000 annotates a ListImages answer of 10,000 images.
func BenchmarkMark10000(b *testing.B) {
	m := benchMatcher(b, 1000)
	imgs := make([]*image, 10000)
	for i := range imgs {
		imgs[i] = &image{
			id:      "sha256:" + hexB,
			tags:    []string{fmt.Sprintf("registry.example.com/team%d/app:%d.0", i, i%7)},
			digests: []string{fmt.Sprintf("registry.example.com/team%d/app@sha256:%s", i, hexA)},
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, img := range imgs {
			if m.IsPinnedImage(img) {
				n++
			}
		}
		_ = n
	}
}

// BenchmarkCompile measures building a matcher from 10,000 patterns.
func BenchmarkCompile(b *testing.B) {
	p := benchPatterns(10000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(p); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCRIDockerdPatterns returns what a cri-dockerd node might pass: n
// exact references in Docker's familiar form, 10 bare repositories, 10
// prefixes; benchCRIDockerdMatcher adds 5 label selectors and the sandbox
// image.
func benchCRIDockerdPatterns(n int) []string {
	p := []string{"registry.k8s.io/coredns/coredns:v1.12.0"}
	for i := 1; i < n; i++ {
		p = append(p, fmt.Sprintf("team%d/app:%d.0", i, i))
	}
	for i := range 10 {
		p = append(p, fmt.Sprintf("registry.example.com/platform%d", i))
	}
	for i := range 10 {
		p = append(p, fmt.Sprintf("registry%d.example.org/*", i))
	}
	return p
}

func benchCRIDockerdMatcher(tb testing.TB, n int) *Matcher {
	tb.Helper()
	m, err := Compile(benchCRIDockerdPatterns(n), WithMode(ModeCRIDockerdCompat),
		WithImageLabels("io.example.pin", "tier=platform", "a", "b=c", "d"),
		WithSandboxImage("registry.k8s.io/pause:3.10"))
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// benchCRIDockerdImages are images as Docker lists them: familiar names,
// one tag and one digest each, with labels.
var benchCRIDockerdImages = []struct {
	name string
	img  labeledImage
}{
	{"sandbox-hit", dockerImage([]string{"registry.k8s.io/pause:3.10"}, []string{"registry.k8s.io/pause@sha256:" + hexA}, nil)},
	{"exact-hit", dockerImage([]string{"team7/app:7.0"}, []string{"team7/app@sha256:" + hexA}, nil)},
	{"repository-hit", dockerImage([]string{"registry.example.com/platform3:1"}, []string{"registry.example.com/platform3@sha256:" + hexA}, nil)},
	{"prefix-hit", dockerImage([]string{"registry7.example.org/x/y:1"}, []string{"registry7.example.org/x/y@sha256:" + hexA}, nil)},
	{"label-hit", dockerImage([]string{"busybox:1.37"}, []string{"busybox@sha256:" + hexA}, map[string]string{"maintainer": "x", "tier": "platform"})},
	{"miss", dockerImage([]string{"busybox:1.37"}, []string{"busybox@sha256:" + hexA}, map[string]string{"maintainer": "x"})},
}

// BenchmarkCRIDockerdCompat is IsPinnedImage in ModeCRIDockerdCompat mode:
// 1,000 exact references, 10 repositories, 10 prefixes, 5 label selectors
// and the sandbox image.
func BenchmarkCRIDockerdCompat(b *testing.B) {
	m := benchCRIDockerdMatcher(b, 1000)
	for _, c := range benchCRIDockerdImages {
		img := &c.img
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.IsPinnedImage(img)
			}
		})
	}
}
