package resolve

import (
	"github.com/sandboxpin/sandboxpin/resolve/internal/config"
	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// checkKubeletVersion notes what a known kubelet version does for the
// sandbox image when no --pod-infra-container-image is set: before 1.23.0
// it ignores Image.pinned; up to 1.28 it keeps its own built-in default out
// of image GC, looked up in the runtime by that name (the facts
// KubeletIgnoresPinned and KubeletProtects* in package releases).
func (r *resolver) checkKubeletVersion() {
	kubeletVer := r.kubeletVer.Version
	if kubeletVer == "" {
		return
	}
	kv, err := parseVersion(kubeletVer)
	if err != nil || kv.Major != 1 {
		return
	}
	if note, ok := releases.KubeletIgnoresPinned.Holds(kv); ok {
		r.note(withOrigin("", Note{Kind: KindKubeletIgnoresPinned, Component: releases.Kubelet, Version: kubeletVer}), note, kubeletVer, config.KubeletSandboxFlag)
	}
	if _, ok := releases.KubeletProtectsDefault.Holds(kv); !ok || r.kubelet != nil && len(r.kubelet.SandboxArgs) > 0 {
		return
	}
	def := kubeletDefaultSandbox(kv)
	if def == "" {
		return
	}
	kn := func(k Kind) finding {
		return withOrigin("", Note{Kind: k, Component: releases.Kubelet, Version: kubeletVer})
	}
	switch {
	case r.winner.Image == "":
		r.note(kn(KindKubeletProtectsDefault), releases.KubeletProtectsDefault.Note(), kubeletVer, def, config.KubeletSandboxFlag)
	case r.relate(def, r.winner.Image) == relSame:
		r.note(kn(KindKubeletProtectsRuntimeImage), releases.KubeletProtectsRuntimeImage.Note(), kubeletVer, def, config.KubeletSandboxFlag)
	default:
		r.note(kn(KindKubeletProtectsOtherImage), releases.KubeletProtectsOtherImage.Note(), kubeletVer, def, config.KubeletSandboxFlag, r.winner.Image, r.winner.Origin)
	}
}
