package audit

import (
	"fmt"
	"strings"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/reference"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// frozenDomain is the registry that publishes no new images (see
// resolve.FrozenRegistry): a fix never asks to configure a name on it.
const frozenDomain = "k8s.gcr.io"

// fix is what makes the runtime pin its sandbox image, which it stores as
// sandbox but does not pin, or stores only under another spelling:
//   - on a release that never pins, no configuration can: an upgrade (the
//     result's own fix, which names the release) or a pinning shim;
//   - where the image is stored under another spelling, that spelling in
//     the file and line that configure the image (the runtimes that pin
//     compare the configured string with the stored names), unless it is
//     on the frozen registry: then a pull of the configured name through
//     CRI, which stores it under that name;
//   - on cri-dockerd 0.4.7 and later, its --pinned-images flag with the
//     name the image is stored under (pinnedImagesFix);
//   - on containerd 1.6.22, 1.7.3 and later, its own pinned label on the
//     name the image is stored under ([resolve.Result.LabelFix]), which
//     needs no change of its config;
//   - else a shim or an upgrade, with what the result notes of the runtime.
//
// Where the fix is an edit or a pull, judge offers the label after it, as
// the alternative that leaves the config alone.
func fix(res *resolve.Result, sandbox Image, answers resolve.Kind) *resolve.Fix {
	for _, n := range res.Notes {
		switch n.Kind {
		case resolve.KindContainerdNeverPins, resolve.KindCRIDockerdNeverPins, resolve.KindCRIONeverPins:
			f := resolve.Fix{Answers: n.Kind, Action: resolve.ActionShim, Component: resolve.Component(res.Runtime)}
			for _, g := range resultFixes(res) {
				if g.Answers == n.Kind {
					f = g
					break
				}
			}
			f.Message = "no configuration can: " + n.Message
			return &f
		}
	}
	norm := res.Aliases()
	for _, tag := range sandbox.GetRepoTags() {
		if tag == res.SandboxImage || !norm.Equal(tag, res.SandboxImage) {
			continue
		}
		if r, err := reference.Parse(tag); err == nil && strings.EqualFold(r.Domain(), frozenDomain) {
			return &resolve.Fix{Answers: answers, Action: resolve.ActionPull, From: tag, To: res.SandboxImage,
				Message: fmt.Sprintf("pull %s through the runtime's CRI (`crictl pull %s`), which stores and pins it under that name; "+
					"do not configure %s, on %s, which has published no image since April 2023", res.SandboxImage, res.SandboxImage, tag, frozenDomain)}
		}
		f := &resolve.Fix{Answers: answers, Action: resolve.ActionEdit, From: res.SandboxImage, To: tag}
		where := "where the runtime's config names it"
		for _, c := range res.Candidates {
			if c.Role == resolve.RoleRuntimeUses && c.Image == res.SandboxImage && c.Source != resolve.SourceRuntimeDefault && c.Source != resolve.SourceRuntimeInfo && c.Origin != "" {
				where, f.Location = c.Origin, c.Location
				break
			}
		}
		f.Message = fmt.Sprintf("configure the sandbox image as %s, the name it is stored under, in place of %s (%s)", tag, res.SandboxImage, where)
		if last := res.SandboxImage[strings.LastIndexByte(res.SandboxImage, '/')+1:]; res.Runtime == criinfo.RuntimeContainerd && !strings.ContainsAny(last, ":@") {
			// internal/cri/server/images/image_pull.go getLabels at v2.0.0 and v2.3.4.
			f.Message += ": containerd 2.x compares pinned_images as strings and never pins a name without a tag (containerd#13314)"
		}
		return f
	}
	if f := pinnedImagesFix(res, sandbox, answers); f != nil {
		return f // cri-dockerd 0.4.7 and later pin what their flag names
	}
	if tags := sandbox.GetRepoTags(); len(tags) > 0 {
		if f, ok := res.LabelFix(tags[0], answers); ok {
			return &f // containerd pins what carries its label
		}
	}
	f := &resolve.Fix{Answers: answers, Action: resolve.ActionShim, Component: resolve.Component(res.Runtime),
		Message: "run a pinning CRI shim in front of the runtime, or upgrade the runtime"}
	for _, n := range res.Notes {
		if n.Component == resolve.Component(res.Runtime) && n.Kind != resolve.KindVersionSource {
			f.Message += "; " + n.Message
		}
	}
	return f
}
