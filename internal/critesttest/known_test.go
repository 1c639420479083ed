package critesttest

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// knownLists are the known-failure lists of the tests and fuzz seeds.
var knownLists = []struct {
	name    string
	in      string            // the list
	want    map[string]string // spec -> reason
	wantErr error             // sentinel expected with errors.Is, or nil
}{
	{name: "empty", in: "", want: map[string]string{}},
	{name: "comments", in: "# a comment\n\n#another\n", want: map[string]string{}},
	{name: "one", in: "# reason: no setuid program\n  spec one  \n", want: map[string]string{"spec one": "no setuid program"}},
	{name: "two reasons", in: "# reason: a\nx\ny\n# a comment\n# reason: b\nz\n", want: map[string]string{"x": "a", "y": "a", "z": "b"}},
	{name: "no reason", in: "spec\n", wantErr: ErrNoReason},
	{name: "empty reason", in: "# reason:  \nspec\n", wantErr: ErrEmptyReason},
	{name: "duplicate", in: "# reason: a\nx\n# reason: b\nx\n", wantErr: ErrDuplicate},
	{name: "too long", in: "# reason: a\n" + strings.Repeat("x", maxLine+1) + "\n", wantErr: ErrLineTooLong},
}

func TestParseKnownFailures(t *testing.T) {
	t.Parallel()
	for _, tt := range knownLists {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseKnownFailures(strings.NewReader(tt.in))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ParseKnownFailures(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			assert.Equal(t, tt.want, got, "ParseKnownFailures(%q)", tt.in)
		})
	}
}

func TestListErrorNamesTheLine(t *testing.T) {
	t.Parallel()
	_, err := ParseKnownFailures(strings.NewReader("# reason: a\nspec\n# a comment\n  spec\n"))
	var le *ListError
	if !errors.As(err, &le) {
		t.Fatalf("ParseKnownFailures error = %v, want a *ListError", err)
	}
	assert.Equal(t, 4, le.Line)
	assert.Equal(t, "spec", le.Text)
}

func TestCheck(t *testing.T) {
	t.Parallel()
	rep := Report{"ok": Passed, "known": Failed, "new": Failed, "fixed": Passed, "off": Skipped}
	known := map[string]string{"known": "r1", "fixed": "r2", "off": "r3", "gone": "r4"}
	got := Check(rep, known)
	assert.Equal(t, []string{
		"failed, and not on the known-failure list: new",
		"on the known-failure list, but not in critest's report: gone",
		"on the known-failure list, but skipped: off",
		"passed, but on the known-failure list (r2): take it off: fixed",
	}, got)
	assert.Empty(t, Check(Report{"ok": Passed, "known": Failed}, map[string]string{"known": "r"}), "a run as expected")
}
