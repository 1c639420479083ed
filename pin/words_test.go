package pin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allKinds is every Kind of this version.
var allKinds = []Kind{KindTag, KindDigest, KindImageID, KindGlob, KindKeyword, KindExact, KindContains,
	KindRepository, KindPrefix, KindLabel, KindSandbox}

// word is a word-valued type of this package's JSON: Mode and Kind.
type word interface {
	Known() bool
	MarshalText() ([]byte, error)
}

// TestWordsForwardCompatible: a reader decodes the word of a later version
// (issue 52): it keeps it, reports Known false and marshals it unchanged;
// "" is the zero value; text that is no word is an error.
func TestWordsForwardCompatible(t *testing.T) {
	t.Parallel()
	decode := map[string]func(string) (word, error){
		"Mode": func(s string) (word, error) { var m Mode; err := m.UnmarshalText([]byte(s)); return m, err },
		"Kind": func(s string) (word, error) { var k Kind; err := k.UnmarshalText([]byte(s)); return k, err },
	}
	tests := []struct {
		name    string
		typ     string // a key of decode
		in      string // the text decoded
		want    word   // the value it decodes to
		known   bool   // want.Known()
		out     string // what it marshals to, when not in
		wantErr bool   // the text is no word
	}{
		{name: "mode known", typ: "Mode", in: "cri-o-compat", want: ModeCRIOCompat, known: true},
		// The word of builds before v0.1.0 (issue 52: CRI-O spelled "cri-o" in every word).
		{name: "mode old spelling", typ: "Mode", in: "crio-compat", want: ModeCRIOCompat, known: true, out: "cri-o-compat"},
		{name: "mode new old spelling", typ: "Mode", in: "crio-x", want: Mode("cri-o-x"), out: "cri-o-x"},
		{name: "mode long old spelling", typ: "Mode", in: "crio-" + strings.Repeat("x", 123), want: Mode("crio-" + strings.Repeat("x", 123))},
		{name: "kind old spelling", typ: "Kind", in: "crio-exact", want: Kind("cri-o-exact"), out: "cri-o-exact"},
		{name: "mode new", typ: "Mode", in: "youki-compat", want: Mode("youki-compat")},
		{name: "mode zero", typ: "Mode", in: "", want: Mode("")},
		{name: "mode not a word", typ: "Mode", in: "Strict", wantErr: true},
		{name: "mode double dash", typ: "Mode", in: "crio--compat", wantErr: true},
		{name: "kind known", typ: "Kind", in: "image-id", want: KindImageID, known: true},
		{name: "kind new", typ: "Kind", in: "regex2", want: Kind("regex2")},
		{name: "kind zero", typ: "Kind", in: "", want: Kind("")},
		{name: "kind not a word", typ: "Kind", in: "tag ", wantErr: true},
		{name: "kind trailing dash", typ: "Kind", in: "tag-", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := decode[tt.typ](tt.in)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.known, got.Known())
			b, err := got.MarshalText()
			require.NoError(t, err)
			want := tt.in
			if tt.out != "" {
				want = tt.out
			}
			assert.Equal(t, want, string(b), "marshals back")
		})
	}
	for _, k := range allKinds {
		assert.True(t, k.Known(), "%s", k)
	}
	var m Match
	require.NoError(t, json.Unmarshal([]byte(`{"pattern":"p","name":"n","index":1,"kind":"regex"}`), &m))
	b, err := json.Marshal(m)
	require.NoError(t, err)
	assert.JSONEq(t, `{"pattern":"p","name":"n","index":1,"kind":"regex"}`, string(b))
}
