package audit

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWordsForwardCompatible: Status, Spelling and Lookup decode a word of
// a later version (issue 52): kept, Known false, marshalled back
// unchanged; "" is the zero value, not Known; text that is no word is an
// error.
func TestWordsForwardCompatible(t *testing.T) {
	t.Parallel()
	type word interface{ Known() bool }
	decode := func(typ string, in []byte) (word, error) {
		switch typ {
		case "Status":
			var s Status
			return &s, json.Unmarshal(in, &s)
		case "Spelling":
			var s Spelling
			return &s, json.Unmarshal(in, &s)
		}
		var l Lookup
		return &l, json.Unmarshal(in, &l)
	}
	known := map[string]string{"Status": string(StatusNotStoredAsConfigured), "Spelling": string(SpellingAlias), "Lookup": string(LookupNotFound)}
	tests := []struct {
		name    string
		in      string // the JSON string decoded; "*" for the type's known word
		wantErr bool   // the text is no word
	}{
		{name: "known", in: "*"},
		{name: "new word", in: "degraded"},
		{name: "zero", in: ""},
		{name: "upper case", in: "OK", wantErr: true},
		{name: "underscore", in: "not_found", wantErr: true},
	}
	for typ, word := range known {
		for _, tt := range tests {
			t.Run(typ+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				in := tt.in
				if in == "*" {
					in = word
				}
				b, err := json.Marshal(in)
				require.NoError(t, err)
				got, err := decode(typ, b)
				if tt.wantErr {
					assert.Error(t, err, "%s %q", typ, in)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, in == word, got.Known(), "%s(%q).Known()", typ, in)
				out, err := json.Marshal(got)
				require.NoError(t, err)
				assert.JSONEq(t, string(b), string(out), "%s %q marshals back unchanged", typ, in)
			})
		}
	}
}
