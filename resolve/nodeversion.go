package resolve

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
)

// ComponentVersion is one statement of a node component's version and
// where it was read. [Result.Versions] lists every one Resolve found for
// the runtime it resolved for, the kubelet and kubeadm, by authority: the
// live runtime's Version RPC, then Options, then each binary's Go build
// info, then the package database.
type ComponentVersion struct {
	// Component is "containerd", "cri-o", "cri-dockerd", "kubelet" or
	// "kubeadm".
	Component string `json:"component"`
	// Version is the version exactly as its source states it ("v2.4.2",
	// "1.6.20~ds1-1+deb12u3").
	Version string `json:"version"`
	// Origin is where it was read: "live Version RPC",
	// "Options.RuntimeVersion", "/usr/local/bin/containerd (Go build
	// info)" or "/var/lib/dpkg/status:1234".
	Origin string `json:"origin"`
	// Used reports whether Resolve used this statement for the component;
	// each component has at most one.
	Used bool `json:"used"`
}

// component is what tells a node component's version from the node.
type component struct {
	name     string   // "containerd", as in Result.Runtime and ComponentVersion
	binary   string   // its executable's file name
	modules  []string // the main modules it is built from
	xvars    []string // the -X variables its builds set to its version
	packages []string // its dpkg package names
}

// builtFrom reports whether an import path lies in one of c's modules.
func (c component) builtFrom(importPath string) bool {
	for _, m := range c.modules {
		if importPath == m || strings.HasPrefix(importPath, m+"/") {
			return true
		}
	}
	return false
}

// componentOf returns the component named name ("containerd", "cri-o",
// "cri-dockerd", "kubelet", "kubeadm"). The -X variables were read in the
// projects' Makefiles: containerd's VERSION in Makefile (v1.7.35:
// github.com/containerd/containerd/version.Version; v2.x: .../v2/version),
// cri-dockerd's CRI_DOCKERD_LDFLAGS (cmd/version.Version) and Kubernetes'
// hack/lib/version.sh (gitVersion in component-base and client-go). The
// packages are Debian's and Ubuntu's (containerd), Docker's (containerd.io),
// pkgs.k8s.io's (cri-o, kubelet, kubeadm) and Mirantis' (cri-dockerd).
func componentOf(name string) component {
	kube := component{
		modules: []string{"k8s.io/kubernetes"},
		xvars:   []string{"k8s.io/component-base/version.gitVersion", "k8s.io/client-go/pkg/version.gitVersion"},
	}
	switch name {
	case runtimeContainerd:
		return component{name: name, binary: "containerd",
			modules:  []string{"github.com/containerd/containerd", "github.com/containerd/containerd/v2"},
			xvars:    []string{"github.com/containerd/containerd/version.Version", "github.com/containerd/containerd/v2/version.Version"},
			packages: []string{"containerd", "containerd.io"}}
	case runtimeCRIO:
		return component{name: name, binary: "crio",
			modules:  []string{"github.com/cri-o/cri-o"},
			xvars:    []string{"github.com/cri-o/cri-o/internal/version.Version"},
			packages: []string{"cri-o"}}
	case runtimeCRIDockerd:
		return component{name: name, binary: "cri-dockerd",
			modules:  []string{"github.com/Mirantis/cri-dockerd"},
			xvars:    []string{"github.com/Mirantis/cri-dockerd/cmd/version.Version"},
			packages: []string{"cri-dockerd"}}
	case componentKubelet, componentKubeadm:
		kube.name, kube.binary, kube.packages = name, name, []string{name}
		return kube
	}
	return component{name: name}
}

const (
	componentKubelet = "kubelet"
	componentKubeadm = "kubeadm"
)

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

// factKind is the kind of source of a versionFact, by authority.
type factKind int

const (
	factLive    factKind = iota // the runtime's Version RPC
	factOption                  // Options.RuntimeVersion and the like
	factBinary                  // a binary's Go build info
	factPackage                 // the dpkg database
)

// versionFact is one statement of a component's version.
type versionFact struct {
	ComponentVersion
	kind   factKind
	use    string // the version to use, in a form parseVersion reads
	detail string // what in the source says so ("module k8s.io/kubernetes v1.37.2", "package containerd")
}

// versionChoice is the version Resolve uses for a component.
type versionChoice struct {
	version string // "" when unknown
	fact    versionFact
}

// from says where a version read from the node came from, for an Origin
// such as "default of containerd 1.6.20 (version from /var/lib/dpkg/status:5)";
// it is "" for a version given in Options or by the live runtime.
func (c versionChoice) from() string {
	if c.version == "" || c.fact.kind < factBinary {
		return ""
	}
	return " (version from " + c.fact.Origin + ")"
}

