package unitfile

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
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
	{name: "continuation", in: "[Service]\nExecStart=/bin/a \\\n  --b c \\\n# note\n  --d\n", want: []Entry{{Section: "Service", Key: "ExecStart", Value: "/bin/a  --b c  --d", Line: 2}}},
	{name: "repeated key", in: "[Unit]\nAfter=a\nAfter=b\n", want: []Entry{{Section: "Unit", Key: "After", Value: "a", Line: 2}, {Section: "Unit", Key: "After", Value: "b", Line: 3}}},
	{name: "crlf", in: "[Unit]\r\nA=b\r\n", want: []Entry{{Section: "Unit", Key: "A", Value: "b", Line: 2}}},
	{name: "key outside a section", in: "A=b\n", wantErr: ErrSyntax},
	{name: "no equals", in: "[Unit]\nnonsense\n", wantErr: ErrSyntax},
	{name: "bad header", in: "[Unit\n", wantErr: ErrSyntax},
	{name: "empty header", in: "[]\n", wantErr: ErrSyntax},
	{name: "continued past the end", in: "[Unit]\nA=b \\", wantErr: ErrSyntax},
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
			assert.Equal(t, tt.want, got.Entries, "Parse(%q)", tt.in)
		})
	}
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
	{name: "quote glued", in: `/bin/x "a"b`, wantErr: ErrSyntax},
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
