package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo/cri/fakecri"
	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
)

const (
	storedPause = "registry.k8s.io/pause:3.10.1"
	aliasPause  = "k8s.gcr.io/pause:3.10.1" // the same image, by the alias
	busybox     = "docker.io/library/busybox:1.37"
)

func TestRun(t *testing.T) {
	t.Parallel()
	runtimePath := "unix://" + fakecri.Serve(t, &fakecri.Runtime{
		RuntimeName: "containerd", RuntimeVersion: "v2.2.9",
		Images: []*runtimeapi.Image{
			{Id: "sha256:" + strings.Repeat("a", 64), RepoTags: []string{storedPause}},
			{Id: "sha256:" + strings.Repeat("b", 64), RepoTags: []string{busybox}},
			{Id: "sha256:" + strings.Repeat("c", 64), RepoTags: []string{"docker.io/library/nginx:1.27"}, Pinned: true},
		},
	})
	tests := []struct {
		name     string
		args     []string // command line
		wantCode int      // exit code
		wantOut  string   // stdout
		wantErr  string   // substring of stderr
	}{
		{name: "alias pins the stored name", args: []string{"--runtime-endpoint", runtimePath, "--pin", aliasPause}, wantOut: "" +
			storedPause + " runtime=false shim=true\n" +
			busybox + " runtime=false shim=false\n" +
			"docker.io/library/nginx:1.27 runtime=true shim=true\n"},
		{name: "no pins keeps the runtime's", args: []string{"--runtime-endpoint", runtimePath}, wantOut: "" +
			storedPause + " runtime=false shim=false\n" +
			busybox + " runtime=false shim=false\n" +
			"docker.io/library/nginx:1.27 runtime=true shim=true\n"},
		{name: "no endpoint", wantCode: 2, wantErr: "want --runtime-endpoint"},
		{name: "bad pin", args: []string{"--runtime-endpoint", runtimePath, "--pin", "*"}, wantCode: 2, wantErr: `"*"`},
		{name: "help", args: []string{"--help"}, wantErr: "-runtime-endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			assert.Equal(t, tt.wantCode, code, "run(%q) exit code; stderr:\n%s", tt.args, stderr.String())
			assert.Equal(t, tt.wantOut, stdout.String(), "run(%q) stdout", tt.args)
			assert.Contains(t, stderr.String(), tt.wantErr)
		})
	}
}

// TestLive runs the interceptor against a real containerd 1.6.20, which
// never sets pinned: with the sandbox image as a pin pattern (by its
// alias), the stored pause image comes back pinned and busybox does not.
func TestLive(t *testing.T) {
	t.Parallel()
	ctrd := containerdtest.Start(t, containerdtest.V1, containerdtest.Options{
		SandboxImage: aliasPause,
		Images:       []containerdtest.Image{{Names: []string{storedPause}}, {Names: []string{busybox}}},
	})
	var stdout, stderr bytes.Buffer
	code := run([]string{"--runtime-endpoint", ctrd.Endpoint, "--pin", aliasPause}, &stdout, &stderr)
	assert.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	assert.Contains(t, stdout.String(), storedPause+" runtime=false shim=true\n")
	assert.Contains(t, stdout.String(), busybox+" runtime=false shim=false\n")
	t.Logf("through the interceptor:\n%s", stdout.String())
}
