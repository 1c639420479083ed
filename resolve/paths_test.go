package resolve

// The node files the tests write, as fs paths.
const (
	ctrMain         = "etc/containerd/config.toml"
	crioMain        = "etc/crio/crio.conf"
	kubeletFlagsEnv = "var/lib/kubelet/kubeadm-flags.env"
	kubeadmFile     = "etc/kubernetes/kubeadm.yaml"
	dpkgStatus      = "var/lib/dpkg/status"
)
