package remedy

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/reference"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// Verify checks the plan by invariants on the whole node, before and
// after, and returns an error wrapping [ErrUnverified] that names the
// invariant and the file when one does not hold. It resolves the node of
// opts again, in memory, with the plan's edits made (opts.Root overlaid
// with each Edit's After; nothing is written), judges it with judge when
// the plan has a Verdict, and refuses a plan that:
//
//   - changes the image a component uses (the runtime's sandbox image,
//     the kubelet's --pod-infra-container-image, kubeadm's pause image)
//     other than to the value of a fix of the finding that names the image
//     in use wrong (or, for a flag, removes it without one); to a lower
//     version of the same repository, ever; or to an image the runtime does
//     not store under that name, without a step that stores it before the
//     restart;
//   - leaves a finding an edit answers (but a finding on how the runtime
//     stores or pins its images that a step answers too, the verdict's
//     unpinned findings that the runtime's own configuration answers once
//     the restart the plan names has made it read the edited files, and a
//     finding left only where a step for a person names it), or has one
//     the node had not (but the verdict's findings on the stored image,
//     when the plan stores it under a new name);
//   - changes one key (and flag) of a file to two different values;
//   - edits a file that the edited node's resolution does not read: a file
//     the component does not read at its version and command line.
//
// opts must be those p.Result was resolved with. judge is typically
//
//	func(res *resolve.Result) (*audit.Verdict, error) { return audit.Judge(res, obs) }
//
// with the observation p.Verdict was judged from; nil without one.
func Verify(ctx context.Context, p *Plan, opts resolve.Options, judge func(*resolve.Result) (*audit.Verdict, error)) error {
	if p == nil || p.Result == nil || len(p.Edits) == 0 {
		return nil
	}
	if err := oneValueAKey(p); err != nil {
		return err
	}
	ov := &overlay{base: opts.Root, files: map[string][]byte{}}
	for _, e := range p.Edits {
		ov.files[strings.TrimPrefix(e.Path, "/")] = e.After
	}
	rec := &recorder{FS: ov, read: map[string]bool{}}
	opts.Root = rec
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
	if err := readsEdits(p, rec); err != nil {
		return err
	}
	if err := keepsImages(p, res, v); err != nil {
		return err
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
		// A step excuses only what a file cannot show: how the runtime
		// stores and pins its images (a pull, a tag, a label).
		excused[s.Answers] = isStoreKind(s.Answers) && s.Action != resolve.ActionRestart
		pulls = pulls || s.Action == resolve.ActionPull
		restarts = restarts || s.Action == resolve.ActionRestart
	}
	if v != nil && restarts {
		after = slices.DeleteFunc(after, func(k resolve.Kind) bool { return pinsAfterRestart(v, after, k) })
	}
	for _, k := range after {
		switch {
		case answered[k] && !excused[k] && !leftToPerson(p, res, v, k):
			return fmt.Errorf("%w: %s remains after the edits", ErrUnverified, k)
		case !slices.Contains(before, k) && (!pulls || !isStoreKind(k)):
			return fmt.Errorf("%w: the edits bring %s", ErrUnverified, k)
		}
	}
	return nil
}

// leftToPerson reports whether every finding of kind k on the edited node
// (res, v) is at a place the plan hands to a person: the file and line an
// edit by hand names (a step of ActionEdit), the line moved by the plan's
// changes above it in that file. Some places of a finding are edited and
// the others, which the text editor cannot change exactly, are left for a
// person: the finding stays, and the plan is a step for a person, not an
// error (issue 51: kubeadm-flags.env edited, the flag also in a kubeadm
// config's flow map).
func leftToPerson(p *Plan, res *resolve.Result, v *audit.Verdict, k resolve.Kind) bool {
	var places []resolve.Location
	for _, s := range p.Steps {
		if s.Action == resolve.ActionEdit && s.Answers == k && s.at.Path != "" && s.at.Line > 0 {
			places = append(places, movedBy(p, s.at))
		}
	}
	if len(places) == 0 {
		return false
	}
	left := func(l resolve.Location) bool {
		return slices.ContainsFunc(places, func(q resolve.Location) bool { return q.Path == l.Path && q.Line == l.Line })
	}
	for _, c := range res.Conflicts {
		if c.Kind == k && !left(c.Location) {
			return false
		}
	}
	fixes := slices.Clone(res.Fixes)
	if v != nil {
		fixes = append(fixes, v.Fixes...)
	}
	for _, f := range fixes {
		if f.Answers == k && !left(f.Location) {
			return false
		}
	}
	return true
}

// movedBy returns l, a place in a file as it was read, in the file as the
// plan's edits leave it: moved by the lines the changes above it add or
// remove.
func movedBy(p *Plan, l resolve.Location) resolve.Location {
	for _, e := range p.Edits {
		if e.Path != l.Path {
			continue
		}
		for _, c := range e.Changes {
			if c.Line < l.Line {
				l.Line += strings.Count(c.After, "\n") - strings.Count(c.Before, "\n")
			}
		}
	}
	return l
}

// oneValueAKey refuses two changes of one key (and flag) of a file to
// different values (a removal is the value "").
func oneValueAKey(p *Plan) error {
	type key struct{ path, key, flag string }
	seen := map[key]Change{}
	for _, e := range p.Edits {
		for _, c := range e.Changes {
			if c.Key == "" {
				continue
			}
			k := key{e.Path, c.Key, c.Flag}
			if c0, ok := seen[k]; ok && c0.To != c.To {
				return fmt.Errorf("%w: %s: two changes of %s: to %q (%v) and to %q (%v)", ErrUnverified, e.Path,
					strings.TrimSpace(c.Key+" "+c.Flag), c0.To, c0.Answers, c.To, c.Answers)
			}
			seen[k] = c
		}
	}
	return nil
}

