package resolve

import (
	"fmt"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// LabelFix returns the fix ([ActionLabel]) that makes the runtime pin the
// image it stores as name by the runtime's own pinned label, answering the
// finding of kind answers, and false where no release fact says the
// runtime reads such a label: any runtime but containerd, containerd
// before 1.6.22 and 1.7.3, a version not known, or an empty name. For
// example, on containerd 2.4.2 LabelFix("k8s.gcr.io/pause:3.10.1", k)
// asks for `ctr -n k8s.io images label k8s.gcr.io/pause:3.10.1
// io.cri-containerd.pinned=pinned`. containerd then reports the image
// pinned whatever its config names, across restarts and CRI pulls (the
// release facts ContainerdPinnedLabel and ContainerdPinnedLabelAtStart):
// the fix for a node whose config cannot be changed, or an alternative to
// the config edit.
//
// On a node whose containerd config k3s or RKE2 generate, the message also
// says what their start does: they clear containerd's pinned label, with
// their own io.cattle.k3s.pinned (io.cattle.rke2.pinned), from every image
// that carries their own, and label again only what they import from
// agent/images (an unchanged archive too, since k3s#14266); the fix
// therefore also removes their own label. Where this was read:
// docs/release-facts.md, "Upstream history".
func (r *Result) LabelFix(name string, answers Kind) (Fix, bool) {
	if r == nil || name == "" || Component(r.Runtime) != runtimeContainerd {
		return Fix{}, false
	}
	ver := ""
	for _, v := range r.Versions {
		if v.Used && v.Component == Component(r.Runtime) {
			ver = v.Version
		}
	}
	v, err := parseVersion(ver)
	if err != nil {
		return Fix{}, false
	}
	note, ok := releases.ContainerdPinnedLabel.Holds(v)
	if !ok {
		if note, ok = releases.ContainerdPinnedLabelAtStart.Holds(v); !ok {
			return Fix{}, false
		}
	}
	f := Fix{Answers: answers, Action: ActionLabel, To: name, Component: runtimeContainerd, Urgency: UrgencyUnprotected,
		Message: fmt.Sprintf(note, ver, name, name)}
	if prog := r.generatedBy(); prog != "" {
		f.Message += fmt.Sprintf("; %[1]s clears that label at every start from the images that also carry its own io.cattle.%[1]s.pinned "+
			"(those it imported from agent/images) and labels again only what it imports: remove its label with the same command "+
			"(`%[4]s -n k8s.io images label %[2]s %[3]s io.cattle.%[1]s.pinned=`), or keep the image's archive in "+
			"/var/lib/rancher/%[1]s/agent/images, which %[1]s before k3s#14266 labels again only when the archive changed (k3s#14265)",
			prog, name, containerdPinnedLabel, ctrOf(prog))
	}
	return f, true
}

// containerdPinnedLabel is the label containerd's CRI plugin reads into
// Image.pinned (PinnedImageLabelKey=PinnedImageLabelValue in
// pkg/cri/labels/labels.go @v1.7.35, internal/cri/labels/labels.go @v2.4.2).
const containerdPinnedLabel = "io.cri-containerd.pinned=pinned"

// generatedBy returns "k3s" or "rke2" when the containerd config the
// result read is one they write at every start, "" otherwise.
func (r *Result) generatedBy() string {
	for _, c := range r.Candidates {
		if c.Source != SourceContainerdConfig {
			continue
		}
		for _, prog := range []string{"k3s", "rke2"} {
			if strings.HasPrefix(c.Path, "/var/lib/rancher/"+prog+"/agent/etc/containerd/") {
				return prog
			}
		}
	}
	return ""
}

// ctrOf is the ctr command of a node whose containerd k3s or RKE2 run
// ("k3s" or "rke2"): k3s's own subcommand, which finds its socket, and
// RKE2's binary, which must be told its socket (RKE2's documentation,
// "Debugging": /var/lib/rancher/rke2/bin/ctr --address
// /run/k3s/containerd/containerd.sock).
func ctrOf(prog string) string {
	if prog == "rke2" {
		return "/var/lib/rancher/rke2/bin/ctr --address /run/k3s/containerd/containerd.sock"
	}
	return prog + " ctr"
}
