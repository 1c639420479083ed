package audit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// ErrNoSandboxImage is returned by [Judge] when the result names no sandbox
// image: nothing can be judged. The error says why, from the result's notes.
var ErrNoSandboxImage = errors.New("the sandbox image cannot be told")

// Image is what a verdict reads of a stored image: its names and the
// runtime's own pinned flag. The generated *runtimeapi.Image of
// k8s.io/cri-api satisfies it.
type Image interface {
	pin.Image
	GetPinned() bool
}

// Status is the verdict on the sandbox image, as a stable word.
type Status string

// The statuses, from the worst. Every status but OK means that the kubelet
// may delete the sandbox image, or that a pod cannot start offline.
const (
	// Absent: no stored image is the sandbox image, under any spelling.
	Absent Status = "absent"
	// Unpinned: the runtime stores it but reports pinned=false.
	Unpinned Status = "unpinned"
	// NotStoredAsConfigured: pinned, but the runtime's own lookup of the
	// configured name finds nothing, so it pulls the image for every new
	// pod sandbox: pods cannot start while no registry answers.
	NotStoredAsConfigured Status = "not-stored-as-configured"
	// OK: stored as configured and pinned by the runtime.
	OK Status = "ok"
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

// The kinds of the verdict's own findings; those of the resolved node are
// in the Result's Notes and Conflicts.
const (
	SandboxAbsent                resolve.Kind = "sandbox-absent"
	SandboxUnpinned              resolve.Kind = "sandbox-unpinned"
	SandboxNotStoredAsConfigured resolve.Kind = "sandbox-not-stored-as-configured"
	ImageUnprotected             resolve.Kind = "image-unprotected"
)

// Verdict is the answer for one node: is its sandbox image safe from the
// kubelet's image GC and available to an offline pod start, and if not,
// what to change.
type Verdict struct {
	Status Status `json:"status"`
	// Runtime, RuntimeVersion and SandboxImage are the resolved node's:
	// the image exactly as the winning source states it.
	Runtime        string `json:"runtime"`
	RuntimeVersion string `json:"runtimeVersion,omitempty"`
	SandboxImage   string `json:"sandboxImage"`
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
	// Findings are the verdict's own findings, the worst first.
	Findings []resolve.Note `json:"findings"`
	// Fix is the one change recommended first, nil when none is needed.
	Fix *resolve.Fix `json:"fix,omitempty"`
}

// Protected reports whether the status is [OK].
func (v *Verdict) Protected() bool { return v.Status == OK }

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
	// configured name finds it, as given to Judge.
	StoredAsConfigured bool `json:"storedAsConfigured"`
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
// runtime reports: images as ListImages lists them, and whether its own
// lookup of the configured name (ImageStatus with res.SandboxImage exactly)
// finds an image. The rules are res.Matcher's; names compare under the
// aliases res was resolved with. A result without a sandbox image is an
// error wrapping [ErrNoSandboxImage].
func Judge[I Image](res *resolve.Result, images []I, storedAsConfigured bool) (*Verdict, error) {
	if res == nil || res.SandboxImage == "" {
		return nil, noSandbox(res)
	}
	must, err := res.Matcher()
	if err != nil {
		return nil, err
	}
	// The runtime's own rules, read its way (crio-compat on CRI-O),
	// without the Strict sandbox-image rule Matcher adds.
	own, err := pin.Compile(res.Pins, pin.WithMode(res.PinMode), pin.WithAliases(res.Aliases()),
		pin.WithSource("node ("+res.Runtime+")"))
	if err != nil {
		return nil, err
	}
	v := &Verdict{
		Runtime: res.Runtime, RuntimeVersion: usedVersion(res), SandboxImage: res.SandboxImage,
		Images: make([]ImageVerdict, 0, len(images)), Conflicts: len(res.Conflicts), Findings: []resolve.Note{},
	}
	v.Sandbox.StoredAsConfigured = storedAsConfigured
	// The sandbox image's other spellings, looked up as pin looks names up:
	// canonical names without parsing. Nil when it is no reference (CRI-O
	// starts with some such; resolve reports it): then only the exact
	// string matches.
	same, _ := pin.Compile([]string{res.SandboxImage}, pin.WithAliases(res.Aliases()))
	var sandbox Image
	for _, img := range images {
		iv := ImageVerdict{ID: img.GetId(), Name: label(img), RuntimePinned: img.GetPinned()}
		if sandbox == nil {
			if name, sp, ok := matchName(same, img, res.SandboxImage); ok {
				sandbox, iv.Sandbox, iv.Name = img, true, name
				v.Sandbox = Sandbox{Present: true, StoredAs: name, Spelling: sp, StoredAsConfigured: storedAsConfigured, Pinned: img.GetPinned()}
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

// judge sets the status, the findings and the fix.
func (v *Verdict) judge(res *resolve.Result, sandbox Image) {
	s := &v.Sandbox
	switch {
	case !s.Present:
		v.Status = Absent
		v.find(SandboxAbsent, "the sandbox image %s (%s) is not in the runtime's image store: pods cannot start offline; "+
			"pre-pull it under that name", v.SandboxImage, v.Runtime)
		v.Fix = &resolve.Fix{Answers: SandboxAbsent, Action: resolve.ActionPull, To: v.SandboxImage,
			Message: "pull " + v.SandboxImage + " into the runtime's image store under that very name"}
	case !s.Pinned:
		v.Status = Unpinned
		v.find(SandboxUnpinned, "%s does not pin its sandbox image %s (stored as %s): the kubelet's image GC may delete it; "+
			"run a pinning CRI shim, upgrade the runtime, or configure the exact stored name", v.Runtime, v.SandboxImage, s.StoredAs)
	case !s.StoredAsConfigured:
		v.Status = NotStoredAsConfigured
	default:
		v.Status = OK
	}
	if s.Present && !s.StoredAsConfigured {
		v.find(SandboxNotStoredAsConfigured, "%s", v.aliasOnly())
	}
	for _, iv := range v.Images {
		if iv.MustPin && !iv.Sandbox && !iv.RuntimePinned && iv.Rule != nil {
			v.find(ImageUnprotected, "%s must be pinned (%q, %s) but %s reports pinned=false: the kubelet's image GC may delete it",
				iv.Name, iv.Rule.Pattern, iv.Rule.Source, v.Runtime)
		}
	}
	switch v.Status {
	case Unpinned:
		v.Fix = fix(res, sandbox, SandboxUnpinned)
	case NotStoredAsConfigured:
		v.Fix = fix(res, sandbox, SandboxNotStoredAsConfigured)
	}
}

// find records a finding of kind k about the runtime.
func (v *Verdict) find(k resolve.Kind, format string, args ...any) {
	v.Findings = append(v.Findings, resolve.Note{Kind: k, Component: v.Runtime, Version: v.RuntimeVersion, Message: fmt.Sprintf(format, args...)})
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
		if v.Used && v.Component == res.Runtime {
			return v.Version
		}
	}
	return ""
}

// noSandbox is the error for a result without a sandbox image, with the
// note that says why.
func noSandbox(res *resolve.Result) error {
	if res == nil {
		return fmt.Errorf("audit: no result: %w", ErrNoSandboxImage)
	}
	why := "no source names it"
	for _, n := range res.Notes {
		if n.Kind == resolve.SandboxImageUnknown || n.Kind == resolve.NoRuntime {
			why = n.Message
		}
	}
	rt := res.Runtime
	if rt == "" {
		rt = "node's"
	}
	return fmt.Errorf("%w for the %s runtime: %s", ErrNoSandboxImage, rt, why)
}
