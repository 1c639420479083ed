package criinfo

import (
	"errors"
	"fmt"
)

// Sentinel errors, wrapped by [*ParseError]. Test with [errors.Is].
var (
	// ErrInvalidInfo reports input that is not what a runtime reports: bad
	// JSON, a "config" that is not an object, a "sandboxImage" that is not a
	// non-empty string, or a duplicate key.
	ErrInvalidInfo = errors.New("invalid runtime info")
	// ErrTooLarge reports input over MaxInputSize bytes, or JSON of more
	// than MaxTokens tokens.
	ErrTooLarge = errors.New("runtime info too large")
	// ErrTooDeep reports JSON nested deeper than MaxDepth.
	ErrTooDeep = errors.New("runtime info nested too deeply")
)

// ParseError reports runtime info that could not be used.
type ParseError struct {
	// Key is the Info key (or top-level crictl key) that failed, "" when the
	// failure concerns the whole input.
	Key string
	// Offset is the byte offset of the failure: inside the value of Key for
	// [Parse], inside the whole document for [ParseJSON]. It is the start of
	// the offending value, or for malformed JSON the offset encoding/json
	// reports.
	Offset int64
	// Err is the cause; it wraps ErrInvalidInfo, ErrTooLarge or ErrTooDeep.
	Err error
}

func (e *ParseError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("criinfo: offset %d: %v", e.Offset, e.Err)
	}
	return fmt.Sprintf("criinfo: key %q: offset %d: %v", e.Key, e.Offset, e.Err)
}

// Unwrap returns the cause.
func (e *ParseError) Unwrap() error { return e.Err }
