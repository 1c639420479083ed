package remedy

import "errors"

// The errors of planning and applying, for errors.Is.
var (
	// ErrChanged: a file does not hold what the plan expects, because it
	// changed since the node was resolved or planned.
	ErrChanged = errors.New("file changed since it was read")
	// ErrConflict: two changes of a plan touch one line.
	ErrConflict = errors.New("conflicting changes")
	// ErrUnsupported: a value the plan cannot write in place (a
	// multi-line string, an inline table); the step says it for a person.
	ErrUnsupported = errors.New("cannot edit in place")
	// ErrNotRegular: the path to write is not a regular file (a FIFO, a
	// device, a directory).
	ErrNotRegular = errors.New("not a regular file")
	// ErrUnverified: the edited tree, resolved again, does not clear a
	// finding the plan answers, or has a finding the node had not.
	ErrUnverified = errors.New("the edits do not clear the findings")
	// ErrOutsideRoot: a path, or a symbolic link on the way to it, leads
	// outside the root.
	ErrOutsideRoot = errors.New("leads outside the root")
)
