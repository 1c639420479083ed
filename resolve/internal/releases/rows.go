package releases

import (
	"fmt"

	"github.com/sandboxpin/sandboxpin/criinfo"
)

// Component names: the runtimes' are criinfo's, as strings.
const (
	Containerd = string(criinfo.RuntimeContainerd)
	CRIO       = string(criinfo.RuntimeCRIO)
	CRIDockerd = string(criinfo.RuntimeCRIDockerd)
	Kubelet    = "kubelet"
	Kubeadm    = "kubeadm"
	// Kubernetes names the project's release lines, for [KubernetesSupported].
	Kubernetes = "kubernetes"
	// K3s and RKE2 name the distributions, for their default pause image
	// (the --pause-image they write into the containerd config they
	// generate).
	K3s  = "k3s"
	RKE2 = "rke2"
)

// Row is one release fact: Value holds for Component over Range, as read
// in Read (upstream file@tag, or the live test that shows it).
type Row struct {
	Component string
	Range     Range
	Value     string
	Read      string
}

// lookup returns the first row of rows for component that contains v.
func lookup(rows []Row, component string, v Version) (Row, bool) {
	for _, r := range rows {
		if r.Component == component && r.Range.Contains(v) {
			return r, true
		}
	}
	return Row{}, false
}

const (
	k8s = "registry.k8s.io/pause:"
	gcr = "k8s.gcr.io/pause:"
)

