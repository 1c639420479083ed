package kubelettest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
)

// binDir holds the programs the tests build, once per test binary; TestMain
// removes it.
var binDir struct {
	sync.Mutex
	path string
}

// buildDir returns binDir's directory, made on first use.
func buildDir() (string, error) {
	binDir.Lock()
	defer binDir.Unlock()
	if binDir.path == "" {
		dir, err := os.MkdirTemp("", "sbk-bin")
		if err != nil {
			return "", err
		}
		binDir.path = dir
	}
	return binDir.path, nil
}

// goBuild builds pkg (a package path, or a directory holding one main
// package) into the build directory as name, with env added to the
// environment.
func goBuild(name, dir, pkg string, env ...string) (string, error) {
	out, err := buildDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(out, name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return bin, nil
}

// Built from the workspace (go.work): the live tests do not run in the floor
// and newest runs, which set GOWORK=off.
var (
	// sandboxpinBinary is the command, for audit, serve and shim.
	sandboxpinBinary = sync.OnceValues(func() (string, error) {
		return goBuild("sandboxpin", "", "github.com/sandboxpin/sandboxpin/cmd/sandboxpin")
	})
	// pauseBinary is a static program that waits for SIGTERM or SIGINT, as
	// the pause image's /pause does: the test images' entrypoint.
	pauseBinary = sync.OnceValues(func() ([]byte, error) {
		dir, err := buildDir()
		if err != nil {
			return nil, err
		}
		return containerdtest.BuildPause(dir)
	})
)

// removeBuilds removes what the tests built.
func removeBuilds() {
	binDir.Lock()
	defer binDir.Unlock()
	if binDir.path != "" {
		_ = os.RemoveAll(binDir.path)
	}
}
