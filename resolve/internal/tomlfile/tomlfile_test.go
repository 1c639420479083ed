package tomlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	burntsushi "github.com/BurntSushi/toml"
	"github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
)

// tomlErrors are TOML files that both decoders refuse, with the line Parse
// names.
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

// decoders are the decoders Parse knows, with a direct call of each.
var decoders = []struct {
	name   string
	dec    Decoder
	decode func(b []byte) error
}{
	{name: "go-toml", dec: GoTOML, decode: func(b []byte) error { var m map[string]any; return toml.Unmarshal(b, &m) }},
	{name: "BurntSushi", dec: BurntSushi, decode: func(b []byte) error {
		var m map[string]any
		_, err := burntsushi.Decode(string(b), &m)
		return err
	}},
}

func TestErrors(t *testing.T) {
	t.Parallel()
	for _, d := range decoders {
		for _, tt := range tomlErrors {
			t.Run(d.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				if d.decode([]byte(tt.content)) == nil {
					// BurntSushi lets a dotted key or a header add to an
					// inline table or a table defined otherwise.
					checkVerdict(t, d.dec, d.decode, []byte(tt.content))
					return
				}
				doc, err := Parse([]byte(tt.content), d.dec, MaxEntries)
				assert.Nil(t, doc)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tt.wantLine, e.Line, "line in %v", err)
				// The key named is that of the expression refused, which
				// holds the key at fault: its full path (go-toml v2.0-v2.2)
				// or its path within its table (newer go-toml).
				if key, either := strings.CutSuffix(tt.wantKey, "?"); d.dec == GoTOML && !either && e.Key != "" {
					assert.True(t, keyNames(e.Key, key), "key in %v: want %s", err, key)
				}
			})
		}
	}
}

// keyNames reports whether got, a full key path or one relative to a table
// on the way to want, names want or a key above or below it. For example,
// keyNames("u.a", "t.u") is true: in table t, u.a is t.u.a.
func keyNames(got, want string) bool {
	related := func(a string) bool { return strings.HasPrefix(a, want) || strings.HasPrefix(want, a) }
	if related(got) {
		return true
	}
	for i := range len(want) {
		if want[i] == '.' && related(want[:i+1]+got) {
			return true
		}
	}
	return false
}

// TestAgreesWithDecoders checks Parse's verdict against each decoder's on
// the documents here and on every TOML file in the repository's test
// trees, and that every key written outside arrays has its line.
func TestAgreesWithDecoders(t *testing.T) {
	t.Parallel()
	docs := append(append([]string(nil), tomlGood...), tomlEdges...)
	repo := os.DirFS("../../..")
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
	require.Greater(t, len(docs), 60)
	for _, d := range decoders {
		for _, doc := range docs {
			checkVerdict(t, d.dec, d.decode, []byte(doc))
		}
	}
}

// checkVerdict fails unless Parse accepts b exactly when decode does (or
// refuses it with ErrLimit), every error names a line inside b, and every
// key written outside arrays has a line.
func checkVerdict(t *testing.T, dec Decoder, decode func([]byte) error, b []byte) {
	t.Helper()
	doc, err := Parse(b, dec, MaxEntries)
	if (doc == nil) == (err == nil) {
		t.Fatalf("Parse = %v, %v: want exactly one of them", doc, err)
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("Parse error %v (%T) is not an *Error", err, err)
		}
		if n := bytes.Count(b, []byte{'\n'}) + 1; e.Line < 0 || e.Line > n {
			t.Fatalf("Parse(%q): line %d outside the file's %d lines", b, e.Line, n)
		}
		if errors.Is(err, nodefs.ErrLimit) {
			if e.Line == 0 {
				t.Fatalf("Parse(%q): limit error %v names no line", b, err)
			}
			return
		}
	}
	if werr := decode(b); (werr == nil) != (err == nil) {
		t.Fatalf("Parse(%q) = %v, the decoder says %v", b, err, werr)
	}
	if doc != nil {
		checkLines(t, doc, b, nil, doc.root)
	}
}

// checkLines fails if a value under the key path keys, reached through
// tables only, has no line.
func checkLines(t *testing.T, doc *Doc, b []byte, keys []string, v any) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		if l := doc.Line(keys...); l <= 0 || l > bytes.Count(b, []byte{'\n'})+1 {
			t.Fatalf("Parse(%q): key %s has line %d", b, Key(keys...), l)
		}
		return
	}
	for k, e := range m {
		checkLines(t, doc, b, append(keys[:len(keys):len(keys)], k), e)
	}
}

