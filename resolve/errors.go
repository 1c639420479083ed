package resolve

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

var (
	// ErrInvalidConfig is wrapped by every [ConfigError]: a node file that
	// exists but cannot be used (bad syntax, a value of the wrong type).
	ErrInvalidConfig = errors.New("invalid configuration")

	// ErrUnknownVersion is wrapped by the errors of [KubeadmPauseImage] and
	// [RuntimeDefaultImage] for a version that is malformed or not in their
	// tables.
	ErrUnknownVersion = releases.ErrUnknownVersion
)

// ConfigError reports a node file that could not be used.
type ConfigError struct {
	Path string // file on the node, as an absolute path ("/etc/containerd/config.toml")
	Key  string // TOML/YAML key or variable/flag name, "" if the file did not parse
	Line int    // 1-based, 0 if unknown
	Err  error  // cause; wraps ErrInvalidConfig
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": %s", e.Key)
	}
	fmt.Fprintf(&b, ": %s", shorten(fmt.Sprint(e.Err)))
	return b.String()
}

// Unwrap returns the cause, which wraps [ErrInvalidConfig].
func (e *ConfigError) Unwrap() error { return e.Err }

// configErr builds a *ConfigError whose Err wraps ErrInvalidConfig and, when
// cause is not nil, the cause too (so errors.As finds e.g. a *toml.DecodeError).
func configErr(path, key string, line int, cause error) *ConfigError {
	var err error
	if cause != nil {
		err = fmt.Errorf("%w: %w", ErrInvalidConfig, cause)
	} else {
		err = ErrInvalidConfig
	}
	return &ConfigError{Path: path, Key: key, Line: line, Err: err}
}
