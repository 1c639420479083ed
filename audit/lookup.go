package audit

import (
	"encoding"
	"fmt"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/reference"
)

// Lookup is what the runtime's own lookup of the configured sandbox image
// name found (ImageStatus with [resolve.Result.SandboxImage] exactly, as
// the runtime does when it starts a pod sandbox): a tri-state whose zero
// value, [LookupNotAsked], has [Judge] predict it offline with
// [PredictLookup].
type Lookup string

// The lookups.
const (
	// LookupNotAsked: the runtime was not asked (an offline audit);
	// Judge predicts its answer from the images with PredictLookup.
	LookupNotAsked Lookup = ""
	// LookupFound: the runtime's lookup found an image.
	LookupFound Lookup = "found"
	// LookupNotFound: the runtime's lookup found none.
	LookupNotFound Lookup = "not-found"
)

// Known reports whether l is LookupFound or LookupNotFound; false for
// LookupNotAsked ("") and for a word of a later version.
func (l Lookup) Known() bool { return l == LookupFound || l == LookupNotFound }

// UnmarshalText accepts "" (LookupNotAsked) and any word spelled as lookups
// are, known or not, so that a reader decodes a newer producer's JSON;
// other text is an error wrapping [ErrInvalidObservation]. [Judge] refuses
// a word it does not know.
func (l *Lookup) UnmarshalText(text []byte) error {
	if !isWord(text) {
		return fmt.Errorf("%w: lookup %q: want %q, %q or \"\" (not asked)", ErrInvalidObservation, text, LookupFound, LookupNotFound)
	}
	*l = Lookup(text)
	return nil
}

var _ encoding.TextUnmarshaler = (*Lookup)(nil)

// PredictLookup reports whether the runtime's own lookup of name (the
// configured sandbox image; what a live audit asks with ImageStatus) finds
// one of images, predicted offline from what each runtime does: a stored
// tag or ID equal to name; for containerd and cri-dockerd, whose lookups
// complete a Docker Hub short name, a tag equal to its full form, without
// registry aliases (pause:3.10.1 finds docker.io/library/pause:3.10.1,
// k8s.gcr.io/pause never finds registry.k8s.io/pause: TestKubeletGC in
// internal/kubelettest); for cri-dockerd also a tag whose full form is
// name's, since Docker lists Docker Hub images by their short names.
// CRI-O looks the configured string up as written (TestCRIOLive in cmd).
// runtime is [resolve.Result.Runtime]; nil images find nothing.
func PredictLookup[I Image](runtime criinfo.Runtime, name string, images []I) bool {
	if name == "" {
		return false
	}
	full := name
	if r, err := reference.Parse(name); err == nil && runtime != criinfo.RuntimeCRIO {
		full = r.String()
	}
	for _, img := range images {
		if isNil(img) {
			continue
		}
		if img.GetId() == name {
			return true
		}
		for _, t := range img.GetRepoTags() {
			if t == name || t == full {
				return true
			}
			if runtime == criinfo.RuntimeCRIDockerd {
				if r, err := reference.Parse(t); err == nil && r.String() == full {
					return true
				}
			}
		}
	}
	return false
}

// isNil reports whether img is a nil interface. A nil pointer of a type
// whose getters accept one (*runtimeapi.Image, *ListedImage) is not nil
// here: its getters answer with zero values.
func isNil(img Image) bool { return img == nil }
