package critesttest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Errors of [ParseKnownFailures], wrapped in a [*ListError].
var (
	// ErrNoReason is a spec listed before any "# reason:" line.
	ErrNoReason = errors.New("spec without a reason")
	// ErrDuplicate is a spec listed twice.
	ErrDuplicate = errors.New("spec listed twice")
	// ErrEmptyReason is a "# reason:" line with nothing after it.
	ErrEmptyReason = errors.New("empty reason")
	// ErrLineTooLong is a line longer than maxLine.
	ErrLineTooLong = errors.New("line too long")
)

// ListError reports a line of a known-failure list that could not be used.
type ListError struct {
	Line int    // 1-based
	Text string // the line, as read
	Err  error  // one of the sentinels above
}

func (e *ListError) Error() string { return fmt.Sprintf("line %d: %q: %v", e.Line, e.Text, e.Err) }
func (e *ListError) Unwrap() error { return e.Err }

// reasonPrefix starts the line that gives the reason of the specs below it.
const reasonPrefix = "# reason:"

// maxLine bounds a line: spec names are far shorter.
const maxLine = 4096

// ParseKnownFailures reads a list of specs expected to fail, each with its
// reason: a line "# reason: TEXT" gives the reason of every spec line after
// it, up to the next reason line. Other lines starting with "#" are
// comments; blank lines are ignored; a spec line is a spec's full text (as
// in [Report]), its surrounding spaces trimmed. For example:
//
//	# reason: the image is pinned by a digest that only Google's content has
//	[sig-node] Image Manager public image with digest should be pulled and removed [Conformance]
//
// It returns the reason of each spec.
func ParseKnownFailures(r io.Reader) (map[string]string, error) {
	known := map[string]string{}
	reason := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1024), maxLine)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		fail := func(err error) (map[string]string, error) {
			return nil, &ListError{Line: n, Text: line, Err: err}
		}
		switch {
		case strings.HasPrefix(line, reasonPrefix):
			reason = strings.TrimSpace(strings.TrimPrefix(line, reasonPrefix))
			if reason == "" {
				return fail(ErrEmptyReason)
			}
		case line == "", strings.HasPrefix(line, "#"):
		case reason == "":
			return fail(ErrNoReason)
		default:
			if _, dup := known[line]; dup {
				return fail(ErrDuplicate)
			}
			known[line] = reason
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = ErrLineTooLong
		}
		return nil, err
	}
	return known, nil
}

// Check compares a run through the shim with the known failures and
// returns what is wrong, one sentence each, sorted: a spec that failed and
// is not listed, and a listed spec that passed (remove it from the list)
// or that the report does not hold (renamed, or skipped by the run).
func Check(rep Report, known map[string]string) []string {
	var problems []string
	for spec, st := range rep {
		if st == Failed && known[spec] == "" {
			problems = append(problems, fmt.Sprintf("failed, and not on the known-failure list: %s", spec))
		}
	}
	for spec, reason := range known {
		st, ok := rep[spec]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("on the known-failure list, but not in critest's report: %s", spec))
		case st == Passed:
			problems = append(problems, fmt.Sprintf("passed, but on the known-failure list (%s): take it off: %s", reason, spec))
		case st == Skipped:
			problems = append(problems, fmt.Sprintf("on the known-failure list, but skipped: %s", spec))
		}
	}
	sort.Strings(problems)
	return problems
}
