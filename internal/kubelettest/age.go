package kubelettest

import (
	"regexp"
	"time"
)

// ImageGCPeriod is how often the kubelet runs its own image GC, with or
// without disk pressure: ImageGCPeriod in pkg/kubelet/kubelet.go at v1.37.2,
// a constant (no flag or config field sets it). The first round runs as the
// kubelet starts. With Options.MaximumGCAge set, a round removes every
// unused image the runtime does not pin whose last use is older than that
// age (a never-used image has none, so any), but only once MaximumGCAge has
// passed since the first round (freeOldImages in
// pkg/kubelet/images/image_gc_manager.go at v1.37.2). With a MaximumGCAge
// under ImageGCPeriod, the second round, ImageGCPeriod after the start,
// removes them all at once; it logs RemovingImage for each, like the disk
// pressure rounds, and counts them in kubelet_image_garbage_collected_total
// {reason="age"}.
const ImageGCPeriod = 5 * time.Minute

// GCRoundVModule is the Options.VModule under which the kubelet logs the end
// of each ImageGCPeriod round (GCRoundDone): V(4) in kubelet.go.
const GCRoundVModule = "kubelet=4"

// GCRoundDone matches the line the kubelet logs when an ImageGCPeriod round
// ends, successfully or not (StartGarbageCollection in pkg/kubelet/kubelet.go
// at v1.37.2; success is logged at V(4), or V(1) after a failed round).
func GCRoundDone() *regexp.Regexp {
	return regexp.MustCompile(`"Image garbage collection succeeded"|"Image garbage collection failed`)
}
