package crishim

import (
	"testing"
)

// The fuzz target of the patcher; its seeds are the package's response
// tables and the files under testdata/fuzz.

// FuzzPatchPinned patches random bytes as each response kind with each
// matcher: whatever decodes must decode, patched, to the decoded message
// with pinned set as the matcher says, and canonical input must patch to
// exactly what marshalling the pinned message gives.
func FuzzPatchPinned(f *testing.F) {
	for _, sr := range seedResponses(f) {
		f.Add(sr.b, uint8(sr.kind), uint8(0)) //nolint:gosec // G115: kinds are 0 to 2
	}
	ms := patchMatchers(f)
	f.Fuzz(func(t *testing.T, b []byte, kind, matcher uint8) {
		checkPatch(t, b, int(kind)%numKinds, ms[int(matcher)%len(ms)])
	})
}
