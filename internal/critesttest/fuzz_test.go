package critesttest

import (
	"strings"
	"testing"
)

// FuzzParseKnownFailures checks that a list either fails with a nil map or
// gives every spec a non-empty reason, with no spec blank or padded.
func FuzzParseKnownFailures(f *testing.F) {
	for _, tt := range knownLists {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseKnownFailures(strings.NewReader(in))
		if err != nil {
			if got != nil {
				t.Fatalf("ParseKnownFailures(%q) = %v with error %v", in, got, err)
			}
			return
		}
		for spec, reason := range got {
			if spec == "" || spec != strings.TrimSpace(spec) || strings.HasPrefix(spec, "#") || reason == "" {
				t.Fatalf("ParseKnownFailures(%q): spec %q, reason %q", in, spec, reason)
			}
		}
	})
}

// FuzzParseJUnit checks that a report either fails with a nil report or
// holds at least one spec, each without ginkgo's "[It] ".
func FuzzParseJUnit(f *testing.F) {
	for _, tt := range junitReports {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseJUnit(strings.NewReader(in))
		if err != nil {
			if got != nil {
				t.Fatalf("ParseJUnit(%q) = %v with error %v", in, got, err)
			}
			return
		}
		if len(got) == 0 {
			t.Fatalf("ParseJUnit(%q) = an empty report", in)
		}
		for _, st := range got {
			if st != Passed && st != Failed && st != Skipped {
				t.Fatalf("ParseJUnit(%q): state %d", in, st)
			}
		}
	})
}