// defaults are the runtimes' built-in sandbox images, and the kubelet's
// built-in --pod-infra-container-image. Each row changes at the first tag
// its Read names.
var defaults = append([]Row{
	{Containerd, Range{"1.5", "1.5.14"}, gcr + "3.5", "pkg/cri/config/config_unix.go SandboxImage @v1.5.0, @v1.5.13"},
	{Containerd, Range{"1.5.14", "1.6"}, k8s + "3.5", "pkg/cri/config/config_unix.go SandboxImage @v1.5.14, @v1.5.18"},
	{Containerd, Range{"1.6", "1.6.9"}, gcr + "3.6", "pkg/cri/config/config_unix.go SandboxImage @v1.6.0, @v1.6.8"},
	{Containerd, Range{"1.6.9", "1.7"}, k8s + "3.6", "pkg/cri/config/config_unix.go SandboxImage @v1.6.9"},
	{Containerd, Range{"1.7", "1.8"}, k8s + "3.8", "pkg/cri/config/config_unix.go SandboxImage @v1.7.0-beta.0, @v1.7.0, @v1.7.35"},
	{Containerd, Range{"2.0.0-beta.0", "2.0.0-rc.3"}, k8s + "3.9", "DefaultSandboxImage in pkg/cri/config/config_unix.go @v2.0.0-beta.0, pkg/cri/config/config.go @v2.0.0-beta.1, @v2.0.0-beta.2, internal/cri/config/config.go @v2.0.0-rc.2"},
	{Containerd, Range{"2.0.0-rc.3", "2.2"}, k8s + "3.10", "internal/cri/config/config.go DefaultSandboxImage @v2.0.0-rc.3, @v2.0.0, @v2.1.0"},
	{Containerd, Range{"2.2", "2.3.0-beta.1"}, k8s + "3.10.1", "internal/cri/config/config.go DefaultSandboxImage @v2.2.0, @v2.2.9, @v2.2.10, @v2.3.0-beta.0"},
	{Containerd, Range{"2.3.0-beta.1", "2.5"}, k8s + "3.10.2", "internal/cri/config/config.go DefaultSandboxImage @v2.3.0-beta.1, @v2.3.0, @v2.3.7, @v2.4.0-beta.0, @v2.4.2"},

	// The 3.1 to 3.2 change came after v1.18.0-rc1, the only pre-release
	// tag of 1.18; the mirror holds no pre-release tags after v1.20.0-rc.1.
	{CRIO, Range{"1.16", "1.18.0"}, gcr + "3.1", "pkg/config/config.go @v1.16.0-rc1, @v1.16.0, @v1.16.6, @v1.17.0-rc1, @v1.17.0, @v1.17.5, @v1.18.0-rc1"},
	{CRIO, Range{"1.18.0", "1.21"}, gcr + "3.2", "pkg/config/config.go @v1.18.0, @v1.18.6, @v1.19.0-rc.1, @v1.19.0, @v1.19.6, @v1.20.0-rc.1, @v1.20.0, @v1.20.9"},
	{CRIO, Range{"1.21", "1.23"}, gcr + "3.5", "pkg/config/config.go DefaultPauseImage @v1.21.0, @v1.21.7, @v1.22.0, @v1.22.5"},
	{CRIO, Range{"1.23", "1.24"}, gcr + "3.6", "pkg/config/config.go DefaultPauseImage @v1.23.0, @v1.23.5"},
	{CRIO, Range{"1.24", "1.27.1"}, k8s + "3.6", "pkg/config/config.go DefaultPauseImage @v1.24.0, @v1.24.6, @v1.25.0, @v1.25.5, @v1.26.0, @v1.26.4, @v1.27.0"},
	{CRIO, Range{"1.27.1", "1.31"}, k8s + "3.9", "DefaultPauseImage in pkg/config/config.go @v1.27.1, @v1.27.8, @v1.28.0, @v1.28.11, in pkg/config/config_linux.go @v1.29.0, @v1.29.13, @v1.30.0, @v1.30.14"},
	{CRIO, Range{"1.31", "1.34"}, k8s + "3.10", "pkg/config/config_linux.go DefaultPauseImage @v1.31.0, @v1.31.13, @v1.32.0, @v1.32.13, @v1.33.0, @v1.33.13"},
	{CRIO, Range{"1.34", "1.37"}, k8s + "3.10.1", "pkg/config/config_linux.go DefaultPauseImage @v1.34.0, @v1.34.11, @v1.35.0, @v1.35.6, @v1.36.0, @v1.36.3; `crio config` of 1.36.3 (internal/criotest)"},
	// Read at a release branch, not a tag: re-read it at the v1.37.x tag
	// once a source serves one.
	{CRIO, Range{"1.37", "1.38"}, k8s + "3.10.1", "pkg/config/config_linux.go DefaultPauseImage on branch release-1.37 at 65f5ee4679 " +
		"(internal/version/version.go 1.37.0, 2026-08-19), not at a tag: no v1.37 tag could be read (the mirror's newest is v1.36.3, " +
		"the Go module proxy refuses github.com/cri-o/cri-o v1.37.0 to v1.37.3)"},

	{CRIDockerd, Range{"0.2.0", "0.2.1"}, gcr + "3.1", "src/cmd/cri/options/options.go defaultPodSandboxImageName/Version @v0.2.0"},
	{CRIDockerd, Range{"0.2.1", "0.2.6"}, gcr + "3.6", "cmd/cri/options/options.go @v0.2.1, @v0.2.5"},
	{CRIDockerd, Range{"0.2.6", "0.3.10"}, k8s + "3.6", "cmd/cri/options/options.go @v0.2.6, @v0.3.0, @v0.3.9"},
	{CRIDockerd, Range{"0.3.10", "0.3.17"}, k8s + "3.9", "cmd/cri/options/options.go @v0.3.10, @v0.3.16"},
	{CRIDockerd, Range{"0.3.17", "0.5"}, k8s + "3.10", "cmd/cri/options/options.go @v0.3.17, @v0.4.0, @v0.4.3"},

	{Kubelet, Range{"1.22", "1.23"}, gcr + "3.5", "cmd/kubelet/app/options/container_runtime.go defaultPodSandboxImageName/Version @v1.22.0"},
	{Kubelet, Range{"1.23", "1.23.15"}, gcr + "3.6", "cmd/kubelet/app/options/container_runtime.go @v1.23.0, @v1.23.14"},
	{Kubelet, Range{"1.23.15", "1.24"}, k8s + "3.6", "cmd/kubelet/app/options/container_runtime.go @v1.23.15, @v1.23.17"},
	// v1.24.1 to v1.24.8 were not read; taken as k8s.gcr.io, like kubeadm's switch at 1.24.9.
	{Kubelet, Range{"1.24", "1.24.9"}, gcr + "3.7", "cmd/kubelet/app/options/container_runtime.go @v1.24.0"},
	{Kubelet, Range{"1.24.9", "1.25"}, k8s + "3.7", "cmd/kubelet/app/options/container_runtime.go @v1.24.9, @v1.24.17"},
	{Kubelet, Range{"1.25", "1.26"}, k8s + "3.8", "cmd/kubelet/app/options/container_runtime.go @v1.25.0"},
	{Kubelet, Range{"1.26", "1.30"}, k8s + "3.9", "cmd/kubelet/app/options/container_runtime.go @v1.26.0, @v1.27.0, @v1.28.0, @v1.29.0"},
}, rancherDefaults...)

// rke2Pause is where RKE2's default pause image is read: the tag's
// PAUSE_VERSION, linked into pkg/images.DefaultPauseImage as
// rancher/mirrored-pause:$PAUSE_VERSION, which Resolver.GetReference gives
// the default registry, index.docker.io (go-containerregistry v0.20.3
// name.DefaultRegistry; Tag.Name prints it), and the agent writes
// (pkg/executor/staticpod/staticpod.go nodeConfig.AgentConfig.PauseImage).
const rke2Pause = "scripts/version.sh PAUSE_VERSION, scripts/build-binary -X pkg/images.DefaultPauseImage, pkg/images/images.go GetReference"

// k3sPause is why the k3s rows' bounds are what they are: no k3s tag could
// be read.
const k3sPause = "pkg/cli/cmds/agent.go --pause-image default 3.6 → 3.10.2 by k3s#14339 (a3961a389, 2026-07-10) and backports #14389–#14392 " +
	"(release-1.36 to 1.33, 2026-07-10; k3s#14384), read in the k3s-vip/k3s mirror (main and release-1.34 of k3s, no tags); no k3s tag " +
	"was read (k3s-io/k3s is over the fetch limit, the Go module proxy refuses it): bounds from the k3s commits RKE2's go.mod pins: "

