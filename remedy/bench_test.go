package remedy

import (
	"context"
	"testing"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// BenchmarkPlan plans and verifies the kubelet-flag-dropin node (three
// files, two edits): what `sandboxpin fix` costs beside resolving the node
// once (BenchmarkResolve, package resolve). Verify resolves the edited node
// once more, in memory.
func BenchmarkPlan(b *testing.B) {
	ctx := context.Background()
	opts := dropinNode
	opts.Root = resolve.DirFS("../resolve/testdata/nodes/kubelet-flag-dropin")
	res, err := resolve.Resolve(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("For", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := For(b.Context(), res, nil, opts.Root); err != nil {
				b.Fatal(err)
			}
		}
	})
	p, err := For(b.Context(), res, nil, opts.Root)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Verify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := Verify(ctx, p, opts, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
