// Command adoption measures what adding sandboxpin costs each consumer named
// in scripts/consumers.txt, as that consumer's maintainers would see it in a
// pull request.
//
// For each consumer it takes the consumer's go.mod from the Go module proxy
// (`go mod download -json MODULE@VERSION`, the GoMod file), adds a requirement
// on this checkout (a replace to the local directory), adds a program that
// imports reference, pin, criinfo and resolve, and runs `go get` on those
// packages, which is what the consumer would run. Then it compares:
//
//   - a requirement whose version went up is a forced upgrade;
//   - a go directive that went up is a forced upgrade;
//   - a requirement that was not there before is counted as new (adopting a
//     dependency brings its own), not failed.
//
// For k8s.io/kubernetes, whose go.mod points its k8s.io/* modules at
// ./staging, the staging replaces are dropped and the v0.0.0 requirements
// become v0.MINOR.PATCH, as importers of k8s.io/kubernetes write them.
//
// Usage (from the repository root; scripts/adoption.sh does this):
//
//	go run ./scripts/adoption [-consumers scripts/consumers.txt]
//
// Then it builds a new go 1.25 module for each of the live-side modules
// (criinfo/cri, crishim, rollout; see importers), as a runtime shim or an installer
// starts one: `go mod init`, a file that uses the package, `go mod tidy`.
// Its go line must stay at most what importers lists (go 1.25.0 for
// criinfo/cri, the go line of Kubernetes 1.35 and k8s.io/cri-api v0.35), and
// for criinfo/cri the module graph (`go mod graph`) and the build list
// (`go list -m all`) must not name the test harness module (internal).
//
// It prints a table and exits 1 when any consumer is forced to upgrade or an
// importer fails its check.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/version"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

const (
	module      = "github.com/sandboxpin/sandboxpin"
	placeholder = "v0.0.0-00010101000000-000000000000"
)

// packages are the pure packages whose adoption is measured.
var packages = []string{"reference", "pin", "criinfo", "resolve"}

// modules are the modules (paths relative to the repository root) that
// provide those packages: reference and pin are modules of their own, so
// that a runtime importing only pin requires no file decoder (issue 45).
var modules = []string{"", "reference", "pin"}

type consumer struct{ path, version string }

// importerGo is the go line of the new importers: that of the oldest
// supported Kubernetes, 1.35 (k8s.io/kubernetes go.mod @v1.35.0 says go
// 1.25.0, as k8s.io/cri-api's @v0.35.0 and @v0.35.10 do).
const importerGo = "1.25.0"

// importer is a new go 1.25 module that imports one package of a live-side
// module.
type importer struct {
	pkg   string // the package, relative to the repository root
	use   string // a Go expression that uses it (the package name qualifies it)
	maxGo string // the highest go line tidy may leave
	why   string // why maxGo is above importerGo, if it is
	// harnessFree: the module graph must not name the internal module.
	harnessFree bool
}

var importers = []importer{
	{pkg: "criinfo/cri", use: "cri.MarkPinned", maxGo: importerGo, harnessFree: true},
	// crishim corrects StreamImages, which k8s.io/cri-api has from v0.36.0,
	// a go 1.26.0 module (see crishim/go.mod); its tests use the harness.
	{pkg: "crishim", use: "crishim.New", maxGo: "1.26.0", why: "k8s.io/cri-api v0.36 (StreamImages) says go 1.26.0"},
	// rollout talks to the API server through k8s.io/client-go v0.37, a go
	// 1.26.0 module (its go.mod @v0.37.2); its tests use the harness.
	{pkg: "rollout", use: "rollout.ParseWindow", maxGo: "1.26.0", why: "k8s.io/client-go v0.37 says go 1.26.0"},
}

// siblings are the module directories an importer's go.mod replaces with
// this checkout (a replace of a module it does not need is ignored).
var siblings = []string{"", "reference", "pin", "criinfo/cri", "crishim", "rollout", "internal"}

