package containerdtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// pauseSource is a static program that waits for SIGTERM or SIGINT, as the
// pause image's /pause does.
const pauseSource = `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
`

// BuildPause builds the pause program (a static binary that waits for
// SIGTERM or SIGINT) in dir and returns it: the entrypoint of the live
// tests' images. Callers build it once per test binary.
func BuildPause(dir string) ([]byte, error) {
	src := filepath.Join(dir, "pause-src")
	if err := os.MkdirAll(src, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(pauseSource), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module pause\n\ngo 1.22\n"), 0o600); err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "pause")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build pause: %w\n%s", err, out)
	}
	return os.ReadFile(bin)
}

// RemoveSandboxes stops and removes every pod sandbox of rt, before the
// runtime stops: their shims and pause processes would outlive it.
func RemoveSandboxes(t testing.TB, rt runtimeapi.RuntimeServiceClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Errorf("ListPodSandbox: %v", err)
		return
	}
	for _, p := range pods.GetItems() {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.GetId()}); err != nil {
			t.Errorf("StopPodSandbox %s: %v", p.GetId(), err)
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.GetId()}); err != nil {
			t.Errorf("RemovePodSandbox %s: %v", p.GetId(), err)
		}
	}
}