// versions decides the versions of the runtime, the kubelet and kubeadm
// from the live runtime, Options and the node's files (the binaries' Go
// build info and the package database), and notes where they disagree.
// It returns only a limit passed or a cancellation.
func (r *resolver) versions(b *budget) error {
	if r.runtime != "" {
		var facts []versionFact
		// No cri-dockerd release states its own version over CRI:
		// criinfo/cri moves the Docker Engine's to EngineVersion, and a
		// Live of another making may still carry it in RuntimeVersion
		// (as criinfo/cri did before issue 20), so for cri-dockerd the
		// live answer is never used.
		if r.live != nil && r.live.RuntimeVersion != "" && r.runtime != runtimeCRIDockerd {
			facts = append(facts, r.fact(r.runtime, r.live.RuntimeVersion, "live Version RPC", factLive))
		}
		if v := r.opts.RuntimeVersion; v != "" {
			facts = append(facts, r.fact(r.runtime, v, "Options.RuntimeVersion", factOption))
		}
		first := ""
		if r.runtime == runtimeCRIDockerd && r.crid != nil && r.crid.ExecStart != nil {
			first = execPath(r.crid.ExecStart.Value)
		}
		node, err := r.nodeVersions(b, componentOf(r.runtime), first)
		if err != nil {
			return err
		}
		r.runtimeChoice = r.decide(append(facts, node...))
		r.runtimeVer = r.runtimeChoice.version
		if engine := engineVersion(r.live); engine != "" && r.runtime == runtimeCRIDockerd && r.runtimeVer == "" {
			// cri-dockerd answers the Version RPC with RuntimeName "docker"
			// and the Docker Engine's version (core/docker_service.go,
			// Version, at v0.3.16 and v0.4.4: RuntimeVersion: v.Version of
			// Docker's /version; seen live, TestLiveCRIDockerdVersion).
			r.note("cri-dockerd's version is unknown: its CRI Version RPC reports the Docker Engine's version (%s), "+
				"not cri-dockerd's, and no cri-dockerd binary or package on the node states one; give cri-dockerd's own version "+
				"(`cri-dockerd --version`; --runtime-version, Options.RuntimeVersion) for its default image and pinning", engine)
		}
	}
	for _, c := range []struct {
		name string
		opt  string
		orig string
		dst  *versionChoice
	}{
		{componentKubelet, r.opts.KubeletVersion, "Options.KubeletVersion", &r.kubeletVer},
		{componentKubeadm, r.opts.KubeadmVersion, "Options.KubeadmVersion", &r.kubeadmVer},
	} {
		var facts []versionFact
		if c.opt != "" {
			facts = append(facts, r.fact(c.name, c.opt, c.orig, factOption))
		}
		node, err := r.nodeVersions(b, componentOf(c.name), "")
		if err != nil {
			return err
		}
		*c.dst = r.decide(append(facts, node...))
	}
	return nil
}

func (r *resolver) fact(comp, v, origin string, kind factKind) versionFact {
	return versionFact{ComponentVersion: ComponentVersion{Component: comp, Version: v, Origin: origin}, kind: kind, use: v}
}

// decide picks the first of facts (they come by authority), records them
// all in Result.Versions and notes each that disagrees with the one used.
func (r *resolver) decide(facts []versionFact) versionChoice {
	if len(facts) == 0 {
		return versionChoice{}
	}
	used := facts[0]
	used.Used = true
	r.res.Versions = append(r.res.Versions, used.ComponentVersion)
	uv, uerr := parseVersion(used.use)
	for _, f := range facts[1:] {
		r.res.Versions = append(r.res.Versions, f.ComponentVersion)
		if used.kind == factLive && f.kind == factOption {
			if f.Version != used.Version {
				r.note("Options.RuntimeVersion is %s but the live %s reports %s; the live version is used",
					f.Version, used.Component, used.Version)
			}
			continue
		}
		fv, ferr := parseVersion(f.use)
		if uerr != nil || ferr != nil || fv == uv {
			continue
		}
		why := ""
		switch {
		case used.kind == factBinary && f.kind == factPackage:
			why = ": the packaged binary was replaced, or another one is installed and found first on the PATH"
		case used.kind == factBinary && f.kind == factBinary:
			why = ": two different binaries are installed; the one the service's unit starts (ExecStart) is the one that runs"
		case used.kind <= factOption:
			why = ": make sure the version given is this node's"
		}
		r.note("%s's version differs between sources: %s says %s, %s says %s; %s is used%s", used.Component,
			used.label(), used.Version, f.label(), f.Version, used.Version, why)
	}
	return versionChoice{version: used.use, fact: used}
}

// label names the source of f in a note: its Origin, and for a package
// the package's name ("/var/lib/dpkg/status:8 (package containerd)").
func (f versionFact) label() string {
	if f.kind == factPackage {
		return f.Origin + " (" + f.detail + ")"
	}
	return f.Origin
}

