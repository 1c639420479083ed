package resolve

import "strings"

// What CRI-O's version means for pinning, each read in CRI-O's source at the
// tag named, and the 1.36.3 rows also seen live (criinfo/cri
// TestLiveCRIOCompat, internal/criotest):
//
//   - Before 1.28.0 CRI-O never sets Image.pinned: v1.27.0 has no
//     pinned_images key (pkg/config/config.go) and internal/storage/image.go
//     never fills Pinned.
//   - Since 1.28.0 pinned_images exists, and the pause image is appended to
//     it (internal/storage/image.go GetImageService, "add the sandbox/pause
//     image configured by the user (if any) to the list of pinned_images",
//     v1.28.0 and v1.36.3), compiled like any exact pattern: "(?i)^" +
//     QuoteMeta(pause_image) + "$" (CompileRegexpsForPinnedImages). So the
//     pause image pins only a stored name equal to it up to case: a short,
//     tagless or alias spelling pins nothing.
//   - In 1.28.x only the image's first stored name is matched, and the answer
//     is cached per image (v1.28.0 and v1.28.11 internal/storage/image.go,
//     getImageCacheItem: FilterPinnedImage(name, …) with name from
//     sortNamesByType). From 1.29.0 every stored name is matched on every
//     list (v1.29.0 buildImageResult: for _, image := range image.Names).
//   - pause_image is parsed as a reference at start-up and on reload
//     (pkg/config ParsePauseImage, v1.36.3): an uppercase path makes CRI-O
//     exit ("repository name must be lowercase", seen live with 1.36.3); an
//     uppercase host is accepted and pins the stored lower-case name, since
//     the compare ignores case.
//
// And for what CRI-O reports: config.sandboxImage in the Status Info since
// 1.27.0 (server/runtime_status.go: absent at v1.26.0, present at v1.27.0
// and v1.36.3), beside a nested config.crio object since 1.33.0 (absent at
// v1.32.0, present at v1.33.0; package criinfo identifies CRI-O by it).
const (
	crioInfoMajor, crioInfoMinor         = 1, 27 // first release that reports sandboxImage
	crioPinsMajor, crioPinsMinor         = 1, 28 // first release that pins
	crioAllNamesMajor, crioAllNamesMinor = 1, 29 // first that matches every name
)

// crioPinCheck notes what CRI-O's version means for pinning the sandbox image.
// v is the runtime version, known says whether it parsed.
func (r *resolver) crioPinCheck(v version, known bool) {
	if known && r.live != nil && !r.live.SandboxImageReported && v.before(crioInfoMajor, crioInfoMinor, 0) {
		r.note("CRI-O %s does not report its pause image over CRI (config.sandboxImage arrived in 1.27.0): "+
			"it was read from the config files or the built-in default", r.runtimeVer)
	}
	if known && v.before(crioPinsMajor, crioPinsMinor, 0) {
		r.note("CRI-O %s never reports Image.pinned (pinned_images and the pinning of pause_image arrived in 1.28.0): "+
			"kubelet 1.29 and later may garbage-collect the sandbox image; upgrade CRI-O or pin it through a CRI shim", r.runtimeVer)
		return
	}
	if known && v.before(crioAllNamesMajor, crioAllNamesMinor, 0) {
		r.note("CRI-O %s matches pause_image and pinned_images against only the first name each image is stored under "+
			"(every name since 1.29.0): an image stored under several names may stay unpinned", r.runtimeVer)
	}
	img := r.res.SandboxImage
	if img == "" || strings.Contains(img, "$") {
		return
	}
	ver := "CRI-O " + r.runtimeVer
	if !known {
		ver = "CRI-O (1.28 and later)"
	}
	ref, err := r.norm.Parse(img)
	if err != nil {
		return // checkReferences reports it
	}
	if !fullyQualified(img) {
		// CRI-O pulls a short name through registries.conf's search list and
		// stores the full name; the pause-image pattern stays the short one.
		r.note("%s pins the pause image by an exact, case-insensitive compare with the names it stores, but %s (%s) "+
			"is not a full name (CRI-O stores images as domain/path:tag, here %s): it will not be pinned; write the full name %s there",
			ver, img, r.winner.Origin, ref.String(), ref.String())
		return
	}
	if canon := ref.String(); !strings.EqualFold(canon, img) {
		// An alias or a Docker Hub spelling: the image pre-pulled under its
		// canonical name (as kubeadm does) is another stored name.
		r.note("%s pins the pause image only under the name %s (%s), compared exactly up to case; the same image stored as %s "+
			"(as kubeadm pre-pulls it) is not pinned: write %s there, or pin it with pinned_images",
			ver, img, r.winner.Origin, canon, canon)
	}
}
