package resolve

import (
	"cmp"
	"encoding"
	"fmt"
	"slices"

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
	KindContainerdNeverPins             Kind = "containerd-never-pins"                // never sets Image.pinned: upgrade or a shim
	KindContainerdPinsCRIPulls          Kind = "containerd-pins-cri-pulls"            // pins only images its CRI plugin pulled
	KindContainerdTaglessNeverPinned    Kind = "containerd-tagless-never-pinned"      // a tagless name is never pinned
	KindContainerdNoSandboxReport       Kind = "containerd-no-sandbox-report"         // 2.x reports no sandbox image over CRI
	KindContainerdAliasNeverPinned      Kind = "containerd-alias-never-pinned"        // an alias spelling is never pinned
	KindContainerdTagDigestNeverPinned  Kind = "containerd-tag-digest-never-pinned"   // name:tag@digest is never pinned (2.x)
	KindContainerdTagDigestDropsTag     Kind = "containerd-tag-digest-drops-tag"      // name:tag@digest pins only name@digest (1.x)
	KindContainerdShortNeverPinned      Kind = "containerd-short-never-pinned"        // a short name is never pinned (2.x)
	KindContainerdSandboxNotFound       Kind = "containerd-sandbox-not-found"         // 2.3.0–2.3.3 start no pod: the image is not written in full
	KindContainerdPausePullOff          Kind = "containerd-pause-pull-off"            // a handler's disable_pause_image_pull: pre-pull the image
	KindCRIDockerdNeverPins             Kind = "cri-dockerd-never-pins"               // never sets Image.pinned
	KindCRIDockerdAliasNeverPinned      Kind = "cri-dockerd-alias-never-pinned"       // an alias spelling is never pinned
	KindCRIDockerdDigestOnlyNeverPinned Kind = "cri-dockerd-digest-only-never-pinned" // name@digest is never pinned
	KindCRIDockerdDigestNeverPinned     Kind = "cri-dockerd-digest-never-pinned"      // name:tag@digest is never pinned
	KindCRIDockerdOtherSpelling         Kind = "cri-dockerd-other-spelling"           // only Docker's familiar name:tag pins
	KindCRIONoSandboxReport             Kind = "cri-o-no-sandbox-report"              // reports no pause image over CRI
	KindCRIONeverPins                   Kind = "cri-o-never-pins"                     // never sets Image.pinned
	KindCRIOFirstNameOnly               Kind = "cri-o-first-name-only"                // matches an image's first name only
	KindCRIOShortNameEnforcing          Kind = "cri-o-short-name-enforcing"           // a short name may fail to pull
	KindCRIOShortNeverPinned            Kind = "cri-o-short-never-pinned"             // a short pause_image pins nothing
	KindCRIOAliasNeverPinned            Kind = "cri-o-alias-never-pinned"             // an alias pause_image pins only that name
	KindKubeletIgnoresPinned            Kind = "kubelet-ignores-pinned"               // kubelet <1.23 ignores Image.pinned
	KindKubeletProtectsDefault          Kind = "kubelet-protects-default"             // kubelet <1.29 keeps its default from GC
	KindKubeletProtectsRuntimeImage     Kind = "kubelet-protects-runtime-image"       // ... which is the runtime's image
	KindKubeletProtectsOtherImage       Kind = "kubelet-protects-other-image"         // ... which is not the runtime's image
	KindKubeletIgnoresFlag              Kind = "kubelet-ignores-flag"                 // 1.29–1.34 ignore --pod-infra-container-image
	KindKubeletRejectsFlag              Kind = "kubelet-rejects-flag"                 // 1.35 and later do not start with it
	KindKubeadmKeepsFlag                Kind = "kubeadm-keeps-flag"                   // kubeadm ≥1.36's upgrade leaves --pod-infra-container-image
	KindKubeadmUpgradeRunsPause         Kind = "kubeadm-upgrade-runs-pause"           // kubeadm upgrade runs its pause image as a Job
	KindCRIDockerdPinsFlags             Kind = "cri-dockerd-pins-flags"               // cri-dockerd ≥0.4.7 pins what --pinned-images names
)

