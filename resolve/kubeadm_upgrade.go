package resolve

import (
	"fmt"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve/internal/config"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodeversion"
	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// kubeadmFlagsEnv is the file kubeadm writes the kubelet's flags into, the
// only one from which kubeadm 1.35's upgrade removed
// --pod-infra-container-image (releases.KubeletRejectsFlag).
const kubeadmFlagsEnv = "/var/lib/kubelet/kubeadm-flags.env"

// kubeadmVersion returns kubeadm's version as checkKubeadm uses it (that of
// Options or the node's kubeadm, else the kubeadm config's
// kubernetesVersion), parsed; ok is false when it is unknown or malformed.
func (r *resolver) kubeadmVersion() (s string, v version, ok bool) {
	s = r.kubeadmVer.Version
	if s == "" && r.kubeadm != nil && r.kubeadm.KubernetesVersion != nil {
		s = r.kubeadm.KubernetesVersion.Value
	}
	v, err := parseVersion(s)
	return s, v, s != "" && err == nil
}

// kubeadmKeeps returns what the kubelet flag's findings add when kubeadm's
// upgrade leaves the flag where it is (releases.KubeadmKeepsFlag, kubeadm
// 1.36.0-rc.0 and later), as text safe in a format; "" when it does not or
// kubeadm's version is unknown.
func (r *resolver) kubeadmKeeps() string {
	kv, v, ok := r.kubeadmVersion()
	if !ok {
		return ""
	}
	if _, keeps := releases.KubeadmKeepsFlag.Holds(v); !keeps {
		return ""
	}
	return strings.ReplaceAll(fmt.Sprintf("; kubeadm %s's upgrade leaves the flag there (kubernetes#135807): remove it yourself", kv), "%", "%%")
}

// noteKubeadmKeepsFlag notes releases.KubeadmKeepsFlag, about the flag at
// origin, when it holds at kubeadm's version.
func (r *resolver) noteKubeadmKeepsFlag(origin string) {
	kv, v, ok := r.kubeadmVersion()
	if !ok {
		return
	}
	if note, keeps := releases.KubeadmKeepsFlag.Holds(v); keeps {
		r.note(withOrigin(origin, Note{Kind: KindKubeadmKeepsFlag, Component: nodeversion.Kubeadm, Version: kv}),
			note, kv, config.KubeletSandboxFlag, kubeadmFlagsEnv)
	}
}

// upgradeRunsPause notes releases.KubeadmUpgradeRunsPause when kubeadm kv's
// pause image c is not spelled as the runtime's sandbox image: kubeadm
// upgrade then has the kubelet pull and run an image the runtime's own
// lookups never name, so an air-gapped node needs both names stored
// (Prepull lists both).
func (r *resolver) upgradeRunsPause(kv string, c Candidate) {
	v, err := parseVersion(kv)
	if err != nil || r.winner.Image == "" || c.Image == r.winner.Image {
		return
	}
	note, ok := releases.KubeadmUpgradeRunsPause.Holds(v)
	if !ok {
		return
	}
	r.note(withOrigin(c.Origin, Note{Kind: KindKubeadmUpgradeRunsPause, Component: nodeversion.Kubeadm, Version: kv}),
		note+"; %s (%s) is not %s's sandbox image as it names it, %s (%s): an offline node needs both stored under those names for an upgrade, and Prepull lists both",
		kv, c.Image, c.Image, c.Origin, r.runtime, r.winner.Image, r.winner.Origin)
}
