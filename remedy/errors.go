package remedy

import (
	"errors"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// The errors of planning and applying, for errors.Is.
var (
	// ErrChanged: a file's bytes differ from those the node was resolved
	// or planned from (Apply's hash; For's line past the file's end).
	ErrChanged = errors.New("file changed since it was read")
	// ErrConflict: two changes of a plan touch one line.
	ErrConflict = errors.New("conflicting changes")
	// ErrUnsupported: a value the text editor cannot change byte-exactly
	// (a multi-line or escaped string, a flow map, an inline table, an
	// alias); [For] makes it a step for a person.
	ErrUnsupported = errors.New("cannot edit in place")
	// ErrNotRegular: the path to write is not a regular file (a FIFO, a
	// device, a directory). It is [resolve.ErrNotRegular], the same value,
	// so one errors.Is test covers reading and writing a node.
	ErrNotRegular = resolve.ErrNotRegular
	// ErrUnverified: the edited tree, resolved again, does not clear a
	// finding the plan answers, or has a finding the node had not.
	ErrUnverified = errors.New("the edits do not clear the findings")
	// ErrOutsideRoot: a path, or a symbolic link on the way to it, leads
	// outside the root.
	ErrOutsideRoot = errors.New("leads outside the root")
)
