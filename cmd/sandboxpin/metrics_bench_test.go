package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
)

// BenchmarkAuditNode is the cost of one audit against a live containerd
// holding n images: dial, Version + Status, resolve (reading the node's
// config.toml), ListImages, matching.
func BenchmarkAuditNode(b *testing.B) {
	for _, v := range containerdtest.Versions() {
		for _, n := range []int{2, 50} {
			b.Run(fmt.Sprintf("%v/images=%d", v, n), func(b *testing.B) {
				images := []containerdtest.Image{{Names: []string{"registry.k8s.io/pause:3.10.1"}}}
				for i := 1; i < n; i++ {
					images = append(images, containerdtest.Image{Names: []string{fmt.Sprintf("docker.io/library/app%d:1.0", i)}})
				}
				c := containerdtest.Start(b, v, containerdtest.Options{SandboxImage: "registry.k8s.io/pause:3.10.1", Images: images})
				root := b.TempDir()
				if err := os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o750); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), []byte(nodeConfig(v, "registry.k8s.io/pause:3.10.1")), 0o600); err != nil {
					b.Fatal(err)
				}
				nf := &nodeFlags{endpoint: c.Endpoint, root: root}
				ctx := context.Background()
				if a := auditNode(ctx, nf); a.Err != nil {
					b.Fatal(a.Err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if a := auditNode(ctx, nf); a.Err != nil {
						b.Fatal(a.Err)
					}
				}
			})
		}
	}
}

// BenchmarkScrape is the cost of one /metrics exposition of a cached audit
// with the Go and process collectors, without the HTTP round trip.
func BenchmarkScrape(b *testing.B) {
	a := okAudit(context.Background())
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newAuditCollector(func() (nodeAudit, bool) { return a, true }),
	)
	b.ReportAllocs()
	for b.Loop() {
		if err := writeExposition(io.Discard, reg); err != nil {
			b.Fatal(err)
		}
	}
}
