// Command apilist records and checks the exported API of sandboxpin's public
// packages, one feature a line, as Go's own api/go1.*.txt files do:
//
//	pkg github.com/sandboxpin/sandboxpin/pin, func Compile([]string, ...Option) (*Matcher, error)
//	pkg github.com/sandboxpin/sandboxpin/pin, type Match struct, Pattern string
//	pkg github.com/sandboxpin/sandboxpin/pin, method (*Matcher) IsPinned(string) bool
//
// A removed or changed line is an incompatible change (a caller may use it);
// an added line is a compatible one. With -check it compares the packages
// with the listing under api/ (one file per package) and fails on either,
// naming each line: an incompatible change must be deliberate (before v0.1.0,
// or in a new major version) and is recorded by running it with -w, which
// rewrites api/; an addition is recorded the same way. release.sh compares
// with the previous release tag by apidiff as well.
//
// Usage (from the repository root, in the workspace; scripts/test.sh runs
// -check):
//
//	go run ./scripts/apilist -w      # write api/
//	go run ./scripts/apilist -check  # compare with api/
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// module is the path every public package starts with.
const module = "github.com/sandboxpin/sandboxpin"

// packages are the public packages: what importers may use. cmd is a
// program; internal, examples, deploy and scripts are never imported.
var packages = []string{
	"audit", "criinfo", "criinfo/cri", "criinfo/cri/fakecri", "crishim", "pin", "reference", "remedy", "resolve",
	"rollout",
}

func main() {
	write := flag.Bool("w", false, "write the listing under -dir")
	check := flag.Bool("check", false, "compare the packages with the listing under -dir")
	dir := flag.String("dir", "api", "the directory of the listing, one file per package")
	flag.Parse()
	if *write == *check {
		fmt.Fprintln(os.Stderr, "usage: apilist -w | -check [-dir api]")
		os.Exit(2)
	}
	got, err := listAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, "apilist:", err)
		os.Exit(2)
	}
	if *write {
		if err := writeAll(*dir, got); err != nil {
			fmt.Fprintln(os.Stderr, "apilist:", err)
			os.Exit(2)
		}
		return
	}
	bad, err := checkAll(os.Stdout, *dir, got)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apilist:", err)
		os.Exit(2)
	}
	if bad {
		fmt.Println("apilist: the API differs from api/ (above). An incompatible change is allowed only before v0.1.0 or in a new major version; record it with `go run ./scripts/apilist -w`, list each renamed or removed name in CHANGELOG.md, and commit api/ with the change.")
		os.Exit(1)
	}
	fmt.Printf("apilist: the API of %d packages matches api/\n", len(got))
}

// fileOf names the listing file of a package: its path below the module
// with "/" as ".", e.g. api/criinfo.cri.txt.
func fileOf(dir, pkg string) string {
	return filepath.Join(dir, strings.ReplaceAll(pkg, "/", ".")+".txt")
}

