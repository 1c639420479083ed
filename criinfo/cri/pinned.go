package cri

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/pin"
)

// MarkPinned sets Pinned on every image that m pins, as a CRI runtime or shim
// would before answering ListImages. It never clears a Pinned that the runtime
// set itself, and skips nil entries. A nil m changes nothing.
//
// For example, containerd 2.2 configured with pinned_images.sandbox =
// "k8s.gcr.io/pause:3.10.1" stores and lists registry.k8s.io/pause:3.10.1
// unpinned; with m compiled from that pattern (default aliases), MarkPinned
// pins it.
func MarkPinned(m *pin.Matcher, images []*runtimeapi.Image) {
	if m == nil {
		return
	}
	for _, img := range images {
		if img == nil || img.Pinned {
			continue
		}
		if m.IsPinnedImage(img) {
			img.Pinned = true
		}
	}
}
