package resolve

import (
	"encoding"
	"errors"
	"fmt"

	"github.com/sandboxpin/sandboxpin/criinfo"
)

// Component names what a finding, a fix or a version concerns: a runtime
// (its [criinfo.Runtime] name), the kubelet or kubeadm. [ComponentNone],
// "", is no component in particular. The set may grow: a word of a later
// version decodes and reports [Component.Known] false.
type Component string

// The components.
const (
	ComponentNone       Component = ""
	ComponentContainerd           = Component(criinfo.RuntimeContainerd)
	ComponentCRIO                 = Component(criinfo.RuntimeCRIO)
	ComponentCRIDockerd           = Component(criinfo.RuntimeCRIDockerd)
	ComponentKubelet    Component = "kubelet"
	ComponentKubeadm    Component = "kubeadm"
)

// ErrUnknownComponent is wrapped by [Component.UnmarshalText] for text that
// is no word.
var ErrUnknownComponent = errors.New("unknown component")

// Known reports whether c is one of the components above other than
// ComponentNone; false for "" and for a word of a later version.
func (c Component) Known() bool {
	switch c {
	case ComponentContainerd, ComponentCRIO, ComponentCRIDockerd, ComponentKubelet, ComponentKubeadm:
		return true
	}
	return false
}

// UnmarshalText accepts "" (ComponentNone) and any word (see
// [Kind.UnmarshalText]), known or not, so that a reader decodes a newer
// producer's JSON; other text is an error wrapping [ErrUnknownComponent].
func (c *Component) UnmarshalText(text []byte) error {
	if !isWord(text) {
		return fmt.Errorf("resolve: %w %q: want a word such as %q or %q", ErrUnknownComponent, text, ComponentContainerd, ComponentKubelet)
	}
	*c = Component(respell(text))
	return nil
}

var _ encoding.TextUnmarshaler = (*Component)(nil)
