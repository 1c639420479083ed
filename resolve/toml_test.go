package resolve

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tomlErrors are TOML files that go-toml's decoder refuses (checked in
// TestTOMLErrorsAgreeWithGoTOML), with the line and key parseTOML names.
var tomlErrors = []struct {
	name     string
	content  string
	wantLine int
	wantKey  string
}{
	{name: "syntax", content: "a = 1\n[b\n", wantLine: 2},
	{name: "incomplete number", content: "a = \n", wantLine: 1},
	{name: "key twice", content: "a = 1\n[t]\nb = 1\nb = 2\n", wantLine: 4, wantKey: "t.b"},
	{name: "table twice", content: "[t]\na = 1\n[t]\nb = 1\n", wantLine: 3, wantKey: "t"},
	{name: "header over a value", content: "t = 1\n[t.u]\n", wantLine: 2, wantKey: "t"},
	{name: "header over an inline table", content: "t = {a = 1}\n[t.u]\n", wantLine: 2, wantKey: "t"},
	{name: "dotted key into an inline table", content: "t = {a = 1}\nt.b = 2\n", wantLine: 2, wantKey: "t"},
	{name: "dotted key into a header table", content: "[t.u]\n[t]\nu.a = 1\n", wantLine: 3, wantKey: "t.u"},
	{name: "header over a dotted table", content: "[t]\nu.a = 1\n[t.u]\n", wantLine: 3, wantKey: "t.u"},
	{name: "table after array of tables", content: "[[t]]\n[t]\n", wantLine: 2, wantKey: "t"},
	{name: "array of tables after table", content: "[t]\n[[t]]\n", wantLine: 2, wantKey: "t"},
	{name: "array of tables over a static array", content: "t = []\n[[t]]\n", wantLine: 2, wantKey: "t"},
	{name: "inline key twice", content: "t = {a = 1, a = 2}\n", wantLine: 1, wantKey: "t.a"},
	{name: "leading zero", content: "a = 01\n", wantLine: 1},
	// go-toml's parser refuses these itself from v2.3 on (no key), the
	// value check before; a key ending in '?' may also be "".
	{name: "underscore at the end", content: "a = 1_\n", wantLine: 1, wantKey: "a?"},
	{name: "double underscore", content: "a = 1__0\n", wantLine: 1, wantKey: "a?"},
	{name: "integer overflow", content: "a = 9223372036854775808\n", wantLine: 1, wantKey: "a"},
	{name: "float without fraction digits", content: "a = 1.\n", wantLine: 1, wantKey: "a?"},
	{name: "float leading zero", content: "a = 01.5\n", wantLine: 1},
	{name: "impossible date", content: "a = 2023-02-30\n", wantLine: 1, wantKey: "a"},
	{name: "impossible time", content: "a = 25:00:00\n", wantLine: 1, wantKey: "a"},
}

func TestTOMLErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range tomlErrors {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, err := parseTOML("/f.toml", []byte(tt.content))
			assert.Nil(t, doc)
			require.ErrorIs(t, err, ErrInvalidConfig)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "/f.toml", ce.Path)
			assert.Equal(t, tt.wantLine, ce.Line, "line in %v", err)
			if key, either := strings.CutSuffix(tt.wantKey, "?"); either {
				assert.Contains(t, []string{key, ""}, ce.Key, "key in %v", err)
			} else {
				assert.Equal(t, tt.wantKey, ce.Key, "key in %v", err)
			}
		})
	}
}

// versionSkew reports whether go-toml's decoder (error werr) and parseTOML
// (error err) differ on data only where go-toml's versions differ from each
// other: go-toml v2.3 and later refuse a leap second (second 60), which
// TOML 1.0, RFC 3339, go-toml v2.2 and parseTOML accept; and they accept a
// time without seconds (TOML 1.1), which TOML 1.0, earlier versions and
// parseTOML refuse.
func versionSkew(data []byte, werr, err error) bool {
	if werr != nil {
		return err == nil && strings.Contains(werr.Error(), "seconds cannot be greater than 59")
	}
	return err != nil && strings.Contains(err.Error(), "date-time") && timeWithoutSeconds().Match(data)
}

