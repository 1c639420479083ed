package audit

import (
	"fmt"

	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// pinnedImagesFlag is the flag of cri-dockerd 0.4.7 and later whose
// entries it pins (cri-dockerd#571; pin.ModeCRIDockerdCompat).
const pinnedImagesFlag = "--pinned-images"

// pinnedImagesFix is the fix for an image that cri-dockerd 0.4.7 or later
// (res.PinMode pin.ModeCRIDockerdCompat) stores but does not pin: add its name
// as `docker images` shows it (its first repo tag, else its first repo
// digest) to --pinned-images in the ExecStart that the result's
// KindCRIDockerdPinsFlags note locates. A repeated flag is read both if
// cri-dockerd's flag is a comma-separated list and if it is repeated
// (config.PinnedListEntries). It is nil on any other node, and for an
// image without a name.
func pinnedImagesFix(res *resolve.Result, img Image, answers resolve.Kind) *resolve.Fix {
	if res.PinMode != pin.ModeCRIDockerdCompat || img == nil || isNil(img) {
		return nil
	}
	name := ""
	if tags := img.GetRepoTags(); len(tags) > 0 {
		name = tags[0]
	} else if digests := img.GetRepoDigests(); len(digests) > 0 {
		name = digests[0]
	}
	if name == "" {
		return nil
	}
	if m, err := res.RuntimeMatcher(); err == nil && m.IsPinnedImage(img) {
		// Its command line pins the image already: cri-dockerd has not
		// read it (a unit edited since its start).
		return &resolve.Fix{Answers: answers, Action: resolve.ActionRestart, Component: resolve.Component(res.Runtime),
			Message: fmt.Sprintf("cri-dockerd's command line pins %s, but cri-dockerd reports it unpinned: it has not read its unit since it changed; "+
				"systemctl daemon-reload && systemctl restart cri-docker.service", name)}
	}
	f := &resolve.Fix{Answers: answers, Action: resolve.ActionAdd, To: name, Component: resolve.Component(res.Runtime)}
	where := "to cri-dockerd's command line (its unit's ExecStart)"
	for _, n := range res.Notes {
		if n.Kind == resolve.KindCRIDockerdPinsFlags && n.Path != "" {
			f.Location = n.Location
			f.Key, f.Flag = "ExecStart", pinnedImagesFlag
			where = "to the ExecStart at " + f.Where()
		}
	}
	f.Message = fmt.Sprintf("add %s=%s %s, the name `docker images` shows, and restart cri-dockerd: "+
		"cri-dockerd 0.4.7 and later pin what %s names (cri-dockerd#571), so no shim is needed", pinnedImagesFlag, name, where, pinnedImagesFlag)
	return f
}
