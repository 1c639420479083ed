package audit

import (
	"fmt"
	"testing"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// BenchmarkJudge judges a node whose runtime lists n images (two tags and
// a digest each, the sandbox image last), as audit and serve do on every
// audit: the cost is the result's matchers compiled twice and each image
// explained under both.
func BenchmarkJudge(b *testing.B) {
	res := &resolve.Result{Runtime: "containerd", SandboxImage: stored, Pins: []string{stored, "quay.io/team/*", "*sidecar*"}}
	for _, n := range []int{100, 10_000} {
		// Pointers, as *runtimeapi.Image: a value would be boxed in
		// each interface conversion.
		images := make([]*image, 0, n)
		for i := range n - 1 {
			images = append(images, &image{id: fmt.Sprintf("sha256:%064x", i),
				tags:    []string{fmt.Sprintf("registry.example.com/app%d:v1", i), fmt.Sprintf("registry.example.com/app%d:latest", i)},
				digests: []string{fmt.Sprintf("registry.example.com/app%d@sha256:%064x", i, i)}})
		}
		images = append(images, &image{id: "sha256:1", tags: []string{stored}, pinned: true})
		b.Run(fmt.Sprintf("images=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v, err := Judge(res, Observation[*image]{Images: images, Lookup: LookupFound})
				if err != nil || v.Status != StatusOK {
					b.Fatal(v, err)
				}
			}
		})
	}
}
