// Package config reads the node files that name a sandbox image, one file
// per runtime or tool, as that runtime or tool reads them:
//
//   - containerd.go: config.toml and its imports (versions 1 to 4, with
//     containerd 2.x's in-memory migration of sandbox_image), decoded by
//     go-toml v2 as containerd decodes them;
//   - crio.go: crio.conf and the crio.conf.d drop-ins, decoded by
//     BurntSushi/toml as CRI-O 1.36 decodes them;
//   - cridockerd.go: cri-dockerd's systemd unit and drop-ins (ExecStart);
//   - kubelet.go: the kubelet's command line as systemd builds it from
//     kubelet.service, its drop-ins (Environment=, ExecStart=) and its flag
//     files (kubeadm-flags.env, /etc/default/kubelet, /etc/sysconfig/kubelet);
//   - kubeadm.go: a kubeadm config's ClusterConfiguration and node
//     registration (criSocket, kubeletExtraArgs), bounded by package yamlfile and decoded by
//     sigs.k8s.io/yaml as kubeadm decodes it.
//
// Each reader reads through a [nodefs.Source], so one Resolve call's
// limits hold across all of them, and returns what it found as [Found]
// values (value, file, line, key) and the mistakes a runtime would ignore
// or refuse as [Problem] values. A missing file is nil, nil; a file that
// cannot be used is a *nodefs.ConfigError naming its line and key. Package
// resolve decides what the values mean.
package config
