package rollout

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrInvalidWindow is ParseWindow's error for a window it cannot read.
var ErrInvalidWindow = errors.New("rollout: invalid window")

// Window is a daily time window, [Start, End) in Location; End before
// Start spans midnight. The zero Window is always open, as is any Window
// whose Start equals its End. A nil Location is UTC.
type Window struct {
	Start, End time.Duration // since midnight
	Location   *time.Location
}

// ParseWindow parses "HH:MM-HH:MM" in loc ("" is the zero Window). For
// example, ParseWindow("22:00-04:00", loc) spans midnight: open from 22:00
// to 04:00 the next morning. A nil loc is UTC. The two times must differ
// (a window open all day is "", not "02:00-02:00").
func ParseWindow(s string, loc *time.Location) (Window, error) {
	if s == "" {
		return Window{}, nil
	}
	start, end, ok := strings.Cut(s, "-")
	if !ok {
		return Window{}, fmt.Errorf("%w %q: want HH:MM-HH:MM", ErrInvalidWindow, s)
	}
	w := Window{Location: loc}
	var err error
	if w.Start, err = parseClock(start); err != nil {
		return Window{}, fmt.Errorf("%w %q: start: %w", ErrInvalidWindow, s, err)
	}
	if w.End, err = parseClock(end); err != nil {
		return Window{}, fmt.Errorf("%w %q: end: %w", ErrInvalidWindow, s, err)
	}
	if w.Start == w.End {
		return Window{}, fmt.Errorf("%w %q: start and end are equal", ErrInvalidWindow, s)
	}
	return w, nil
}

// parseClock parses "HH:MM", 00:00 to 23:59, two digits each.
func parseClock(s string) (time.Duration, error) {
	t, err := time.Parse("15:04", s)
	if err != nil || len(s) != len("15:04") {
		return 0, fmt.Errorf("%q is not HH:MM (00:00 to 23:59)", s)
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute, nil
}

// Contains reports whether t is inside w, by the wall clock in
// w.Location (on a day that changes to or from daylight saving time, the
// window keeps its clock times).
func (w Window) Contains(t time.Time) bool {
	if w.Start == w.End {
		return true
	}
	loc := w.Location
	if loc == nil {
		loc = time.UTC
	}
	h, m, s := t.In(loc).Clock()
	d := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second +
		time.Duration(t.Nanosecond())
	if w.Start < w.End {
		return w.Start <= d && d < w.End
	}
	return d >= w.Start || d < w.End
}

// String returns w as ParseWindow reads it ("02:00-05:00"; "" for a
// window always open), without its Location.
func (w Window) String() string {
	if w.Start == w.End {
		return ""
	}
	return clock(w.Start) + "-" + clock(w.End)
}

func clock(d time.Duration) string {
	return fmt.Sprintf("%02d:%02d", int(d/time.Hour), int(d%time.Hour/time.Minute))
}