type importerResult struct {
	importer
	goAfter  string
	internal int // lines of `go mod graph` and `go list -m all` naming the internal module
	failed   string
}

type modFile struct {
	Go      string
	Require []struct {
		Path     string
		Version  string
		Indirect bool
	}
	Replace []struct {
		Old struct{ Path, Version string }
		New struct{ Path, Version string }
	}
}

type result struct {
	consumer
	goBefore, goAfter string
	upgraded          []string // "path old → new"
	added             int
}

func main() {
	list := flag.String("consumers", "scripts/consumers.txt", "file with one `MODULE VERSION` a line")
	flag.Parse()
	top, err := os.Getwd()
	if err != nil {
		fatal(err)
	}
	consumers, err := readConsumers(*list)
	if err != nil {
		fatal(err)
	}
	var results []result
	failed := false
	for _, c := range consumers {
		r, err := adopt(top, c)
		if err != nil {
			fatal(fmt.Errorf("%s@%s: %w", c.path, c.version, err))
		}
		if len(r.upgraded) > 0 || r.goAfter != r.goBefore {
			failed = true
		}
		results = append(results, r)
	}
	printTable(results)
	var irs []importerResult
	ifailed := false
	for _, im := range importers {
		r, err := importWith(top, im)
		if err != nil {
			fatal(fmt.Errorf("go %s importer of %s: %w", importerGo, im.pkg, err))
		}
		if r.failed != "" {
			ifailed = true
		}
		irs = append(irs, r)
	}
	printImporters(irs)
	if failed {
		fmt.Println("\nFAIL: adopting sandboxpin forces upgrades on the consumers above")
	}
	if ifailed {
		fmt.Println("\nFAIL: a new importer above fails its check")
	}
	if failed || ifailed {
		os.Exit(1)
	}
	fmt.Println("\nok: no consumer is forced to upgrade a requirement or its go directive; every new importer keeps its go line within its bound")
}

// importWith makes the go 1.25 module of im and tidies it (see the top).
func importWith(top string, im importer) (importerResult, error) {
	r := importerResult{importer: im}
	dir, err := os.MkdirTemp("", "importer-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	if _, err := goCmd(dir, "mod", "init", "example.com/importer"); err != nil {
		return r, err
	}
	edit := []string{"mod", "edit", "-go=" + importerGo}
	for _, m := range siblings {
		path := strings.TrimSuffix(module+"/"+m, "/")
		edit = append(edit, "-replace="+path+"@"+placeholder+"="+filepath.Join(top, m))
	}
	if _, err := goCmd(dir, edit...); err != nil {
		return r, err
	}
	path := module + "/" + im.pkg
	src := fmt.Sprintf("package main\n\nimport %q\n\nvar _ = %s\n\nfunc main() {}\n", path, im.use)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o600); err != nil {
		return r, err
	}
	// The module of the package at the placeholder, which the replaces
	// resolve, then tidy: what `go get` and `go mod tidy` do for a
	// published version.
	if _, err := goCmd(dir, "mod", "edit", "-require="+module+"/"+im.pkg+"@"+placeholder); err != nil {
		return r, err
	}
	if _, err := goCmd(dir, "mod", "tidy"); err != nil {
		return r, err
	}
	if _, err := goCmd(dir, "build", "./..."); err != nil {
		return r, err
	}
	after, err := readMod(dir)
	if err != nil {
		return r, err
	}
	r.goAfter = after.Go
	for _, args := range [][]string{{"mod", "graph"}, {"list", "-m", "all"}} {
		out, err := goCmd(dir, args...)
		if err != nil {
			return r, err
		}
		for _, line := range strings.Split(string(out), "\n") {
			for _, f := range strings.Fields(line) {
				if p, _, _ := strings.Cut(f, "@"); p == module+"/internal" {
					r.internal++
					break
				}
			}
		}
	}
	switch {
	case version.Compare("go"+r.goAfter, "go"+im.maxGo) > 0:
		r.failed = fmt.Sprintf("go %s → %s, above %s", importerGo, r.goAfter, im.maxGo)
	case im.harnessFree && r.internal > 0:
		r.failed = fmt.Sprintf("the module graph names %s/internal %d times", module, r.internal)
	}
	return r, nil
}

