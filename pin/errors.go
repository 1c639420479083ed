package pin

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrInvalidPattern is wrapped by every *[PatternError].
var ErrInvalidPattern = errors.New("invalid pin pattern")

// ErrUnknownMode is wrapped by the error of [Compile] given a [Mode] that is
// none of this version's (a word of a later version's JSON decodes, but
// does not compile).
var ErrUnknownMode = errors.New("unknown mode")

// PatternError reports a pattern that [Compile] rejects. Its message quotes
// at most the first 80 bytes of the pattern (and says how long it is), so
// that a megabyte of pattern makes a short error; the field holds it whole.
type PatternError struct {
	Index   int    // position in the patterns given to Compile
	Pattern string // the pattern as written
	Err     error  // wraps ErrInvalidPattern, and a reference error where there is one
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("pattern %d %s: %v", e.Index, quote(e.Pattern), e.Err)
}

// maxQuoted bounds how much of a pattern an error message repeats; 80 as in
// package reference's errors.
const maxQuoted = 80

// maxReported bounds the *PatternErrors that Compile joins: a list of 100,000
// bad patterns makes an error of a few kilobytes, not megabytes.
const maxReported = 10

// quote returns s quoted with %q, shortened when it is long.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:cut], len(s))
}

func (e *PatternError) Unwrap() error { return e.Err }
