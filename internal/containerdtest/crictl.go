package containerdtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// EnvCrictl names the crictl binary; scripts/deps.sh writes it into env.sh.
const EnvCrictl = "SANDBOXPIN_CRICTL"

// Crictl returns crictl: $SANDBOXPIN_CRICTL, else the cri-tools v1.37.0
// that scripts/deps.sh builds into the cache. It skips the test when there
// is none, or fails it under SANDBOXPIN_REQUIRE_RUNTIMES=1.
func Crictl(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(EnvCrictl)
	if bin == "" {
		bin = filepath.Join(CacheDir(), "crictl", "v1.37.0", "crictl")
	}
	runtimetest.Require(t, "crictl", func() (bool, string) {
		if _, err := exec.LookPath(bin); err != nil {
			return false, fmt.Sprintf("crictl: %v; run `bash scripts/deps.sh` as root, or set %s", err, EnvCrictl)
		}
		return true, ""
	})
	return bin
}
