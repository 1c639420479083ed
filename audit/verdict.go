package audit

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// ErrInvalidObservation is wrapped by the error of [Judge] for an
// [Observation] that contradicts itself (the runtime's lookup found the
// sandbox image, but it lists no image at all) or holds a [Lookup] that is
// none of the constants.
var ErrInvalidObservation = errors.New("invalid observation")

// Observation is what the runtime reports, for [Judge]: its images and its
// own lookup of the configured sandbox image name. The zero value is a
// runtime that lists no image and was not asked for its lookup. Fields may
// be added: set them by name.
type Observation[I Image] struct {
	// Images are the stored images, as ListImages lists them: the
	// generated *runtimeapi.Image of k8s.io/cri-api, a [*ListedImage] from
	// [ReadImages], or any other [Image].
	Images []I
	// Lookup is what the runtime's own lookup of the configured name
	// (ImageStatus with res.SandboxImage exactly) found; [LookupNotAsked]
	// has Judge predict it from Images with [PredictLookup].
	Lookup Lookup
}

// ListedObservation is the usual Observation: the images of
// [ReadImages] (crictl images -o json) or a program's own [*ListedImage]s.
// It is a type alias, so Judge(res, ListedObservation{Images: imgs}) is
// Judge(res, Observation[*ListedImage]{Images: imgs}); an importer holding
// cri-api's images writes Observation[*runtimeapi.Image] instead.
type ListedObservation = Observation[*ListedImage]

// Image is what a verdict reads of a stored image: its names and the
// runtime's own pinned flag. The generated *runtimeapi.Image of
// k8s.io/cri-api satisfies it.
type Image interface {
	pin.Image
	GetPinned() bool
}

// Status is the verdict on the sandbox image, as a stable word.
type Status string

// The statuses, from the worst. Every status but OK means that the node
// runs no pods, that the kubelet may delete the sandbox image, or that a
// pod cannot start offline.
const (
	// StatusWillNotStart: the node runs no pods as configured, whatever its
	// images: a finding of the result whose fix has
	// [resolve.UrgencyStops], such as kubelet 1.35 or later with
	// --pod-infra-container-image left in a drop-in (the kubelet does not
	// start), a containerd config version the release refuses, or an image
	// reference CRI-O refuses. [Verdict.Sandbox] still says how the sandbox
	// image is stored.
	StatusWillNotStart Status = "will-not-start"
	// StatusAbsent: no stored image is the sandbox image, under any spelling.
	StatusAbsent Status = "absent"
	// StatusUnpinned: the runtime stores it but reports pinned=false.
	StatusUnpinned Status = "unpinned"
	// StatusNotStoredAsConfigured: pinned, but the runtime's own lookup of the
	// configured name finds nothing, so it pulls the image for every new
	// pod sandbox: pods cannot start while no registry answers.
	StatusNotStoredAsConfigured Status = "not-stored-as-configured"
	// StatusOK: stored as configured and pinned by the runtime.
	StatusOK Status = "ok"
)

// Spelling is how the stored name that matched relates to the configured
// one.
type Spelling string

// The spellings.
const (
	SpellingExact Spelling = "exact" // the same string
	SpellingCase  Spelling = "case"  // the same but for letter case
	SpellingAlias Spelling = "alias" // a registry alias, Docker Hub form, digest or ID
)

// Known reports whether s is one of the statuses above; false for "" (the
// zero Verdict's: no verdict) and for a word of a later version, which a
// reader treats as not OK.
func (s Status) Known() bool {
	switch s {
	case StatusWillNotStart, StatusAbsent, StatusUnpinned, StatusNotStoredAsConfigured, StatusOK:
		return true
	}
	return false
}

// UnmarshalText accepts "" (no verdict) and any word spelled as statuses
// are, known or not: the set grows (StatusWillNotStart came late), and a
// reader decodes a newer producer's JSON. Other text is an error.
func (s *Status) UnmarshalText(text []byte) error { return unmarshalWord(s, "status", text) }

