package unitfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseTests are unit files and what Parse makes of them; fuzz seeds too.
var parseTests = []struct {
	name    string
	in      string  // the file
	want    []Entry // its entries
	wantErr error   // sentinel expected with errors.Is, or nil
}{
	{name: "empty", in: ""},
	{name: "one key", in: "[Unit]\nDescription=x y\n", want: []Entry{{Section: "Unit", Key: "Description", Value: "x y", Line: 2}}},
	{name: "comments and blanks", in: "# c\n; c\n\n[Service]\n  Restart = on-failure  \n", want: []Entry{{Section: "Service", Key: "Restart", Value: "on-failure", Line: 5}}},
	{name: "continuation", in: "[Service]\nExecStart=/bin/a \\\n  --b c \\\n# note\n  --d\n", want: []Entry{{Section: "Service", Key: "ExecStart", Value: "/bin/a    --b c    --d", Line: 2}}},
	{name: "repeated key", in: "[Unit]\nAfter=a\nAfter=b\n", want: []Entry{{Section: "Unit", Key: "After", Value: "a", Line: 2}, {Section: "Unit", Key: "After", Value: "b", Line: 3}}},
	{name: "crlf", in: "[Unit]\r\nA=b\r\n", want: []Entry{{Section: "Unit", Key: "A", Value: "b", Line: 2}}},
	{name: "key outside a section", in: "A=b\n[Unit]\nC=d\n", want: []Entry{{Section: "Unit", Key: "C", Value: "d", Line: 3}}},
	{name: "no equals", in: "[Unit]\nnonsense\n=x\n", want: nil},
	{name: "bad header", in: "[Unit\n", wantErr: ErrSyntax},
	{name: "empty header", in: "[]\nA=b\n", want: nil},
	{name: "continued past the end", in: "[Unit]\nA=b \\", want: []Entry{{Section: "Unit", Key: "A", Value: "b", Line: 2}}},
	{name: "even backslashes end the line", in: "[Unit]\nA=b\\\\\nC=\\\\\\\n d\n", want: []Entry{{Section: "Unit", Key: "A", Value: `b\\`, Line: 2}, {Section: "Unit", Key: "C", Value: `\\  d`, Line: 3}}},
	{name: "comment ends the file", in: "[Unit]\nA=b \\\n# c", want: []Entry{{Section: "Unit", Key: "A", Value: "b", Line: 2}}},
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tt.in))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Parse(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			assert.Equal(t, tt.want, plain(got.Entries), "Parse(%q)", tt.in)
		})
	}
}

// plain drops what Entry keeps for LineAt, so that tests compare values.
func plain(es []Entry) []Entry {
	var out []Entry
	for _, e := range es {
		out = append(out, Entry{Section: e.Section, Key: e.Key, Value: e.Value, Line: e.Line})
	}
	return out
}

func TestGet(t *testing.T) {
	t.Parallel()
	u, err := Parse([]byte("[Unit]\nAfter=a\nAfter=b\n[Service]\nAfter=c\n"))
	assert.NoError(t, err)
	assert.Equal(t, "b", u.Get("Unit", "After"))
	assert.Equal(t, []string{"a", "b"}, u.All("Unit", "After"))
	assert.Empty(t, u.Get("Install", "WantedBy"))
}

// wordsTests are command lines and their words; fuzz seeds too.
var wordsTests = []struct {
	name    string
	in      string   // the command line
	want    []string // its words
	wantErr error    // sentinel expected with errors.Is, or nil
}{
	{name: "empty", in: ""},
	{name: "plain", in: "/usr/bin/x  shim --listen\tunix:///a", want: []string{"/usr/bin/x", "shim", "--listen", "unix:///a"}},
	{name: "double quotes", in: `/bin/x "a b" c`, want: []string{"/bin/x", "a b", "c"}},
	{name: "single quotes and escape", in: `/bin/x 'it\'s' "q\"q"`, want: []string{"/bin/x", "it's", `q"q`}},
	{name: "prefix stays", in: "-/bin/x", want: []string{"-/bin/x"}},
	{name: "unterminated", in: `/bin/x "a`, wantErr: ErrSyntax},
	{name: "quote glued", in: `/bin/x "a"b`, want: []string{"/bin/x", "ab"}},
	{name: "escapes inside single quotes", in: `'a\b' c`, want: []string{"a\b", "c"}},
	{name: "escaped space", in: `a\ b c\"d \s`, want: []string{`a\ b`, `c"d`, " "}},
	{name: "unknown escape kept", in: `\x41 \q`, want: []string{`\x41`, `\q`}},
	{name: "trailing backslash kept", in: `a \`, want: []string{"a", `\`}},
	{name: "trailing backslash in a quote", in: `"a\`, wantErr: ErrSyntax},
	{name: "empty quotes", in: `a "" b`, want: []string{"a", "", "b"}},
	{name: "adjacent quotes", in: `--x="a b"c`, want: []string{"--x=a bc"}},
	{name: "blank", in: "  ", want: nil},
}

func TestWords(t *testing.T) {
	t.Parallel()
	for _, tt := range wordsTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Words(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Words(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			assert.Equal(t, tt.want, got, "Words(%q)", tt.in)
		})
	}
}

func TestSplitOffsetsAndLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		limit   int
		want    []Word
		wantErr error // sentinel expected with errors.Is, or nil
		wantOff int   // WordError.Off when wantErr is set
	}{
		{name: "offsets", in: ` a "b c"  \d`, want: []Word{{Text: "a", Off: 1}, {Text: "b c", Off: 3}, {Text: `\d`, Off: 10}}},
		{name: "at the limit", in: "a b", limit: 2, want: []Word{{Text: "a"}, {Text: "b", Off: 2}}},
		{name: "past the limit", in: "a b  c", limit: 2, wantErr: ErrTooManyWords, wantOff: 5},
		{name: "unterminated names the quote", in: `a 'b c`, wantErr: ErrSyntax, wantOff: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Split(tt.in, tt.limit)
			require.ErrorIs(t, err, tt.wantErr)
			if tt.wantErr != nil {
				var we *WordError
				require.ErrorAs(t, err, &we)
				assert.Equal(t, tt.wantOff, we.Off)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestEntryLineAt(t *testing.T) {
	t.Parallel()
	u, err := Parse([]byte("[Service]\n# c\nExecStart= /bin/a \\\n# note\n  --b \\\n\n"))
	require.NoError(t, err)
	require.Len(t, u.Entries, 1)
	e := u.Entries[0]
	assert.Equal(t, "/bin/a    --b", e.Value)
	assert.Equal(t, 3, e.LineAt(0), "/bin/a")
	assert.Equal(t, 5, e.LineAt(strings.Index(e.Value, "--b")), "--b")
}
