package resolve

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/releases"
)

var (
	// ErrInvalidConfig is wrapped by every [ConfigError]: a node file that
	// exists but cannot be used (bad syntax, a value of the wrong type).
	ErrInvalidConfig = nodefs.ErrInvalidConfig

	// ErrNotRegular is wrapped by the [*ConfigError] for a node file that
	// is a FIFO, socket, device or anything else but a regular file (or a
	// symbolic link to one). Such files are refused before they are opened,
	// as opening one can block or read without end.
	ErrNotRegular = nodefs.ErrNotRegular

	// ErrLimit is wrapped by the [*ConfigError] for a source that passes
	// one of Resolve's limits (file size, bytes, files, directory entries,
	// path depth, and the limits of decoding; see the package documentation).
	ErrLimit = nodefs.ErrLimit

	// ErrUnknownVersion is wrapped by the errors of [KubeadmPauseImage] and
	// [RuntimeDefaultImage] for a version that is malformed or not in their
	// tables.
	ErrUnknownVersion = releases.ErrUnknownVersion
)

// ErrNoSandboxImage is wrapped by the error of [Resolve] when it cannot tell
// the sandbox image: no runtime is found, or the runtime's config does not
// name it and the runtime's version (for its built-in default) is unknown.
// Resolve then returns the partial [Result] beside the error: its Notes say
// what is missing (kinds [KindNoRuntime], [KindSandboxImageUnknown]), and
// its SandboxImage is "" and its Pins hold no sandbox image, so a caller
// that compiled them anyway would pin nothing: check the error.
// [Result.Err] returns the same error from such a result (one read back
// from JSON included), and [audit.Judge] returns it.
var ErrNoSandboxImage = errors.New("the sandbox image cannot be told")

// Err returns nil when r names the sandbox image, and otherwise the error
// [Resolve] returned beside r: it wraps [ErrNoSandboxImage] and says why
// with the message of r's note of kind [KindNoRuntime] or
// [KindSandboxImageUnknown]. A nil r names none either.
func (r *Result) Err() error {
	if r == nil {
		return fmt.Errorf("resolve: %w: no result", ErrNoSandboxImage)
	}
	if r.SandboxImage != "" {
		return nil
	}
	why := "no source names it"
	for _, n := range r.Notes {
		if n.Kind == KindSandboxImageUnknown || n.Kind == KindNoRuntime {
			why = n.Message
		}
	}
	return fmt.Errorf("resolve: %w: %s", ErrNoSandboxImage, why)
}

// ErrNoRoot is wrapped by the error of [Resolve], [ContainerdEndpoint] and
// [KubeletEndpoint] for a node root that is not there: a nil file system
// where one is required, or a [DirFS] directory that does not exist or is
// not a directory. A root that exists but holds no file of any source is no
// error for these: every source is absent.
var ErrNoRoot = errors.New("the node's root file system cannot be read")

// ErrInvalidUrgency is wrapped by the error of [Urgency.UnmarshalText] for
// text that is no word.
var ErrInvalidUrgency = errors.New("invalid urgency")

// checkRoot returns an error wrapping [ErrNoRoot], naming the root, when
// fsys is nil or a [DirFS] whose directory is missing or no directory.
// Other file systems are the caller's: one may serve some files and no
// directory "." at all.
func checkRoot(fsys fs.FS) error {
	if fsys == nil {
		return fmt.Errorf("resolve: %w: nil fs.FS", ErrNoRoot)
	}
	if !nodefs.IsDirFS(fsys) {
		return nil
	}
	fi, err := fs.Stat(fsys, ".")
	if err == nil && !fi.IsDir() {
		err = errors.New("not a directory")
	}
	if err != nil {
		return fmt.Errorf("resolve: %w: %s: %w", ErrNoRoot, rootName(fsys), nodefs.UnwrapPathError(err))
	}
	return nil
}

// rootName names a root file system in errors: its directory for DirFS.
func rootName(fsys fs.FS) string {
	if s, ok := fsys.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", fsys)
}

// ConfigError reports a node file that could not be used. Its Error method
// gives "path:line: key: cause", the cause cut to a few hundred bytes;
// Unwrap returns Err. Every error of [Resolve], [ContainerdEndpoint] and
// [KubeletEndpoint] about a node file holds one:
// errors.As(err, new(*resolve.ConfigError)) finds it.
type ConfigError struct {
	Path string // file on the node, as an absolute path ("/etc/containerd/config.toml")
	Key  string // TOML/YAML key or variable/flag name, "" if the file did not parse
	Line int    // 1-based, 0 if unknown
	Err  error  // cause; wraps ErrInvalidConfig
}

func (e *ConfigError) Error() string { return (*nodefs.ConfigError)(e).Error() }

// Unwrap returns the cause, which wraps [ErrInvalidConfig].
func (e *ConfigError) Unwrap() error { return e.Err }

// exportErr gives the caller a ConfigError where the readers made their
// own (resolve/internal/nodefs.ConfigError, the same fields): the error
// itself when it is one, else err with the ConfigError it wraps put first
// in its tree, so errors.As finds resolve's and errors.Is all the rest.
func exportErr(err error) error {
	var ce *nodefs.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	if err == error(ce) { //nolint:errorlint // identity: err is that ConfigError itself, not a chain holding it
		return (*ConfigError)(ce)
	}
	return &wrapped{err: err, ce: (*ConfigError)(ce)}
}

// wrapped is an error that wraps a ConfigError further down: the same
// message, with the exported ConfigError found first.
type wrapped struct {
	err error
	ce  *ConfigError
}

func (w *wrapped) Error() string   { return w.err.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.ce, w.err} }