// Known reports whether s is one of the spellings above; false for "" (none
// matched) and for a word of a later version.
func (s Spelling) Known() bool {
	return s == SpellingExact || s == SpellingCase || s == SpellingAlias
}

// UnmarshalText accepts "" (none matched) and any word spelled as
// spellings are, known or not, so that a reader decodes a newer producer's
// JSON. Other text is an error.
func (s *Spelling) UnmarshalText(text []byte) error { return unmarshalWord(s, "spelling", text) }

// unmarshalWord sets *v to text when text is "" or a word spelled as
// resolve's kinds are (lowercase letters and digits joined by single
// dashes, at most 128 bytes), and returns an error naming what for other
// text: a word of a later version is kept (docs/design.md, "Words in
// JSON").
func unmarshalWord[T ~string](v *T, what string, text []byte) error {
	if !isWord(text) {
		return fmt.Errorf("audit: invalid %s %q: want lowercase words of letters and digits joined by dashes", what, text)
	}
	*v = T(text)
	return nil
}

// isWord reports whether text is "" or a word spelled as resolve's kinds
// are: what [resolve.Kind.UnmarshalText] accepts.
func isWord(text []byte) bool {
	var k resolve.Kind
	return k.UnmarshalText(text) == nil
}

// Verdict is the answer for one node: is its sandbox image safe from the
// kubelet's image GC and available to an offline pod start, and if not,
// what to change.
type Verdict struct {
	Status Status `json:"status"`
	// Runtime, RuntimeVersion and SandboxImage are the resolved node's:
	// the image exactly as the winning source states it.
	Runtime        criinfo.Runtime `json:"runtime"`
	RuntimeVersion string          `json:"runtimeVersion,omitempty"`
	SandboxImage   string          `json:"sandboxImage"`
	// Sandbox is what the runtime stores of the sandbox image.
	Sandbox Sandbox `json:"sandbox"`
	// Images are every stored image, as listed, with the node's verdict.
	Images []ImageVerdict `json:"images"`
	// MustPin counts the stored images the node's rules pin (the sandbox
	// image always), and Unprotected those of them the runtime reports
	// pinned=false.
	MustPin     int `json:"mustPin"`
	Unprotected int `json:"unprotected"`
	// Conflicts counts the resolved node's conflicts.
	Conflicts int `json:"conflicts"`
	// Findings are the verdict's own findings (of this package's kinds)
	// and those of the resolved node that matter to it (every conflict,
	// and every note that a fix answers), the most urgent first: by the
	// urgency of the fix that answers each (one with none counts as
	// [resolve.UrgencyOther]), the verdict's own first within an urgency.
	Findings []resolve.Note `json:"findings"`
	// Fix is the one change recommended first, Fixes[0]; nil when none is
	// offered. It may be set when the status is OK: a conflict that does
	// not leave the sandbox image unprotected still has a fix.
	Fix *resolve.Fix `json:"fix,omitempty"`
	// Fixes are every change offered, the answer to each finding that has
	// one, the most urgent first ([resolve.Fix.Urgency]): the verdict's
	// own (of urgency [resolve.UrgencyUnprotected]) before the result's
	// within an urgency. Left out are a result's fix that the verdict's
	// own repeats, and, when the runtime reports the sandbox image stored
	// as configured and pinned, the result's of urgency
	// UrgencyUnprotected: its predictions of what the runtime pins, which
	// the runtime's own report outranks (their notes stay in the result).
	Fixes []resolve.Fix `json:"fixes"`
}

// Protected reports whether the status is [StatusOK].
func (v *Verdict) Protected() bool { return v.Status == StatusOK }

