package criinfo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goldenTests are the files in testdata with what the parsers must read from
// them. See testdata/README.md for where each came from.
var goldenTests = []struct {
	name string // file name prefix in testdata
	want Info
}{
	{
		name: "containerd-1.6.20", // captured
		want: Info{Runtime: RuntimeContainerd, SandboxImage: "registry.k8s.io/pause:3.10.1", SandboxImageReported: true, ContainerdEndpoint: "/tmp/sbp-golden/c.sock"},
	},
	{
		name: "containerd-2.2.9", // captured
		want: Info{Runtime: RuntimeContainerd, ContainerdEndpoint: "/tmp/sbp-golden/c.sock"},
	},
	{
		name: "containerd-1.7.35", // captured
		want: Info{Runtime: RuntimeContainerd, SandboxImage: "registry.k8s.io/pause:3.10.1", SandboxImageReported: true, ContainerdEndpoint: "/tmp/sbp-golden/c.sock"},
	},
	{
		name: "containerd-2.3.7", // captured
		want: Info{Runtime: RuntimeContainerd, ContainerdEndpoint: "/tmp/sbp-golden/c.sock"},
	},
	{
		name: "containerd-2.4.2", // captured
		want: Info{Runtime: RuntimeContainerd, ContainerdEndpoint: "/tmp/sbp-golden/c.sock"},
	},
	{
		name: "crio-1.36.3", // captured; config.crio identifies CRI-O
		want: Info{Runtime: RuntimeCRIO, SandboxImage: "registry.k8s.io/pause:3.10.1", SandboxImageReported: true},
	},
	{
		// captured (TestLiveCRIDockerdVersion in criinfo/cri), as the two
		// below: cri-dockerd's Info is config.sandboxImage only, the shape
		// of CRI-O before 1.33, so the parser alone cannot tell them apart.
		name: "cri-dockerd-0.3.14",
		want: Info{Runtime: RuntimeUnknown, SandboxImage: "registry.k8s.io/pause:3.10.1", SandboxImageReported: true},
	},
	{
		name: "cri-dockerd-0.4.4", // captured
		want: Info{Runtime: RuntimeUnknown, SandboxImage: "registry.k8s.io/pause:3.10.1", SandboxImageReported: true},
	},
	{
		name: "cri-dockerd-0.3.16", // reconstructed from source
		want: Info{Runtime: RuntimeUnknown, SandboxImage: "registry.k8s.io/pause:3.9", SandboxImageReported: true},
	},
}

// readStatusInfo reads a *-status-info.json file.
func readStatusInfo(t testing.TB, name string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+"-status-info.json"))
	require.NoError(t, err)
	var m map[string]string
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, tt := range goldenTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(readStatusInfo(t, tt.name))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "Parse(%s-status-info.json)", tt.name)

			b, err := os.ReadFile(filepath.Join("testdata", tt.name+"-info.json"))
			require.NoError(t, err)
			got, err = ParseJSON(b)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "ParseJSON(%s-info.json)", tt.name)
		})
	}
}

// TestGoldenTruncated checks that every truncation of a captured document is
// an error, never a silently partial answer.
func TestGoldenTruncated(t *testing.T) {
	t.Parallel()
	for _, tt := range goldenTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(filepath.Join("testdata", tt.name+"-info.json"))
			require.NoError(t, err)
			for n := range len(b) - 1 { // the last byte is a newline
				if _, err := ParseJSON(b[:n]); err == nil {
					t.Fatalf("ParseJSON(%s-info.json[:%d]) succeeded, want an error", tt.name, n)
				}
			}
		})
	}
}

// crictlDocument embeds an Info map the way crictl does: JSON values as
// JSON, other values as strings.
func crictlDocument(t testing.TB, info map[string]string) []byte {
	t.Helper()
	doc := map[string]json.RawMessage{}
	for k, v := range info {
		if json.Valid([]byte(v)) {
			doc[k] = json.RawMessage(v)
			continue
		}
		s, err := json.Marshal(v)
		require.NoError(t, err)
		doc[k] = s
	}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	return b
}
