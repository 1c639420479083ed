package kubelettest_test

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/kubelettest"
)

// update rewrites the captures from the live rows:
//
//	go test -run 'TestKubeletGC/rows/containerd-(1.6|2.4)$/(exact|alias)$' ./kubelettest -update
var update = flag.Bool("update", false, "rewrite deploy/testdata/audit from the live rows")

// captureDir holds `sandboxpin audit -o prometheus` as the rows saw it,
// which deploy's alert rule tests replay as series (deploy/rules_test.go).
const captureDir = "../../deploy/testdata/audit"

// captures names the rows whose audit output deploy's rule tests replay
// (before GC, and with afterGC once the kubelet deleted the pause image),
// and their files in captureDir.
var captures = map[string]string{
	"containerd-1.6/exact":           "containerd-1.6-exact.prom",
	"containerd-1.6/exact" + afterGC: "containerd-1.6-exact-after-gc.prom",
	"containerd-2.4/alias":           "containerd-2.4-alias.prom",
	"containerd-2.4/alias/shim":      "containerd-2.4-alias-shim.prom",
	"containerd-2.4/alias/fixed":     "containerd-2.4-fixed.prom",
	"TestAuditFailedCapture":         "audit-failed.prom",
}

// afterGC marks a capture taken after the kubelet deleted the pause image.
const afterGC = "@after-gc"

// auditTimestamp is the one line of the exposition that changes from run to
// run; captures hold 0 there.
var auditTimestamp = regexp.MustCompile(`(?m)^(sandboxpin_audit_timestamp_seconds) \S+$`)

// fleetMetrics runs `sandboxpin audit -o prometheus` and `-o summary` as a
// node's exporter and node-problem-detector would (key names the row, and
// afterGC), checks that they give text audit's exit code (wantCode),
// compares the exposition with the capture (or writes it under -update),
// and returns sandboxpin_sandbox_image_stored_as_configured.
func fleetMetrics(t *testing.T, key, endpoint, root string, wantCode int) float64 {
	t.Helper()
	code, out := audit(t, endpoint, root, "-o", "prometheus")
	assert.Equal(t, wantCode, code, "audit -o prometheus exits as audit does:\n%s", out)
	code, summary := audit(t, endpoint, root, "-o", "summary")
	assert.Equal(t, wantCode, code, "audit -o summary exits as audit does: %s", summary)
	t.Logf("%s: audit -o summary: %s", key, strings.TrimSpace(summary))
	checkCapture(t, key, out)
	v, err := kubelettest.GaugeOf(out, "sandboxpin_sandbox_image_stored_as_configured")
	require.NoError(t, err)
	// The summary says the same: FAIL for an image stored only under
	// another spelling.
	if v == 0 {
		assert.Regexp(t, `^FAIL: `, summary)
	}
	return v
}

// checkCapture compares the exposition out, its timestamp zeroed, with the
// capture of key, if it has one (or writes it under -update).
func checkCapture(t *testing.T, key, out string) {
	t.Helper()
	file := captures[key]
	if file == "" {
		return
	}
	got := auditTimestamp.ReplaceAllString(out, "$1 0")
	path := filepath.Join(captureDir, file)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644)) //nolint:gosec // G306: a committed test fixture
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to capture")
	assert.Equal(t, string(want), got, "%s is not what audit -o prometheus says now; run with -update", path)
}

// TestAuditFailedCapture captures `sandboxpin audit -o prometheus` when the
// runtime does not answer (exit 2): the series of SandboxpinAuditFailing.
func TestAuditFailedCapture(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin, err := sandboxpinBinary()
	require.NoError(t, err)
	root := t.TempDir()
	cmd := exec.Command(bin, "audit", "-o", "prometheus", "--root", root, "--runtime-endpoint", "unix://"+filepath.Join(root, "containerd.sock"))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode(), "stderr: %s", stderr.String())
	assert.Contains(t, stdout.String(), "sandboxpin_audit_success 0")
	checkCapture(t, t.Name(), stdout.String())
}
