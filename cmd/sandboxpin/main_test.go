package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/resolve"
)

const sampleNode = "../../examples/testdata/node"

// hexID is an image ID's hex digits.
const hexID = "7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa"

// runCmd runs the command in-process and returns its exit code and output.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestCommands(t *testing.T) {
	t.Parallel()
	emptyDir := t.TempDir()
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string // substrings of stdout
		wantErrOut []string // substrings of stderr
	}{
		// Help on stdout, exit 0; usage mistakes on stderr, exit 2.
		{name: "no args", args: nil, wantCode: exitOK, wantOut: []string{"Usage:\n  sandboxpin [command]", "Exit codes: 0 success"}},
		{name: "help", args: []string{"--help"}, wantCode: exitOK, wantOut: []string{"prepull", "completion"}},
		{name: "-h", args: []string{"-h"}, wantCode: exitOK, wantOut: []string{"Available Commands"}},
		{name: "help command", args: []string{"help", "audit"}, wantCode: exitOK, wantOut: []string{"--images FILE"}},
		{name: "--version", args: []string{"--version"}, wantCode: exitOK, wantOut: []string{"sandboxpin "}},
		{name: "unknown", args: []string{"frobnicate"}, wantCode: exitError, wantErrOut: []string{`unknown command "frobnicate"`, "sandboxpin --help"}},
		{name: "flag before the command", args: []string{"--root", sampleNode, "resolve"}, wantCode: exitOK, wantOut: []string{"Sandbox image: k8s.gcr.io/pause:3.10.1"}},
		{name: "stray argument", args: []string{"resolve", "node"}, wantCode: exitError, wantErrOut: []string{`unexpected argument "node"`, "sandboxpin resolve --help"}},
		{name: "empty root", args: []string{"resolve", "--root", emptyDir}, wantCode: exitError, wantErrOut: []string{"is an empty directory"}},
		{name: "no runtime in the root", args: []string{"resolve", "--root", "testdata/noruntime"}, wantCode: exitUnknown,
			wantOut: []string{"Sandbox image: cannot be told (no runtime found)"}, wantErrOut: []string{"no container runtime found under testdata/noruntime", "--runtime-endpoint"}},
		{name: "runtime without version", args: []string{"resolve", "--root", "testdata/default"}, wantCode: exitUnknown,
			wantErrOut: []string{"cannot tell containerd's sandbox image", "give --runtime-version"}},
		{name: "interspersed flags", args: []string{"check", "k8s.gcr.io/pause:3.10.1", "--pin", "registry.k8s.io/pause:3.10.1"}, wantCode: exitOK,
			wantOut: []string{`k8s.gcr.io/pause:3.10.1: pinned by "registry.k8s.io/pause:3.10.1" (tag, --pin)`}},
		{name: "resolve text", args: []string{"resolve", "--root", sampleNode}, wantCode: exitOK, wantOut: []string{
			"Sandbox image: k8s.gcr.io/pause:3.10.1 (containerd)",
			"/etc/containerd/config.toml:10",
			"/var/lib/kubelet/kubeadm-flags.env:1",
			"Conflicts: 1",
			"remove the flag from /var/lib/kubelet/kubeadm-flags.env",
			"Fix: set the sandbox image at /etc/containerd/config.toml:10",
		}},
		{name: "resolve help", args: []string{"resolve", "--help"}, wantCode: exitOK, wantOut: []string{"--kubeadm-version VERSION", "--root DIR"}},
		{name: "resolve bad flag", args: []string{"resolve", "--nope"}, wantCode: exitError, wantErrOut: []string{"unknown flag: --nope"}},
		{name: "resolve bad output", args: []string{"resolve", "--root", sampleNode, "-o", "xml"}, wantCode: exitError, wantErrOut: []string{`--output "xml": want text, json, yaml`}},
		{name: "resolve yaml", args: []string{"resolve", "--root", sampleNode, "-o", "yaml"}, wantCode: exitOK,
			wantOut: []string{"sandboxImage: k8s.gcr.io/pause:3.10.1\n", "kind: kubelet-flag-differs\n", "  answers: containerd-alias-never-pinned\n"}},
		{name: "prepull json", args: []string{"prepull", "--root", sampleNode, "--kubeadm-version", "v1.34.1", "-o", "json"}, wantCode: exitOK,
			wantOut: []string{"\"prepull\": [\n    \"k8s.gcr.io/pause:3.10.1\",\n    \"registry.k8s.io/pause:3.10.1\"\n  ]", "\"kind\": \"prepull-two-names\""}},
		{name: "prepull yaml", args: []string{"prepull", "--root", sampleNode, "-o", "yaml"}, wantCode: exitOK, wantOut: []string{"prepull:\n- k8s.gcr.io/pause:3.10.1\n"}},
		{name: "normalize json", args: []string{"normalize", "-o", "json", "k8s.gcr.io/pause:3.9"}, wantCode: exitOK,
			wantOut: []string{"\"canonical\": \"registry.k8s.io/pause:3.9\"", "\"familiar\": \"registry.k8s.io/pause:3.9\""}},
		{name: "normalize yaml", args: []string{"normalize", "busybox", "-o", "yaml"}, wantCode: exitOK, wantOut: []string{"- canonical: docker.io/library/busybox:latest\n  familiar: busybox:latest\n  input: busybox\n"}},
		{name: "normalize an image ID", args: []string{"normalize", "sha256:" + hexID}, wantCode: exitError, wantErrOut: []string{"is an image ID, not a reference"}},
		{name: "check json", args: []string{"check", "--pin", "quay.io/*", "quay.io/x/y:1", "-o", "json"}, wantCode: exitOK,
			wantOut: []string{"\"pinned\": true", "\"pattern\": \"quay.io/*\"", "\"kind\": \"glob\""}},
		{name: "check yaml with the node", args: []string{"check", "--root", sampleNode, "-o", "yaml", "registry.k8s.io/pause:3.9"}, wantCode: exitCheck,
			wantOut: []string{"node:\n  pinMode: strict\n  pins:\n  - k8s.gcr.io/pause:3.10.1\n", "pinned: false"}},
		{name: "check says what it resolved", args: []string{"check", "--root", sampleNode, "registry.k8s.io/pause:3.9"}, wantCode: exitCheck,
			wantErrOut: []string{"sandboxpin's rules (what a correct runtime pins, not the runtime's own flag): the node's (containerd, sandbox image k8s.gcr.io/pause:3.10.1)"}},
		{name: "audit offline", args: []string{"audit", "--root", sampleNode, "--images", "testdata/offline/images.json"}, wantCode: exitCheck,
			wantOut: []string{"registry.k8s.io/pause:3.10.1 (sandbox)  false", "FAIL: containerd does not pin its sandbox image k8s.gcr.io/pause:3.10.1 (stored as registry.k8s.io/pause:3.10.1)",
				"FIX: configure the sandbox image as registry.k8s.io/pause:3.10.1, the name it is stored under, in place of k8s.gcr.io/pause:3.10.1 (/etc/containerd/config.toml:10)"}},
		{name: "audit offline json", args: []string{"audit", "--root", sampleNode, "--images", "testdata/offline/images.json", "-o", "json"}, wantCode: exitCheck,
			wantOut: []string{"\"status\": \"unpinned\"", "\"storedAs\": \"registry.k8s.io/pause:3.10.1\"", "\"spelling\": \"alias\""}},
		{name: "audit offline yaml", args: []string{"audit", "--root", sampleNode, "--images", "testdata/offline/images.json", "-o", "yaml"}, wantCode: exitCheck,
			wantOut: []string{"status: unpinned\n", "  action: edit\n"}},
		{name: "audit offline summary", args: []string{"audit", "--root", sampleNode, "--images", "testdata/offline/images.json", "-o", "summary"}, wantCode: exitCheck,
			wantOut: []string{"FAIL: containerd does not pin sandbox image k8s.gcr.io/pause:3.10.1 (stored as registry.k8s.io/pause:3.10.1)"}},
		{name: "audit offline prometheus", args: []string{"audit", "--root", sampleNode, "--images", "testdata/offline/images.json", "-o", "prometheus"}, wantCode: exitCheck,
			wantOut: []string{"sandboxpin_unprotected_images 1\n", "sandboxpin_sandbox_image_stored_as_configured 0\n"}},
		{name: "audit bad images file", args: []string{"audit", "--root", sampleNode, "--images", "testdata/broken/etc/containerd/config.toml"}, wantCode: exitError,
			wantErrOut: []string{"--images testdata/broken/etc/containerd/config.toml: offset", "crictl images -o json"}},
		{name: "completion bash", args: []string{"completion", "bash"}, wantCode: exitOK, wantOut: []string{"bash completion V2 for sandboxpin"}},
		{name: "completion zsh", args: []string{"completion", "zsh"}, wantCode: exitOK, wantOut: []string{"#compdef sandboxpin"}},
		{name: "completion fish", args: []string{"completion", "fish"}, wantCode: exitOK, wantOut: []string{"fish completion for sandboxpin"}},
		{name: "resolve bad root", args: []string{"resolve", "--root", "testdata/broken"}, wantCode: exitError, wantErrOut: []string{"etc/containerd/config.toml", ":3"}},
		{name: "resolve runtime default", args: []string{"resolve", "--root", "testdata/default", "--runtime-version", "2.2.9"}, wantCode: exitOK, wantOut: []string{
			"Sandbox image: registry.k8s.io/pause:3.10.1 (containerd)",
			"default of containerd 2.2.9",
		}},
		{name: "prepull", args: []string{"prepull", "--root", sampleNode, "--kubeadm-version", "v1.34.1"}, wantCode: exitOK, wantOut: []string{"k8s.gcr.io/pause:3.10.1\nregistry.k8s.io/pause:3.10.1\n"},
			wantErrOut: []string{"note: pre-pull: k8s.gcr.io/pause:3.10.1 and registry.k8s.io/pause:3.10.1 are one image under two names", "ctr -n k8s.io images tag k8s.gcr.io/pause:3.10.1 registry.k8s.io/pause:3.10.1"}},
		{name: "prepull kubeadm 1.37", args: []string{"prepull", "--root", sampleNode, "--kubeadm-version", "v1.37.2"}, wantCode: exitOK, wantOut: []string{"k8s.gcr.io/pause:3.10.1\nregistry.k8s.io/pause:3.10.2\n"}},
		{name: "normalize", args: []string{"normalize", "k8s.gcr.io/pause:3.9", "busybox"}, wantCode: exitOK, wantOut: []string{"registry.k8s.io/pause:3.9\ndocker.io/library/busybox:latest\n"}},
		{name: "normalize familiar", args: []string{"normalize", "--familiar", "docker.io/library/busybox"}, wantCode: exitOK, wantOut: []string{"busybox:latest\n"}},
		{name: "normalize bad", args: []string{"normalize", "ok:1", "Bad"}, wantCode: exitError, wantOut: []string{"docker.io/library/ok:1"}, wantErrOut: []string{"offset 0", "lowercase"}},
		{name: "check pinned alias-aware", args: []string{"check", "--root", sampleNode, "registry.k8s.io/pause:3.10.1"}, wantCode: exitOK, wantOut: []string{`pinned by "k8s.gcr.io/pause:3.10.1" (tag`}},
		{name: "check not pinned", args: []string{"check", "--root", sampleNode, "registry.k8s.io/pause:3.10.1", "registry.k8s.io/pause:3.9"}, wantCode: exitCheck, wantOut: []string{"registry.k8s.io/pause:3.9: not pinned"}},
		{name: "check --pin only", args: []string{"check", "--pin", "quay.io/*", "quay.io/x/y:1", "sha256:" + hexID}, wantCode: exitCheck, wantOut: []string{`quay.io/x/y:1: pinned by "quay.io/*" (glob, --pin)`, "sha256:" + hexID + " (an image ID): not pinned"}},
		{name: "check --pin and --resolve", args: []string{"check", "--pin", "quay.io/*", "--resolve", "--root", sampleNode, "quay.io/x:1", "k8s.gcr.io/pause:3.10.1"}, wantCode: exitOK},
		{name: "check bad pattern", args: []string{"check", "--pin", "*", "x:1"}, wantCode: exitError, wantErrOut: []string{`pattern 0 "*"`}},
		{name: "check bad image", args: []string{"check", "--pin", "x:1", "X"}, wantCode: exitError, wantErrOut: []string{"lowercase"}},
		{name: "check no image", args: []string{"check", "--pin", "x:1"}, wantCode: exitError},
		{name: "audit no socket", args: []string{"audit", "--root", sampleNode}, wantCode: exitError, wantErrOut: []string{"no CRI socket: neither the kubelet's nor containerd's configured socket exists", "--images FILE"}},
		{name: "audit absent socket", args: []string{"audit", "--runtime-endpoint", "unix:///nonexistent/x.sock", "--root", sampleNode}, wantCode: exitError, wantErrOut: []string{"/nonexistent/x.sock"}},
		{name: "version", args: []string{"version"}, wantCode: exitOK, wantOut: []string{"sandboxpin "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCmd(t, tt.args...)
			assert.Equal(t, tt.wantCode, code, "exit code; stdout:\n%s\nstderr:\n%s", out, errOut)
			for _, w := range tt.wantOut {
				assert.Contains(t, out, w)
			}
			for _, w := range tt.wantErrOut {
				assert.Contains(t, errOut, w)
			}
		})
	}
}

