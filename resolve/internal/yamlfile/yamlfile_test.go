package yamlfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
)

func TestLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		b     string // the text
		first int    // the file's line of its first line
		line  int    // go-yaml's line
		want  int    // the file's line
	}{
		{name: "unknown", b: "a: 1\n", first: 4, line: 0, want: 4},
		{name: "newlines", b: "a: 1\nb: 2\n", first: 4, line: 2, want: 5},
		{name: "past the end", b: "a: 1\nb: [\n", first: 1, line: 3, want: 2},
		{name: "carriage returns alone", b: "a:\r b:\r  c: 1\r", first: 1, line: 3, want: 1},
		{name: "crlf", b: "a: 1\r\nb: 2\r\n", first: 1, line: 2, want: 2},
		{name: "line separator", b: "a: \"x\u2028y\"\nb: 1\n", first: 1, line: 3, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, Line([]byte(tt.b), tt.first, tt.line), "Line(%q, %d, %d)", tt.b, tt.first, tt.line)
		})
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        string
		wantNodes int  // nodes counted, aliases expanded
		wantDepth int  // deepest collection
		wantLimit bool // refused with nodefs.ErrLimit
		wantLine  int  // line of the error, if any
	}{
		{name: "mapping", in: "a: 1\nb: [x, y]\n", wantNodes: 7, wantDepth: 2},
		{name: "alias counted as its anchor", in: "a: &a [1, 2]\nb: *a\n", wantNodes: 9, wantDepth: 2},
		{name: "deep alias", in: "a: &a " + strings.Repeat("[", 60) + strings.Repeat("]", 60) + "\nb: " + strings.Repeat("[", 50) + "*a" + strings.Repeat("]", 50) + "\n",
			wantLimit: true, wantLine: 2},
		{name: "syntax", in: "a: 1\nb: [\n", wantLine: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var f File
			docs, st, err := f.Parse([]byte(tt.in), 1)
			if tt.wantLine == 0 {
				require.NoError(t, err)
				assert.Len(t, docs, 1)
				assert.Equal(t, Stats{Nodes: tt.wantNodes, Depth: tt.wantDepth}, st)
				return
			}
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.wantLimit, errors.Is(err, nodefs.ErrLimit), "%v", err)
			assert.Equal(t, tt.wantLine, e.Line, "%v", err)
		})
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	var f File
	docs, _, err := f.Parse([]byte("a: 1\nb:\n  c: {d: 2}\n"), 1)
	require.NoError(t, err)
	root := docs[0].Content[0]
	assert.Equal(t, 3, Key(Key(root, "b"), "c").Line)
	assert.Nil(t, Key(root, "x"))
	assert.Nil(t, Key(Key(root, "a"), "c"), "a scalar has no keys")
}
