package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
)

// The shipped test data: images captured with crictl v1.37.0 from
// containerd 1.6.20 (which pins nothing itself), the references of the
// node's containers, and a node whose containerd config names the sandbox
// image as k8s.gcr.io/pause:3.10.1.
const (
	imagesFile = "../testdata/crictl-images.json"
	inUseFile  = "../testdata/in-use.txt"
	nodeRoot   = "../testdata/node"
)

// wantVerdicts is what the shipped data gives with --pin
// 'registry.example.com/infra/*': image → the start of its reason, "" for
// deletable.
var wantVerdicts = map[string]string{
	"docker.io/library/busybox:1.36":                  "",
	"docker.io/library/nginx:1.27":                    "in use: nginx:1.27 (../testdata/in-use.txt:4) names docker.io/library/nginx:1.27",
	"quay.io/example/agent:2.0":                       "in use: sha256:d9dc718be94e60be0e224c47fa0c29ab24eb175dd67ab26895eb7c1df801e395 (../testdata/in-use.txt:6)",
	"registry.example.com/infra/node-exporter:v1.8.2": `pinned by "registry.example.com/infra/*" (--pin) as registry.example.com/infra/node-exporter:v1.8.2`,
	"registry.example.com/team/app:v2":                "",
	"registry.k8s.io/coredns/coredns:v1.11.1":         "in use: k8s.gcr.io/coredns/coredns:v1.11.1 (../testdata/in-use.txt:5) names registry.k8s.io/coredns/coredns:v1.11.1",
	"registry.k8s.io/pause:3.10.1":                    `pinned by "k8s.gcr.io/pause:3.10.1" (node (containerd)) as registry.k8s.io/pause:3.10.1`,
}

var shippedArgs = []string{"--images", imagesFile, "--in-use", inUseFile, "--root", nodeRoot, "--pin", "registry.example.com/infra/*"}

func TestRunText(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(shippedArgs, &stdout, &stderr)
	require.Equal(t, exitOK, code, "stderr: %s", stderr.String())
	assert.Empty(t, stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, len(wantVerdicts)+2, "output:\n%s", stdout.String())
	for _, line := range lines[:len(wantVerdicts)] {
		fields := strings.Fields(line)
		require.GreaterOrEqual(t, len(fields), 3, "line %q", line)
		want, ok := wantVerdicts[fields[1]]
		require.True(t, ok, "unexpected image in %q", line)
		reason := strings.TrimSpace(strings.SplitN(line, fields[1], 2)[1])
		if want == "" {
			assert.Equal(t, "DELETE", fields[0], "line %q", line)
			assert.Equal(t, "not pinned and not in use", reason)
		} else {
			assert.Equal(t, "KEEP", fields[0], "line %q", line)
			assert.Equal(t, want, reason, "reason for %s", fields[1])
		}
	}
	assert.Equal(t, "2 of 7 images deletable (1586 bytes)", lines[len(lines)-1])
}

// jsonReport is the part of the JSON output the tests read.
type jsonReport struct {
	Images []struct {
		Image           string   `json:"image"`
		RepoTags        []string `json:"repoTags"`
		Deletable       bool     `json:"deletable"`
		Reason          string   `json:"reason"`
		PinnedByRuntime bool     `json:"pinnedByRuntime"`
		PinnedBy        *Rule    `json:"pinnedBy"`
		InUseBy         string   `json:"inUseBy"`
	} `json:"images"`
	Deletable      int    `json:"deletable"`
	DeletableBytes uint64 `json:"deletableBytes"`
}

func runJSON(t *testing.T, args ...string) (jsonReport, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append(args, "-o", "json"), &stdout, &stderr)
	require.Equal(t, exitOK, code, "stderr: %s", stderr.String())
	var r jsonReport
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &r), "output:\n%s", stdout.String())
	return r, stderr.String()
}

func TestRunJSON(t *testing.T) {
	t.Parallel()
	r, _ := runJSON(t, shippedArgs...)
	require.Len(t, r.Images, len(wantVerdicts))
	for _, img := range r.Images {
		want := wantVerdicts[img.Image]
		assert.Equal(t, want == "", img.Deletable, "deletable %s", img.Image)
		if want != "" {
			assert.Equal(t, want, img.Reason, "reason for %s", img.Image)
		}
		assert.False(t, img.PinnedByRuntime, "containerd 1.6 pins nothing: %s", img.Image)
	}
	assert.Equal(t, 2, r.Deletable)
	assert.Equal(t, uint64(791+795), r.DeletableBytes)
}