// execPath returns the fs path of the executable an ExecStart= value names
// ("-/usr/bin/cri-dockerd --flag" gives "usr/bin/cri-dockerd"), or "" when
// it names none by an absolute path without variables.
func execPath(execStart string) string {
	words, err := splitCommand(execStart)
	if err != nil || len(words) == 0 {
		return ""
	}
	p := words[0].Text
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "$") {
		return ""
	}
	name, ok := fsPath(p)
	if !ok || name == "." {
		return ""
	}
	return name
}

// nodeVersions reads comp's version from the node: the Go build info of
// its binary at first (the path a unit's ExecStart names, if any) and in
// each of binaryDirs, then its packages in the dpkg database. A binary
// that states no version is a note. Only a limit passed or a cancellation
// is an error.
func (r *resolver) nodeVersions(b *budget, comp component, first string) ([]versionFact, error) {
	src := b.source()
	var paths []string
	if first != "" {
		paths = append(paths, first)
	}
	for _, d := range binaryDirs() {
		if p := path.Join(d, comp.binary); !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	var facts []versionFact
	for _, p := range paths {
		if !r.dirExists(src, path.Dir(p)) {
			continue
		}
		bi, err := readBuildInfo(src, p)
		if berr := b.failed(); berr != nil {
			return nil, berr
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			r.note("%s: %v; %s's version was not read from it", nodePath(p), nodefs.UnwrapPathError(err), comp.name)
			continue
		}
		v, detail, err := binaryVersion(bi, comp)
		if err != nil && r.opts.BinaryVersion != nil {
			if f, ok := r.askBinary(b, comp, p, err); ok {
				facts = append(facts, f)
			}
			continue
		}
		if err != nil {
			r.note("%s has Go build info, but %v; %s's version was not read from it", nodePath(p), err, comp.name)
			continue
		}
		f := r.fact(comp.name, v, nodePath(p)+" (Go build info)", factBinary)
		f.detail = detail
		facts = append(facts, f)
	}
	pkgs, err := r.packages(b)
	if err != nil {
		return nil, err
	}
	for _, name := range comp.packages {
		for _, p := range pkgs {
			if p.Name != name {
				continue
			}
			origin := fmt.Sprintf("%s:%d", nodePath(dpkgStatus), p.Line)
			up := dpkgUpstream(p.Version)
			if _, err := parseVersion(up); err != nil {
				r.note("%s: package %s has version %q, which is not a release version sandboxpin reads; %s's version was not read from it",
					origin, name, p.Version, comp.name)
				continue
			}
			f := r.fact(comp.name, p.Version, origin, factPackage)
			f.use, f.detail = up, "package "+name
			facts = append(facts, f)
		}
	}
	return facts, nil
}

// dirExists reports whether dir is a directory in the root, asking once
// per Resolve call: a root without /usr/local/bin then costs one lookup,
// not one per component (a failed lookup through DirFS costs tens of
// microseconds).
func (r *resolver) dirExists(src *sourceFS, dir string) bool {
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
// than a node file may be is a note; a malformed one is a *ConfigError.
func (r *resolver) packages(b *budget) ([]dpkgPackage, error) {
	if r.dpkgRead {
		return r.dpkg, nil
	}
	r.dpkgRead = true
	data, err := readFile(b.source(), dpkgStatus)
	if berr := b.failed(); berr != nil {
		return nil, berr
	}
	if errors.Is(err, ErrLimit) {
		r.note("%v: the package database was not read", err)
		return nil, nil
	}
	if err != nil || data == nil {
		return nil, err
	}
	r.dpkg, err = parseDpkgStatus(data, wantPackage)
	return r.dpkg, err
}

// engineVersion is the Docker Engine's version a live cri-dockerd reported:
// EngineVersion from criinfo/cri, or RuntimeVersion from a Live that still
// puts it there. "" without a live answer.
func engineVersion(live *criinfo.Info) string {
	if live == nil {
		return ""
	}
	if live.EngineVersion != "" {
		return live.EngineVersion
	}
	return live.RuntimeVersion
}

// askBinary asks Options.BinaryVersion for the version of comp's binary p,
// whose build info states none (why), and notes what goes wrong.
func (r *resolver) askBinary(b *budget, comp component, p string, why error) (versionFact, bool) {
	v, err := r.opts.BinaryVersion(b.ctx, comp.name, nodePath(p))
	if err == nil {
		if _, perr := parseVersion(v); perr != nil {
			err = fmt.Errorf("%q is not a release version", v)
		}
	}
	if err != nil {
		r.note("%s has Go build info, but %v, and asking the binary failed: %v; %s's version was not read from it",
			nodePath(p), why, err, comp.name)
		return versionFact{}, false
	}
	return r.fact(comp.name, v, nodePath(p)+" (--version)", factBinary), true
}
