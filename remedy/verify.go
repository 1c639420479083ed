package remedy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// Verify resolves the node of opts again, in memory, with the plan's edits
// made (opts.Root overlaid with each Edit's After; nothing is written),
// judges it with judge when the plan has a Verdict, and returns an error
// wrapping [ErrUnverified] unless the edited node clears every finding an
// edit answers (but those a step answers too, and the verdict's unpinned
// findings that the runtime's own configuration answers once the restart
// the plan names has made it read the edited files) and has none the node
// had not (but the verdict's findings on the stored image, when the plan
// stores it under a new name). opts must be those p.Result was resolved
// with. judge is typically
//
//	func(res *resolve.Result) (*audit.Verdict, error) { return audit.Judge(res, obs) }
//
// with the observation p.Verdict was judged from; nil without one.
func Verify(ctx context.Context, p *Plan, opts resolve.Options, judge func(*resolve.Result) (*audit.Verdict, error)) error {
	if p == nil || p.Result == nil || len(p.Edits) == 0 {
		return nil
	}
	ov := &overlay{base: opts.Root, files: map[string][]byte{}}
	for _, e := range p.Edits {
		ov.files[strings.TrimPrefix(e.Path, "/")] = e.After
	}
	opts.Root = ov
	if opts.Live != nil {
		opts.Live = editedLive{opts.Live}
	}
	res, err := resolve.Resolve(ctx, opts)
	if err != nil {
		return fmt.Errorf("%w: the edited node does not resolve: %w", ErrUnverified, err)
	}
	var v *audit.Verdict
	if judge != nil && p.Verdict != nil {
		if v, err = judge(res); err != nil {
			return fmt.Errorf("%w: the edited node cannot be judged: %w", ErrUnverified, err)
		}
	}
	before, after := findings(p.Result, p.Verdict), findings(res, v)
	answered, excused := map[resolve.Kind]bool{}, map[resolve.Kind]bool{}
	pulls, restarts := false, false
	for _, e := range p.Edits {
		for _, c := range e.Changes {
			for _, k := range c.Answers {
				answered[k] = true
			}
		}
	}
	for _, s := range p.Steps {
		excused[s.Answers] = true
		pulls = pulls || s.Action == resolve.ActionPull
		restarts = restarts || s.Action == resolve.ActionRestart
	}
	if v != nil && restarts {
		after = slices.DeleteFunc(after, func(k resolve.Kind) bool { return pinsAfterRestart(v, after, k) })
	}
	for _, k := range after {
		switch {
		case answered[k] && !excused[k]:
			return fmt.Errorf("%w: %s remains after the edits", ErrUnverified, k)
		case !slices.Contains(before, k) && (!pulls || !isStoreKind(k)):
			return fmt.Errorf("%w: the edits bring %s", ErrUnverified, k)
		}
	}
	return nil
}

// editedLive is the live runtime as it will report after its restart on
// the edited files: its report of the sandbox image (CRI-O's and
// containerd 1.x's) is of the files it read at its start, before the
// edits, and would outrank the overlay's (seen live on CRI-O 1.36.3 in
// TestFixUnderGC, internal/kubelettest: "frozen-registry remains after the
// edits"). Its version and identity stay.
type editedLive struct{ resolve.LiveRuntime }

func (l editedLive) Info(ctx context.Context) (criinfo.Info, error) {
	info, err := l.LiveRuntime.Info(ctx)
	info.SandboxImage, info.SandboxImageReported = "", false
	return info, err
}

// pinsAfterRestart reports whether the finding k of the edited node's
// verdict v (one of sandbox-unpinned, image-unprotected) goes once the
// runtime restarts on the edited files. The observation's pinned flags are
// the running runtime's, on the files before the edits (a node configured
// with k8s.gcr.io/pause and storing registry.k8s.io/pause reports it
// unpinned, whatever the edit); after the restart a release that pins at
// all (no never-pins finding) reports pinned what its own configuration,
// read its way, pins: each image's Predicted rule (seen live in
// TestFixUnderGC, internal/kubelettest, on containerd 2.4.2 and CRI-O
// 1.36.3).
func pinsAfterRestart(v *audit.Verdict, after []resolve.Kind, k resolve.Kind) bool {
	if slices.ContainsFunc(after, func(k resolve.Kind) bool {
		return k == resolve.KindContainerdNeverPins || k == resolve.KindCRIONeverPins || k == resolve.KindCRIDockerdNeverPins
	}) {
		return false
	}
	switch k {
	case resolve.KindSandboxUnpinned:
		return v.Sandbox.Present && v.Sandbox.Spelling == audit.SpellingExact &&
			slices.ContainsFunc(v.Images, func(i audit.ImageVerdict) bool { return i.Sandbox && i.Predicted != nil })
	case resolve.KindImageUnprotected:
		return !slices.ContainsFunc(v.Images, func(i audit.ImageVerdict) bool { return i.MustPin && i.Predicted == nil })
	}
	return false
}

// findings are the kinds of a node's conflicts, of the findings its fixes
// answer and of its verdict's findings.
func findings(res *resolve.Result, v *audit.Verdict) []resolve.Kind {
	var ks []resolve.Kind
	add := func(k resolve.Kind) {
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	for _, c := range res.Conflicts {
		add(c.Kind)
	}
	for _, f := range res.Fixes {
		add(f.Answers)
	}
	if v != nil {
		for _, n := range v.Findings {
			add(n.Kind)
		}
		for _, f := range v.Fixes {
			add(f.Answers)
		}
	}
	return ks
}

// isStoreKind reports a verdict finding about how the runtime stores and
// pins its images, which a pull under the new name answers.
func isStoreKind(k resolve.Kind) bool {
	switch k {
	case resolve.KindSandboxAbsent, resolve.KindSandboxNotStoredAsConfigured, resolve.KindSandboxUnpinned, resolve.KindImageUnprotected:
		return true
	}
	return false
}