func TestLines(t *testing.T) {
	t.Parallel()
	doc, err := Parse([]byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"p\"\n"+
		"[a]\nb.c = [\n  1,\n]\n\"\\u0064\" = 'x'\ne = { f = { g = 1 } }\nh = [{ i = 1 }]\n"), GoTOML, MaxEntries)
	require.NoError(t, err)
	for _, tt := range []struct {
		keys []string
		want int
	}{
		{keys: []string{"version"}, want: 1},
		{keys: []string{"plugins", "io.containerd.grpc.v1.cri"}, want: 2},
		{keys: []string{"plugins", "io.containerd.grpc.v1.cri", "sandbox_image"}, want: 3},
		{keys: []string{"a", "b", "c"}, want: 5},
		{keys: []string{"a", "d"}, want: 8},
		{keys: []string{"a", "e", "f", "g"}, want: 9},
		{keys: []string{"a", "h", "i"}, want: 10}, // in an array: its key's line
		{keys: []string{"absent"}, want: 0},
	} {
		assert.Equal(t, tt.want, doc.Line(tt.keys...), "Line(%q)", tt.keys)
	}
}

// tomlGood are valid TOML documents, each which both decoders accept.
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
// rules, valid or not, on which the decoders (and their versions) differ.
var tomlEdges = []string{"a = 23:59:60", "a = 1979-05-27T23:59:60Z", "a = 1979-05-27T00:32:00.999999999999-07:00", "a = 0000-01-01", "a = 1979-05-27 07:32", "a = 07:32", "a = 1979-05-27T07:32:00+24:00", "a = 1979-05-27T07:32:00+23:59", "a = 2000-02-29", "a = 1900-02-29", "a = 1979-05-27T07:32:00.Z", "a = 1979-05-27T7:32:00Z", "a = 1979-05-27T07:32:00z", "a = \"\\U0010FFFF\"", "a = \"\\uD800\"", "a = \"\\x41\"", "a = \"\\e\"", "a = 'a\x7f'", "# \x7f\na=1", "# \x00\na=1", "a = \"\xff\"", "a=1 # \xff", "\xef\xbb\xbfa=1", "a = 1\r\nb = 2", "a = 1\rb=2", "a = [1,]", "a = [,]", "a = {}", "a = {b = 1,}", "a = {\nb=1}", "a = -0x1", "a = 0x", "a = +inf", "a = -nan", "a = 1e+_1", "a = 1_000.0_1e1_0", "a = 0.0", "a = 00.0", "a = 0e0", "a = 1.e5", "a = .5", "a = 9223372036854775807", "a = -9223372036854775808", "a = 0o777", "a = 0b_1", "a = 0x_1", "a = 0xDEAD_beef", "a = 1979-05-27T07:32:00.5", "a = 12:00:00.1234567891234"}

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
		return n > MaxDepth
	case 1:
		return n+1 > MaxDepth // the innermost key is one deeper: a = {a = ...
	case 4, 5, 7:
		return n+1 > MaxEntries // version and the tables or keys
	}
	return false // array elements cost the decoders linear time
}

func TestLimits(t *testing.T) {
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
		{name: "tables at the limit", kind: 4, n: MaxEntries - 1},
		{name: "tables over the limit", kind: 4, n: MaxEntries},
		{name: "keys over the limit", kind: 5, n: MaxEntries},
		{name: "a hundred thousand keys", kind: 5, n: 100_000},
		{name: "many array elements", kind: 6, n: 100_000},
		{name: "arrays of tables over the limit", kind: 7, n: MaxEntries + 1},
	}
	for _, d := range decoders {
		for _, tt := range tests {
			t.Run(d.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				data := []byte(tomlShape(tt.kind, tt.n))
				require.LessOrEqual(t, len(data), 4<<20, "the shape must fit the file size limit")
				doc, err := Parse(data, d.dec, MaxEntries)
				if !tomlShapeOverLimit(tt.kind, tt.n) {
					require.NoError(t, err)
					assert.NotNil(t, doc)
					return
				}
				assert.Nil(t, doc)
				require.ErrorIs(t, err, nodefs.ErrLimit)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Positive(t, e.Line, "%v", err)
			})
		}
	}
}

// TestLinear checks that reading grows linearly with the number of keys
// and array elements, and at most with the table limit, counted in
// allocations (not wall time): ten times the input costs at most 12 times
// the allocations.
func TestLinear(t *testing.T) { //nolint:paralleltest // AllocsPerRun refuses parallel tests
	for _, d := range decoders {
		for _, kind := range []byte{4, 5, 6, 7} {
			n := 1000
			if kind != 6 {
				n = MaxEntries / 10
			}
			small, large := []byte(tomlShape(kind, n)), []byte(tomlShape(kind, 10*n))
			allocs := func(b []byte) float64 {
				return testing.AllocsPerRun(2, func() {
					if _, err := Parse(b, d.dec, MaxEntries); err != nil {
						t.Fatal(err)
					}
				})
			}
			a1, a10 := allocs(small), allocs(large)
			assert.LessOrEqual(t, a10, 12*a1, "%s, shape %d: %v allocations for %d, %v for %d", d.name, kind, a10, 10*n, a1, n)
		}
	}
}