// TestRunCases varies the inputs around the shipped data.
func TestRunCases(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600)) //nolint:gosec // G703: a file in the test's own temporary directory
		return p
	}
	raw, err := os.ReadFile(imagesFile)
	require.NoError(t, err)
	// The same images, with busybox pinned by the runtime itself.
	ownPin := write("own-pin.json", strings.Replace(string(raw), `"pinned": false`, `"pinned": true`, 1))
	tests := []struct {
		name          string
		args          []string          // command line, without -o json
		wantDeletable []string          // deletable images, sorted as the runtime lists them
		wantReason    map[string]string // image → reason, for some
		wantStderr    string            // substring of stderr
	}{
		{
			name:          "nothing in use, no pins: only the node's sandbox image is kept",
			args:          []string{"--images", imagesFile, "--root", nodeRoot},
			wantDeletable: []string{"docker.io/library/busybox:1.36", "docker.io/library/nginx:1.27", "quay.io/example/agent:2.0", "registry.example.com/infra/node-exporter:v1.8.2", "registry.example.com/team/app:v2", "registry.k8s.io/coredns/coredns:v1.11.1"},
		},
		{
			name:          "the runtime's own pin",
			args:          []string{"--images", ownPin, "--root", nodeRoot},
			wantDeletable: []string{"docker.io/library/nginx:1.27", "quay.io/example/agent:2.0", "registry.example.com/infra/node-exporter:v1.8.2", "registry.example.com/team/app:v2", "registry.k8s.io/coredns/coredns:v1.11.1"},
			wantReason:    map[string]string{"docker.io/library/busybox:1.36": "pinned by the runtime"},
		},
		{
			name: "in use by the other tag, a keyword pin and an unused line",
			args: []string{
				"--images", imagesFile, "--root", nodeRoot, "--pin", "*team*",
				"--in-use", write("in-use-2.txt", "docker.io/library/nginx:latest  # the same image as 1.27\nindex.docker.io/library/busybox:1.36\nghcr.io/absent/image:1\n"),
			},
			wantDeletable: []string{"quay.io/example/agent:2.0", "registry.example.com/infra/node-exporter:v1.8.2", "registry.k8s.io/coredns/coredns:v1.11.1"},
			wantReason: map[string]string{
				"docker.io/library/nginx:1.27":     "in use: docker.io/library/nginx:latest (" + dir + "/in-use-2.txt:1)",
				"docker.io/library/busybox:1.36":   "in use: index.docker.io/library/busybox:1.36 (" + dir + "/in-use-2.txt:2) names docker.io/library/busybox:1.36",
				"registry.example.com/team/app:v2": `pinned by "*team*" (--pin) as registry.example.com/team/app:v2`,
			},
			wantStderr: "in-use-2.txt:3: ghcr.io/absent/image:1 names no image the runtime has",
		},
		{
			// CRI-O pins pause_image by an exact compare, so the alias
			// spelling misses the stored image; Result.Matcher adds the
			// Strict, alias-aware rule that keeps it.
			name:          "a CRI-O node with an alias pause_image",
			args:          []string{"--images", imagesFile, "--root", "../testdata/crio-node"},
			wantDeletable: []string{"docker.io/library/busybox:1.36", "docker.io/library/nginx:1.27", "registry.example.com/infra/node-exporter:v1.8.2", "registry.example.com/team/app:v2", "registry.k8s.io/coredns/coredns:v1.11.1"},
			wantReason: map[string]string{
				"quay.io/example/agent:2.0":    `pinned by "quay.io/example/agent*" (node (cri-o)) as quay.io/example/agent:2.0`,
				"registry.k8s.io/pause:3.10.1": `pinned by "k8s.gcr.io/pause:3.10.1" (sandbox image (cri-o)) as registry.k8s.io/pause:3.10.1`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, stderr := runJSON(t, tt.args...)
			var deletable []string
			for _, img := range r.Images {
				if img.Deletable {
					deletable = append(deletable, img.Image)
				}
				if want, ok := tt.wantReason[img.Image]; ok {
					assert.Equal(t, want, img.Reason, "reason for %s", img.Image)
				}
			}
			assert.Equal(t, tt.wantDeletable, deletable)
			if tt.wantStderr == "" {
				assert.Empty(t, stderr)
			} else {
				assert.Contains(t, stderr, tt.wantStderr)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	badJSON := write("bad.json", `{"images": [{"id": 1}]}`)
	patternInUse := write("pattern.txt", "# ok\nnginx*\n")
	badInUse := write("bad.txt", "nginx:1.27\nNot/A/Ref:x\n")
	tests := []struct {
		name       string
		args       []string // command line
		wantCode   int      // exit code
		wantStderr string   // substring of stderr
	}{
		{name: "help", args: []string{"--help"}, wantCode: exitOK, wantStderr: "Usage: gcfilter"},
		{name: "no input", args: nil, wantCode: exitError, wantStderr: "give one of --images and --runtime-endpoint"},
		{name: "two inputs", args: []string{"--images", imagesFile, "--runtime-endpoint", "unix:///x.sock"}, wantCode: exitError, wantStderr: "give one of"},
		{name: "bad output", args: []string{"--images", imagesFile, "-o", "yaml"}, wantCode: exitError, wantStderr: `want text or json`},
		{name: "missing images", args: []string{"--images", filepath.Join(dir, "absent.json")}, wantCode: exitError, wantStderr: "absent.json"},
		{name: "not crictl JSON", args: []string{"--images", badJSON, "--root", nodeRoot}, wantCode: exitError, wantStderr: "not `crictl images -o json` output"},
		{name: "pattern in use", args: []string{"--images", imagesFile, "--root", nodeRoot, "--in-use", patternInUse}, wantCode: exitError, wantStderr: "pattern.txt:2: \"nginx*\""},
		{name: "bad reference in use", args: []string{"--images", imagesFile, "--root", nodeRoot, "--in-use", badInUse}, wantCode: exitError, wantStderr: "bad.txt:2:"},
		{name: "bad pin", args: []string{"--images", imagesFile, "--root", nodeRoot, "--pin", "*"}, wantCode: exitError, wantStderr: "--pin"},
		{name: "missing root", args: []string{"--images", imagesFile, "--root", filepath.Join(dir, "absent")}, wantCode: exitError, wantStderr: "--root"},
		// An empty node tree names no sandbox image: a GC filter that went
		// on would list the pause image as deletable (resolve.ErrNoSandboxImage).
		{name: "empty node tree", args: []string{"--images", imagesFile, "--root", t.TempDir()}, wantCode: exitError, wantStderr: "the sandbox image cannot be told"},
		{name: "absent socket", args: []string{"--runtime-endpoint", "unix://" + filepath.Join(dir, "no.sock")}, wantCode: exitError, wantStderr: "no CRI socket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			assert.Equal(t, tt.wantCode, code, "run(%q) exit code; stderr:\n%s", tt.args, stderr.String())
			assert.Contains(t, stderr.String(), tt.wantStderr)
		})
	}
}

// TestLive asks a real containerd 1.6 (which pins nothing, and reports its
// sandbox image) through --runtime-endpoint: the sandbox image is kept
// because the node resolves it from the live report, with an empty node tree.
func TestLive(t *testing.T) {
	t.Parallel()
	ctrd := containerdtest.Start(t, containerdtest.V1, containerdtest.Options{
		SandboxImage: "k8s.gcr.io/pause:3.10.1",
		Images: []containerdtest.Image{
			{Names: []string{"registry.k8s.io/pause:3.10.1"}},
			{Names: []string{"docker.io/library/busybox:1.36"}},
			{Names: []string{"docker.io/library/nginx:1.27"}},
		},
	})
	inUse := filepath.Join(t.TempDir(), "in-use.txt")
	require.NoError(t, os.WriteFile(inUse, []byte("nginx:1.27\n"), 0o600))
	r, stderr := runJSON(t, "--runtime-endpoint", ctrd.Endpoint, "--root", t.TempDir(), "--in-use", inUse)
	assert.Empty(t, stderr)
	got := map[string]string{}
	for _, img := range r.Images {
		got[img.Image] = img.Reason
	}
	assert.Equal(t, map[string]string{
		"docker.io/library/busybox:1.36": "not pinned and not in use",
		"docker.io/library/nginx:1.27":   "in use: nginx:1.27 (" + inUse + ":1) names docker.io/library/nginx:1.27",
		"registry.k8s.io/pause:3.10.1":   `pinned by "k8s.gcr.io/pause:3.10.1" (node (containerd)) as registry.k8s.io/pause:3.10.1`,
	}, got)
}
