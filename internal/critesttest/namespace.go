package critesttest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// envInside marks the run of a test binary that [Isolate] started inside
// the namespaces.
const envInside = "SANDBOXPIN_CRITEST_ISOLATED"

// isolateScript runs inside the new namespaces: it brings loopback up and
// lays tmpfs over the host directories that CNI and network namespaces are
// kept in (/run/netns, /var/lib/cni), so that nothing of the run is left
// on the host, then runs the test binary.
const isolateScript = `set -e
ip link set lo up
for d in /run/netns /var/lib/cni; do mkdir -p "$d"; mount -t tmpfs none "$d"; done
exec "$@"`

// Isolate runs t in a network and mount namespace of its own. Called in a
// test outside one, it runs the test binary again for t alone under
// `unshare --net --mount` (with timeout as its -test.timeout), logs what it
// printed, fails t if it failed, and returns false: the caller then
// returns. In that run it returns true, and the test goes on. The runtime,
// the registry, the shim and critest then share one loopback, and the
// CNI bridge and the pods' addresses exist only there.
func Isolate(t *testing.T, timeout time.Duration) bool {
	t.Helper()
	if os.Getenv(envInside) == "1" {
		return true
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("critesttest: %v", err)
	}
	run := "^" + regexp.QuoteMeta(t.Name()) + "$"
	if i := strings.IndexByte(t.Name(), '/'); i >= 0 {
		t.Fatalf("critesttest: Isolate must be called from a top-level test, not %s", t.Name())
	}
	cmd := exec.CommandContext(t.Context(), "unshare", "--net", "--mount", "--", "/bin/sh", "-c", isolateScript, "critesttest",
		exe, "-test.run="+run, "-test.v", "-test.count=1", "-test.timeout="+timeout.String())
	cmd.Env = append(os.Environ(), envInside+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	// Prefixed, so that the lines of the inner run (=== RUN, --- FAIL)
	// are not taken for this run's own by go test -json.
	var b strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		b.WriteString("ns| ")
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	t.Logf("the run in namespaces of its own:\n%s", b.String())
	if err != nil {
		t.Fatalf("critesttest: the run in namespaces of its own failed: %v", err)
	}
	if !strings.Contains(out.String(), "--- PASS: "+t.Name()+" ") {
		t.Fatalf("critesttest: the run in namespaces of its own did not run %s", t.Name())
	}
	return false
}
