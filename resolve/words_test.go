package resolve

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/pin"
)

// word is a word-valued type of this package's JSON.
type word interface {
	Known() bool
}

// decodeWord decodes the JSON string of text into a new value of the type
// named typ, and returns it with its JSON.
func decodeWord(t *testing.T, typ, text string) (word, string, error) {
	t.Helper()
	in, err := json.Marshal(text)
	require.NoError(t, err)
	var v word
	switch typ {
	case "Action":
		var a Action
		err, v = json.Unmarshal(in, &a), &a
	case "Component":
		var c Component
		err, v = json.Unmarshal(in, &c), &c
	case "Urgency":
		var u Urgency
		err, v = json.Unmarshal(in, &u), &u
	case "Source":
		var s Source
		err, v = json.Unmarshal(in, &s), &s
	case "Role":
		var r Role
		err, v = json.Unmarshal(in, &r), &r
	case "Kind":
		var k Kind
		err, v = json.Unmarshal(in, &k), &k
	default:
		t.Fatalf("no type %s", typ)
	}
	out, merr := json.Marshal(v)
	require.NoError(t, merr)
	return v, string(out), err
}

// wordTypes are this package's word-valued types, with one known word of
// each.
var wordTypes = map[string]string{
	"Action": string(ActionLabel), "Component": string(ComponentCRIO), "Urgency": string(UrgencyStops),
	"Source": string(SourceCRIOConfig), "Role": string(RoleInstallerPulls), "Kind": string(KindSandboxAbsent),
}

// TestWordsForwardCompatible: every word-valued type decodes a word of a
// later version (issue 52): it keeps the word, reports Known false and
// marshals it back unchanged; "" is the zero value, not Known; text that
// is no word is an error.
func TestWordsForwardCompatible(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string // the JSON string decoded
		known   bool   // Known() of the value
		wantErr bool   // the text is no word
	}{
		{name: "known", known: true},
		{name: "new word", in: "reboot"},
		{name: "new word with digits", in: "youki-2"},
		{name: "zero", in: ""},
		{name: "upper case", in: "Reboot", wantErr: true},
		{name: "space", in: "re boot", wantErr: true},
		{name: "leading dash", in: "-reboot", wantErr: true},
		{name: "too long", in: string(make([]byte, 129)), wantErr: true},
	}
	for typ, known := range wordTypes {
		for _, tt := range tests {
			t.Run(typ+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				in := tt.in
				if tt.known {
					in = known
				}
				got, out, err := decodeWord(t, typ, in)
				if tt.wantErr {
					assert.Error(t, err, "%s %q", typ, in)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, tt.known, got.Known(), "%s(%q).Known()", typ, in)
				assert.JSONEq(t, mustJSON(t, in), out, "%s %q marshals back unchanged", typ, in)
			})
		}
	}
}

func mustJSON(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}

// TestZeroWordsDecode: "" decodes to each type's zero value, whatever the
// value held before.
func TestZeroWordsDecode(t *testing.T) {
	t.Parallel()
	a, c, u, s, r, k := ActionEdit, ComponentKubelet, UrgencyStops, SourceKubeletFlags, RoleRuntimeUses, KindNoRuntime
	for _, v := range []any{&a, &c, &u, &s, &r, &k} {
		require.NoError(t, json.Unmarshal([]byte(`""`), v))
	}
	assert.Zero(t, a)
	assert.Equal(t, ComponentNone, c)
	assert.Zero(t, u)
	assert.Zero(t, s)
	assert.Zero(t, r)
	assert.Zero(t, k)
}

// TestPinModeWords: a Result's zero PinMode compiles as pin.ModeStrict; a mode
// of a later version decodes but its Matcher is an error wrapping
// pin.ErrUnknownMode, not a silently different matcher.
func TestPinModeWords(t *testing.T) {
	t.Parallel()
	const img = "registry.k8s.io/pause:3.10"
	res := &Result{Runtime: "containerd", SandboxImage: img, Pins: []string{img}}
	m, err := res.Matcher()
	require.NoError(t, err)
	assert.True(t, m.IsPinned("k8s.gcr.io/pause:3.10"), "the zero PinMode reads as Strict: aliases apply")
	require.NoError(t, json.Unmarshal([]byte(`{"pinMode":"youki-compat"}`), res))
	assert.Equal(t, pin.Mode("youki-compat"), res.PinMode)
	_, err = res.Matcher()
	assert.ErrorIs(t, err, pin.ErrUnknownMode)
	_, err = res.RuntimeMatcher()
	assert.ErrorIs(t, err, pin.ErrUnknownMode)
}

// TestOldWordsDecode: the words of builds before v0.1.0 that spelled CRI-O
// "crio-" decode to this version's word, spelled as criinfo.RuntimeCRIO
// (issue 52), which is Known and marshals in the new spelling; so does a
// Result written by such a build.
func TestOldWordsDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ  string // a key of wordTypes
		old  string // the word an earlier build wrote
		want word   // the value it decodes to
	}{
		{typ: "Source", old: "crio-config", want: SourceCRIOConfig},
		{typ: "Kind", old: "crio-no-sandbox-report", want: KindCRIONoSandboxReport},
		{typ: "Kind", old: "crio-never-pins", want: KindCRIONeverPins},
		{typ: "Kind", old: "crio-first-name-only", want: KindCRIOFirstNameOnly},
		{typ: "Kind", old: "crio-short-name-enforcing", want: KindCRIOShortNameEnforcing},
		{typ: "Kind", old: "crio-short-never-pinned", want: KindCRIOShortNeverPinned},
		{typ: "Kind", old: "crio-alias-never-pinned", want: KindCRIOAliasNeverPinned},
	}
	for _, tt := range tests {
		t.Run(tt.old, func(t *testing.T) {
			t.Parallel()
			got, out, err := decodeWord(t, tt.typ, tt.old)
			require.NoError(t, err)
			assert.True(t, got.Known(), "%s(%q).Known()", tt.typ, tt.old)
			newWord := fmt.Sprint(tt.want)
			assert.Equal(t, "cri-o-"+strings.TrimPrefix(tt.old, "crio-"), newWord)
			assert.JSONEq(t, mustJSON(t, newWord), out, "%s %q decodes as %q", tt.typ, tt.old, newWord)
		})
	}
	var res Result
	require.NoError(t, json.Unmarshal([]byte(`{"runtime":"cri-o","pinMode":"crio-compat",
		"candidates":[{"image":"registry.k8s.io/pause:3.10","source":"crio-config","role":"runtime-uses"}],
		"notes":[{"kind":"crio-never-pins","component":"cri-o","message":"m"}]}`), &res))
	assert.Equal(t, pin.ModeCRIOCompat, res.PinMode)
	require.Len(t, res.Candidates, 1)
	assert.Equal(t, SourceCRIOConfig, res.Candidates[0].Source)
	require.Len(t, res.Notes, 1)
	assert.Equal(t, KindCRIONeverPins, res.Notes[0].Kind)
}
