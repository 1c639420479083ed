package resolve

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
