package criinfo

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runtimeWords are texts and whether Runtime.UnmarshalText accepts them.
var runtimeWords = []struct {
	in   string  // text
	want Runtime // result when accepted
	ok   bool    // accepted
}{
	{in: "", want: RuntimeUnknown, ok: true}, // the zero value, as written before v0.1.0
	{in: "containerd", want: RuntimeContainerd, ok: true},
	{in: "cri-o", want: RuntimeCRIO, ok: true},
	{in: "cri-dockerd", want: RuntimeCRIDockerd, ok: true},
	{in: "unknown", want: RuntimeUnknown, ok: true},
	{in: "Unknown"},
	{in: "crio"},   // CRI-O's binary, not its RuntimeName
	{in: "docker"}, // cri-dockerd's RuntimeName, mapped by criinfo/cri only
	{in: "Containerd"},
	{in: " containerd"},
}

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
		})
	}
}

// TestRuntimeJSON round-trips an Info's runtime through JSON: unknown is
// written "unknown", the zero value too, and both read back as
// RuntimeUnknown; a word outside the set is refused both ways.
func TestRuntimeJSON(t *testing.T) {
	t.Parallel()
	for _, rt := range []Runtime{"", RuntimeUnknown, RuntimeContainerd, RuntimeCRIO, RuntimeCRIDockerd} {
		b, err := json.Marshal(Info{Runtime: rt})
		require.NoError(t, err)
		want := rt
		if rt == "" {
			want = RuntimeUnknown
		}
		assert.Contains(t, string(b), `"Runtime":"`+string(want)+`"`)
		var back Info
		require.NoError(t, json.Unmarshal(b, &back), "%s", b)
		assert.Equal(t, want, back.Runtime, "%s", b)
	}
	var in Info
	assert.ErrorIs(t, json.Unmarshal([]byte(`{"Runtime":"crio"}`), &in), ErrUnknownRuntime)
	_, err := json.Marshal(Info{Runtime: "docker"})
	assert.ErrorIs(t, err, ErrUnknownRuntime)
}

func TestRuntimeKnown(t *testing.T) {
	t.Parallel()
	for rt, want := range map[Runtime]bool{RuntimeContainerd: true, RuntimeCRIO: true, RuntimeCRIDockerd: true, RuntimeUnknown: false, "": false, "docker": false} {
		assert.Equal(t, want, rt.Known(), "%q.Known()", rt)
	}
}
