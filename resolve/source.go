package resolve

import (
	"encoding"
	"fmt"
)

// Source is the kind of place a [Candidate] image was found. Its text form
// (String, MarshalText) is a stable lowercase word with dashes, for example
// "containerd-config"; the zero Source has the text "".
type Source uint8

// The sources, in no particular order of authority (see [Resolve]).
const (
	_                      Source = iota
	SourceRuntimeInfo             // "runtime-info": what the live runtime reports over CRI
	SourceContainerdConfig        // "containerd-config": containerd config.toml and its imports
	SourceCRIOConfig              // "crio-config": crio.conf and crio.conf.d drop-ins
	SourceCRIDockerdFlags         // "cri-dockerd-flags": cri-dockerd's systemd unit
	SourceKubeletFlags            // "kubelet-flags": the kubelet's command line (kubeadm-flags.env, KUBELET_EXTRA_ARGS, its unit and drop-ins)
	SourceKubeadmConfig           // "kubeadm-config": a kubeadm config's imageRepository or kubeletExtraArgs
	SourceRuntimeDefault          // "runtime-default": the runtime's built-in default for its version
	SourceKubeadmDefault          // "kubeadm-default": kubeadm's compiled-in pause image for its version
)

var sourceNames = [...]string{
	SourceRuntimeInfo:      "runtime-info",
	SourceContainerdConfig: "containerd-config",
	SourceCRIOConfig:       "crio-config",
	SourceCRIDockerdFlags:  "cri-dockerd-flags",
	SourceKubeletFlags:     "kubelet-flags",
	SourceKubeadmConfig:    "kubeadm-config",
	SourceRuntimeDefault:   "runtime-default",
	SourceKubeadmDefault:   "kubeadm-default",
}

// String returns the text form of s, for example "containerd-config".
func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return fmt.Sprintf("source(%d)", uint8(s))
}

// MarshalText implements [encoding.TextMarshaler]; see [Source.String].
func (s Source) MarshalText() ([]byte, error) {
	if int(s) >= len(sourceNames) {
		return nil, fmt.Errorf("resolve: invalid Source %d", uint8(s))
	}
	return []byte(sourceNames[s]), nil
}

// UnmarshalText implements [encoding.TextUnmarshaler]: it accepts the
// strings MarshalText produces.
func (s *Source) UnmarshalText(b []byte) error {
	for i, n := range sourceNames {
		if n == string(b) {
			*s = Source(i)
			return nil
		}
	}
	return fmt.Errorf("resolve: unknown source %q", b)
}

// Role says what a [Candidate] image is used for on the node. Its text form is
// "runtime-uses", "kubelet-protects" or "installer-pulls"; the zero Role has
// the text "".
type Role uint8

// The roles.
const (
	_                   Role = iota
	RoleRuntimeUses          // "runtime-uses": the runtime starts pod sandboxes with it
	RoleKubeletProtects      // "kubelet-protects": kubelet <1.29 keeps it from image GC
	RoleInstallerPulls       // "installer-pulls": kubeadm pre-pulls it and checks for it
)

var roleNames = [...]string{
	RoleRuntimeUses:     "runtime-uses",
	RoleKubeletProtects: "kubelet-protects",
	RoleInstallerPulls:  "installer-pulls",
}

// String returns the text form of r, for example "runtime-uses".
func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// MarshalText implements [encoding.TextMarshaler]; see [Role.String].
func (r Role) MarshalText() ([]byte, error) {
	if int(r) >= len(roleNames) {
		return nil, fmt.Errorf("resolve: invalid Role %d", uint8(r))
	}
	return []byte(roleNames[r]), nil
}

// UnmarshalText implements [encoding.TextUnmarshaler]: it accepts the
// strings MarshalText produces.
func (r *Role) UnmarshalText(b []byte) error {
	for i, n := range roleNames {
		if n == string(b) {
			*r = Role(i)
			return nil
		}
	}
	return fmt.Errorf("resolve: unknown role %q", b)
}

var (
	_ encoding.TextMarshaler   = Source(0)
	_ encoding.TextUnmarshaler = (*Source)(nil)
	_ encoding.TextMarshaler   = Role(0)
	_ encoding.TextUnmarshaler = (*Role)(nil)
)
