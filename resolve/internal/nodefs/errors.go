package nodefs

import (
	"errors"
	"fmt"
	"io/fs"
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
