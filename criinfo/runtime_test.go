package criinfo

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runtimeWords are texts and whether Runtime.UnmarshalText accepts them.
var runtimeWords = []struct {
	in    string  // text
	want  Runtime // result when accepted
	ok    bool    // accepted
	known bool    // want.Known()
}{
	{in: "", want: "", ok: true}, // the zero value: not given
	{in: "containerd", want: RuntimeContainerd, ok: true, known: true},
	{in: "cri-o", want: RuntimeCRIO, ok: true, known: true},
	{in: "cri-dockerd", want: RuntimeCRIDockerd, ok: true, known: true},
	{in: "unknown", want: RuntimeUnknown, ok: true},
	{in: "youki", want: "youki", ok: true},   // a later version's runtime
	{in: "crio", want: "crio", ok: true},     // CRI-O's binary, not its RuntimeName: a word, no runtime
	{in: "docker", want: "docker", ok: true}, // cri-dockerd's RuntimeName, mapped by criinfo/cri only
	{in: "Unknown"},
	{in: "Containerd"},
	{in: " containerd"},
	{in: "cri--o"},
}

// TestRuntimeUnmarshalText: every word decodes, kept as written, a word of
// a later version too (issue 52); text that is no word is an error.
func TestRuntimeUnmarshalText(t *testing.T) {
	t.Parallel()
	for _, tt := range runtimeWords {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got := Runtime("before")
			err := got.UnmarshalText([]byte(tt.in))
			if !tt.ok {
				assert.ErrorIs(t, err, ErrUnknownRuntime, "UnmarshalText(%q)", tt.in)
				assert.Equal(t, Runtime("before"), got, "UnmarshalText(%q) changed the value on error", tt.in)
				return
			}
			require.NoError(t, err, "UnmarshalText(%q)", tt.in)
			assert.Equal(t, tt.want, got, "UnmarshalText(%q)", tt.in)
			assert.Equal(t, tt.known, got.Known(), "%q.Known()", got)
			b, err := got.MarshalText()
			require.NoError(t, err)
			assert.Equal(t, tt.in, string(b), "marshals back unchanged")
		})
	}
}

// TestRuntimeJSON round-trips an Info's runtime through JSON, each word as
// itself: "" is the zero value, "unknown" RuntimeUnknown, and a later
// version's word decodes.
func TestRuntimeJSON(t *testing.T) {
	t.Parallel()
	for _, rt := range []Runtime{"", RuntimeUnknown, RuntimeContainerd, RuntimeCRIO, RuntimeCRIDockerd, "youki"} {
		b, err := json.Marshal(Info{Runtime: rt})
		require.NoError(t, err)
		assert.Contains(t, string(b), `"Runtime":"`+string(rt)+`"`)
		var back Info
		require.NoError(t, json.Unmarshal(b, &back), "%s", b)
		assert.Equal(t, rt, back.Runtime, "%s", b)
	}
	var in Info
	assert.ErrorIs(t, json.Unmarshal([]byte(`{"Runtime":"CRI-O"}`), &in), ErrUnknownRuntime)
}

func TestRuntimeKnown(t *testing.T) {
	t.Parallel()
	for rt, want := range map[Runtime]bool{RuntimeContainerd: true, RuntimeCRIO: true, RuntimeCRIDockerd: true, RuntimeUnknown: false, "": false, "docker": false} {
		assert.Equal(t, want, rt.Known(), "%q.Known()", rt)
	}
}