// Kinds about this node's files and sources.
const (
	// KindSeveralRuntimes: more than one runtime is configured.
	KindSeveralRuntimes Kind = "several-runtimes"
	// KindNoRuntime: no runtime was found.
	KindNoRuntime Kind = "no-runtime"
	// KindLiveIgnored: the live runtime's report was not used.
	KindLiveIgnored Kind = "live-ignored"
	// KindContainerdCRIDisabled: a containerd config turns CRI off.
	KindContainerdCRIDisabled Kind = "containerd-cri-disabled"
	// KindContainerdOtherConfig: another containerd config exists beside the one read.
	KindContainerdOtherConfig Kind = "containerd-other-config"
	// KindContainerdConfigVersion: the config's version and containerd's disagree.
	KindContainerdConfigVersion Kind = "containerd-config-version"
	// KindContainerdMigratesSandbox: containerd 2.x moves sandbox_image in memory.
	KindContainerdMigratesSandbox Kind = "containerd-migrates-sandbox"
	// KindConfigMistake: a key the runtime ignores, an empty value, a bad import.
	KindConfigMistake Kind = "config-mistake"
	// KindUnitNote: something in a systemd unit that sandboxpin cannot follow.
	KindUnitNote Kind = "unit-note"
	// KindInvalidReference: an image that is not a valid reference.
	KindInvalidReference Kind = "invalid-reference"
	// KindRuntimeNotRestarted: the running runtime reports another image than its file.
	KindRuntimeNotRestarted Kind = "runtime-not-restarted"
	// KindRuntimeConfigElsewhere: the running runtime reports another image than its default.
	KindRuntimeConfigElsewhere Kind = "runtime-config-elsewhere"
	// KindSandboxImageUnknown: the sandbox image cannot be told.
	KindSandboxImageUnknown Kind = "sandbox-image-unknown"
	// KindVersionUnknown: a component's version is unknown; Component names it.
	KindVersionUnknown Kind = "version-unknown"
	// KindVersionAssumed: a component's version was taken from a weaker source.
	KindVersionAssumed Kind = "version-assumed"
	// KindVersionSource: a note on a version source (disagreement, unreadable).
	KindVersionSource Kind = "version-source"
	// KindSameImageAlias: two sources name one image under two spellings.
	KindSameImageAlias Kind = "same-image-alias"
	// KindSameTagDigest: two sources name one tag, one with a digest.
	KindSameTagDigest Kind = "same-tag-digest"
	// KindFrozenRegistry: an image on k8s.gcr.io, which gets no new images.
	KindFrozenRegistry Kind = "frozen-registry"
	// KindKubeletFlagOverridden: a later --pod-infra-container-image wins.
	KindKubeletFlagOverridden Kind = "kubelet-flag-overridden"
	// KindKubeletFlagSet: the flag is set and the kubelet's version is unknown.
	KindKubeletFlagSet Kind = "kubelet-flag-set"
	// KindKubeletFlagDiffers: the flag names another image than the runtime's.
	KindKubeletFlagDiffers Kind = "kubelet-flag-differs"
	// KindKubeadmDiffers: kubeadm pre-pulls and expects another image.
	KindKubeadmDiffers Kind = "kubeadm-differs"
	// KindPrepullTwoNames: Prepull lists one image under two names.
	KindPrepullTwoNames Kind = "prepull-two-names"
	// KindEndOfLife: a component's release line is past the end of its
	// upstream support on Result.SupportAsOf; Component and Version name it.
	KindEndOfLife Kind = "end-of-life"
	// KindCRIDockerdPinNeverMatches: a --pinned-images value cri-dockerd
	// accepts but that no name Docker lists can match.
	KindCRIDockerdPinNeverMatches Kind = "cri-dockerd-pin-never-matches"
	// KindCRIDockerdPinAlias: a --pinned-images value spelled through a
	// registry alias, which pins only the name as written.
	KindCRIDockerdPinAlias Kind = "cri-dockerd-pin-alias"
	// KindCRIDockerdNoPinFlags: --pinned-images or --pinned-image-labels
	// on a cri-dockerd release that has no such flag.
	KindCRIDockerdNoPinFlags Kind = "cri-dockerd-no-pin-flags"
)

// Kinds of the node verdict's own findings (package audit), from what the
// runtime reports of its images.
const (
	// KindSandboxAbsent: no stored image is the sandbox image.
	KindSandboxAbsent Kind = "sandbox-absent"
	// KindSandboxUnpinned: the runtime stores it but reports pinned=false.
	KindSandboxUnpinned Kind = "sandbox-unpinned"
	// KindSandboxNotStoredAsConfigured: stored only under another spelling.
	KindSandboxNotStoredAsConfigured Kind = "sandbox-not-stored-as-configured"
	// KindImageUnprotected: an image the node's rules pin is not pinned.
	KindImageUnprotected Kind = "image-unprotected"
)

