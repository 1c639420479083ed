package rollout

import (
	"testing"
	"time"
	_ "time/tzdata" // Europe/Berlin where the machine has no zoneinfo

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string        // as a person writes it
		start   time.Duration // want
		end     time.Duration // want
		wantErr bool          // ErrInvalidWindow, naming in
	}{
		{name: "empty: always open", in: ""},
		{name: "night", in: "02:00-05:00", start: 2 * time.Hour, end: 5 * time.Hour},
		{name: "across midnight", in: "22:30-04:15", start: 22*time.Hour + 30*time.Minute, end: 4*time.Hour + 15*time.Minute},
		{name: "to midnight", in: "22:00-00:00", start: 22 * time.Hour},
		{name: "last minute", in: "00:00-23:59", end: 23*time.Hour + 59*time.Minute},
		{name: "no dash", in: "02:00", wantErr: true},
		{name: "one digit hour", in: "2:00-05:00", wantErr: true},
		{name: "hour 24", in: "22:00-24:00", wantErr: true},
		{name: "minute 60", in: "02:60-05:00", wantErr: true},
		{name: "seconds", in: "02:00:00-05:00:00", wantErr: true},
		{name: "spaces", in: "02:00 - 05:00", wantErr: true},
		{name: "equal", in: "02:00-02:00", wantErr: true},
		{name: "two dashes", in: "02:00-05:00-06:00", wantErr: true},
		{name: "words", in: "night", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, err := ParseWindow(tt.in, time.UTC)
			if tt.wantErr {
				require.ErrorIs(t, err, ErrInvalidWindow)
				assert.ErrorContains(t, err, `"`+tt.in+`"`)
				assert.Equal(t, Window{}, w)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.start, w.Start, "start")
			assert.Equal(t, tt.end, w.End, "end")
			assert.Equal(t, tt.in, w.String(), "String round-trips")
		})
	}
}

func TestWindowContains(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	at := func(loc *time.Location, clock string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04:05", "2026-12-07 "+clock, loc)
		require.NoError(t, err)
		return tm
	}
	tests := []struct {
		name   string
		window string         // ParseWindow's input
		loc    *time.Location // the window's
		t      time.Time
		want   bool
	}{
		{name: "zero: open", window: "", t: at(time.UTC, "12:00:00"), want: true},
		{name: "inside", window: "02:00-05:00", t: at(time.UTC, "03:00:00"), want: true},
		{name: "at start", window: "02:00-05:00", t: at(time.UTC, "02:00:00"), want: true},
		{name: "before start", window: "02:00-05:00", t: at(time.UTC, "01:59:59"), want: false},
		{name: "at end: closed", window: "02:00-05:00", t: at(time.UTC, "05:00:00"), want: false},
		{name: "a second before end", window: "02:00-05:00", t: at(time.UTC, "04:59:59"), want: true},
		{name: "across midnight, evening", window: "22:00-04:00", t: at(time.UTC, "23:30:00"), want: true},
		{name: "across midnight, midnight", window: "22:00-04:00", t: at(time.UTC, "00:00:00"), want: true},
		{name: "across midnight, morning", window: "22:00-04:00", t: at(time.UTC, "03:59:00"), want: true},
		{name: "across midnight, noon", window: "22:00-04:00", t: at(time.UTC, "12:00:00"), want: false},
		{name: "across midnight, at end", window: "22:00-04:00", t: at(time.UTC, "04:00:00"), want: false},
		{name: "to midnight", window: "22:00-00:00", t: at(time.UTC, "23:59:59"), want: true},
		{name: "to midnight, midnight", window: "22:00-00:00", t: at(time.UTC, "00:00:00"), want: false},
		// 01:30 UTC is 02:30 in Berlin (CET, UTC+1, in December).
		{name: "in the window's zone", window: "02:00-05:00", loc: berlin, t: at(time.UTC, "01:30:00"), want: true},
		{name: "not in UTC's", window: "02:00-05:00", loc: berlin, t: at(time.UTC, "04:30:00"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, err := ParseWindow(tt.window, tt.loc)
			require.NoError(t, err)
			assert.Equal(t, tt.want, w.Contains(tt.t), "Window(%q).Contains(%v)", tt.window, tt.t)
		})
	}
}