// Sandbox is what the runtime stores of the sandbox image.
type Sandbox struct {
	// Present reports whether a stored image is the sandbox image under
	// any spelling (the result's aliases apply).
	Present bool `json:"present"`
	// StoredAs is the stored name that matched: the configured string
	// itself when stored so, else the first other spelling of it.
	StoredAs string `json:"storedAs,omitempty"`
	// Spelling is how StoredAs relates to the configured name.
	Spelling Spelling `json:"spelling,omitempty"`
	// StoredAsConfigured reports whether the runtime's own lookup of the
	// configured name finds it: as given to Judge, or predicted with
	// [PredictLookup] when Lookup is [LookupNotAsked].
	StoredAsConfigured bool `json:"storedAsConfigured"`
	// Lookup is the runtime's own lookup as given to Judge; "" (omitted)
	// when it was not asked and StoredAsConfigured is a prediction.
	Lookup Lookup `json:"lookup,omitempty"`
	// Pinned is the runtime's own flag on the stored image.
	Pinned bool `json:"pinned"`
}

// ImageVerdict is one stored image with the node's verdict on it.
type ImageVerdict struct {
	ID string `json:"id"`
	// Name is the name that matched the sandbox image, or else the first
	// tag, else the first digest, else the ID.
	Name string `json:"name"`
	// Sandbox reports whether this is the sandbox image.
	Sandbox bool `json:"sandbox,omitempty"`
	// RuntimePinned is the runtime's own pinned flag.
	RuntimePinned bool `json:"runtimePinned"`
	// MustPin reports whether the node's rules (the result's Matcher) pin
	// it, or it is the sandbox image; Rule is the rule, nil for none.
	MustPin bool  `json:"mustPin"`
	Rule    *Rule `json:"rule,omitempty"`
	// Predicted is the rule of the runtime's own configuration, read its
	// way, that pins the image: what a correct runtime reports, nil when
	// none does. On CRI-O it can differ from Rule.
	Predicted *Rule `json:"predicted,omitempty"`
}

// Rule says which pattern pinned an image, through which of its names.
type Rule struct {
	Pattern string `json:"pattern"` // as configured
	Source  string `json:"source"`  // where: "node (containerd)", "sandbox image (cri-o)"
	Name    string `json:"name"`    // the image's tag, digest or ID that matched
}

