package resolve

import (
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

// crioPinCheck notes what CRI-O's version means for pinning the sandbox
// image: the facts CRIONoSandboxReport, CRIONeverPins, CRIOFirstNameOnly and
// CRIOShortNameEnforcing of package releases, and CRI-O's compare of
// pause_image, read in CRI-O's source and seen live on 1.36.3 (criinfo/cri
// TestLiveCRIOCompat, internal/criotest): pause_image is appended to
// pinned_images (internal/storage/image.go GetImageService @v1.28.0,
// @v1.36.3) and compiled like any exact pattern, "(?i)^" +
// QuoteMeta(pause_image) + "$" (CompileRegexpsForPinnedImages), so it pins
// only a stored name equal to it up to case: a short, tagless or alias
// spelling pins nothing. pause_image is parsed as a reference at start-up
// (pkg/config ParsePauseImage @v1.36.3): an uppercase path makes CRI-O exit,
// an uppercase host is accepted and pins the stored lower-case name.
// v is the runtime version, known says whether it parsed.
func (r *resolver) crioPinCheck(v version, known bool) {
	if !known {
		r.crioNameCheck("CRI-O (1.28 and later)")
		return
	}
	if r.live != nil && !r.live.SandboxImageReported {
		r.noteFact(releases.CRIONoSandboxReport, v)
	}
	if r.noteFact(releases.CRIONeverPins, v) {
		return
	}
	r.noteFact(releases.CRIOFirstNameOnly, v)
	r.crioNameCheck("CRI-O " + r.runtimeVer)
	img := r.res.SandboxImage
	if note, ok := releases.CRIOShortNameEnforcing.Holds(v); ok && img != "" && !strings.Contains(img, "$") && !hasDomain(img) {
		if ref, err := r.norm.Parse(img); err == nil {
			r.note(r.rt(KindCRIOShortNameEnforcing, r.winner.Origin), note, r.runtimeVer, img, r.winner.Origin, ref.String())
		}
	}
}

// crioNameCheck notes a pause_image spelling that CRI-O's exact compare
// does not pin under the name the image is stored as; ver names CRI-O.
func (r *resolver) crioNameCheck(ver string) {
	img := r.res.SandboxImage
	if img == "" || strings.Contains(img, "$") {
		return
	}
	ref, err := r.norm.Parse(img)
	if err != nil {
		return // checkReferences reports it
	}
	if !fullyQualified(img) {
		// CRI-O pulls a short name through registries.conf's search list and
		// stores the full name; the pause-image pattern stays the short one.
		r.note(r.rt(KindCRIOShortNeverPinned, r.winner.Origin), releases.CRIOShortNeverPinned.Note(), ver, img, r.winner.Origin, ref.String(), ref.String())
		return
	}
	if canon := ref.String(); !strings.EqualFold(canon, img) {
		// An alias or a Docker Hub spelling: the image pre-pulled under its
		// canonical name (as kubeadm does) is another stored name.
		r.note(r.rt(KindCRIOAliasNeverPinned, r.winner.Origin), releases.CRIOAliasNeverPinned.Note(), ver, img, r.winner.Origin, canon, canon)
	}
}