// resolveJSON is what `resolve -o json` prints, as the tests read it.
type resolveJSON struct {
	SandboxImage string `json:"sandboxImage"`
	Runtime      string `json:"runtime"`
	Candidates   []struct {
		Image, Source, Origin, Role string
	} `json:"candidates"`
	Conflicts []struct {
		Message string `json:"message"`
	} `json:"conflicts"`
	Notes   []resolve.Note `json:"notes"`
	Pins    []string       `json:"pins"`
	PinMode string         `json:"pinMode"`
}

func TestResolveJSON(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCmd(t, "resolve", "--root", sampleNode, "-o", "json")
	require.Equal(t, exitOK, code, errOut)
	var got resolveJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.Equal(t, "k8s.gcr.io/pause:3.10.1", got.SandboxImage)
	assert.Equal(t, "containerd", got.Runtime)
	require.NotEmpty(t, got.Candidates)
	assert.Equal(t, "containerd-config", got.Candidates[0].Source)
	assert.Equal(t, "runtime-uses", got.Candidates[0].Role)
	assert.Equal(t, "/etc/containerd/config.toml:10", got.Candidates[0].Origin)
	assert.Len(t, got.Conflicts, 1)
	assert.Equal(t, []string{"k8s.gcr.io/pause:3.10.1"}, got.Pins)
}

