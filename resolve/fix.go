package resolve

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sandboxpin/sandboxpin/reference"
	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// How urgent a fix is: Result.Fix is the first one offered of the most
// urgent rank, and Result.Fixes lists them all in that order.
const (
	rankStops       = UrgencyStops       // the node or its runtime does not start
	rankUnprotected = UrgencyUnprotected // the sandbox image is not protected from image GC
	rankOther       = UrgencyOther       // any other conflict
)

// offer records f, of urgency rank, among the fixes (once: the same change
// offered again for another finding is kept only the first time), and as
// the recommended fix unless one of the same or a more urgent rank was
// offered before.
func (r *resolver) offer(rank Urgency, f Fix) {
	f.Urgency = rank
	for _, g := range r.res.Fixes {
		if g == f {
			return
		}
	}
	r.res.Fixes = append(r.res.Fixes, f)
	if r.res.Fix == nil || rank.Compare(r.res.Fix.Urgency) < 0 {
		r.res.Fix = &f
	}
}

// sortFixes orders Result.Fixes most urgent first, in the order offered
// within an urgency, so that Fixes[0] is Fix.
func (r *resolver) sortFixes() {
	slices.SortStableFunc(r.res.Fixes, func(a, b Fix) int { return a.Urgency.Compare(b.Urgency) })
}

// offerConflict offers the last recorded conflict's change as a fix: f's
// action (with its To or Component) at the place the conflict's first side
// names, in the conflict's words.
func (r *resolver) offerConflict(rank Urgency, f Fix) {
	c := r.res.Conflicts[len(r.res.Conflicts)-1]
	f.Answers, f.Location, f.From, f.Message = c.Kind, c.A.Location, c.A.Image, c.Message
	r.offer(rank, f)
}

// editSandbox offers to write to in place of the sandbox image where the
// runtime's configuration states it, answering a finding of kind k.
func (r *resolver) editSandbox(rank Urgency, k Kind, to string) {
	at := r.winner
	if at.Path == "" && r.fileCand != nil && r.fileCand.Image == r.winner.Image {
		at = *r.fileCand // a live report that agrees with a file
	}
	f := Fix{Answers: k, Action: ActionEdit, Location: at.Location, From: r.winner.Image, To: to}
	where := "in the " + string(r.runtime) + " configuration"
	if f.Path != "" {
		where = "at " + f.Where()
		if f.Key != "" {
			where += " (" + strings.TrimSpace(f.Key+" "+f.Flag) + ")"
		}
	}
	f.Message = fmt.Sprintf("set the sandbox image %s to %s, in place of %s", where, to, r.winner.Image)
	r.offer(rank, f)
}

// upgrade offers an upgrade of the runtime past the fact f (a release that
// never pins) to the first release at which neither f nor then holds.
func (r *resolver) upgrade(f, then releases.Fact, v version) {
	to := ""
	for _, row := range f.Rows() {
		if row.Range.Contains(v) {
			to = row.Range.Until
		}
	}
	for _, row := range then.Rows() {
		if w, err := parseVersion(to); err == nil && row.Range.Contains(w) {
			to = row.Range.Until
		}
	}
	if to == "" {
		return
	}
	r.offer(rankUnprotected, Fix{Answers: factKinds[f], Action: ActionUpgrade, Component: r.runtime, Version: to,
		Message: fmt.Sprintf("upgrade %s from %s to %s or later, which pins its sandbox image; until then, run sandboxpin's CRI shim in front of it",
			r.runtime, r.runtimeVer, to)})
}

// unknownRuntimeVersion notes that the runtime's version is unknown, and
// what holds for the sandbox image's spelling at every release that pins:
// containerd (from 1.6.22 and 1.7.3) and cri-dockerd (from 0.3.10) compare
// the configured name with the stored one without registry aliases (the
// rows ContainerdAliasNeverPinned and CRIDockerdAliasNeverPinned), and the
// releases before those pin nothing at all.
func (r *resolver) unknownRuntimeVersion() {
	for _, n := range r.res.Notes {
		if n.Kind == KindVersionUnknown && n.Component == r.runtime {
			return // said already (cri-dockerd behind Docker Engine)
		}
	}
	r.note(r.rt(KindVersionUnknown, ""), "%s's version is unknown: no live runtime, binary's Go build info or installed package states it; "+
		"what its release pins was checked only where every release agrees", r.runtime)
	img := r.res.SandboxImage
	if img == "" || strings.Contains(img, "$") || r.runtime == runtimeCRIO {
		return // CRI-O: crioPinCheck
	}
	ref, err := r.norm.Parse(img)
	if err != nil {
		return
	}
	plain, err := reference.Parse(img)
	if err != nil || plain.Name() == ref.Name() {
		return
	}
	const anyRelease = "(of any release that pins)"
	n := r.rt(KindContainerdAliasNeverPinned, r.winner.Origin)
	note := releases.ContainerdAliasNeverPinned.Note()
	args := []any{anyRelease, img, r.winner.Origin, ref.String()}
	if r.runtime == runtimeCRIDockerd {
		n.Kind, note = KindCRIDockerdAliasNeverPinned, releases.CRIDockerdAliasNeverPinned.Note()
		args = []any{anyRelease, img, r.winner.Origin, ref.String(), img, ref.String()}
	}
	r.note(n, note, args...)
	r.editSandbox(rankUnprotected, n.Kind, ref.String())
}

// frozenDomain publishes no new images: k8s.gcr.io redirects to
// registry.k8s.io since 20 March 2023 and was frozen on 3 April 2023
// (kubernetes.io blog, "k8s.gcr.io Redirect to registry.k8s.io - What You
// Need to Know", 2023-03-10); registry.k8s.io serves the same images and
// every newer one.
const frozenDomain = "k8s.gcr.io"

// checkFrozen notes a sandbox image on the frozen registry, and offers the
// spelling on the registry that replaced it (through the aliases).
func (r *resolver) checkFrozen() {
	img := r.res.SandboxImage
	plain, err := reference.Parse(img)
	if err != nil || strings.Contains(img, "$") || !strings.EqualFold(plain.Domain(), frozenDomain) {
		return
	}
	ref, err := r.norm.Parse(img)
	if err != nil || strings.EqualFold(ref.Domain(), frozenDomain) {
		return
	}
	r.note(r.rt(KindFrozenRegistry, r.winner.Origin), "%s (%s) is on %s, which has published no image since April 2023 and redirects to %s: "+
		"kubeadm and the runtimes' defaults name %s, and later pause tags exist only there; write %s",
		img, r.winner.Origin, frozenDomain, ref.Domain(), ref.Domain(), ref.String())
	r.editSandbox(rankUnprotected, KindFrozenRegistry, ref.String())
}
