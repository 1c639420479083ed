package resolve

import (
	"bytes"
	"encoding"
	"fmt"
)

// Source is the kind of place a [Candidate] image was found. Its value is
// a stable lowercase word with dashes, for example "containerd-config", the
// same in Go and in JSON; the zero Source, "", is none. The set may grow:
// a word of a later version decodes and reports [Source.Known] false.
type Source string

// The sources, in no particular order of authority (see [Resolve]).
const (
	SourceRuntimeInfo      Source = "runtime-info"      // what the live runtime reports over CRI
	SourceContainerdConfig Source = "containerd-config" // containerd config.toml and its imports
	SourceCRIOConfig       Source = "cri-o-config"      // crio.conf and crio.conf.d drop-ins
	SourceCRIDockerdFlags  Source = "cri-dockerd-flags" // cri-dockerd's systemd unit
	SourceKubeletFlags     Source = "kubelet-flags"     // the kubelet's command line (kubeadm-flags.env, KUBELET_EXTRA_ARGS, its unit and drop-ins)
	SourceKubeadmConfig    Source = "kubeadm-config"    // a kubeadm config's imageRepository or kubeletExtraArgs
	SourceRuntimeDefault   Source = "runtime-default"   // the runtime's built-in default for its version
	SourceKubeadmDefault   Source = "kubeadm-default"   // kubeadm's compiled-in pause image for its version
)

// String returns s's word, for example "containerd-config".
func (s Source) String() string { return string(s) }

// Known reports whether s is one of the sources above; false for the zero
// Source and for a word of a later version.
func (s Source) Known() bool {
	switch s {
	case SourceRuntimeInfo, SourceContainerdConfig, SourceCRIOConfig, SourceCRIDockerdFlags, SourceKubeletFlags,
		SourceKubeadmConfig, SourceRuntimeDefault, SourceKubeadmDefault:
		return true
	}
	return false
}

// UnmarshalText accepts "" and any word (see [Kind.UnmarshalText]), known
// or not, so that a reader decodes a newer producer's JSON.
func (s *Source) UnmarshalText(b []byte) error { return unmarshalWord(s, "source", b) }

// Role says what a [Candidate] image is used for on the node. Its value is
// "runtime-uses", "kubelet-protects" or "installer-pulls"; the zero Role,
// "", is none. A word of a later version decodes and reports
// [Role.Known] false.
type Role string

// The roles.
const (
	RoleRuntimeUses     Role = "runtime-uses"     // the runtime starts pod sandboxes with it
	RoleKubeletProtects Role = "kubelet-protects" // kubelet <1.29 keeps it from image GC
	RoleInstallerPulls  Role = "installer-pulls"  // kubeadm pre-pulls it and checks for it
)

// String returns r's word, for example "runtime-uses".
func (r Role) String() string { return string(r) }

// Known reports whether r is one of the roles above; false for the zero
// Role and for a word of a later version.
func (r Role) Known() bool {
	return r == RoleRuntimeUses || r == RoleKubeletProtects || r == RoleInstallerPulls
}

// UnmarshalText accepts "" and any word (see [Kind.UnmarshalText]), known
// or not, so that a reader decodes a newer producer's JSON.
func (r *Role) UnmarshalText(b []byte) error { return unmarshalWord(r, "role", b) }

// unmarshalWord sets *v to text when text is "" or a word spelled as kinds
// are (lowercase letters and digits joined by single dashes, at most 128
// bytes), and returns an error naming what for other text. Every
// word-valued type of this package decodes through it: a word of a later
// version is kept, so that a reader never fails on a newer producer's JSON
// (docs/design.md, "Words in JSON").
func unmarshalWord[T ~string](v *T, what string, text []byte) error {
	if !isWord(text) {
		return fmt.Errorf("resolve: invalid %s %q: want lowercase words of letters and digits joined by dashes", what, text)
	}
	*v = T(respell(text))
	return nil
}

// respell returns text with CRI-O spelled as every word spells it since
// v0.1.0, as its criinfo.Runtime word: a word that begins "crio-", as
// Source and Kind words did before (SourceCRIOConfig was "crio-config"),
// begins "cri-o-" instead, so that JSON of earlier builds decodes to this
// version's word (docs/design.md, "Words in JSON"). A word that would
// grow past 128 bytes is kept as written.
func respell(text []byte) []byte {
	if rest, ok := bytes.CutPrefix(text, []byte("crio-")); ok && len(text) < 128 {
		return append([]byte("cri-o-"), rest...)
	}
	return text
}

// isWord reports whether text is "" or at most 128 lowercase letters and
// digits joined by single dashes.
func isWord(text []byte) bool {
	if len(text) == 0 {
		return true
	}
	if len(text) > 128 || text[0] == '-' || text[len(text)-1] == '-' {
		return false
	}
	for i, c := range text {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && (c != '-' || text[i-1] == '-') {
			return false
		}
	}
	return true
}

var (
	_ encoding.TextUnmarshaler = (*Source)(nil)
	_ encoding.TextUnmarshaler = (*Role)(nil)
)
