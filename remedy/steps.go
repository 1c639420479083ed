package remedy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// labelCommand is the command that labels the image containerd stores as
// name with containerd's pinned label (PinnedImageLabelKey and
// PinnedImageLabelValue, pkg/cri/labels/labels.go @v1.7.35 and
// internal/cri/labels/labels.go @v2.4.2; see resolve's
// ContainerdPinnedLabel release fact). Where k3s or RKE2 write the
// containerd config, it runs their ctr and also removes their own pinned
// label, which they clear containerd's with at every start
// (resolve.Result.LabelFix).
func (p *planner) labelCommand(name string) string {
	const label = "io.cri-containerd.pinned=pinned"
	for _, c := range p.res.Candidates {
		if prog := generated(c.Path); prog != "" && c.Source == resolve.SourceContainerdConfig {
			ctr := prog + " ctr" // k3s's own subcommand finds its socket
			if prog == "rke2" {
				// RKE2's documentation, "Debugging".
				ctr = "/var/lib/rancher/rke2/bin/ctr --address /run/k3s/containerd/containerd.sock"
			}
			return ctr + " -n k8s.io images label " + name + " " + label + " io.cattle." + prog + ".pinned="
		}
	}
	return "ctr -n k8s.io images label " + name + " " + label
}

// pull records the step that stores the image under name: a pull through
// CRI, or, where the same image is stored under another spelling from (a
// registry alias or Docker Hub form of name), a tag of it with the
// runtime's own tool.
func (p *planner) pull(k resolve.Kind, name, from, msg string) {
	for _, s := range p.steps {
		if s.Action == resolve.ActionPull && s.Image == name {
			return
		}
	}
	s := Step{Action: resolve.ActionPull, Answers: k, Component: resolve.Component(p.res.Runtime), Image: name, From: from,
		Commands: []string{"crictl pull " + name}, Message: msg}
	if from != "" && !p.res.Aliases().Equal(from, name) {
		from = "" // another image: a tag would give it a name it does not have
	}
	s.From = from
	if from != "" {
		tag := map[string]string{"containerd": "ctr -n k8s.io images tag", "cri-o": "podman tag", "cri-dockerd": "docker tag"}[string(p.res.Runtime)]
		if tag != "" {
			s.Alternatives = append(s.Alternatives, []string{tag + " " + from + " " + name})
		}
	}
	if msg == "" {
		s.Message = fmt.Sprintf("store the sandbox image under %s before %s restarts: it looks the image up by the name as configured", name, p.res.Runtime)
		if from != "" {
			s.Message += fmt.Sprintf("; a node that cannot pull tags the stored %s", from)
		}
	}
	p.steps = append(p.steps, s)
}

// stored reports whether the runtime lists an image under exactly name.
func (p *planner) stored(name string) bool {
	if p.v == nil {
		return false
	}
	for _, img := range p.v.Images {
		if img.Name == name {
			return true
		}
	}
	return false
}

// storedAs is a name the sandbox image is stored under, "" when unknown.
func (p *planner) storedAs() string {
	if p.v == nil {
		return ""
	}
	if p.v.Sandbox.StoredAs != "" {
		return p.v.Sandbox.StoredAs
	}
	if p.v.Sandbox.Present {
		return p.res.SandboxImage
	}
	return ""
}

// labelOn1x makes the label of the newly configured sandbox image a
// required step on containerd 1.x, where a restart is not enough: 1.x
// labels an image pinned when it stores the name (a CRI pull, an import)
// under the config of that moment, and at start relabels only the images
// it does not manage yet (pkg/cri/server/image_pull.go and restart.go at
// v1.7.35), so an image stored before the edit stays unpinned (seen live
// on 1.7.35 in TestFixUnderGC, internal/kubelettest). containerd 2.x
// relabels every image at start (CheckImages, internal/cri/server/images
// at v2.4.2). Where the label does not pin (before 1.6.22 and 1.7.3) the
// result's own fixes say what does.
func (p *planner) labelOn1x(answers resolve.Kind) {
	if resolve.Component(p.res.Runtime) != resolve.ComponentContainerd {
		return
	}
	major := ""
	for _, v := range p.res.Versions {
		if v.Used && v.Component == resolve.ComponentContainerd {
			major, _, _ = strings.Cut(strings.TrimPrefix(v.Version, "v"), ".")
		}
	}
	if major != "1" {
		return
	}
	f, ok := p.res.LabelFix(p.sandbox, answers)
	if !ok {
		return
	}
	p.required = p.sandbox
	if slices.ContainsFunc(p.steps, func(s Step) bool { return s.Action == resolve.ActionLabel && s.Image == p.sandbox }) {
		return
	}
	f.Message = "containerd 1.x pins an image it stored before its config named it only once labelled (a restart does not relabel it): " + f.Message
	p.steps = append(p.steps, Step{Action: resolve.ActionLabel, Answers: f.Answers, Component: resolve.ComponentContainerd, Image: p.sandbox,
		Commands: []string{p.labelCommand(p.sandbox)}, Message: f.Message})
}

// restartKeeps says what a restart of each component does to running
// containers.
var restartKeeps = map[resolve.Component]string{
	"containerd":  "running containers keep running: their shims outlive containerd",
	"cri-o":       "running containers keep running: conmon outlives CRI-O",
	"cri-dockerd": "running containers keep running: Docker Engine runs them",
	"kubelet":     "running pods keep running",
}

// unitOf is the systemd unit of a component.
func unitOf(comp resolve.Component, res *resolve.Result) string {
	switch comp {
	case "cri-o":
		return "crio.service"
	case "cri-dockerd":
		return "cri-docker.service"
	case "kubelet":
		return "kubelet.service"
	case "containerd":
		for _, c := range res.Candidates {
			if prog := generated(c.Path); prog != "" {
				return prog + ".service"
			}
		}
		return "containerd.service"
	}
	return string(comp)
}
