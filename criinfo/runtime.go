package criinfo

import (
	"encoding"
	"errors"
	"fmt"
)

// Runtime names a CRI runtime. Its value is its word, the same in Go and in
// JSON. The zero value, "", is not given (resolve.Options.Runtime "":
// detect it); [RuntimeUnknown], "unknown", is what a reader reports when it
// looked and no runtime identified itself. Neither is a runtime:
// [Runtime.Known] is false for both, and for the word of a runtime that a
// later version knows ("youki"), which [Runtime.UnmarshalText] keeps so
// that a reader decodes a newer producer's JSON. Ask Known, not
// == RuntimeUnknown.
type Runtime string

// The runtimes.
const (
	// RuntimeUnknown: no runtime identified itself or was found.
	RuntimeUnknown Runtime = "unknown"
	// RuntimeContainerd is containerd's CRI plugin.
	RuntimeContainerd Runtime = "containerd"
	// RuntimeCRIO is CRI-O, spelled as its Version RPC's RuntimeName.
	RuntimeCRIO Runtime = "cri-o"
	// RuntimeCRIDockerd is cri-dockerd (RuntimeName "docker" in its
	// Version RPC, which names the Docker Engine behind it).
	RuntimeCRIDockerd Runtime = "cri-dockerd"
)

// ErrUnknownRuntime is wrapped by the error of [Runtime.UnmarshalText] for
// text that is no word, and by functions elsewhere (resolve.Resolve,
// resolve.RuntimeDefaultImage) given a runtime they know nothing of.
var ErrUnknownRuntime = errors.New("unknown runtime")

// Known reports whether r names a runtime: containerd, CRI-O or
// cri-dockerd; false for RuntimeUnknown, the zero value and any other word.
func (r Runtime) Known() bool {
	return r == RuntimeContainerd || r == RuntimeCRIO || r == RuntimeCRIDockerd
}

// MarshalText writes r's word; the zero value is "".
func (r Runtime) MarshalText() ([]byte, error) { return []byte(r), nil }

// UnmarshalText accepts "" (the zero value) and any word spelled as
// runtimes are (lowercase letters and digits joined by single dashes, at
// most 128 bytes), known or not: "crio" and "docker" decode, and report
// Known false. Other text is an error wrapping [ErrUnknownRuntime] and
// leaves r unchanged.
func (r *Runtime) UnmarshalText(text []byte) error {
	if !isWord(text) {
		return fmt.Errorf("criinfo: runtime %q: %w: want a word such as %q, %q, %q or %q",
			text, ErrUnknownRuntime, RuntimeContainerd, RuntimeCRIO, RuntimeCRIDockerd, RuntimeUnknown)
	}
	*r = Runtime(text)
	return nil
}

// isWord reports whether text is "" or at most 128 lowercase letters and
// digits joined by single dashes, as resolve.Kind.UnmarshalText reads a
// kind.
func isWord(text []byte) bool {
	if len(text) == 0 {
		return true
	}
	if len(text) > 128 || text[0] == '-' || text[len(text)-1] == '-' {
		return false
	}
	for i, c := range text {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && (c != '-' || text[i-1] == '-') {
			return false
		}
	}
	return true
}

var (
	_ encoding.TextMarshaler   = Runtime("")
	_ encoding.TextUnmarshaler = (*Runtime)(nil)
)
