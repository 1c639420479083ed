package main

import (
	"bytes"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const src = `package p

type Kind string

const KindA Kind = "a"

type T struct {
	Name string ` + "`json:\"name\"`" + `
	hidden int
}

func (T) Get(key string) (value string) { return "" }
func (*T) Set(key, value string)       {}

type I interface{ M(int) error }

func New[E any](xs []E) *T { return nil }

var V = 1

func hidden() {}
`

func check(t *testing.T, src string) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	require.NoError(t, err)
	p, err := (&types.Config{Importer: importer.Default()}).Check("example.com/p", fset, []*ast.File{f}, nil)
	require.NoError(t, err)
	return p
}

func TestList(t *testing.T) {
	t.Parallel()
	want := []string{
		"pkg example.com/p, const KindA Kind = \"a\"",
		"pkg example.com/p, func New[E any]([]E) *T",
		"pkg example.com/p, method (*T) Set(string, string)",
		"pkg example.com/p, method (T) Get(string) string",
		"pkg example.com/p, type I interface",
		"pkg example.com/p, type I interface, M(int) error",
		"pkg example.com/p, type Kind string",
		"pkg example.com/p, type T struct",
		"pkg example.com/p, type T struct, Name string `json:\"name\"`",
		"pkg example.com/p, var V int",
	}
	assert.Equal(t, want, list(check(t, src)))
}

// TestCheck: a removed feature and an added one are both reported; the same
// listing is not.
func TestCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pkg := packages[0]
	got := map[string][]string{}
	for _, p := range packages {
		got[p] = []string{"pkg x, func A()"}
	}
	require.NoError(t, writeAll(dir, got))
	var out bytes.Buffer
	bad, err := checkAll(&out, dir, got)
	require.NoError(t, err)
	assert.False(t, bad, out.String())

	changed := map[string][]string{}
	for p, l := range got {
		changed[p] = l
	}
	changed[pkg] = []string{"pkg x, func B()"}
	out.Reset()
	bad, err = checkAll(&out, dir, changed)
	require.NoError(t, err)
	assert.True(t, bad)
	assert.Contains(t, out.String(), "- pkg x, func A()\t(incompatible")
	assert.Contains(t, out.String(), "+ pkg x, func B()\t(new")

	require.NoError(t, os.Remove(filepath.Join(dir, pkg+".txt")))
	out.Reset()
	bad, err = checkAll(&out, dir, got)
	require.NoError(t, err)
	assert.True(t, bad)
	assert.Contains(t, out.String(), "no recorded API")
}