// Judge returns the verdict on the node res describes, from what its
// runtime reports (obs): the images as ListImages lists them, and whether
// its own lookup of the configured name (ImageStatus with res.SandboxImage
// exactly) finds an image, or, not asked, what [PredictLookup] predicts.
// The rules are res.Matcher's; names compare under the aliases res was
// resolved with. A nil result, or one without a sandbox image, is the
// error of [resolve.Result.Err], which wraps [resolve.ErrNoSandboxImage];
// an observation that contradicts itself is an error wrapping
// [ErrInvalidObservation].
func Judge[I Image](res *resolve.Result, obs Observation[I]) (*Verdict, error) {
	if err := res.Err(); err != nil {
		return nil, err
	}
	images := obs.Images
	var storedAsConfigured bool
	switch obs.Lookup {
	case LookupNotAsked:
		storedAsConfigured = PredictLookup(res.Runtime, res.SandboxImage, images)
	case LookupFound:
		if len(images) == 0 {
			return nil, fmt.Errorf("audit: %w: the runtime's lookup of %s found an image, but the runtime lists no image at all",
				ErrInvalidObservation, res.SandboxImage)
		}
		storedAsConfigured = true
	case LookupNotFound:
	default:
		return nil, fmt.Errorf("audit: %w: Lookup %q: want %q, %q or %q (not asked)",
			ErrInvalidObservation, string(obs.Lookup), LookupFound, LookupNotFound, LookupNotAsked)
	}
	must, err := res.Matcher()
	if err != nil {
		return nil, err
	}
	aliases := res.Aliases()
	// The runtime's own rules, read its way (cri-o-compat on CRI-O,
	// cri-dockerd-compat on cri-dockerd 0.4.7 and later), without the
	// Strict sandbox-image rule Matcher adds.
	own, err := res.RuntimeMatcher()
	if err != nil {
		return nil, err
	}
	v := &Verdict{
		Runtime: res.Runtime, RuntimeVersion: usedVersion(res), SandboxImage: res.SandboxImage,
		Images: make([]ImageVerdict, 0, len(images)), Conflicts: len(res.Conflicts), Findings: []resolve.Note{},
		Fixes: []resolve.Fix{},
	}
	v.Sandbox.StoredAsConfigured, v.Sandbox.Lookup = storedAsConfigured, obs.Lookup
	// The sandbox image's other spellings, looked up as pin looks names up:
	// canonical names without parsing. Nil when it is no reference (CRI-O
	// starts with some such; resolve reports it): then only the exact
	// string matches.
	same, _ := pin.Compile([]string{res.SandboxImage}, pin.WithAliases(aliases))
	var sandbox Image
	for _, img := range images {
		if isNil(img) {
			continue
		}
		iv := ImageVerdict{ID: img.GetId(), Name: label(img), RuntimePinned: img.GetPinned()}
		if sandbox == nil {
			if name, sp, ok := matchName(same, img, res.SandboxImage); ok {
				sandbox, iv.Sandbox, iv.Name = img, true, name
				v.Sandbox = Sandbox{Present: true, StoredAs: name, Spelling: sp, StoredAsConfigured: storedAsConfigured,
					Lookup: obs.Lookup, Pinned: img.GetPinned()}
			}
		}
		if m, ok := must.Explain(img); ok {
			iv.Rule = ruleOf(m)
		}
		if m, ok := own.Explain(img); ok {
			iv.Predicted = ruleOf(m)
		}
		// The sandbox image must be pinned even where the rules, read
		// the runtime's way, miss it: CRI-O does not match
		// k8s.gcr.io/pause against the image stored as
		// registry.k8s.io/pause, and the kubelet then deletes it
		// (TestKubeletGC in internal/kubelettest, row cri-o-1.36/alias).
		iv.MustPin = iv.Sandbox || iv.Rule != nil
		if iv.MustPin {
			v.MustPin++
			if !iv.RuntimePinned {
				v.Unprotected++
			}
		}
		v.Images = append(v.Images, iv)
	}
	v.judge(res, sandbox)
	return v, nil
}

