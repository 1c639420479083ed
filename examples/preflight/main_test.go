package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// The shipped node trees.
const (
	nodeConflict = "../testdata/node"       // containerd 2.2 with k8s.gcr.io/pause:3.10.1, kubelet flag pause:3.9
	nodeClean    = "../testdata/node-clean" // containerd 1.7 with registry.k8s.io/pause:3.10, no kubelet flag
)

func TestRun(t *testing.T) {
	t.Parallel()
	broken := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(broken, "etc", "containerd"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(broken, "etc", "containerd", "config.toml"), []byte("version = 2\n[plugins\n"), 0o600))

	tests := []struct {
		name       string
		args       []string // command line
		wantCode   int      // exit code
		wantStdout []string // substrings of stdout, in order
		wantStderr string   // substring of stderr
	}{
		{
			name: "conflicts with kubeadm v1.36", args: []string{"--root", nodeConflict, "--kubeadm-version", "v1.36.3"}, wantCode: exitConflict,
			wantStdout: []string{
				"sandbox image  k8s.gcr.io/pause:3.10.1 (containerd-config, /etc/containerd/config.toml:10)",
				"pre-pull       k8s.gcr.io/pause:3.10.1\n               registry.k8s.io/pause:3.10.2\n",
				"CONFLICT 1: the kubelet protects registry.k8s.io/pause:3.9",
				"remove the flag from /var/lib/kubelet/kubeadm-flags.env (kubelet 1.29 to 1.34 ignore it",
				"/var/lib/kubelet/kubeadm-flags.env:1",
				"CONFLICT 2: kubeadm v1.36.3 pre-pulls and expects registry.k8s.io/pause:3.10.2",
				"set the sandbox image at /etc/containerd/config.toml:10",
				"FAIL: 2 conflict(s)",
			},
		},
		{
			// kubeadm's pause tag is older than the runtime's: the runtime
			// keeps its image (issue 51), so a note, not a conflict.
			name: "kubeadm v1.31 older than the runtime's image", args: []string{"--root", nodeConflict, "--kubeadm-version", "v1.31.2"}, wantCode: exitConflict,
			wantStdout: []string{
				"pre-pull       k8s.gcr.io/pause:3.10.1\n               registry.k8s.io/pause:3.10\n",
				"CONFLICT 1: the kubelet protects registry.k8s.io/pause:3.9",
				"note: kubeadm v1.31.2 pre-pulls and expects registry.k8s.io/pause:3.10 but containerd starts sandboxes with k8s.gcr.io/pause:3.10.1",
				"which is not older: the runtime keeps its image",
				"FAIL: 1 conflict(s)",
			},
		},
		{
			name: "conflict without a kubeadm version", args: []string{"--root", nodeConflict}, wantCode: exitConflict,
			wantStdout: []string{"pre-pull       k8s.gcr.io/pause:3.10.1\n\n", "CONFLICT 1:", "FAIL: 1 conflict(s)"},
		},
		{
			name: "clean with kubeadm v1.31", args: []string{"--root", nodeClean, "--kubeadm-version", "v1.31.2"}, wantCode: exitOK,
			wantStdout: []string{
				"runtime        containerd\n",
				"sandbox image  registry.k8s.io/pause:3.10 (containerd-config, /etc/containerd/config.toml:7)\n",
				"pre-pull       registry.k8s.io/pause:3.10\n",
				"OK: the node is ready for kubeadm; pre-pull registry.k8s.io/pause:3.10\n",
			},
		},
		{
			name: "clean with the kubeadm config", args: []string{"--root", nodeClean, "--kubeadm-config", "/etc/kubernetes/kubeadm.yaml"}, wantCode: exitOK,
			wantStdout: []string{"note: kubeadm's version is unknown; kubernetesVersion v1.31.2", "OK:"},
		},
		{
			name: "clean node, newer kubeadm", args: []string{"--root", nodeClean, "--kubeadm-version", "v1.35.0"}, wantCode: exitConflict,
			wantStdout: []string{
				"pre-pull       registry.k8s.io/pause:3.10\n               registry.k8s.io/pause:3.10.1\n",
				"CONFLICT 1: kubeadm v1.35.0 pre-pulls and expects registry.k8s.io/pause:3.10.1",
			},
		},
		{name: "help", args: []string{"--help"}, wantCode: exitOK, wantStderr: "Usage: preflight"},
		{name: "bad output", args: []string{"-o", "yaml"}, wantCode: exitError, wantStderr: `-o "yaml": want text or json`},
		{name: "extra argument", args: []string{"--root", nodeClean, "x"}, wantCode: exitError, wantStderr: "unexpected arguments"},
		{name: "missing root", args: []string{"--root", "../testdata/absent"}, wantCode: exitError, wantStderr: "--root"},
		{name: "unknown kubeadm", args: []string{"--root", nodeClean, "--kubeadm-version", "v9.99.0"}, wantCode: exitError, wantStderr: "v9.99.0"},
		{name: "missing kubeadm config", args: []string{"--root", nodeClean, "--kubeadm-config", "/etc/absent.yaml"}, wantCode: exitError, wantStderr: "absent.yaml"},
		{name: "malformed runtime config", args: []string{"--root", broken}, wantCode: exitError, wantStderr: "/etc/containerd/config.toml:"},
		{name: "absent runtime socket", args: []string{"--root", nodeClean, "--runtime-endpoint", "unix://" + filepath.Join(broken, "no.sock")}, wantCode: exitError, wantStderr: "no CRI socket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			require.Equal(t, tt.wantCode, code, "run(%q) exit code; stdout:\n%s\nstderr:\n%s", tt.args, stdout.String(), stderr.String())
			out := stdout.String()
			for _, want := range tt.wantStdout {
				i := bytes.Index([]byte(out), []byte(want))
				if !assert.GreaterOrEqual(t, i, 0, "run(%q) stdout lacks %q:\n%s", tt.args, want, out) {
					continue
				}
				out = out[i+len(want):]
			}
			assert.Contains(t, stderr.String(), tt.wantStderr)
		})
	}
}

func TestRunJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		root          string   // node tree
		wantCode      int      // exit code
		wantOK        bool     // the "ok" key
		wantPrepull   []string // the "prepull" key
		wantConflicts int      // how many conflicts
		kubeadm       string   // --kubeadm-version
	}{
		{name: "conflict", root: nodeConflict, kubeadm: "v1.36.3", wantCode: exitConflict, wantOK: false, wantPrepull: []string{"k8s.gcr.io/pause:3.10.1", "registry.k8s.io/pause:3.10.2"}, wantConflicts: 2},
		{name: "clean", root: nodeClean, kubeadm: "v1.31.2", wantCode: exitOK, wantOK: true, wantPrepull: []string{"registry.k8s.io/pause:3.10"}, wantConflicts: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run([]string{"--root", tt.root, "--kubeadm-version", tt.kubeadm, "-o", "json"}, &stdout, &stderr)
			require.Equal(t, tt.wantCode, code, "stderr: %s", stderr.String())
			var got struct {
				OK        bool     `json:"ok"`
				Prepull   []string `json:"prepull"`
				Conflicts []struct {
					Message string `json:"message"`
				} `json:"conflicts"`
				Notes []resolve.Note `json:"notes"`
			}
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), "output:\n%s", stdout.String())
			assert.Equal(t, tt.wantOK, got.OK)
			assert.Equal(t, tt.wantPrepull, got.Prepull)
			assert.Len(t, got.Conflicts, tt.wantConflicts)
			for _, c := range got.Conflicts {
				assert.NotEmpty(t, c.Message)
			}
			assert.NotNil(t, got.Notes, "notes is [] rather than null")
		})
	}
}

// TestRunPrepullSpellings checks that the pre-pull list names every exact
// string looked up on the node: containerd's alias spelling and kubeadm's
// own, with a note on storing one image under both names.
func TestRunPrepullSpellings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		kubeadm     string   // --kubeadm-version
		wantPrepull []string // the "prepull" key
		wantNote    string   // substring of some note; "" for none about pre-pulling
	}{
		{
			name: "alias spelling of kubeadm v1.34's image", kubeadm: "v1.34.1",
			wantPrepull: []string{"k8s.gcr.io/pause:3.10.1", "registry.k8s.io/pause:3.10.1"},
			wantNote:    "ctr -n k8s.io images tag k8s.gcr.io/pause:3.10.1 registry.k8s.io/pause:3.10.1",
		},
		{
			name: "kubeadm v1.37 pulls another tag", kubeadm: "v1.37.2",
			wantPrepull: []string{"k8s.gcr.io/pause:3.10.1", "registry.k8s.io/pause:3.10.2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run([]string{"--root", nodeConflict, "--kubeadm-version", tt.kubeadm, "-o", "json"}, &stdout, &stderr)
			require.Equal(t, exitConflict, code, "stderr: %s", stderr.String())
			var got struct {
				Prepull []string       `json:"prepull"`
				Notes   []resolve.Note `json:"notes"`
			}
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), "output:\n%s", stdout.String())
			assert.Equal(t, tt.wantPrepull, got.Prepull)
			var prepullNotes []string
			for _, n := range got.Notes {
				if n.Kind == resolve.KindPrepullTwoNames {
					prepullNotes = append(prepullNotes, n.Message)
				}
			}
			if tt.wantNote == "" {
				assert.Empty(t, prepullNotes)
				return
			}
			if assert.Len(t, prepullNotes, 1) {
				assert.Contains(t, prepullNotes[0], tt.wantNote)
			}
		})
	}
}
