package nodeversion

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// Component is what tells a node component's version from the node.
type Component struct {
	Name     string   // "containerd", as in resolve.Result.Runtime and resolve.ComponentVersion
	Binary   string   // its executable's file name
	Modules  []string // the main modules it is built from
	XVars    []string // the -X variables its builds set to its version
	Packages []string // its dpkg package names
}

// builtFrom reports whether an import path lies in one of c's modules.
func (c Component) builtFrom(importPath string) bool {
	for _, m := range c.Modules {
		if importPath == m || strings.HasPrefix(importPath, m+"/") {
			return true
		}
	}
	return false
}

// The components that are not runtimes.
const (
	Kubelet = "kubelet"
	Kubeadm = "kubeadm"
)

// Of returns the component named name ("containerd", "cri-o",
// "cri-dockerd", "kubelet", "kubeadm"). The -X variables were read in the
// projects' Makefiles: containerd's VERSION in Makefile (v1.7.35:
// github.com/containerd/containerd/version.Version; v2.x: .../v2/version),
// cri-dockerd's CRI_DOCKERD_LDFLAGS (cmd/version.Version) and Kubernetes'
// hack/lib/version.sh (gitVersion in component-base and client-go). The
// packages are Debian's and Ubuntu's (containerd), Docker's (containerd.io),
// pkgs.k8s.io's (cri-o, kubelet, kubeadm) and Mirantis' (cri-dockerd).
func Of(name string) Component {
	switch name {
	case releases.Containerd:
		return Component{Name: name, Binary: "containerd",
			Modules:  []string{"github.com/containerd/containerd", "github.com/containerd/containerd/v2"},
			XVars:    []string{"github.com/containerd/containerd/version.Version", "github.com/containerd/containerd/v2/version.Version"},
			Packages: []string{"containerd", "containerd.io"}}
	case releases.CRIO:
		return Component{Name: name, Binary: "crio",
			Modules:  []string{"github.com/cri-o/cri-o"},
			XVars:    []string{"github.com/cri-o/cri-o/internal/version.Version"},
			Packages: []string{"cri-o"}}
	case releases.CRIDockerd:
		return Component{Name: name, Binary: "cri-dockerd",
			Modules:  []string{"github.com/Mirantis/cri-dockerd"},
			XVars:    []string{"github.com/Mirantis/cri-dockerd/cmd/version.Version"},
			Packages: []string{"cri-dockerd"}}
	case Kubelet, Kubeadm:
		return Component{Name: name, Binary: name, Packages: []string{name},
			Modules: []string{"k8s.io/kubernetes"},
			XVars:   []string{"k8s.io/component-base/version.gitVersion", "k8s.io/client-go/pkg/version.gitVersion"}}
	}
	return Component{Name: name}
}

// wantPackage reports whether the dpkg package name is one whose version
// Resolve may need.
func wantPackage(name string) bool {
	switch name {
	case "containerd", "containerd.io", "cri-o", "cri-dockerd", "kubelet", "kubeadm":
		return true
	}
	return false
}

// binaryDirs are the directories searched for a component's binary, in
// the order of systemd's default PATH (/usr/local/bin before /usr/bin),
// then /opt/bin (Flatcar and other read-only /usr systems).
func binaryDirs() []string { return []string{"usr/local/bin", "usr/bin", "opt/bin"} }

// Kind is the kind of source of a Fact, by authority.
type Kind int

// The kinds, most authoritative first.
const (
	Live    Kind = iota // the runtime's Version RPC
	Option              // Options.RuntimeVersion and the like
	Binary              // a binary's Go build info, or what it prints
	Package             // the dpkg database
)

// Fact is one statement of a component's version.
type Fact struct {
	Component string // Component.Name
	Version   string // exactly as its source states it
	Origin    string // where it was read ("/usr/bin/containerd (Go build info)")
	Kind      Kind
	Use       string // the version to use, in a form releases.ParseVersion reads
	Detail    string // what in the source says so ("module k8s.io/kubernetes v1.37.2", "package containerd")
}

// NewFact is a Fact whose Version is used as it is.
func NewFact(comp, v, origin string, kind Kind) Fact {
	return Fact{Component: comp, Version: v, Origin: origin, Kind: kind, Use: v}
}

// Label names the source of f in a note: its Origin, and for a package
// the package's name ("/var/lib/dpkg/status:8 (package containerd)").
func (f Fact) Label() string {
	if f.Kind == Package {
		return f.Origin + " (" + f.Detail + ")"
	}
	return f.Origin
}

// Choice is the version used for a component.
type Choice struct {
	Version string // "" when unknown
	Fact    Fact   // its statement
}

// From says where a version read from the node came from, for an Origin
// such as "default of containerd 1.6.20 (version from /var/lib/dpkg/status:5)";
// it is "" for a version given in Options or by the live runtime.
func (c Choice) From() string {
	if c.Version == "" || c.Fact.Kind < Binary {
		return ""
	}
	return " (version from " + c.Fact.Origin + ")"
}

// Decide picks the first of facts (they come by authority) and notes each
// other that disagrees with it, saying why it may.
func Decide(facts []Fact, note func(format string, args ...any)) Choice {
	if len(facts) == 0 {
		return Choice{}
	}
	used := facts[0]
	uv, uerr := releases.ParseVersion(used.Use)
	for _, f := range facts[1:] {
		if used.Kind == Live && f.Kind == Option {
			if f.Version != used.Version {
				note("Options.RuntimeVersion is %s but the live %s reports %s; the live version is used",
					f.Version, used.Component, used.Version)
			}
			continue
		}
		fv, ferr := releases.ParseVersion(f.Use)
		if uerr != nil || ferr != nil || fv.Same(uv) {
			continue
		}
		why := ""
		switch {
		case used.Kind == Binary && f.Kind == Package:
			why = ": the packaged binary was replaced, or another one is installed and found first on the PATH"
		case used.Kind == Binary && f.Kind == Binary:
			why = ": two different binaries are installed; the one the service's unit starts (ExecStart) is the one that runs"
		case used.Kind <= Option:
			why = ": make sure the version given is this node's"
		}
		note("%s's version differs between sources: %s says %s, %s says %s; %s is used%s", used.Component,
			used.Label(), used.Version, f.Label(), f.Version, used.Version, why)
	}
	return Choice{Version: used.Use, Fact: used}
}