func printImporters(rs []importerResult) {
	fmt.Printf("\n| new go %s importer of | go directive after go mod tidy | %s/internal in its graph | check |\n", importerGo, module)
	fmt.Println("|---|---|---|---|")
	for _, r := range rs {
		goCol := r.goAfter + " (unchanged)"
		if r.goAfter != importerGo {
			goCol = importerGo + " → **" + r.goAfter + "**"
			if r.why != "" {
				goCol += " (" + r.why + ")"
			}
		}
		check := "ok"
		if r.failed != "" {
			check = "**FAIL**: " + r.failed
		}
		fmt.Printf("| %s | %s | %d lines | %s |\n", r.pkg, goCol, r.internal, check)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "adoption:", err)
	os.Exit(2)
}

func readConsumers(path string) ([]consumer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cs []consumer
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want `MODULE VERSION`, got %q", path, n, line)
		}
		cs = append(cs, consumer{f[0], f[1]})
	}
	return cs, s.Err()
}

// goCmd runs go in dir, outside any workspace, and returns its stdout.
func goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

func readMod(dir string) (*modFile, error) {
	out, err := goCmd(dir, "mod", "edit", "-json")
	if err != nil {
		return nil, err
	}
	var m modFile
	return &m, json.Unmarshal(out, &m)
}

func adopt(top string, c consumer) (result, error) {
	r := result{consumer: c}
	dir, err := os.MkdirTemp("", "adoption-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)

	out, err := goCmd(dir, "mod", "download", "-json", c.path+"@"+c.version)
	if err != nil {
		return r, err
	}
	var dl struct{ GoMod string }
	if err := json.Unmarshal(out, &dl); err != nil {
		return r, err
	}
	b, err := os.ReadFile(dl.GoMod)
	if err != nil {
		return r, err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), b, 0o600); err != nil { //nolint:gosec // G703: dir is our own temporary directory
		return r, err
	}
	before, err := readMod(dir)
	if err != nil {
		return r, err
	}
	// Local-path replaces point into the consumer's own tree, which is not
	// here. For kubernetes these are the staging modules: require them at
	// the published v0.MINOR.PATCH instead.
	var edits []string
	staging := "v0" + strings.TrimPrefix(c.version, "v1")
	for _, rep := range before.Replace {
		if rep.New.Version == "" && (strings.HasPrefix(rep.New.Path, "./") || strings.HasPrefix(rep.New.Path, "../")) {
			edits = append(edits, "-dropreplace="+rep.Old.Path)
			for _, req := range before.Require {
				if req.Path == rep.Old.Path && req.Version == "v0.0.0" {
					edits = append(edits, "-require="+req.Path+"@"+staging)
				}
			}
		}
	}
	if len(edits) > 0 {
		if _, err := goCmd(dir, append([]string{"mod", "edit"}, edits...)...); err != nil {
			return r, err
		}
		if before, err = readMod(dir); err != nil {
			return r, err
		}
	}

	// The consumer's code, as far as adoption goes: one file that imports
	// the pure packages.
	var src strings.Builder
	src.WriteString("package sandboxpinadoption\n\nimport (\n")
	for _, p := range packages {
		fmt.Fprintf(&src, "\t_ %q\n", module+"/"+p)
	}
	src.WriteString(")\n")
	if err := os.MkdirAll(filepath.Join(dir, "sandboxpinadoption"), 0o750); err != nil {
		return r, err
	}
	if err := os.WriteFile(filepath.Join(dir, "sandboxpinadoption", "adopt.go"), []byte(src.String()), 0o600); err != nil {
		return r, err
	}
	// go get of the modules (the packages' own versions are the modules'):
	// minimal version selection raises whatever our go.mod files require
	// above the consumer's versions, and the go directive with them.
	get := []string{"get"}
	for _, m := range modules {
		path := strings.TrimSuffix(module+"/"+m, "/")
		if _, err := goCmd(dir, "mod", "edit", "-replace="+path+"@"+placeholder+"="+filepath.Join(top, m)); err != nil {
			return r, err
		}
		get = append(get, path+"@"+placeholder)
	}
	if _, err := goCmd(dir, get...); err != nil {
		return r, err
	}
	// And the indirect requirements a build of the new imports needs.
	if _, err := goCmd(dir, "list", "-deps", "./sandboxpinadoption"); err != nil {
		return r, err
	}
	after, err := readMod(dir)
	if err != nil {
		return r, err
	}

	r.goBefore, r.goAfter = before.Go, after.Go
	if version.Compare("go"+r.goAfter, "go"+r.goBefore) < 0 {
		r.goAfter = r.goBefore // go get never lowers it; keep the table honest
	}
	old := make(map[string]string, len(before.Require))
	for _, req := range before.Require {
		old[req.Path] = req.Version
	}
	for _, req := range after.Require {
		v, ok := old[req.Path]
		switch {
		case req.Path == module || strings.HasPrefix(req.Path, module+"/"):
		case !ok:
			r.added++
		case compareSemver(req.Version, v) > 0:
			r.upgraded = append(r.upgraded, fmt.Sprintf("%s %s → %s", req.Path, v, req.Version))
		}
	}
	sort.Strings(r.upgraded)
	return r, nil
}

