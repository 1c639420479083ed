package runtimetest

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Sandboxpin builds cmd/sandboxpin from the workspace (go.work) into a
// temporary directory of t and returns its path: the live tests do not run
// in the floor and newest runs, which set GOWORK=off. The Go build cache
// makes every build after the first a link.
func Sandboxpin(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sandboxpin")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/sandboxpin/sandboxpin/cmd/sandboxpin").CombinedOutput(); err != nil {
		t.Fatalf("runtimetest: go build: %v\n%s", err, out)
	}
	return bin
}

// Audit runs `bin audit --runtime-endpoint endpoint --root root` and
// returns its exit code and standard output; exit 2 (an error) fails t.
func Audit(t testing.TB, bin, endpoint, root string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "audit", "--runtime-endpoint", endpoint, "--root", root)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 || code == 2 {
		t.Fatalf("runtimetest: audit: %v\n%s", err, stderr.String())
	}
	return code, stdout.String()
}