// readsEdits refuses an edited file that the edited node's resolution did
// not read: the component does not read it either. k3s's and RKE2's
// template and config.yaml.d, which resolve does not read, count as read
// when the plan edits the containerd config they write from them too.
func readsEdits(p *Plan, rec *recorder) error {
	for _, e := range p.Edits {
		if rec.read[strings.TrimPrefix(e.Path, "/")] {
			continue
		}
		if prog := writtenFrom(e.Path); prog != "" && slices.ContainsFunc(p.Edits, func(g Edit) bool { return generated(g.Path) == prog }) {
			continue
		}
		return fmt.Errorf("%w: %s: %s does not read this file as the node is configured (its version, config version and command line)",
			ErrUnverified, e.Path, e.Component)
	}
	return nil
}

// writtenFrom returns "k3s" or "rke2" for a file they write their
// containerd config from: a template beside it, or a config.yaml.d drop-in.
func writtenFrom(np string) string {
	for _, prog := range []string{"k3s", "rke2"} {
		if strings.HasPrefix(np, "/etc/rancher/"+prog+"/") ||
			generated(np) == prog && strings.HasSuffix(np, ".tmpl") {
			return prog
		}
	}
	return ""
}

// keepsImages checks the image each component uses, before and after.
func keepsImages(p *Plan, after *resolve.Result, v *audit.Verdict) error {
	before := p.Result
	aliases := before.Aliases()
	for _, u := range []struct {
		what          string
		before, after string
	}{
		{"the runtime's sandbox image", before.SandboxImage, after.SandboxImage},
		{"the kubelet's --pod-infra-container-image", kubeletImage(before), kubeletImage(after)},
		{"kubeadm's pause image", kubeadmImage(before), kubeadmImage(after)},
	} {
		if u.before == u.after {
			continue
		}
		if lower(aliases, u.before, u.after) {
			return fmt.Errorf("%w: the edits move %s from %s to %s, a lower version", ErrUnverified, u.what, u.before, u.after)
		}
		if !slices.ContainsFunc(fixesOf(p), func(f resolve.Fix) bool {
			return f.From == u.before && (f.To == u.after || f.Action == resolve.ActionRemove || f.Action == resolve.ActionRestart)
		}) {
			return fmt.Errorf("%w: the edits change %s from %s to %s, which no finding names wrong", ErrUnverified, u.what, u.before, u.after)
		}
	}
	img := after.SandboxImage
	if img == "" || img == before.SandboxImage || v != nil && v.Sandbox.Present && v.Sandbox.StoredAs == img {
		return nil
	}
	if !slices.ContainsFunc(p.Steps, func(s Step) bool { return s.Action == resolve.ActionPull && s.Image == img }) {
		return fmt.Errorf("%w: %s would start sandboxes with %s, which is not stored under that name, and no step stores it before the restart",
			ErrUnverified, after.Runtime, img)
	}
	return nil
}

// fixesOf are the fixes the plan was made from: the result's and the
// verdict's.
func fixesOf(p *Plan) []resolve.Fix {
	fixes := slices.Clone(p.Result.Fixes)
	if p.Verdict != nil {
		fixes = append(fixes, p.Verdict.Fixes...)
	}
	return fixes
}

// kubeletImage is the --pod-infra-container-image the kubelet runs with
// (the last one given), "" when none.
func kubeletImage(res *resolve.Result) string {
	img := ""
	for _, c := range res.Candidates {
		if c.Source == resolve.SourceKubeletFlags {
			img = c.Image
		}
	}
	return img
}

// kubeadmImage is the pause image kubeadm pulls, "" when unknown.
func kubeadmImage(res *resolve.Result) string {
	for _, c := range res.Candidates {
		if c.Role == resolve.RoleInstallerPulls {
			return c.Image
		}
	}
	return ""
}

// lower reports whether b is a lower version of a's repository: the same
// name (after aliases) and a tag of dotted numbers (3.10.1) below a's.
func lower(aliases *reference.Aliases, a, b string) bool {
	ra, errA := aliases.Parse(a)
	rb, errB := aliases.Parse(b)
	if errA != nil || errB != nil || !strings.EqualFold(ra.Name(), rb.Name()) {
		return false
	}
	va, okA := tagVersion(ra.Tag())
	vb, okB := tagVersion(rb.Tag())
	return okA && okB && slices.Compare(vb, va) < 0
}

// tagVersion reads a tag of dotted numbers ("3.10.1", "v3.9").
func tagVersion(tag string) ([]int, bool) {
	var v []int
	for _, f := range strings.Split(strings.TrimPrefix(tag, "v"), ".") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || f == "" || f[0] == '+' {
			return nil, false
		}
		v = append(v, n)
	}
	return v, true
}

// recorder is a file system that records the regular files opened.
type recorder struct {
	fs.FS
	mu   sync.Mutex
	read map[string]bool
}

func (r *recorder) Open(name string) (fs.File, error) {
	f, err := r.FS.Open(name)
	if err == nil {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			r.mu.Lock()
			r.read[name] = true
			r.mu.Unlock()
		}
	}
	return f, err
}

func (r *recorder) Stat(name string) (fs.FileInfo, error) { return fs.Stat(r.FS, name) }

func (r *recorder) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(r.FS, name) }

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