// factKinds are the kinds of the release facts, in their order.
var factKinds = [...]Kind{
	releases.ContainerdNeverPins:             KindContainerdNeverPins,
	releases.ContainerdPinsCRIPulls:          KindContainerdPinsCRIPulls,
	releases.ContainerdConfig4:               KindContainerdMigratesSandbox,
	releases.ContainerdTaglessNeverPinned:    KindContainerdTaglessNeverPinned,
	releases.ContainerdNoSandboxReport:       KindContainerdNoSandboxReport,
	releases.ContainerdAliasNeverPinned:      KindContainerdAliasNeverPinned,
	releases.ContainerdTagDigestNeverPinned:  KindContainerdTagDigestNeverPinned,
	releases.ContainerdTagDigestDropsTag:     KindContainerdTagDigestDropsTag,
	releases.ContainerdShortNeverPinned:      KindContainerdShortNeverPinned,
	releases.ContainerdSandboxNotFound:       KindContainerdSandboxNotFound,
	releases.ContainerdPausePullOff:          KindContainerdPausePullOff,
	releases.CRIDockerdNeverPins:             KindCRIDockerdNeverPins,
	releases.CRIDockerdAliasNeverPinned:      KindCRIDockerdAliasNeverPinned,
	releases.CRIDockerdDigestOnlyNeverPinned: KindCRIDockerdDigestOnlyNeverPinned,
	releases.CRIDockerdDigestNeverPinned:     KindCRIDockerdDigestNeverPinned,
	releases.CRIDockerdOtherSpelling:         KindCRIDockerdOtherSpelling,
	releases.CRIONoSandboxReport:             KindCRIONoSandboxReport,
	releases.CRIONeverPins:                   KindCRIONeverPins,
	releases.CRIOFirstNameOnly:               KindCRIOFirstNameOnly,
	releases.CRIOShortNameEnforcing:          KindCRIOShortNameEnforcing,
	releases.CRIOShortNeverPinned:            KindCRIOShortNeverPinned,
	releases.CRIOAliasNeverPinned:            KindCRIOAliasNeverPinned,
	releases.KubeletIgnoresPinned:            KindKubeletIgnoresPinned,
	releases.KubeletProtectsDefault:          KindKubeletProtectsDefault,
	releases.KubeletProtectsRuntimeImage:     KindKubeletProtectsRuntimeImage,
	releases.KubeletProtectsOtherImage:       KindKubeletProtectsOtherImage,
	releases.KubeletIgnoresFlag:              KindKubeletIgnoresFlag,
	releases.KubeletRejectsFlag:              KindKubeletRejectsFlag,
	releases.KubeadmKeepsFlag:                KindKubeadmKeepsFlag,
	releases.KubeadmUpgradeRunsPause:         KindKubeadmUpgradeRunsPause,
	releases.CRIDockerdPinsFlags:             KindCRIDockerdPinsFlags,
}

// Note is an informational finding: it changes no answer but may matter,
// such as two spellings of one image or a release that never pins.
type Note struct {
	Kind Kind `json:"kind"`
	// Component is the runtime, "kubelet" or "kubeadm" the note concerns,
	// "" when it concerns none in particular.
	Component Component `json:"component,omitempty"`
	// Version is Component's version the note holds at, "" when unknown.
	Version string `json:"version,omitempty"`
	// Location is the file position the note is about, with its key and
	// flag where known (flattened into the JSON object); zero when none.
	// Its Origin method gives the "file:line" form, which the JSON also
	// holds, derived, as "origin" for readers of older versions; decoding
	// ignores that key (the position is Location's alone).
	Location
	// Message says it for people.
	Message string `json:"message"`
}

// String returns the message.
func (n Note) String() string { return n.Message }

// Fix is one change that answers a finding, as data: edit (or remove) the
// value of Key at Path:Line From what it is To what it should be, add a
// flag with the value To to a command line ([ActionAdd]), or take an
// Action on a component.
type Fix struct {
	// Answers is the kind of the finding the fix answers.
	Answers Kind `json:"answers"`
	// Action is what to do.
	Action Action `json:"action"`
	// Location locates the value to edit or remove (flattened into the
	// JSON object: path, line, key, flag); zero for an action on a
	// component.
	Location
	// From is the value there now; To the value to write (empty for
	// [ActionRemove]) or, for [ActionPull], the name to store the image
	// under.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Component and Version name what to upgrade, to at least Version,
	// for [ActionUpgrade].
	Component Component `json:"component,omitempty"`
	Version   string    `json:"version,omitempty"`
	// Urgency says how much the finding it answers matters; "" (a Fix
	// made by hand) counts as [UrgencyOther].
	Urgency Urgency `json:"urgency,omitempty"`
	// Message says it for people.
	Message string `json:"message"`
}

