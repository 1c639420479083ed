package critesttest_test

import (
	"fmt"
	"strings"

	"github.com/sandboxpin/sandboxpin/internal/critesttest"
)

func ExampleCheck() {
	known, err := critesttest.ParseKnownFailures(strings.NewReader(`
# reason: the stand-in has no setuid program
[sig-node] Security Context NoNewPrivs should allow privilege escalation when false
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	rep := critesttest.Report{
		"[sig-node] Security Context NoNewPrivs should allow privilege escalation when false": critesttest.Failed,
		"[sig-node] Image Manager public image with tag should be pulled and removed":         critesttest.Failed,
	}
	for _, p := range critesttest.Check(rep, known) {
		fmt.Println(p)
	}
	// Output:
	// failed, and not on the known-failure list: [sig-node] Image Manager public image with tag should be pulled and removed
}
