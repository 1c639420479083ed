package reference

import (
	"strings"
	"testing"
)

// benchInputs are one input per class: what runtimes store, what people type,
// digests, aliases, and hostile input.
var benchInputs = []struct {
	name string
	in   string
}{
	{name: "canonical", in: "registry.k8s.io/pause:3.10.1"},
	{name: "familiar", in: "nginx:1.27"},
	{name: "digest", in: "registry.k8s.io/pause@sha256:" + hex64},
	{name: "aliased", in: "k8s.gcr.io/pause:3.10.1"},
	{name: "hostile-1MiB", in: strings.Repeat("a", 1<<20) + ".io/x"},
	{name: "hostile-long-domain", in: strings.Repeat("a.", 500) + "io/x"},
}

// BenchmarkParse measures Parse and String. internal/distref's BenchmarkParse
// runs the same inputs beside the baseline
// distribution/reference.ParseNormalizedNamed + String, in one run.
func BenchmarkParse(b *testing.B) {
	for _, in := range benchInputs {
		b.Run("sandboxpin/"+in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, _ := Parse(in.in)
				_ = r.String()
			}
		})
	}
}

func BenchmarkEqual(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Equal("k8s.gcr.io/pause:3.10.1", "registry.k8s.io/pause:3.10.1")
	}
}