// judge sets the status, the findings and the fixes: the verdict's own on
// the sandbox image, then the result's, most urgent first.
func (v *Verdict) judge(res *resolve.Result, sandbox Image) {
	s := &v.Sandbox
	var fixes []resolve.Fix // the verdict's own
	switch {
	case !s.Present && invalidReference(res, v.SandboxImage):
		// No name to pull: the result's invalid-reference conflict is
		// the finding, with the file and line to correct, and its fix
		// (urgency stops) makes the status StatusWillNotStart below.
		v.Status = StatusAbsent
	case !s.Present:
		v.Status = StatusAbsent
		v.find(resolve.KindSandboxAbsent, "the sandbox image %s (%s) is not in the runtime's image store: pods cannot start offline; "+
			"pre-pull it under that name", v.SandboxImage, v.Runtime)
		fixes = append(fixes, resolve.Fix{Answers: resolve.KindSandboxAbsent, Action: resolve.ActionPull, To: v.SandboxImage,
			Message: "pull " + v.SandboxImage + " into the runtime's image store under that very name"})
	case !s.Pinned:
		v.Status = StatusUnpinned
		v.find(resolve.KindSandboxUnpinned, "%s does not pin its sandbox image %s (stored as %s): the kubelet's image GC may delete it; "+
			"run a pinning CRI shim, upgrade the runtime, or configure the exact stored name", v.Runtime, v.SandboxImage, s.StoredAs)
		f := *fix(res, sandbox, resolve.KindSandboxUnpinned)
		fixes = append(fixes, f)
		if f.Action == resolve.ActionEdit || f.Action == resolve.ActionPull {
			// The alternative that leaves the config alone: containerd's
			// own label on the name the image is stored under.
			if lf, ok := res.LabelFix(s.StoredAs, resolve.KindSandboxUnpinned); ok {
				fixes = append(fixes, lf)
			}
		}
	case !s.StoredAsConfigured:
		v.Status = StatusNotStoredAsConfigured
		fixes = append(fixes, *fix(res, sandbox, resolve.KindSandboxNotStoredAsConfigured))
	default:
		v.Status = StatusOK
	}
	if s.Present && !s.StoredAsConfigured {
		v.find(resolve.KindSandboxNotStoredAsConfigured, "%s", v.aliasOnly())
	}
	for _, iv := range v.Images {
		if iv.MustPin && !iv.Sandbox && !iv.RuntimePinned && iv.Rule != nil {
			v.find(resolve.KindImageUnprotected, "%s must be pinned (%q, %s) but %s reports pinned=false: the kubelet's image GC may delete it",
				iv.Name, iv.Rule.Pattern, iv.Rule.Source, v.Runtime)
		}
	}
	for i := range fixes {
		fixes[i].Urgency = resolve.UrgencyUnprotected
	}
	v.Fixes = append(v.Fixes, fixes...)
	for _, f := range resultFixes(res) {
		if v.Status == StatusOK && f.Urgency == resolve.UrgencyUnprotected {
			// What the result predicts the runtime leaves unprotected,
			// the runtime reports protected: its report outranks the
			// prediction (a k3s node's short name, stored in full and
			// pinned, needs no edit of a file k3s writes).
			continue
		}
		if !slices.ContainsFunc(fixes, func(g resolve.Fix) bool { return sameChange(f, g) }) {
			v.Fixes = append(v.Fixes, f)
		}
	}
	byUrgency := func(a, b resolve.Fix) int { return a.Urgency.Compare(b.Urgency) }
	slices.SortStableFunc(v.Fixes, byUrgency)
	if len(v.Fixes) > 0 {
		f := v.Fixes[0]
		v.Fix = &f
		if f.Urgency == resolve.UrgencyStops {
			v.Status = StatusWillNotStart
		}
	}
	v.resultFindings(res)
}

// invalidReference reports whether res holds image as not a valid
// reference (a conflict of KindInvalidReference).
func invalidReference(res *resolve.Result, image string) bool {
	return slices.ContainsFunc(res.Conflicts, func(c resolve.Conflict) bool {
		return c.Kind == resolve.KindInvalidReference && c.A.Image == image
	})
}

// resultFixes returns the result's fixes: Fixes, or for a Result made
// without them (by hand), Fix alone.
func resultFixes(res *resolve.Result) []resolve.Fix {
	if len(res.Fixes) == 0 && res.Fix != nil {
		return []resolve.Fix{*res.Fix}
	}
	return res.Fixes
}

// sameChange reports whether f and g ask for the same change, whatever
// their messages and urgencies say.
func sameChange(f, g resolve.Fix) bool {
	f.Message, g.Message, f.Urgency, g.Urgency = "", "", "", ""
	return f == g
}

