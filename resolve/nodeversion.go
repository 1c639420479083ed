package resolve

import (
	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/resolve/internal/config"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodeversion"
)

// ComponentVersion is one statement of a node component's version and
// where it was read. [Result.Versions] lists every one Resolve found for
// the runtime it resolved for, the kubelet and kubeadm, by authority: the
// live runtime's Version RPC, then Options, then each binary's Go build
// info, then the package database.
type ComponentVersion struct {
	// Component is "containerd", "cri-o", "cri-dockerd", "kubelet" or
	// "kubeadm".
	Component Component `json:"component"`
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
	// Assumed reports a statement of another thing's version taken for
	// this component's, such as a kubeadm config's kubernetesVersion for
	// kubeadm's.
	Assumed bool `json:"assumed,omitempty"`
}

// versions decides the versions of the runtime, the kubelet and kubeadm
// from the live runtime, Options and the node's files (the binaries' Go
// build info and the package database), and notes where they disagree.
// It returns only a limit passed or a cancellation.
func (r *resolver) versions(b *nodefs.Budget) error {
	nodes := nodeversion.NewReader(b, r.opts.BinaryVersion, r.versionNote)
	if r.runtime != "" {
		var facts []nodeversion.Fact
		// No cri-dockerd release states its own version over CRI:
		// criinfo/cri moves the Docker Engine's to EngineVersion, and a
		// Live of another making may still carry it in RuntimeVersion
		// (as criinfo/cri did before it had EngineVersion), so for cri-dockerd the
		// live answer is never used.
		if r.live != nil && r.live.RuntimeVersion != "" && r.runtime != runtimeCRIDockerd {
			facts = append(facts, nodeversion.NewFact(string(r.runtime), r.live.RuntimeVersion, "live Version RPC", nodeversion.Live))
		}
		if v := r.opts.RuntimeVersion; v != "" {
			facts = append(facts, nodeversion.NewFact(string(r.runtime), v, "Options.RuntimeVersion", nodeversion.Option))
		}
		first := r.rke2Binary(string(r.runtime))
		if r.runtime == runtimeCRIDockerd && r.crid != nil && r.crid.ExecStart != nil {
			first = config.ExecPath(r.crid.ExecStart.Value)
		}
		node, err := nodes.Read(nodeversion.Of(string(r.runtime)), first)
		if err != nil {
			return err
		}
		r.runtimeChoice = r.decide(append(facts, node...))
		r.runtimeVer = r.runtimeChoice.Version
		if engine := engineVersion(r.live); engine != "" && r.runtime == runtimeCRIDockerd && r.runtimeVer == "" {
			// cri-dockerd answers the Version RPC with RuntimeName "docker"
			// and the Docker Engine's version (core/docker_service.go,
			// Version, at v0.3.16 and v0.4.4: RuntimeVersion: v.Version of
			// Docker's /version; seen live, TestLiveCRIDockerdVersion).
			r.note(withOrigin("", Note{Kind: KindVersionUnknown, Component: runtimeCRIDockerd}),
				"cri-dockerd's version is unknown: its CRI Version RPC reports the Docker Engine's version (%s), "+
					"not cri-dockerd's, and no cri-dockerd binary or package on the node states one; give cri-dockerd's own version "+
					"(as `cri-dockerd --version` prints it) for its default image and pinning", engine)
		}
	}
	for _, c := range []struct {
		name string
		opt  string
		orig string
		dst  *nodeversion.Choice
	}{
		{nodeversion.Kubelet, r.opts.KubeletVersion, "Options.KubeletVersion", &r.kubeletVer},
		{nodeversion.Kubeadm, r.opts.KubeadmVersion, "Options.KubeadmVersion", &r.kubeadmVer},
	} {
		var facts []nodeversion.Fact
		if c.opt != "" {
			facts = append(facts, nodeversion.NewFact(c.name, c.opt, c.orig, nodeversion.Option))
		}
		node, err := nodes.Read(nodeversion.Of(c.name), r.rke2Binary(c.name))
		if err != nil {
			return err
		}
		*c.dst = r.decide(append(facts, node...))
	}
	return nil
}

// rke2Binary is the fs path of component's binary on a node whose
// containerd config RKE2 generates, "" elsewhere: RKE2 runs the containerd
// and kubelet of its runtime image, unpacked under
// /var/lib/rancher/rke2/data/<digest>/bin and linked from
// /var/lib/rancher/rke2/bin (pkg/bootstrap/bootstrap.go symlinkBinDir,
// Dockerfile copying rancher/hardened-containerd's containerd and the
// kubelet into the image's /bin, rke2 @v1.34.10+rke2r1). k3s runs them
// inside its own binary, whose build info states k3s's module.
func (r *resolver) rke2Binary(component string) string {
	if r.ctr == nil || r.ctr.Flavor != "RKE2" || (component != string(runtimeContainerd) && component != nodeversion.Kubelet) {
		return ""
	}
	return "var/lib/rancher/rke2/bin/" + nodeversion.Of(component).Binary
}

// decide records facts in Result.Versions, the first one used, and
// returns the choice among them.
func (r *resolver) decide(facts []nodeversion.Fact) nodeversion.Choice {
	for i, f := range facts {
		r.res.Versions = append(r.res.Versions, ComponentVersion{Component: Component(f.Component), Version: f.Version, Origin: f.Origin, Used: i == 0})
	}
	return nodeversion.Decide(facts, r.versionNote)
}

// versionNote records a note of package nodeversion on a version source.
func (r *resolver) versionNote(format string, args ...any) {
	r.note(withOrigin("", Note{Kind: KindVersionSource}), format, args...)
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