// Urgency is how much the finding a [Fix] answers matters to the node, as
// a stable word: [UrgencyStops], [UrgencyUnprotected] and [UrgencyOther],
// from the most urgent; "" and a word of a later version
// ([Urgency.Known] false) count as UrgencyOther.
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

// Known reports whether u is one of the urgencies above; false for ""
// and for a word of a later version (which [Urgency.Compare] ranks as
// UrgencyOther).
func (u Urgency) Known() bool {
	return u == UrgencyStops || u == UrgencyUnprotected || u == UrgencyOther
}

// UnmarshalText accepts "" and any word (see [Kind.UnmarshalText]), known
// or not, so that a reader decodes a newer producer's JSON; other text is
// an error wrapping [ErrInvalidUrgency].
func (u *Urgency) UnmarshalText(text []byte) error {
	if !isWord(text) {
		return fmt.Errorf("%w: %q: want a word such as %q, %q or %q", ErrInvalidUrgency, text, UrgencyStops, UrgencyUnprotected, UrgencyOther)
	}
	*u = Urgency(respell(text))
	return nil
}

var _ encoding.TextUnmarshaler = (*Urgency)(nil)

// Where returns "Path:Line", or Path when the line is unknown; "" for a
// nil Fix.
func (f *Fix) Where() string {
	if f == nil {
		return ""
	}
	return f.Origin()
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
	ActionAdd     Action = "add"     // add Flag with the value To to the command line of Key at Path:Line
	// ActionLabel: label the image stored as To so that the runtime pins
	// it (containerd's io.cri-containerd.pinned=pinned; see
	// [Result.LabelFix]), whatever its config names.
	ActionLabel Action = "label"
)

// Known reports whether a is one of the actions above; false for "" and
// for a word of a later version, which a tool that acts on fixes leaves to
// a person.
func (a Action) Known() bool {
	switch a {
	case ActionEdit, ActionRemove, ActionUpgrade, ActionShim, ActionRestart, ActionPull, ActionAdd, ActionLabel:
		return true
	}
	return false
}

// UnmarshalText accepts "" and any word (see [Kind.UnmarshalText]), known
// or not: the set grows (ActionLabel came late), and a reader decodes a
// newer producer's JSON.
func (a *Action) UnmarshalText(text []byte) error { return unmarshalWord(a, "action", text) }

// Kinds returns every kind this version of the package reports, the
// release facts first, in a new slice. The set is open: a later version
// may add kinds (never rename one), so a caller that switches on a Kind
// keeps a default case, and JSON from a newer version decodes.
func Kinds() []Kind {
	return append(factKinds[:len(factKinds):len(factKinds)],
		KindSeveralRuntimes, KindNoRuntime, KindLiveIgnored, KindContainerdCRIDisabled, KindContainerdOtherConfig,
		KindContainerdConfigVersion, KindConfigMistake, KindUnitNote, KindInvalidReference,
		KindRuntimeNotRestarted, KindRuntimeConfigElsewhere, KindSandboxImageUnknown, KindVersionUnknown,
		KindVersionAssumed, KindVersionSource, KindSameImageAlias, KindSameTagDigest, KindFrozenRegistry,
		KindKubeletFlagOverridden, KindKubeletFlagSet, KindKubeletFlagDiffers, KindKubeadmDiffers, KindPrepullTwoNames,
		KindEndOfLife, KindCRIDockerdPinNeverMatches, KindCRIDockerdPinAlias, KindCRIDockerdNoPinFlags,
		KindSandboxAbsent, KindSandboxUnpinned, KindSandboxNotStoredAsConfigured, KindImageUnprotected)
}

// Known reports whether k is one of [Kinds]; false for "" and for a kind
// of a later version.
func (k Kind) Known() bool { return slices.Contains(Kinds(), k) }

// UnmarshalText accepts "" (no kind) and any kind spelled as kinds are,
// lowercase words of letters and digits joined by single dashes, at most
// 128 bytes, since the set is open (see [Kinds]); other text is an error.
// Every word-valued type of this package decodes so, and reads a word of
// an earlier build that spelled CRI-O "crio-" ("crio-config",
// "crio-never-pins") as this version's "cri-o-" word.
func (k *Kind) UnmarshalText(text []byte) error { return unmarshalWord(k, "kind", text) }