// resultFindings adds the result's findings that matter to the node
// (every conflict, and every note a fix answers) after the verdict's own,
// and orders them all by the urgency of the fix that answers each, stably.
func (v *Verdict) resultFindings(res *resolve.Result) {
	// The fix of the finding's kind at the finding's origin, else the
	// first of its kind.
	urgency := func(n resolve.Note) (resolve.Urgency, bool) {
		var first *resolve.Fix
		for i, f := range v.Fixes {
			if f.Answers != n.Kind {
				continue
			}
			if n.Origin() != "" && n.Origin() == f.Where() {
				return f.Urgency, true
			}
			if first == nil {
				first = &v.Fixes[i]
			}
		}
		if first == nil {
			return resolve.UrgencyOther, false
		}
		return first.Urgency, true
	}
	type finding struct {
		resolve.Note
		urgency resolve.Urgency
	}
	all := make([]finding, 0, len(v.Findings)+len(res.Conflicts))
	for _, n := range v.Findings {
		// The verdict's own speak of images the kubelet may delete or a
		// pod start may miss.
		all = append(all, finding{n, resolve.UrgencyUnprotected})
	}
	for _, c := range res.Conflicts {
		n := resolve.Note{Kind: c.Kind, Component: c.Component, Version: c.Version, Location: c.Location, Message: c.Message}
		u, _ := urgency(n)
		all = append(all, finding{n, u})
	}
	for _, n := range res.Notes {
		if u, ok := urgency(n); ok {
			all = append(all, finding{n, u})
		}
	}
	slices.SortStableFunc(all, func(a, b finding) int { return a.urgency.Compare(b.urgency) })
	v.Findings = v.Findings[:0]
	for _, f := range all {
		v.Findings = append(v.Findings, f.Note)
	}
}

// find records a finding of kind k about the runtime.
func (v *Verdict) find(k resolve.Kind, format string, args ...any) {
	v.Findings = append(v.Findings, resolve.Note{Kind: k, Component: resolve.Component(v.Runtime), Version: v.RuntimeVersion, Message: fmt.Sprintf(format, args...)})
}

// aliasOnly says what it means that the sandbox image is stored only under
// another spelling of the configured name: a registry alias, or the same
// name in other letter case (CRI-O pins that one, its compare ignores case,
// but looks the image up by the configured string; TestCRIOLive in cmd).
func (v *Verdict) aliasOnly() string {
	how := "an alias spelling"
	if v.Sandbox.Spelling == SpellingCase {
		how = "a spelling that differs only in letter case"
	}
	return fmt.Sprintf("%s looks its sandbox image up by the configured name %s, and nothing is stored under it: "+
		"%s is the same image under %s, so the runtime pulls %s for every new pod sandbox, and pods cannot start offline",
		v.Runtime, v.SandboxImage, v.Sandbox.StoredAs, how, v.SandboxImage)
}

// matchName returns the name of img that is ref (its tags first, then its
// digests, then its ID) and how it is spelled: the exact string if img
// holds it, else one equal up to case, else the first that same (ref
// compiled as a Strict pattern) pins.
func matchName(same *pin.Matcher, img Image, ref string) (string, Spelling, bool) {
	tags, digests := img.GetRepoTags(), img.GetRepoDigests()
	for _, names := range [][]string{tags, digests} {
		for _, n := range names {
			if n == ref {
				return n, SpellingExact, true
			}
		}
	}
	if img.GetId() == ref {
		return ref, SpellingExact, true
	}
	for _, n := range tags {
		if strings.EqualFold(n, ref) && same.IsPinned(n) {
			return n, SpellingCase, true
		}
	}
	for _, names := range [][]string{tags, digests, {img.GetId()}} {
		for _, n := range names {
			if same.IsPinned(n) {
				return n, SpellingAlias, true
			}
		}
	}
	return "", "", false
}

// label names an image by its first tag, else digest, else ID.
func label(img Image) string {
	if t := img.GetRepoTags(); len(t) > 0 {
		return t[0]
	}
	if d := img.GetRepoDigests(); len(d) > 0 {
		return d[0]
	}
	return img.GetId()
}

func ruleOf(m pin.Match) *Rule { return &Rule{Pattern: m.Pattern, Source: m.Source, Name: m.Name} }

// usedVersion returns the runtime's version that res used, "" when none.
func usedVersion(res *resolve.Result) string {
	for _, v := range res.Versions {
		if v.Used && v.Component == resolve.Component(res.Runtime) {
			return v.Version
		}
	}
	return ""
}