// timeWithoutSeconds matches HH:MM not followed by ":SS".
var timeWithoutSeconds = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(^|[^:0-9])[0-9]{2}:[0-9]{2}([^:0-9]|$)`)
})

// TestTOMLErrorsAgreeWithGoTOML checks that go-toml's decoder (what
// containerd 2.x and CRI-O use) refuses each of tomlErrors too, so that
// parseTOML refuses nothing a runtime reads.
func TestTOMLErrorsAgreeWithGoTOML(t *testing.T) {
	t.Parallel()
	for _, tt := range tomlErrors {
		var m map[string]any
		assert.Error(t, toml.Unmarshal([]byte(tt.content), &m), "go-toml accepts %s: %q", tt.name, tt.content)
	}
}

// tomlGood are valid TOML documents, each with what parseTOML must agree on
// with go-toml's decoder.
var tomlGood = []string{
	"",
	"# only a comment\n",
	"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.9\"\n",
	"a.b.c = 1\na.b.d = 'x'\n[a.e]\nf = [1, 2.5, true, \"s\", [ ], {g = 1}]\n",
	"[[t]]\na = 1\n[[t]]\na = 2\n[t.u]\nb = 3\n[[t.v]]\nc = 4\n",
	"[t.u.v]\na = 1\n[t]\nb = 2\n[t.u]\nc = 3\n",
	"[fruit]\napple.color = 'red'\napple.taste.sweet = true\n[fruit.apple.texture]\nsmooth = true\n",
	"i = [0x1F, 0o17, 0b101, -17, +3, 1_000, 0]\nf = [1.5, -0.0, 1e6, 1E-2, 6.626e-34, 1_0.0_1, inf, -inf]\n",
	"d = [1979-05-27, 07:32:00, 07:32:00.999999, 1979-05-27T07:32:00, 1979-05-27 07:32:00Z, 1979-05-27t07:32:00.123+01:30]\n",
	"s = [\"\\u00e9\\t\\\"q\\\"\", 'C:\\x', \"\"\"\nml \"\" \\\n  cont\"\"\"\"\", '''\n''lit'' '''''']\n",
	"'quoted key' = 1\n\"dq.key\" = 2\nbare-key_1 = 3\n[ a . \"b\" . 'c' ]\nd = { e.f = 1, g = { h = [] } }\n",
	"a = [\n  1, # comment ] [\n  2,\n]\nb = '[[[['\nc = \"{{{{\"\n",
}

// tomlEdges are documents at the edges of TOML's number, date and string
// rules, valid or not: parseTOML must accept exactly those go-toml's
// decoder accepts, but where go-toml's versions differ (see versionSkew).
var tomlEdges = []string{"a = 23:59:60", "a = 1979-05-27T23:59:60Z", "a = 1979-05-27T00:32:00.999999999999-07:00", "a = 0000-01-01", "a = 1979-05-27 07:32", "a = 07:32", "a = 1979-05-27T07:32:00+24:00", "a = 1979-05-27T07:32:00+23:59", "a = 2000-02-29", "a = 1900-02-29", "a = 1979-05-27T07:32:00.Z", "a = 1979-05-27T7:32:00Z", "a = 1979-05-27T07:32:00z", "a = \"\\U0010FFFF\"", "a = \"\\uD800\"", "a = \"\\x41\"", "a = \"\\e\"", "a = 'a\x7f'", "# \x7f\na=1", "# \x00\na=1", "a = \"\xff\"", "a=1 # \xff", "\xef\xbb\xbfa=1", "a = 1\r\nb = 2", "a = 1\rb=2", "a = [1,]", "a = [,]", "a = {}", "a = {b = 1,}", "a = {\nb=1}", "a = -0x1", "a = 0x", "a = +inf", "a = -nan", "a = 1e+_1", "a = 1_000.0_1e1_0", "a = 0.0", "a = 00.0", "a = 0e0", "a = 1.e5", "a = .5", "a = 9223372036854775807", "a = -9223372036854775808", "a = 0o777", "a = 0b_1", "a = 0x_1", "a = 0xDEAD_beef", "a = 1979-05-27T07:32:00.5", "a = 12:00:00.1234567891234"}

func TestTOMLEdgesAgreeWithGoTOML(t *testing.T) {
	t.Parallel()
	for _, d := range tomlEdges {
		var m map[string]any
		werr := toml.Unmarshal([]byte(d), &m)
		doc, err := parseTOML("/f.toml", []byte(d))
		if versionSkew([]byte(d), werr, err) {
			continue
		}
		if assert.Equal(t, werr == nil, err == nil, "%q: go-toml %v, parseTOML %v", d, werr, err) && err == nil {
			assert.Equal(t, plainTOML(m), plainTOML(doc.root), "%q", d)
		}
	}
}

func TestTOMLAgreesWithGoTOML(t *testing.T) {
	t.Parallel()
	docs := tomlGood
	// Every TOML file in the repository's test trees too.
	repo := os.DirFS("..")
	err := fs.WalkDir(repo, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.Contains(p, "testdata") {
			return err
		}
		if strings.HasSuffix(p, ".toml") || strings.HasPrefix(p, "resolve/testdata/nodes") && strings.Contains(p, "/etc/crio/") {
			b, err := fs.ReadFile(repo, p)
			if err == nil {
				docs = append(docs, string(b))
			}
			return err
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, len(docs), 20)
	for _, d := range docs {
		var want map[string]any
		werr := toml.Unmarshal([]byte(d), &want)
		doc, err := parseTOML("/f.toml", []byte(d))
		if werr != nil {
			assert.Error(t, err, "go-toml refuses %q: %v", d, werr)
			continue
		}
		if assert.NoError(t, err, "%q", d) {
			assert.Equal(t, plainTOML(want), plainTOML(doc.root), "%q", d)
		}
	}
}

// plainTOML turns a decoded value (go-toml's or parseTOML's) into plain
// maps and slices for comparison; dates become a marker, as the two keep
// them in types of their own, and NaN a string.
func plainTOML(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plainTOML(e)
		}
		return out
	case *tomlTable:
		out := make(map[string]any, len(x.keys))
		for k, e := range x.keys {
			out[k] = plainTOML(e.v)
		}
		return out
	case *tomlTableArray:
		out := make([]any, len(x.tables))
		for i, e := range x.tables {
			out[i] = plainTOML(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainTOML(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainTOML(e)
		}
		return out
	case float64:
		if math.IsNaN(x) {
			return "NaN"
		}
		return x
	case tomlDateTime, time.Time, toml.LocalDate, toml.LocalTime, toml.LocalDateTime:
		return "date-time"
	}
	return v
}

// tomlShape builds a TOML document of one hostile shape: n is its depth
// or width.
func tomlShape(kind byte, n int) string {
	if kind%8 == 2 || kind%8 == 3 {
		n = max(n, 1) // a key has a part at least
	}
	var b strings.Builder
	b.WriteString("version = 2\n")
	switch kind % 8 {
	case 0: // nested arrays
		fmt.Fprintf(&b, "a = %s1%s\n", strings.Repeat("[", n), strings.Repeat("]", n))
	case 1: // nested inline tables
		fmt.Fprintf(&b, "a = %s1%s\n", strings.Repeat("{a = ", n), strings.Repeat("}", n))
	case 2: // a long dotted key
		fmt.Fprintf(&b, "%s = 1\n", strings.TrimSuffix(strings.Repeat("a.", n), "."))
	case 3: // a long header
		fmt.Fprintf(&b, "[%s]\n", strings.TrimSuffix(strings.Repeat("a.", n), "."))
	case 4: // many tables (short names: the most that fit in a file)
		for i := range n {
			fmt.Fprintf(&b, "[t%d]\n", i)
		}
	case 5: // many keys in one table
		for i := range n {
			fmt.Fprintf(&b, "k%d=1\n", i)
		}
	case 6: // a wide array
		fmt.Fprintf(&b, "a = [%s]\n", strings.TrimSuffix(strings.Repeat("1,", n), ","))
	case 7: // many arrays of tables
		b.WriteString(strings.Repeat("[[t]]\n", n))
	}
	return b.String()
}

// tomlShapeOverLimit reports whether tomlShape(kind, n) passes a limit.
func tomlShapeOverLimit(kind byte, n int) bool {
	switch kind % 8 {
	case 0, 2, 3:
		return n > maxTOMLDepth
	case 1:
		return n+1 > maxTOMLDepth // the key path is one longer: a.a.a...
	case 4:
		return n+1 > maxTOMLEntries // version and the tables
	case 5, 7:
		return n+1 > maxTOMLEntries
	case 6:
		return n+2 > maxTOMLEntries // version, a and the elements
	}
	return false
}

func TestTOMLLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind byte // see tomlShape
		n    int
	}{
		{name: "arrays 64 deep", kind: 0, n: 64},
		{name: "arrays 65 deep", kind: 0, n: 65},
		{name: "arrays a million deep", kind: 0, n: 1 << 20},
		{name: "inline tables 63 deep", kind: 1, n: 63},
		{name: "inline tables 64 deep", kind: 1, n: 64},
		{name: "inline tables 100,000 deep", kind: 1, n: 100_000},
		{name: "dotted key of 64 parts", kind: 2, n: 64},
		{name: "dotted key of 100,000 parts", kind: 2, n: 100_000},
		{name: "header of 65 parts", kind: 3, n: 65},
		{name: "tables at the limit", kind: 4, n: maxTOMLEntries - 1},
		{name: "tables over the limit", kind: 4, n: maxTOMLEntries},
		{name: "keys over the limit", kind: 5, n: maxTOMLEntries},
		{name: "array elements over the limit", kind: 6, n: maxTOMLEntries},
		{name: "arrays of tables over the limit", kind: 7, n: maxTOMLEntries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := tomlShape(tt.kind, tt.n)
			require.LessOrEqual(t, len(data), maxFileSize, "the shape must fit the file size limit")
			doc, err := parseTOML("/f.toml", []byte(data))
			if !tomlShapeOverLimit(tt.kind, tt.n) {
				require.NoError(t, err)
				assert.NotNil(t, doc)
				return
			}
			assert.Nil(t, doc)
			require.ErrorIs(t, err, ErrLimit)
			require.ErrorIs(t, err, ErrInvalidConfig)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "/f.toml", ce.Path)
			assert.Positive(t, ce.Line, "%v", err)
		})
	}
}

// TestTOMLLinear checks that reading grows linearly with the number of
// tables, counted in allocations (not wall time): ten times the tables
// cost at most 12 times the allocations.
func TestTOMLLinear(t *testing.T) { //nolint:paralleltest // AllocsPerRun refuses parallel tests
	for _, kind := range []byte{4, 5, 6, 7} {
		small, large := []byte(tomlShape(kind, 1000)), []byte(tomlShape(kind, 10_000))
		allocs := func(b []byte) float64 {
			return testing.AllocsPerRun(3, func() {
				if _, err := parseTOML("/f.toml", b); err != nil {
					t.Fatal(err)
				}
			})
		}
		a1, a10 := allocs(small), allocs(large)
		assert.LessOrEqual(t, a10, 12*a1, "shape %d: %v allocations for 10,000, %v for 1,000", kind, a10, a1)
	}
}

func TestSkipTOMLString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int // index of the string's last byte
	}{
		{in: `"a"x`, want: 2},
		{in: `"a\"b"x`, want: 5},
		{in: `"a` + "\n" + `x"`, want: 2},
		{in: `'a\'x`, want: 3},
		{in: `"""a"""x`, want: 6},
		{in: `""""a""""x`, want: 8},
		{in: `"""a"""""x`, want: 8},
		{in: `"""a""""""x`, want: 8},
		{in: `'''a'''''x`, want: 8},
		{in: `"""a\"""b"""x`, want: 11},
		{in: `"""never closed`, want: 14},
		{in: `""x`, want: 1},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, skipTOMLString([]byte(tt.in), 0), "skipTOMLString(%q)", tt.in)
	}
}
