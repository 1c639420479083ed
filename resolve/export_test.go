package resolve

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// SampleNode is a node tree of testdata/nodes with the Options a test of
// TestResolveNodes resolves it with, for the tests of package resolve_test.
type SampleNode struct {
	Node string  // directory under testdata/nodes
	Opts Options // Root is not set
}

// SampleNodes returns every node tree of nodeTests with its Options.
func SampleNodes() []SampleNode {
	out := make([]SampleNode, len(nodeTests))
	for i, tt := range nodeTests {
		out[i] = SampleNode{Node: tt.node, Opts: tt.opts}
	}
	return out
}

// requireResolved requires err to be nil or, when res names no sandbox
// image, an error wrapping ErrNoSandboxImage (Resolve returns the partial
// result with it).
func requireResolved(t *testing.T, res *Result, err error, msgAndArgs ...any) {
	t.Helper()
	if res != nil && res.SandboxImage == "" {
		require.ErrorIs(t, err, ErrNoSandboxImage, msgAndArgs...)
		return
	}
	require.NoError(t, err, msgAndArgs...)
}
