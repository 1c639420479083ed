package critesttest

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// junitReports are the reports of the tests and fuzz seeds.
var junitReports = []struct {
	name    string
	in      string // the report
	want    Report
	wantErr error // sentinel expected with errors.Is, or nil
}{
	{
		name: "states",
		in: `<testsuites><testsuite name="CRI validation">
<testcase name="[BeforeSuite]" status="passed"></testcase>
<testcase name="[It] [sig-node] a passes [Conformance]" status="passed"></testcase>
<testcase name="[It] [sig-node] b fails" status="failed"><failure message="x"></failure></testcase>
<testcase name="[It] [sig-node] c times out" status="timedout"></testcase>
<testcase name="[It] [sig-node] d is skipped" status="skipped"><skipped message="skipped"></skipped></testcase>
<testcase name="[It] [sig-node] e is pending" status="pending"></testcase>
</testsuite></testsuites>`,
		want: Report{"[sig-node] a passes [Conformance]": Passed, "[sig-node] b fails": Failed,
			"[sig-node] c times out": Failed, "[sig-node] d is skipped": Skipped, "[sig-node] e is pending": Skipped},
	},
	{name: "no specs", in: `<testsuites><testsuite><testcase name="[BeforeSuite]" status="passed"/></testsuite></testsuites>`, wantErr: ErrReport},
	{name: "twice", in: `<testsuites><testsuite><testcase name="[It] a" status="passed"/><testcase name="[It] a" status="failed"/></testsuite></testsuites>`, wantErr: ErrReport},
	{name: "not XML", in: `{"json": true}`, wantErr: ErrReport},
	{name: "truncated", in: `<testsuites><testsuite><testcase name="[It] a"`, wantErr: ErrReport},
}

func TestParseJUnit(t *testing.T) {
	t.Parallel()
	for _, tt := range junitReports {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseJUnit(strings.NewReader(tt.in))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ParseJUnit(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestParseJUnitCaptured reads a report critest v1.37.0 wrote against
// containerd 1.6.20 (TestLiveCritestTable, directly; trimmed to a few specs
// of each state, without their timelines).
func TestParseJUnitCaptured(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/critest-v1.37.0-containerd-1.6.20.xml")
	require.NoError(t, err)
	defer f.Close()
	rep, err := ParseJUnit(f)
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Count(Passed), "passed")
	assert.Equal(t, 2, rep.Count(Failed), "failed")
	assert.Equal(t, 2, rep.Count(Skipped), "skipped")
	assert.Equal(t, Failed, rep["[k8s.io] Idempotence StopPodSandbox should not return an error if not found"])
}

func TestReportCounts(t *testing.T) {
	t.Parallel()
	rep := Report{"b": Passed, "a": Passed, "c": Failed}
	assert.Equal(t, 2, rep.Count(Passed))
	assert.Equal(t, 0, rep.Count(Skipped))
	assert.Equal(t, []string{"a", "b"}, rep.Specs(Passed))
	assert.Equal(t, "failed", Failed.String())
}