func printTable(rs []result) {
	fmt.Println("| consumer | go directive | forced upgrades | new requirements |")
	fmt.Println("|---|---|---|---|")
	for _, r := range rs {
		goCol := r.goBefore + " (unchanged)"
		if r.goAfter != r.goBefore {
			goCol = r.goBefore + " → **" + r.goAfter + "**"
		}
		fmt.Printf("| %s %s | %s | %d | %d |\n", r.path, r.version, goCol, len(r.upgraded), r.added)
	}
	for _, r := range rs {
		for _, u := range r.upgraded {
			fmt.Printf("  %s %s: %s\n", r.path, r.version, u)
		}
	}
}

// compareSemver compares two module versions (semantic versions with a
// leading v, pseudo-versions included) by the semver rules: -1, 0 or +1.
func compareSemver(a, b string) int {
	pa, pb := parseSemver(a), parseSemver(b)
	for i := range 3 {
		if c := compareNum(pa.nums[i], pb.nums[i]); c != 0 {
			return c
		}
	}
	switch {
	case pa.pre == pb.pre:
		return 0
	case pa.pre == "":
		return 1
	case pb.pre == "":
		return -1
	}
	ia, ib := strings.Split(pa.pre, "."), strings.Split(pb.pre, ".")
	for i := 0; i < len(ia) && i < len(ib); i++ {
		na, nb := isNum(ia[i]), isNum(ib[i])
		var c int
		switch {
		case na && nb:
			c = compareNum(ia[i], ib[i])
		case na:
			c = -1
		case nb:
			c = 1
		default:
			c = strings.Compare(ia[i], ib[i])
		}
		if c != 0 {
			return c
		}
	}
	return compareInt(len(ia), len(ib))
}

type semver struct {
	nums [3]string
	pre  string
}

func parseSemver(v string) semver {
	var s semver
	v = strings.TrimPrefix(v, "v")
	v, _, _ = strings.Cut(v, "+")
	v, s.pre, _ = strings.Cut(v, "-")
	parts := strings.SplitN(v, ".", 3)
	for i := range s.nums {
		s.nums[i] = "0"
		if i < len(parts) {
			s.nums[i] = parts[i]
		}
	}
	return s
}

func isNum(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// compareNum compares decimal strings without leading zeros by value.
func compareNum(a, b string) int {
	if c := compareInt(len(a), len(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func compareInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