// TestBuiltBinary builds the command and parses a digest with it: go-digest
// accepts a sha256 digest only when crypto/sha256 is linked, which tests
// always do and a program may not.
func TestBuiltBinary(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "sandboxpin")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	digest := "registry.k8s.io/pause@sha256:7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa"
	out, err = exec.Command(bin, "normalize", "k8s.gcr.io/pause:3.10.1", digest).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, "registry.k8s.io/pause:3.10.1\n"+digest+"\n", string(out))
}

// TestAuditLive runs audit against real containerd: 1.6 never pins, 2.2.9
// pins only the exact configured string.
func TestAuditLive(t *testing.T) {
	t.Parallel()
	const stored = "registry.k8s.io/pause:3.10.1"
	tests := []struct {
		name       string
		version    containerdtest.Version
		configured string // the runtime's sandbox image
		config     string // etc/containerd/config.toml in --root, "" for none
		wantCode   int
		wantOut    string
	}{
		{name: "containerd 1.6 never pins", version: containerdtest.V1, configured: stored, wantCode: exitCheck, wantOut: "FIX: no configuration can: containerd 1.6.20~ds1 never reports Image.pinned"},
		{name: "containerd 2.2 pins the exact name", version: containerdtest.V2, configured: stored, wantCode: exitOK, wantOut: "OK: containerd pins its sandbox image registry.k8s.io/pause:3.10.1"},
		{
			name: "containerd 2.2 misses the alias", version: containerdtest.V2, configured: "k8s.gcr.io/pause:3.10.1",
			config:   "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"k8s.gcr.io/pause:3.10.1\"\n",
			wantCode: exitCheck, wantOut: "does not pin its sandbox image k8s.gcr.io/pause:3.10.1 (stored as registry.k8s.io/pause:3.10.1)" +
				": the kubelet's image GC may delete it; run a pinning CRI shim, upgrade the runtime, or configure the exact stored name\n" +
				"FAIL: containerd looks its sandbox image up by the configured name k8s.gcr.io/pause:3.10.1, and nothing is stored under it: " +
				"registry.k8s.io/pause:3.10.1 is the same image under an alias spelling, so the runtime pulls k8s.gcr.io/pause:3.10.1 for every new pod sandbox, and pods cannot start offline\n" +
				"FIX: configure the sandbox image as registry.k8s.io/pause:3.10.1, the name it is stored under, in place of k8s.gcr.io/pause:3.10.1 (/etc/containerd/config.toml:3)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := containerdtest.Start(t, tt.version, containerdtest.Options{
				SandboxImage: tt.configured,
				Images:       []containerdtest.Image{{Names: []string{stored}}, {Names: []string{"docker.io/library/busybox:1.36"}}},
			})
			root := t.TempDir()
			if tt.config != "" {
				require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o750))
				require.NoError(t, os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), []byte(tt.config), 0o600))
			}
			code, out, errOut := runCmd(t, "audit", "--runtime-endpoint", c.Endpoint, "--root", root)
			assert.Equal(t, tt.wantCode, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, tt.wantOut)
			assert.Contains(t, out, stored+" (sandbox)")
			busybox := ""
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "docker.io/library/busybox:1.36") {
					busybox = line
				}
			}
			assert.Regexp(t, `false\s+-`, busybox, "busybox is neither pinned by the runtime nor by sandboxpin")
		})
	}
}
