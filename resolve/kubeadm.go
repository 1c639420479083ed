package resolve

import (
	"fmt"

	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// KubeadmPauseImage returns the pause image kubeadm kubeadmVersion pre-pulls
// and expects the runtime to use: imageRepository + "/pause:" + the
// PauseVersion compiled into that kubeadm, the string
// `kubeadm config images list` prints. An empty imageRepository means
// kubeadm's default for that version (k8s.gcr.io before 1.22.17, 1.23.15,
// 1.24.9 and 1.25; registry.k8s.io from them on).
//
// Versions are accepted with or without a leading "v", with or without a
// patch level (a missing patch means .0) and with a pre-release. A
// pre-release of x.y.0 has its minor's pause tag when the previous minor had
// the same one (v1.37.0-rc.0: 3.10.2); in a minor whose tag changed during
// the cycle only the pre-releases that were read are known (v1.34.0-beta.0
// still had 3.10, v1.34.0 has 3.10.1), the others are an error. A
// distribution's build ("v1.36.3+rke2r1", "1.34.1-0ubuntu1") is the release
// it builds. Versions outside 1.12 to 1.38.0-beta.0 (the newest read;
// kubeadm 1.11 named its pause image per architecture,
// "pause-amd64:3.1"), and malformed ones, return an error wrapping
// [ErrUnknownVersion].
//
// The table, with where each row was read, is in resolve/internal/releases
// (kubeadm.go), listed in docs/release-facts.md. For example,
// KubeadmPauseImage("v1.31.2", "") returns "registry.k8s.io/pause:3.10".
func KubeadmPauseImage(kubeadmVersion, imageRepository string) (string, error) {
	v, err := parseVersion(kubeadmVersion)
	if err != nil {
		return "", fmt.Errorf("resolve: kubeadm version: %w", err)
	}
	img, err := releases.KubeadmPauseImage(kubeadmVersion, v, imageRepository)
	if err != nil {
		return "", fmt.Errorf("resolve: %w", err)
	}
	return img, nil
}

// kubeadmSees says what kubeadm's pre-flight makes of a sandbox image that
// differs from its own, on this node's runtime. kubeadm reads the runtime's
// image only from CRI Status Info["config"].sandboxImage and compares strings
// (cmd/kubeadm/app/util/runtime/runtime.go SandboxImage and
// cmd/kubeadm/app/preflight/checks.go ImagePullCheck.Check, v1.37.2): it
// warns when the runtime reports one; containerd 2.x reports none (seen here
// on 2.2.9 and 2.4.2), so kubeadm says nothing.
func (r *resolver) kubeadmSees() string {
	const warns, blind = "kubeadm's pre-flight warns", "kubeadm's pre-flight cannot see it (containerd 2.x reports no sandbox image over CRI)"
	if r.live != nil && Component(r.live.Runtime) == r.runtime {
		if r.live.SandboxImageReported {
			return warns
		}
		if r.runtime == runtimeContainerd {
			return blind
		}
	}
	if r.runtime == runtimeContainerd {
		if v, err := parseVersion(r.runtimeVer); err == nil && v.Major >= 2 {
			return blind
		}
		if r.ctr != nil && r.ctr.Version >= 3 {
			return blind // config version 3 and up are read by containerd 2.x only
		}
		if r.runtimeVer == "" {
			return "kubeadm's pre-flight warns only if the runtime reports its sandbox image (containerd 1.x does, 2.x does not)"
		}
	}
	return warns
}