// Reader reads components' versions from one node's files, through one
// Resolve call's budget. It reads the dpkg database and looks up each
// binary directory at most once.
type Reader struct {
	budget *nodefs.Budget
	ask    func(ctx context.Context, component, path string) (string, error)
	note   func(format string, args ...any)

	dirs     map[string]bool // binary directories' existence, once looked up
	dpkg     []dpkgPackage   // the packages of interest, once read
	dpkgRead bool
}

// NewReader returns a Reader over b. ask, when not nil, is asked for the
// version of a binary whose Go build info states none (resolve's
// Options.BinaryVersion); note records what could not be read and why.
func NewReader(b *nodefs.Budget, ask func(ctx context.Context, component, path string) (string, error),
	note func(format string, args ...any)) *Reader {
	return &Reader{budget: b, ask: ask, note: note}
}

// Read reads comp's version from the node: the Go build info of its binary
// at first (the fs path a unit's ExecStart names, if any) and in each of
// binaryDirs, then its packages in the dpkg database. A binary that states
// no version is a note. Only a limit passed or a cancellation is an error.
func (r *Reader) Read(comp Component, first string) ([]Fact, error) {
	src := r.budget.Source()
	var paths []string
	if first != "" {
		paths = append(paths, first)
	}
	for _, d := range binaryDirs() {
		if p := path.Join(d, comp.Binary); !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	var facts []Fact
	for _, p := range paths {
		if !r.dirExists(src, path.Dir(p)) {
			continue
		}
		bi, err := readBuildInfo(src, p)
		if berr := r.budget.Failed(); berr != nil {
			return nil, berr
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			r.note("%s: %v; %s's version was not read from it", nodefs.NodePath(p), nodefs.UnwrapPathError(err), comp.Name)
			continue
		}
		v, detail, err := binaryVersion(bi, comp)
		if err != nil && r.ask != nil {
			if f, ok := r.askBinary(comp, p, err); ok {
				facts = append(facts, f)
			}
			continue
		}
		if err != nil {
			r.note("%s has Go build info, but %v; %s's version was not read from it", nodefs.NodePath(p), err, comp.Name)
			continue
		}
		f := NewFact(comp.Name, v, nodefs.NodePath(p)+" (Go build info)", Binary)
		f.Detail = detail
		facts = append(facts, f)
	}
	pkgs, err := r.packages()
	if err != nil {
		return nil, err
	}
	for _, name := range comp.Packages {
		for _, p := range pkgs {
			if p.Name != name {
				continue
			}
			origin := fmt.Sprintf("%s:%d", nodefs.NodePath(dpkgStatus), p.Line)
			up, err := releases.ParseVersion(p.Version)
			if err != nil {
				r.note("%s: package %s has version %q, which is not a release version sandboxpin reads; %s's version was not read from it",
					origin, name, p.Version, comp.Name)
				continue
			}
			f := NewFact(comp.Name, p.Version, origin, Package)
			f.Use, f.Detail = up.String(), "package "+name
			facts = append(facts, f)
		}
	}
	return facts, nil
}

// dirExists reports whether dir is a directory in the root, asking once
// per Reader: a root without /usr/local/bin then costs one lookup, not one
// per component (a failed lookup through DirFS costs tens of
// microseconds).
func (r *Reader) dirExists(src *nodefs.Source, dir string) bool {
	if ok, seen := r.dirs[dir]; seen {
		return ok
	}
	fi, err := src.Stat(dir)
	ok := err == nil && fi.IsDir()
	if r.dirs == nil {
		r.dirs = map[string]bool{}
	}
	r.dirs[dir] = ok
	return ok
}

// packages returns the installed packages of the dpkg database that
// wantPackage selects, reading it on the first call. A database larger
// than a node file may be is a note; a malformed one is a
// *nodefs.ConfigError.
func (r *Reader) packages() ([]dpkgPackage, error) {
	if r.dpkgRead {
		return r.dpkg, nil
	}
	r.dpkgRead = true
	data, err := nodefs.ReadFile(r.budget.Source(), dpkgStatus)
	if berr := r.budget.Failed(); berr != nil {
		return nil, berr
	}
	if errors.Is(err, nodefs.ErrLimit) {
		r.note("%v: the package database was not read", err)
		return nil, nil
	}
	if err != nil || data == nil {
		return nil, err
	}
	r.dpkg, err = parseDpkgStatus(data, wantPackage)
	return r.dpkg, err
}

// askBinary asks for the version of comp's binary p, whose build info
// states none (why), and notes what goes wrong.
func (r *Reader) askBinary(comp Component, p string, why error) (Fact, bool) {
	v, err := r.ask(r.budget.Context(), comp.Name, nodefs.NodePath(p))
	if err == nil {
		if _, perr := releases.ParseVersion(v); perr != nil {
			err = fmt.Errorf("%q is not a release version", v)
		}
	}
	if err != nil {
		r.note("%s has Go build info, but %v, and asking the binary failed: %v; %s's version was not read from it",
			nodefs.NodePath(p), why, err, comp.Name)
		return Fact{}, false
	}
	return NewFact(comp.Name, v, nodefs.NodePath(p)+" (--version)", Binary), true
}