// rancherDefaults are the --pause-image k3s and RKE2 write into the
// containerd config they generate when none is given: part of defaults.
var rancherDefaults = []Row{
	{RKE2, Range{"1.33", "1.33.13-rc1"}, rke2Image + "3.6", rke2Pause + " @v1.33.0+rke2r1, @v1.33.12+rke2r2"},
	// 1.33.13 is in no row: v1.33.13+rke2r1 (and its rc1–rc4+rke2r1) has
	// 3.6, v1.33.13+rke2r2 (and its rc1–rc7+rke2r2) 3.10.2, and a version
	// reads the same without its revision.
	{RKE2, Range{"1.33.14", "1.34"}, rke2Image + "3.10.2", rke2Pause + " @v1.33.13+rke2r2 (\"Bump pause image to sync with k3s\", 2026-07-10); no 1.33.14 tag in the mirror"},
	{RKE2, Range{"1.34", "1.34.10-rc1"}, rke2Image + "3.6", rke2Pause + " @v1.34.1+rke2r1, @v1.34.9+rke2r1"},
	{RKE2, Range{"1.34.10-rc1", "1.35"}, rke2Image + "3.10.2", rke2Pause + " @v1.34.10-rc1+rke2r1, @v1.34.10+rke2r1, @v1.34.11-rc1+rke2r1"},
	{RKE2, Range{"1.35", "1.35.7-rc1"}, rke2Image + "3.6", rke2Pause + " @v1.35.0+rke2r1, @v1.35.6+rke2r1"},
	{RKE2, Range{"1.35.7-rc1", "1.36"}, rke2Image + "3.10.2", rke2Pause + " @v1.35.7-rc1+rke2r1, @v1.35.7+rke2r1, @v1.35.8-rc1+rke2r1"},
	{RKE2, Range{"1.36", "1.36.3-rc1"}, rke2Image + "3.6", rke2Pause + " @v1.36.0-rc1+rke2r1, @v1.36.0+rke2r1, @v1.36.2+rke2r1"},
	{RKE2, Range{"1.36.3-rc1", "1.37"}, rke2Image + "3.10.2", rke2Pause + " @v1.36.3-rc1+rke2r1, @v1.36.3+rke2r1, @v1.36.4-rc1+rke2r1 (the newest tag)"},

	// Each line's last 3.6 patch and its next are in no row: the k3s tag
	// of the patch RKE2 released in June 2026 (v1.33.13, v1.34.9, v1.35.6,
	// v1.36.2) may have come before or after the bump.
	{K3s, Range{"1.33", "1.33.13"}, k3sImage + "3.6", k3sPause + "v1.33.13-0.20260610231102-b1a9339db253 for v1.33.13+rke2r1 (so v1.33.12 was tagged by 2026-06-10)"},
	{K3s, Range{"1.33.14", "1.34"}, k3sImage + "3.10.2", k3sPause + "v1.33.14-0.20260720191039-f33b563b749e for v1.33.13+rke2r2 (release-1.33 after the bump, before the next tag)"},
	{K3s, Range{"1.34", "1.34.9"}, k3sImage + "3.6", k3sPause + "3060dff9c388 (3.6) for v1.34.9+rke2r1; release-1.34's \"Update to v1.34.9\" 0b241dca6 (2026-06-16) precedes the bump 420cc8cb4"},
	{K3s, Range{"1.34.10", "1.35"}, k3sImage + "3.10.2", k3sPause + "931a1fbe1614 (3.10.2, after 420cc8cb4) for v1.34.10+rke2r1"},
	{K3s, Range{"1.35", "1.35.6"}, k3sImage + "3.6", k3sPause + "v1.35.6-0.20260610221957-158346759a70 for v1.35.6+rke2r1"},
	{K3s, Range{"1.35.7", "1.36"}, k3sImage + "3.10.2", k3sPause + "v1.35.7-0.20260720191031-7464a828f03e for v1.35.7+rke2r1"},
	{K3s, Range{"1.36", "1.36.2"}, k3sImage + "3.6", k3sPause + "v1.36.2-0.20260610225606-10b320a3ba51 for v1.36.2+rke2r1"},
	{K3s, Range{"1.36.3", "1.37"}, k3sImage + "3.10.2", k3sPause + "v1.36.3-0.20260720191027-4ca29faac89e for v1.36.3+rke2r1"},
}

const (
	rke2Image = "index.docker.io/rancher/mirrored-pause:"
	k3sImage  = "rancher/mirrored-pause:"
)

// DefaultImage returns the sandbox image component (a runtime, or
// "kubelet" for its --pod-infra-container-image) uses when its
// configuration names none, and the row it comes from. For example,
// DefaultImage("containerd", v2.2.9) is "registry.k8s.io/pause:3.10.1".
// A version no row covers is an error wrapping [ErrUnknownVersion].
func DefaultImage(component string, v Version) (Row, error) {
	if r, ok := lookup(defaults, component, v); ok {
		return r, nil
	}
	return Row{}, fmt.Errorf("%s %s: %w: no default sandbox image known for it", component, v, ErrUnknownVersion)
}
