package nodefs

import "errors"

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
