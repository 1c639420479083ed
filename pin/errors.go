package pin

import (
	"errors"
	"fmt"
)

// ErrInvalidPattern is wrapped by every *[PatternError].
var ErrInvalidPattern = errors.New("invalid pin pattern")

// PatternError reports a pattern that [Compile] rejects.
type PatternError struct {
	Index   int    // position in the patterns given to Compile
	Pattern string // the pattern as written
	Err     error  // wraps ErrInvalidPattern, and a reference error where there is one
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("pattern %d %q: %v", e.Index, e.Pattern, e.Err)
}

func (e *PatternError) Unwrap() error { return e.Err }
