package criinfo

import (
	"encoding"
	"errors"
	"fmt"
)

// Runtime names a CRI runtime. The set is closed: the constants below are
// every value, and [Runtime.UnmarshalText] refuses any other word. The zero
// value means the same as [RuntimeUnknown], the one way unknown is written
// ([Runtime.MarshalText]); [Runtime.Known] tells both apart from a runtime.
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

// ErrUnknownRuntime is wrapped by the error of [Runtime.UnmarshalText] and
// [Runtime.MarshalText] for a word that names no runtime of this package,
// and by functions elsewhere (resolve.RuntimeDefaultImage) given a runtime
// they know nothing of.
var ErrUnknownRuntime = errors.New("unknown runtime")

// Known reports whether r names a runtime: containerd, CRI-O or
// cri-dockerd; false for RuntimeUnknown, the zero value and any other word.
func (r Runtime) Known() bool {
	return r == RuntimeContainerd || r == RuntimeCRIO || r == RuntimeCRIDockerd
}

// MarshalText writes r, and the zero value as "unknown"; a word outside the
// constants is an error wrapping [ErrUnknownRuntime].
func (r Runtime) MarshalText() ([]byte, error) {
	if r == "" {
		r = RuntimeUnknown
	}
	if !r.Known() && r != RuntimeUnknown {
		return nil, r.refuse()
	}
	return []byte(r), nil
}

// UnmarshalText accepts the runtimes above, and "" as RuntimeUnknown, and
// refuses any other word ("crio" and "docker" included) with an error
// wrapping [ErrUnknownRuntime]: the set is closed.
func (r *Runtime) UnmarshalText(text []byte) error {
	v := Runtime(text)
	if v == "" {
		v = RuntimeUnknown
	}
	if !v.Known() && v != RuntimeUnknown {
		return v.refuse()
	}
	*r = v
	return nil
}

func (r Runtime) refuse() error {
	return fmt.Errorf("criinfo: runtime %q: %w: want %q, %q, %q or %q",
		string(r), ErrUnknownRuntime, RuntimeContainerd, RuntimeCRIO, RuntimeCRIDockerd, RuntimeUnknown)
}

var (
	_ encoding.TextMarshaler   = Runtime("")
	_ encoding.TextUnmarshaler = (*Runtime)(nil)
)
