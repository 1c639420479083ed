package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/criinfo/cri/fakecri"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// TestLookup checks that the lookup is the runtime's own ImageStatus by
// the configured string: no registry alias applies.
func TestLookup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const stored = "registry.k8s.io/pause:3.10.1"
	client, err := cri.Dial(ctx, fakecri.Serve(t, &fakecri.Runtime{
		Images: []*runtimeapi.Image{{Id: "sha256:1", RepoTags: []string{stored}}},
	}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	for ref, want := range map[string]audit.Lookup{stored: audit.LookupFound, "k8s.gcr.io/pause:3.10.1": audit.LookupNotFound, "registry.k8s.io/pause:3.10": audit.LookupNotFound} {
		got, err := lookup(ctx, client, ref)
		require.NoError(t, err)
		assert.Equal(t, want, got, "lookup(%q)", ref)
	}
	down, err := cri.Dial(ctx, fakecri.Serve(t, nil))
	require.NoError(t, err)
	t.Cleanup(func() { _ = down.Close() })
	_, err = lookup(ctx, down, stored)
	assert.ErrorIs(t, err, cri.ErrNotCRI)
}

// TestAliasOnlyVerdict checks the summary and exit code of a sandbox image
// that is pinned but stored only under an alias spelling, as through a
// pinning shim.
func TestAliasOnlyVerdict(t *testing.T) {
	t.Parallel()
	res := &resolve.Result{Runtime: "containerd", SandboxImage: "k8s.gcr.io/pause:3.10.1", Pins: []string{"k8s.gcr.io/pause:3.10.1"}}
	images := []*runtimeapi.Image{{Id: "sha256:1", RepoTags: []string{"registry.k8s.io/pause:3.10.1"}, Pinned: true}}
	v, err := audit.Judge(res, audit.Observation[*runtimeapi.Image]{Images: images, Lookup: audit.LookupNotFound})
	require.NoError(t, err)
	a := nodeAudit{Verdict: v}
	assert.Equal(t, exitCheck, a.exitCode())
	assert.Equal(t, "FAIL: sandbox image k8s.gcr.io/pause:3.10.1 (containerd) is stored only as the alias registry.k8s.io/pause:3.10.1; the runtime pulls it for new pods; on the node: sandboxpin fix", a.summary())
	res.SandboxImage, res.Pins = "registry.k8s.io/pause:3.10.1", []string{"registry.k8s.io/pause:3.10.1"}
	v, err = audit.Judge(res, audit.Observation[*runtimeapi.Image]{Images: images, Lookup: audit.LookupFound})
	require.NoError(t, err)
	a = nodeAudit{Verdict: v}
	assert.Equal(t, exitOK, a.exitCode())
	assert.Equal(t, "OK: containerd pins sandbox image registry.k8s.io/pause:3.10.1", a.summary())
}

// TestAuditInvalidSandbox: a sandbox image that is no valid reference is a
// FAIL verdict naming the file and line, exit 1, and is not pre-pulled
// (issue 52: the CLI printed an error, exit 2, and prepull listed it).
func TestAuditInvalidSandbox(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"),
		[]byte("version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"Registry.K8S.io/Pause:3.10\"\n"), 0o600))
	images := filepath.Join(t.TempDir(), "images.json")
	require.NoError(t, os.WriteFile(images, []byte(`{"images": [{"id": "sha256:1", "repoTags": ["registry.k8s.io/pause:3.10"], "pinned": true}]}`), 0o600))
	tests := []struct {
		name    string
		args    []string
		want    int    // exit code
		wantOut string // a substring of stdout
	}{
		{name: "audit", args: []string{"audit", "--root", root, "--images", images, "--runtime-version", "2.2.9"},
			want: exitCheck, wantOut: "FAIL: Registry.K8S.io/Pause:3.10 at /etc/containerd/config.toml:3 is not a valid image reference"},
		{name: "summary", args: []string{"audit", "-o", "summary", "--root", root, "--images", images, "--runtime-version", "2.2.9"},
			want: exitCheck, wantOut: "invalid-reference at /etc/containerd/config.toml:3"},
		{name: "prepull", args: []string{"prepull", "--root", root, "--runtime-version", "2.2.9", "--kubeadm-version", "v1.37.2"},
			want: exitOK, wantOut: "registry.k8s.io/pause:3.10.2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCmd(t, tt.args...)
			assert.Equal(t, tt.want, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, tt.wantOut)
			assert.NotContains(t, out, "pull Registry.K8S.io")
			if tt.name == "prepull" {
				assert.Equal(t, "registry.k8s.io/pause:3.10.2\n", out)
			}
		})
	}
}
