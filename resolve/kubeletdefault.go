package resolve

// kubeletDefaultSandbox is the kubelet's built-in --pod-infra-container-image
// (defaultPodSandboxImageName and defaultPodSandboxImageVersion in
// cmd/kubelet/app/options/container_runtime.go), read at v1.22.0
// (k8s.gcr.io/pause:3.5), v1.23.0 and v1.23.14 (k8s.gcr.io/pause:3.6),
// v1.23.15 and v1.23.17 (registry.k8s.io/pause:3.6), v1.24.0
// (k8s.gcr.io/pause:3.7), v1.24.9 and v1.24.17 (registry.k8s.io/pause:3.7;
// v1.24.1 to v1.24.8 were not checked and are taken as k8s.gcr.io, like
// kubeadm's switch at 1.24.9), v1.25.0 (registry.k8s.io/pause:3.8), v1.26.0,
// v1.27.0, v1.28.0 and v1.29.0 (registry.k8s.io/pause:3.9). It returns ""
// for other versions.
func kubeletDefaultSandbox(v version) string {
	if v.major != 1 {
		return ""
	}
	switch v.minor {
	case 22:
		return registryGCR + "/pause:3.5"
	case 23:
		if v.before(1, 23, 15) {
			return registryGCR + "/pause:3.6"
		}
		return registryK8s + "/pause:3.6"
	case 24:
		if v.before(1, 24, 9) {
			return registryGCR + "/pause:3.7"
		}
		return registryK8s + "/pause:3.7"
	case 25:
		return registryK8s + "/pause:3.8"
	case 26, 27, 28, 29:
		return registryK8s + "/pause:3.9"
	}
	return ""
}

// checkKubeletVersion models what a known kubelet version does for the
// sandbox image when no --pod-infra-container-image is set:
//
//   - before 1.23.0 it ignores Image.pinned (image.Pinned first appears in
//     pkg/kubelet/images/image_gc_manager.go at v1.23.0, not at v1.22.0);
//   - 1.23.0 to 1.28.x also keep their own --pod-infra-container-image, by
//     default the built-in one, out of image GC (detectImages: "Always
//     consider the container runtime pod sandbox image in use", fed from
//     crOptions.PodSandboxImage in pkg/kubelet/kubelet.go, at v1.23.0 and
//     v1.28.0; gone at v1.29.0), looked up in the runtime by that name.
func (r *resolver) checkKubeletVersion() {
	kubeletVer := r.kubeletVer.version
	if kubeletVer == "" {
		return
	}
	kv, err := parseVersion(kubeletVer)
	if err != nil || kv.major != 1 {
		return
	}
	if kv.before(1, 23, 0) {
		r.note("kubelet %s ignores Image.pinned (honoured from 1.23.0): only --%s protects the sandbox image from image GC",
			kubeletVer, kubeletSandboxFlag)
	}
	if r.kubelet != nil && len(r.kubelet.SandboxArgs) > 0 || !kv.before(1, 29, 0) {
		return
	}
	def := kubeletDefaultSandbox(kv)
	if def == "" {
		return
	}
	switch {
	case r.winner.Image == "":
		r.note("kubelet %s keeps its built-in default %s out of image GC (no --%s is set)", kubeletVer, def, kubeletSandboxFlag)
	case r.relate(def, r.winner.Image) == relSame:
		r.note("kubelet %s keeps its built-in default %s out of image GC even without --%s: that is the runtime's sandbox image, "+
			"protected until the kubelet is upgraded to 1.29, which stops doing so", kubeletVer, def, kubeletSandboxFlag)
	default:
		r.note("kubelet %s keeps its built-in default %s out of image GC (no --%s is set), not the runtime's %s (%s): "+
			"only the runtime's own pin protects that one", kubeletVer, def, kubeletSandboxFlag, r.winner.Image, r.winner.Origin)
	}
}
