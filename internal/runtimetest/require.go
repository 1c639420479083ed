package runtimetest

import (
	"errors"
	"os"
	"testing"
)

// EnvRequire names the variable that, set to 1, makes a live test whose
// runtime cannot run here fail instead of skipping (scripts/test.sh sets it
// as root).
const EnvRequire = "SANDBOXPIN_REQUIRE_RUNTIMES"

// Require is the Require of each harness: under -short it skips the test
// (live tests never run there); otherwise, when available reports that
// what cannot run here, it skips the test with the reason, or fails it
// when EnvRequire is 1.
func Require(t testing.TB, what string, available func() (bool, string)) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: live tests do not run under -short", what)
	}
	ok, why := available()
	if ok {
		return
	}
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("%s (%s=1 makes this a failure)", why, EnvRequire)
	}
	t.Skipf("%s; or set %s=1 to fail instead of skipping", why, EnvRequire)
}

// HostState returns each path's modification time, or "absent": taken
// before and after a runtime runs, it shows whether the runtime wrote to the
// host's default paths.
func HostState(paths []string) map[string]string {
	m := map[string]string{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			m[p] = "absent"
		case err != nil:
			m[p] = err.Error()
		default:
			m[p] = fi.ModTime().String()
		}
	}
	return m
}
