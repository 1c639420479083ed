package reference

import (
	"errors"
	"fmt"
)

// Sentinel errors. A [ParseError] or an [AliasError] wraps one of them, so
// callers branch with errors.Is.
var (
	// ErrInvalidFormat reports input that is not an image reference at all:
	// empty, white space, a stray separator or a character no part allows.
	ErrInvalidFormat = errors.New("invalid reference format")
	// ErrNameContainsUppercase reports an uppercase letter in a repository
	// path. Domains may hold uppercase letters; paths may not.
	ErrNameContainsUppercase = errors.New("repository name must be lowercase")
	// ErrNameTooLong reports a domain, a path or a whole input over the limits
	// in [MaxPathLength], [MaxDomainLength] and [MaxInputLength].
	ErrNameTooLong = errors.New("reference too long")
	// ErrInvalidTag reports a tag that does not match [\w][\w.-]{0,127}.
	ErrInvalidTag = errors.New("invalid tag")
	// ErrInvalidDigest reports a digest that go-digest rejects: an unknown
	// algorithm, a wrong length or uppercase hex.
	ErrInvalidDigest = errors.New("invalid digest")
	// ErrInvalidImageID reports input to [ParseImageID] that is not a sha256
	// image ID.
	ErrInvalidImageID = errors.New("invalid image ID")
	// ErrInvalidAlias reports an [Alias] whose From or To is not a valid
	// repository prefix, a duplicate From, or two rules that overlap.
	ErrInvalidAlias = errors.New("invalid alias")
	// ErrAliasCycle reports alias rules that rewrite a name back onto itself.
	ErrAliasCycle = errors.New("alias cycle")
)

// maxQuoted bounds how much of a hostile input an error message repeats.
const maxQuoted = 80

// ParseError reports why an input is not a valid reference and where.
type ParseError struct {
	Input  string // the string that was parsed, unchanged
	Offset int    // byte offset in Input of the first byte that is wrong
	Err    error  // wraps one of the sentinel errors
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("reference %s: offset %d: %v", quote(e.Input), e.Offset, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// AliasError reports a rule that [NewAliases] rejects.
type AliasError struct {
	Index int   // position of the rule in the arguments of NewAliases
	Rule  Alias // the rule as given
	Err   error // wraps ErrInvalidAlias or ErrAliasCycle
}

func (e *AliasError) Error() string {
	return fmt.Sprintf("alias %d (%s -> %s): %v", e.Index, quote(e.Rule.From), quote(e.Rule.To), e.Err)
}

func (e *AliasError) Unwrap() error { return e.Err }

// quote returns s quoted with %q, shortened when it is long so that an error
// for a megabyte of input stays readable.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:maxQuoted], len(s))
}

func parseErr(input string, offset int, err error) error {
	return &ParseError{Input: input, Offset: offset, Err: err}
}
