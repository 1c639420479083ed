package rollout

import (
	"errors"
	"testing"
	"time"
)

// FuzzParseWindow: an error comes with the zero Window and wraps
// ErrInvalidWindow; a Window parsed is within a day, not empty, and
// String gives it back; Contains answers for any time.
func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{"", "02:00-05:00", "22:30-04:15", "22:00-00:00", "00:00-23:59", "2:00-05:00",
		"22:00-24:00", "02:00-02:00", "02:00", "02:00-05:00-06:00", "+1:00-02:00", "０２:00-05:00"} {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, s string, unix int64) {
		w, err := ParseWindow(s, time.UTC)
		if err != nil {
			if !errors.Is(err, ErrInvalidWindow) || w != (Window{}) {
				t.Fatalf("ParseWindow(%q) = %+v, %v", s, w, err)
			}
			return
		}
		w.Contains(time.Unix(unix, 0))
		if s == "" {
			return
		}
		if w.Start == w.End || w.Start < 0 || w.End < 0 || w.Start >= 24*time.Hour || w.End >= 24*time.Hour ||
			w.Start%time.Minute != 0 || w.End%time.Minute != 0 {
			t.Fatalf("ParseWindow(%q) = %+v", s, w)
		}
		if got := w.String(); got != s {
			t.Fatalf("ParseWindow(%q).String() = %q", s, got)
		}
		if !w.Contains(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC).Add(w.Start)) {
			t.Fatalf("ParseWindow(%q) does not contain its start", s)
		}
	})
}
