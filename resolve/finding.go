package resolve

import (
	"cmp"
	"encoding"
	"fmt"
	"strconv"

	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// Kind names what a [Note] or a [Conflict] is about. Its value is a stable
// lowercase word with dashes, the same in Go and in JSON: switch on it, never
// on a message. The kinds named after a runtime or the kubelet are release
// facts (docs/release-facts.md lists where each was read); the others are
// about this node's files.
type Kind string

// Release facts: a behaviour of the component at the version Resolve used.
const (
	ContainerdNeverPins             Kind = "containerd-never-pins"                // never sets Image.pinned: upgrade or a shim
	ContainerdPinsCRIPulls          Kind = "containerd-pins-cri-pulls"            // pins only images its CRI plugin pulled
	ContainerdTaglessNeverPinned    Kind = "containerd-tagless-never-pinned"      // a tagless name is never pinned
	ContainerdNoSandboxReport       Kind = "containerd-no-sandbox-report"         // 2.x reports no sandbox image over CRI
	ContainerdAliasNeverPinned      Kind = "containerd-alias-never-pinned"        // an alias spelling is never pinned
	ContainerdTagDigestNeverPinned  Kind = "containerd-tag-digest-never-pinned"   // name:tag@digest is never pinned (2.x)
	ContainerdTagDigestDropsTag     Kind = "containerd-tag-digest-drops-tag"      // name:tag@digest pins only name@digest (1.x)
	ContainerdShortNeverPinned      Kind = "containerd-short-never-pinned"        // a short name is never pinned (2.x)
	ContainerdSandboxNotFound       Kind = "containerd-sandbox-not-found"         // 2.3.0–2.3.3 start no pod: the image is not written in full
	ContainerdPausePullOff          Kind = "containerd-pause-pull-off"            // a handler's disable_pause_image_pull: pre-pull the image
	CRIDockerdNeverPins             Kind = "cri-dockerd-never-pins"               // never sets Image.pinned
	CRIDockerdAliasNeverPinned      Kind = "cri-dockerd-alias-never-pinned"       // an alias spelling is never pinned
	CRIDockerdDigestOnlyNeverPinned Kind = "cri-dockerd-digest-only-never-pinned" // name@digest is never pinned
	CRIDockerdDigestNeverPinned     Kind = "cri-dockerd-digest-never-pinned"      // name:tag@digest is never pinned
	CRIDockerdOtherSpelling         Kind = "cri-dockerd-other-spelling"           // only Docker's familiar name:tag pins
	CRIONoSandboxReport             Kind = "crio-no-sandbox-report"               // reports no pause image over CRI
	CRIONeverPins                   Kind = "crio-never-pins"                      // never sets Image.pinned
	CRIOFirstNameOnly               Kind = "crio-first-name-only"                 // matches an image's first name only
	CRIOShortNameEnforcing          Kind = "crio-short-name-enforcing"            // a short name may fail to pull
	CRIOShortNeverPinned            Kind = "crio-short-never-pinned"              // a short pause_image pins nothing
	CRIOAliasNeverPinned            Kind = "crio-alias-never-pinned"              // an alias pause_image pins only that name
	KubeletIgnoresPinned            Kind = "kubelet-ignores-pinned"               // kubelet <1.23 ignores Image.pinned
	KubeletProtectsDefault          Kind = "kubelet-protects-default"             // kubelet <1.29 keeps its default from GC
	KubeletProtectsRuntimeImage     Kind = "kubelet-protects-runtime-image"       // ... which is the runtime's image
	KubeletProtectsOtherImage       Kind = "kubelet-protects-other-image"         // ... which is not the runtime's image
	KubeletIgnoresFlag              Kind = "kubelet-ignores-flag"                 // 1.29–1.34 ignore --pod-infra-container-image
	KubeletRejectsFlag              Kind = "kubelet-rejects-flag"                 // 1.35 and later do not start with it
)

// Kinds about this node's files and sources.
const (
	// SeveralRuntimes: more than one runtime is configured.
	SeveralRuntimes Kind = "several-runtimes"
	// NoRuntime: no runtime was found.
	NoRuntime Kind = "no-runtime"
	// LiveIgnored: the live runtime's report was not used.
	LiveIgnored Kind = "live-ignored"
	// ContainerdCRIDisabled: a containerd config turns CRI off.
	ContainerdCRIDisabled Kind = "containerd-cri-disabled"
	// ContainerdOtherConfig: another containerd config exists beside the one read.
	ContainerdOtherConfig Kind = "containerd-other-config"
	// ContainerdConfigVersion: the config's version and containerd's disagree.
	ContainerdConfigVersion Kind = "containerd-config-version"
	// ContainerdMigratesSandbox: containerd 2.x moves sandbox_image in memory.
	ContainerdMigratesSandbox Kind = "containerd-migrates-sandbox"
	// ConfigMistake: a key the runtime ignores, an empty value, a bad import.
	ConfigMistake Kind = "config-mistake"
	// UnitNote: something in a systemd unit that sandboxpin cannot follow.
	UnitNote Kind = "unit-note"
	// InvalidReference: an image that is not a valid reference.
	InvalidReference Kind = "invalid-reference"
	// RuntimeNotRestarted: the running runtime reports another image than its file.
	RuntimeNotRestarted Kind = "runtime-not-restarted"
	// RuntimeConfigElsewhere: the running runtime reports another image than its default.
	RuntimeConfigElsewhere Kind = "runtime-config-elsewhere"
	// SandboxImageUnknown: the sandbox image cannot be told.
	SandboxImageUnknown Kind = "sandbox-image-unknown"
	// VersionUnknown: a component's version is unknown; Component names it.
	VersionUnknown Kind = "version-unknown"
	// VersionAssumed: a component's version was taken from a weaker source.
	VersionAssumed Kind = "version-assumed"
	// VersionSource: a note on a version source (disagreement, unreadable).
	VersionSource Kind = "version-source"
	// SameImageAlias: two sources name one image under two spellings.
	SameImageAlias Kind = "same-image-alias"
	// SameTagDigest: two sources name one tag, one with a digest.
	SameTagDigest Kind = "same-tag-digest"
	// FrozenRegistry: an image on k8s.gcr.io, which gets no new images.
	FrozenRegistry Kind = "frozen-registry"
	// KubeletFlagOverridden: a later --pod-infra-container-image wins.
	KubeletFlagOverridden Kind = "kubelet-flag-overridden"
	// KubeletFlagSet: the flag is set and the kubelet's version is unknown.
	KubeletFlagSet Kind = "kubelet-flag-set"
	// KubeletFlagDiffers: the flag names another image than the runtime's.
	KubeletFlagDiffers Kind = "kubelet-flag-differs"
	// KubeadmDiffers: kubeadm pre-pulls and expects another image.
	KubeadmDiffers Kind = "kubeadm-differs"
	// PrepullTwoNames: Prepull lists one image under two names.
	PrepullTwoNames Kind = "prepull-two-names"
)

// factKinds are the kinds of the release facts, in their order.
var factKinds = [...]Kind{
	releases.ContainerdNeverPins:             ContainerdNeverPins,
	releases.ContainerdPinsCRIPulls:          ContainerdPinsCRIPulls,
	releases.ContainerdConfig4:               ContainerdMigratesSandbox,
	releases.ContainerdTaglessNeverPinned:    ContainerdTaglessNeverPinned,
	releases.ContainerdNoSandboxReport:       ContainerdNoSandboxReport,
	releases.ContainerdAliasNeverPinned:      ContainerdAliasNeverPinned,
	releases.ContainerdTagDigestNeverPinned:  ContainerdTagDigestNeverPinned,
	releases.ContainerdTagDigestDropsTag:     ContainerdTagDigestDropsTag,
	releases.ContainerdShortNeverPinned:      ContainerdShortNeverPinned,
	releases.ContainerdSandboxNotFound:       ContainerdSandboxNotFound,
	releases.ContainerdPausePullOff:          ContainerdPausePullOff,
	releases.CRIDockerdNeverPins:             CRIDockerdNeverPins,
	releases.CRIDockerdAliasNeverPinned:      CRIDockerdAliasNeverPinned,
	releases.CRIDockerdDigestOnlyNeverPinned: CRIDockerdDigestOnlyNeverPinned,
	releases.CRIDockerdDigestNeverPinned:     CRIDockerdDigestNeverPinned,
	releases.CRIDockerdOtherSpelling:         CRIDockerdOtherSpelling,
	releases.CRIONoSandboxReport:             CRIONoSandboxReport,
	releases.CRIONeverPins:                   CRIONeverPins,
	releases.CRIOFirstNameOnly:               CRIOFirstNameOnly,
	releases.CRIOShortNameEnforcing:          CRIOShortNameEnforcing,
	releases.CRIOShortNeverPinned:            CRIOShortNeverPinned,
	releases.CRIOAliasNeverPinned:            CRIOAliasNeverPinned,
	releases.KubeletIgnoresPinned:            KubeletIgnoresPinned,
	releases.KubeletProtectsDefault:          KubeletProtectsDefault,
	releases.KubeletProtectsRuntimeImage:     KubeletProtectsRuntimeImage,
	releases.KubeletProtectsOtherImage:       KubeletProtectsOtherImage,
	releases.KubeletIgnoresFlag:              KubeletIgnoresFlag,
	releases.KubeletRejectsFlag:              KubeletRejectsFlag,
}

// Note is an informational finding: it changes no answer but may matter,
// such as two spellings of one image or a release that never pins.
type Note struct {
	Kind Kind `json:"kind"`
	// Component is the runtime, "kubelet" or "kubeadm" the note concerns,
	// "" when it concerns none in particular.
	Component string `json:"component,omitempty"`
	// Version is Component's version the note holds at, "" when unknown.
	Version string `json:"version,omitempty"`
	// Origin is the "file:line" the note is about, "" when none.
	Origin string `json:"origin,omitempty"`
	// Message says it for people.
	Message string `json:"message"`
}

// String returns the message.
func (n Note) String() string { return n.Message }

// Fix is one change that answers a finding, as data: edit (or remove) the
// value of Key at Path:Line From what it is To what it should be, or take
// an Action on a component.
type Fix struct {
	// Answers is the kind of the finding the fix answers.
	Answers Kind `json:"answers"`
	// Action is what to do.
	Action Action `json:"action"`
	// Path, Line and Key locate the value to edit or remove (Path is a
	// node path such as "/etc/containerd/config.toml"; Line is 1-based, 0
	// when unknown; Key is the TOML key, flag or variable).
	Path string `json:"path,omitempty"`
	Line int    `json:"line,omitempty"`
	Key  string `json:"key,omitempty"`
	// From is the value there now; To the value to write (empty for
	// [ActionRemove]) or, for [ActionPull], the name to store the image
	// under.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Component and Version name what to upgrade, to at least Version,
	// for [ActionUpgrade].
	Component string `json:"component,omitempty"`
	Version   string `json:"version,omitempty"`
	// Urgency says how much the finding it answers matters; "" (a Fix
	// made by hand) counts as [UrgencyOther].
	Urgency Urgency `json:"urgency,omitempty"`
	// Message says it for people.
	Message string `json:"message"`
}

// Urgency is how much the finding a [Fix] answers matters to the node, as
// a stable word. The set is closed: [UrgencyStops], [UrgencyUnprotected]
// and [UrgencyOther], from the most urgent; "" counts as UrgencyOther.
type Urgency string

// The urgencies, from the most urgent.
const (
	// UrgencyStops: the node runs no pods as configured. The kubelet or
	// the runtime does not start (kubelet 1.35 and later with
	// --pod-infra-container-image, a containerd config version the
	// release refuses, an image reference CRI-O refuses), or the runtime
	// starts no pod sandbox (containerd 2.3.0–2.3.3 with a short name).
	UrgencyStops Urgency = "stops"
	// UrgencyUnprotected: the sandbox image is not protected from the
	// kubelet's image garbage collection, or not available to an offline
	// pod start.
	UrgencyUnprotected Urgency = "unprotected"
	// UrgencyOther: any other conflict or mistake.
	UrgencyOther Urgency = "other"
)

// Compare returns -1 when u is more urgent than v, +1 when less, and 0
// when they are equally urgent: sort fixes with
// slices.SortStableFunc(fixes, func(a, b Fix) int { return a.Urgency.Compare(b.Urgency) }).
func (u Urgency) Compare(v Urgency) int { return cmp.Compare(u.rank(), v.rank()) }

func (u Urgency) rank() int {
	switch u {
	case UrgencyStops:
		return 0
	case UrgencyUnprotected:
		return 1
	}
	return 2
}

// UnmarshalText accepts the urgencies and "", and refuses any other word
// with an error wrapping [ErrInvalidUrgency].
func (u *Urgency) UnmarshalText(text []byte) error {
	switch v := Urgency(text); v {
	case "", UrgencyStops, UrgencyUnprotected, UrgencyOther:
		*u = v
		return nil
	}
	return fmt.Errorf("%w: %q: want %q, %q or %q", ErrInvalidUrgency, text, UrgencyStops, UrgencyUnprotected, UrgencyOther)
}

var _ encoding.TextUnmarshaler = (*Urgency)(nil)

// Where returns "Path:Line", or Path when the line is unknown; "" for a
// nil Fix.
func (f *Fix) Where() string {
	if f == nil {
		return ""
	}
	if f.Line > 0 {
		return f.Path + ":" + strconv.Itoa(f.Line)
	}
	return f.Path
}

// Action is what a [Fix] asks for.
type Action string

// The actions.
const (
	ActionEdit    Action = "edit"    // write To in place of From at Path:Line
	ActionRemove  Action = "remove"  // remove Key at Path:Line
	ActionUpgrade Action = "upgrade" // upgrade Component to Version or later
	ActionShim    Action = "shim"    // run sandboxpin's CRI shim in front of the runtime
	ActionRestart Action = "restart" // restart Component so that it reads its configuration
	ActionPull    Action = "pull"    // store the image under the name To
)
