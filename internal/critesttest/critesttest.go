package critesttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// Environment variables read by the package (scripts/deps.sh writes them
// into $SANDBOXPIN_CACHE/env.sh).
const (
	// EnvCritest is critest, built by scripts/deps.sh from cri-tools
	// v1.37.0.
	EnvCritest = "SANDBOXPIN_CRITEST"
	// EnvBusybox is a static busybox (Debian's busybox-static), the
	// content of the images.
	EnvBusybox = "SANDBOXPIN_BUSYBOX"
	// EnvCNIBin is the directory of the CNI plugins (Debian's
	// containernetworking-plugins).
	EnvCNIBin = "SANDBOXPIN_CNI_BIN"
)

// Version is the cri-tools release whose critest the package runs.
const Version = "v1.37.0"

// Binaries are what a critest run needs besides a runtime.
type Binaries struct {
	Critest, Busybox, CNIBin string
}

// DefaultBinaries returns the binaries from the environment, or their
// defaults, whether or not they exist.
func DefaultBinaries() Binaries {
	env := func(k, def string) string {
		if s := os.Getenv(k); s != "" {
			return s
		}
		return def
	}
	return Binaries{
		Critest: env(EnvCritest, filepath.Join(runtimetest.CacheDir(), "critest", Version, "critest")),
		Busybox: env(EnvBusybox, "/bin/busybox"),
		CNIBin:  env(EnvCNIBin, "/usr/lib/cni"),
	}
}

const howTo = "run `bash scripts/deps.sh` as root (it builds critest and installs Debian's busybox-static and containernetworking-plugins)"

// Available reports whether critest can run here, and if not, why.
func Available() (bool, string) {
	if os.Geteuid() != 0 {
		return false, "critest needs root; " + howTo
	}
	b := DefaultBinaries()
	for _, bin := range []string{b.Critest, b.Busybox, filepath.Join(b.CNIBin, "bridge"), "unshare", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			return false, fmt.Sprintf("critest: %s not found (%v); %s", bin, err, howTo)
		}
	}
	return true, ""
}

// Require skips the test when critest cannot run here or under -short, or
// fails it when SANDBOXPIN_REQUIRE_RUNTIMES=1.
func Require(t testing.TB) {
	t.Helper()
	runtimetest.Require(t, "critest", Available)
}
