package resolve

import (
	"encoding"
	"errors"
	"fmt"

	"github.com/sandboxpin/sandboxpin/criinfo"
)

// Component names what a finding, a fix or a version concerns: a runtime
// (its [criinfo.Runtime] name), the kubelet or kubeadm. The set is closed;
// [ComponentNone], "", is no component in particular.
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

// ErrUnknownComponent is wrapped by [Component.UnmarshalText] for a word
// outside the set.
var ErrUnknownComponent = errors.New("unknown component")

// UnmarshalText accepts the components above and refuses any other word
// with an error wrapping [ErrUnknownComponent].
func (c *Component) UnmarshalText(text []byte) error {
	switch v := Component(text); v {
	case ComponentNone, ComponentContainerd, ComponentCRIO, ComponentCRIDockerd, ComponentKubelet, ComponentKubeadm:
		*c = v
		return nil
	}
	return fmt.Errorf("resolve: %w %q", ErrUnknownComponent, text)
}

var _ encoding.TextUnmarshaler = (*Component)(nil)