func writeAll(dir string, got map[string][]string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	for pkg, lines := range got {
		if err := os.WriteFile(fileOf(dir, pkg), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// checkAll prints each removed ("-") and added ("+") line per package and
// reports whether there was any.
func checkAll(w io.Writer, dir string, got map[string][]string) (bool, error) {
	bad := false
	for _, pkg := range packages {
		b, err := os.ReadFile(fileOf(dir, pkg))
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(w, "%s: no recorded API (%s)\n", pkg, fileOf(dir, pkg))
			bad = true
			continue
		} else if err != nil {
			return false, err
		}
		want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		var removed, added []string
		for _, l := range want {
			if _, ok := slices.BinarySearch(got[pkg], l); !ok {
				removed = append(removed, l)
			}
		}
		for _, l := range got[pkg] {
			if !slices.Contains(want, l) {
				added = append(added, l)
			}
		}
		for _, l := range removed {
			fmt.Fprintf(w, "- %s\t(incompatible: removed or changed)\n", l)
		}
		for _, l := range added {
			fmt.Fprintf(w, "+ %s\t(new: record it)\n", l)
		}
		bad = bad || len(removed)+len(added) > 0
	}
	return bad, nil
}

// listAll lists every public package's API from the compiler's export data
// (`go list -export`), which the build cache keeps.
func listAll() (map[string][]string, error) {
	paths := make([]string, len(packages))
	for i, p := range packages {
		paths[i] = module + "/" + p
	}
	cmd := exec.Command("go", append([]string{"list", "-export", "-deps", "-json=ImportPath,Export"}, paths...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %w", err)
	}
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	got := map[string][]string{}
	for i, path := range paths {
		p, err := imp.Import(path)
		if err != nil {
			return nil, err
		}
		got[packages[i]] = list(p)
	}
	return got, nil
}

// list returns the package's exported features, sorted.
func list(p *types.Package) []string {
	qual := func(o *types.Package) string {
		if o == p {
			return ""
		}
		return o.Path()
	}
	ts := func(t types.Type) string { return types.TypeString(t, qual) }
	prefix := "pkg " + p.Path() + ", "
	var out []string
	add := func(format string, args ...any) { out = append(out, prefix+fmt.Sprintf(format, args...)) }
	scope := p.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			add("const %s %s = %s", name, ts(o.Type()), o.Val().ExactString())
		case *types.Var:
			add("var %s %s", name, ts(o.Type()))
		case *types.Func:
			add("func %s%s%s", name, typeParams(o.Type().(*types.Signature).TypeParams(), ts), sig(o.Type(), ts))
		case *types.TypeName:
			listType(o, ts, add)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// listType adds a named type, its exported fields or interface methods,
// and the exported methods of T and *T.
func listType(o *types.TypeName, ts func(types.Type) string, add func(string, ...any)) {
	name := o.Name()
	if o.IsAlias() {
		add("type %s = %s", name, ts(o.Type()))
		return
	}
	named, ok := o.Type().(*types.Named)
	if !ok {
		return
	}
	tparams := typeParams(named.TypeParams(), ts)
	switch u := named.Underlying().(type) {
	case *types.Struct:
		add("type %s%s struct", name, tparams)
		for i := range u.NumFields() {
			f := u.Field(i)
			if !f.Exported() {
				continue
			}
			if f.Embedded() {
				add("type %s struct, embedded %s", name, ts(f.Type()))
				continue
			}
			tag := ""
			if t := u.Tag(i); t != "" {
				tag = " `" + t + "`"
			}
			add("type %s struct, %s %s%s", name, f.Name(), ts(f.Type()), tag)
		}
	case *types.Interface:
		add("type %s%s interface", name, tparams)
		for i := range u.NumEmbeddeds() {
			add("type %s interface, embedded %s", name, ts(u.EmbeddedType(i)))
		}
		for i := range u.NumExplicitMethods() {
			m := u.ExplicitMethod(i)
			if m.Exported() {
				add("type %s interface, %s%s", name, m.Name(), sig(m.Type(), ts))
			}
		}
		return
	default:
		add("type %s%s %s", name, tparams, ts(u))
	}
	for _, recv := range []types.Type{named, types.NewPointer(named)} {
		ms := types.NewMethodSet(recv)
		for i := range ms.Len() {
			sel := ms.At(i)
			m := sel.Obj()
			if !m.Exported() || len(sel.Index()) > 1 {
				continue // promoted methods are listed with their own type
			}
			if _, ptr := recv.(*types.Pointer); ptr && types.NewMethodSet(named).Lookup(m.Pkg(), m.Name()) != nil {
				continue // a value method, listed once
			}
			r := name
			if _, ptr := recv.(*types.Pointer); ptr {
				r = "*" + name
			}
			add("method (%s) %s%s", r, m.Name(), sig(m.Type(), ts))
		}
	}
}

// sig is a function type without its parameter and result names, which a
// caller never writes: renaming one changes no caller.
func sig(t types.Type, ts func(types.Type) string) string {
	s := t.(*types.Signature)
	unnamed := func(t *types.Tuple) *types.Tuple {
		vs := make([]*types.Var, t.Len())
		for i := range t.Len() {
			vs[i] = types.NewParam(token.NoPos, nil, "", t.At(i).Type())
		}
		return types.NewTuple(vs...)
	}
	return strings.TrimPrefix(ts(types.NewSignatureType(nil, nil, nil, unnamed(s.Params()), unnamed(s.Results()), s.Variadic())), "func")
}

// typeParams is a type parameter list, "" for none.
func typeParams(tp *types.TypeParamList, ts func(types.Type) string) string {
	if tp.Len() == 0 {
		return ""
	}
	var b strings.Builder
	for i := range tp.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", tp.At(i).Obj().Name(), ts(tp.At(i).Constraint()))
	}
	return "[" + b.String() + "]"
}
