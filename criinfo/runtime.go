package criinfo

import (
	"encoding"
	"errors"
	"fmt"
)

// Runtime names a CRI runtime. The set is closed: the constants below are
// every value, and [Runtime.UnmarshalText] refuses any other word. The zero
// value is [RuntimeUnknown].
type Runtime string

// The runtimes.
const (
	// RuntimeUnknown: no runtime identified itself or was found. It is the
	// one spelling of unknown, so that a zero Info, a zero
	// resolve.Options.Runtime ("detect it") and a Result that found no
	// runtime agree.
	RuntimeUnknown Runtime = ""
	// RuntimeContainerd is containerd's CRI plugin.
	RuntimeContainerd Runtime = "containerd"
	// RuntimeCRIO is CRI-O, spelled as its Version RPC's RuntimeName.
	RuntimeCRIO Runtime = "cri-o"
	// RuntimeCRIDockerd is cri-dockerd (RuntimeName "docker" in its
	// Version RPC, which names the Docker Engine behind it).
	RuntimeCRIDockerd Runtime = "cri-dockerd"
)

// ErrUnknownRuntime is wrapped by the error of [Runtime.UnmarshalText] for
// a word that names no runtime of this package, and by functions elsewhere
// (resolve.RuntimeDefaultImage) given a runtime they know nothing of.
var ErrUnknownRuntime = errors.New("unknown runtime")

// UnmarshalText accepts the runtimes above ("" for RuntimeUnknown) and
// refuses any other word, "unknown" and "crio" included, with an error
// wrapping [ErrUnknownRuntime]: the set is closed.
func (r *Runtime) UnmarshalText(text []byte) error {
	switch v := Runtime(text); v {
	case RuntimeUnknown, RuntimeContainerd, RuntimeCRIO, RuntimeCRIDockerd:
		*r = v
		return nil
	}
	return fmt.Errorf("criinfo: runtime %q: %w: want %q, %q, %q or \"\" (unknown)",
		text, ErrUnknownRuntime, RuntimeContainerd, RuntimeCRIO, RuntimeCRIDockerd)
}

var _ encoding.TextUnmarshaler = (*Runtime)(nil)
