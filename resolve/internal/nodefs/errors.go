package nodefs

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

var (
	// ErrNotRegular is wrapped by the error for a node file that is a FIFO,
	// socket, device or anything else but a regular file (or a symbolic
	// link to one). Package resolve exports it as resolve.ErrNotRegular.
	ErrNotRegular = errors.New("not a regular file")

	// ErrLimit is wrapped by the error for an input that passes one of the
	// limits on reading or decoding node files. Package resolve exports it
	// as resolve.ErrLimit.
	ErrLimit = errors.New("limit exceeded")
)

// NotRegular is the error for a file of mode m, saying what it is; it wraps
// ErrNotRegular.
func NotRegular(m fs.FileMode) error {
	var what string
	switch t := m.Type(); {
	case t&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		what = "a socket"
	case t&fs.ModeCharDevice != 0:
		what = "a character device"
	case t&fs.ModeDevice != 0:
		what = "a block device"
	case t&fs.ModeSymlink != 0:
		what = "a symbolic link"
	case t&fs.ModeDir != 0:
		what = "a directory"
	default:
		what = "an irregular file (" + t.String() + ")"
	}
	return fmt.Errorf("%w: it is %s", ErrNotRegular, what)
}

// ErrInvalidConfig is wrapped by every [ConfigError]: a node file that
// exists but cannot be used (bad syntax, a value of the wrong type).
// Package resolve exports it as resolve.ErrInvalidConfig.
var ErrInvalidConfig = errors.New("invalid configuration")

// ConfigError reports a node file that could not be used. Package resolve
// defines resolve.ConfigError with the same fields and gives its callers
// that type instead (resolve's exportErr), so go doc shows the fields.
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
	fmt.Fprintf(&b, ": %s", Shorten(fmt.Sprint(e.Err)))
	return b.String()
}

// Unwrap returns the cause, which wraps [ErrInvalidConfig].
func (e *ConfigError) Unwrap() error { return e.Err }

// Invalid builds a *ConfigError whose Err wraps ErrInvalidConfig and, when
// cause is not nil, the cause too (so errors.As finds e.g. a
// *toml.DecodeError).
func Invalid(path, key string, line int, cause error) *ConfigError {
	var err error
	if cause != nil {
		err = fmt.Errorf("%w: %w", ErrInvalidConfig, cause)
	} else {
		err = ErrInvalidConfig
	}
	return &ConfigError{Path: path, Key: key, Line: line, Err: err}
}

// NodePath turns an fs.FS path into the absolute path the node knows.
func NodePath(name string) string { return "/" + strings.TrimPrefix(name, "/") }

// FSPath turns an absolute node path into an fs.FS path; ok is false when
// the result is not a valid fs.FS path (it escapes the root).
func FSPath(p string) (string, bool) {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" {
		p = "."
	}
	return p, fs.ValidPath(p)
}
