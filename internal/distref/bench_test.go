package distref_test

import (
	"fmt"
	"strings"
	"testing"

	dref "github.com/distribution/reference"
	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/reference"
)

var (
	hexA = strings.Repeat("a", 64)
	hexB = strings.Repeat("b", 64)
)

// image is a stored image as a CRI runtime lists it.
type image struct {
	id            string
	tags, digests []string
}

func (i *image) GetId() string            { return i.id } //nolint:revive // the name of cri-api's getter
func (i *image) GetRepoTags() []string    { return i.tags }
func (i *image) GetRepoDigests() []string { return i.digests }

// The images of pin's BenchmarkIsPinnedImage: canonical names as containerd
// stores them, two tags and two digests each.
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
)

// exactPins returns n exact pins, the pause image among them.
func exactPins(n int) []string {
	p := []string{"registry.k8s.io/pause:3.10.1"}
	for i := 1; i < n; i++ {
		p = append(p, fmt.Sprintf("registry.example.com/team%d/app:%d.0", i, i))
	}
	return p
}

// BenchmarkIsPinnedImage is pin's hot path (1,000 exact pins, 10 globs, 5
// keywords; canonical images) beside the baseline that parses every name
// with distribution/reference and looks the canonical string up in a set of
// the exact pins, in one run. DESIGN.md's target: at least 50 times faster.
func BenchmarkIsPinnedImage(b *testing.B) {
	patterns := exactPins(1000)
	for i := range 10 {
		patterns = append(patterns, fmt.Sprintf("registry%d.example.org/*", i))
	}
	for i := range 5 {
		patterns = append(patterns, fmt.Sprintf("*keyword%d*", i))
	}
	m, err := pin.Compile(patterns)
	if err != nil {
		b.Fatal(err)
	}
	set := map[string]bool{}
	for _, p := range exactPins(1000) {
		n, err := dref.ParseNormalizedNamed(p)
		if err != nil {
			b.Fatal(err)
		}
		set[dref.TagNameOnly(n).String()] = true
	}
	parseAll := func(img *image) bool {
		for _, names := range [][]string{img.tags, img.digests} {
			for _, s := range names {
				if n, err := dref.ParseNormalizedNamed(s); err == nil && set[dref.TagNameOnly(n).String()] {
					return true
				}
			}
		}
		return false
	}
	for _, c := range []struct {
		name string
		img  *image
	}{{"hit", benchHit}, {"miss", benchMiss}} {
		b.Run("sandboxpin/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.IsPinnedImage(c.img)
			}
		})
		b.Run("baseline-parse/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				parseAll(c.img)
			}
		})
	}
}

// BenchmarkParse measures reference.Parse + String beside
// distribution/reference.ParseNormalizedNamed + String on reference's
// benchmark inputs, in one run.
func BenchmarkParse(b *testing.B) {
	for _, in := range []struct{ name, in string }{
		{name: "canonical", in: "registry.k8s.io/pause:3.10.1"},
		{name: "familiar", in: "nginx:1.27"},
		{name: "digest", in: "registry.k8s.io/pause@sha256:" + hexA},
		{name: "aliased", in: "k8s.gcr.io/pause:3.10.1"},
		{name: "hostile-1MiB", in: strings.Repeat("a", 1<<20) + ".io/x"},
		{name: "hostile-long-domain", in: strings.Repeat("a.", 500) + "io/x"},
	} {
		b.Run("sandboxpin/"+in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, _ := reference.Parse(in.in)
				_ = r.String()
			}
		})
		b.Run("distribution/"+in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if n, err := dref.ParseNormalizedNamed(in.in); err == nil {
					_ = dref.TagNameOnly(n).String()
				}
			}
		})
	}
}
