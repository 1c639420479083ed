package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/reference"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// sampleNodes is resolve's node trees (resolve/testdata/nodes/README.md).
const sampleNodes = "../../resolve/testdata/nodes"

// sampleVersions reads resolve/testdata/nodes/versions.json: the versions
// each sample node is resolved with, by node.
func sampleVersions(t testing.TB, path string) map[string][]resolve.Options {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rows map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &rows))
	out := map[string][]resolve.Options{}
	for node, raw := range rows {
		if node == "//" {
			continue
		}
		var runs []map[string]string
		require.NoError(t, json.Unmarshal(raw, &runs), "%s: %s", path, node)
		for _, r := range runs {
			out[node] = append(out[node], resolve.Options{RuntimeVersion: r["runtime-version"], KubeletVersion: r["kubelet-version"],
				KubeadmVersion: r["kubeadm-version"], KubeadmConfigPath: r["kubeadm-config"]})
		}
	}
	return out
}

// versionArgs are the command line's flags for the versions of opts.
func versionArgs(opts resolve.Options) []string {
	var args []string
	for flag, v := range map[string]string{
		"--runtime-version": opts.RuntimeVersion, "--kubelet-version": opts.KubeletVersion,
		"--kubeadm-version": opts.KubeadmVersion, "--kubeadm-config": opts.KubeadmConfigPath,
	} {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	return args
}

// otherSpelling returns another spelling of img under the default aliases
// (the other Kubernetes registry, else Docker Hub's other form), "" when
// none differs.
func otherSpelling(img string) string {
	r, err := reference.Parse(img)
	if err != nil {
		return ""
	}
	for _, v := range reference.DefaultAliases().Variants(r) {
		if v.String() != img {
			return v.String()
		}
	}
	if n, err := reference.DefaultAliases().Parse(img); err == nil && n.String() != img {
		return n.String() // k8s.gcr.io/x as registry.k8s.io/x
	}
	for _, s := range []string{r.String(), r.Familiar()} {
		if s != img {
			return s
		}
	}
	return ""
}

// TestAuditAgreesWithLibrary audits every sample node offline through the
// library (resolve.Resolve, then audit.Judge with the lookup not asked)
// and through `sandboxpin audit --root --images` with the same versions,
// on the same images: the sandbox image stored exactly as configured and
// pinned, stored so but unpinned, and stored only under another spelling,
// pinned. Both must give the same status, finding kinds, fixes and exit
// code (1 when not protected).
func TestAuditAgreesWithLibrary(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(sampleNodes)
	require.NoError(t, err)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		optsList, ok := sampleVersions(t, sampleNodes+"/versions.json")[e.Name()]
		require.True(t, ok, "sample node %s has no row in %s/versions.json", e.Name(), sampleNodes)
		for _, opts := range optsList {
			args := versionArgs(opts)
			t.Run(e.Name()+"/"+strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				root := filepath.Join(sampleNodes, e.Name())
				opts.Root = resolve.DirFS(root)
				res, err := resolve.Resolve(context.Background(), opts)
				require.NoError(t, err)
				img := res.SandboxImage
				observations := map[string][]*audit.ListedImage{
					"as configured, pinned": {{ID: "sha256:1", RepoTags: []string{img}, Pinned: true}},
					"as configured, unpinned": {
						{ID: "sha256:1", RepoTags: []string{img}},
						{ID: "sha256:2", RepoTags: []string{"docker.io/library/busybox:1.36"}},
					},
				}
				if other := otherSpelling(img); other != "" {
					observations["only as "+other] = []*audit.ListedImage{{ID: "sha256:1", RepoTags: []string{other}, Pinned: true}}
				}
				for what, images := range observations {
					file := filepath.Join(t.TempDir(), "images.json")
					b, err := json.Marshal(struct {
						Images []*audit.ListedImage `json:"images"`
					}{images})
					require.NoError(t, err)
					require.NoError(t, os.WriteFile(file, b, 0o600))
					code, stdout, stderr := runCmd(t, append([]string{"audit", "--root", root, "--images", file, "-o", "json"}, args...)...)

					want, err := audit.Judge(res, audit.ListedObservation{Images: images})
					if img == "" {
						require.ErrorIs(t, err, resolve.ErrNoSandboxImage)
						assert.Equal(t, exitUnknown, code, "%s: stderr %s", what, stderr)
						continue
					}
					require.NoError(t, err, what)
					wantCode := exitOK
					if !want.Protected() {
						wantCode = exitCheck
					}
					require.Equal(t, wantCode, code, "%s: exit code; stderr %s", what, stderr)
					var got audit.Verdict
					require.NoError(t, json.Unmarshal([]byte(stdout), &got), what)
					assert.Equal(t, want.Status, got.Status, "%s: status", what)
					assert.Equal(t, want.Sandbox, got.Sandbox, "%s: sandbox", what)
					assert.Equal(t, kindsOf(want.Findings), kindsOf(got.Findings), "%s: finding kinds", what)
					assert.Equal(t, want.Fixes, got.Fixes, "%s: fixes", what)
					assert.Equal(t, want.Fix, got.Fix, "%s: fix", what)
				}
			})
		}
	}
}

func kindsOf(notes []resolve.Note) []resolve.Kind {
	kinds := make([]resolve.Kind, len(notes))
	for i, n := range notes {
		kinds[i] = n.Kind
	}
	return kinds
}

// TestAuditKubeletWillNotStart audits kubelet-flag-dropin offline with its
// pause image stored as configured and pinned: OK while the kubelet's
// version is unknown or 1.33, not with 1.35, which does not start with
// --pod-infra-container-image left in a drop-in.
func TestAuditKubeletWillNotStart(t *testing.T) {
	t.Parallel()
	root := filepath.Join(sampleNodes, "kubelet-flag-dropin")
	file := filepath.Join(t.TempDir(), "images.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"images": [{"id": "sha256:1", "repoTags": ["registry.k8s.io/pause:3.10.2"], "pinned": true}]}`), 0o600))
	base := []string{"audit", "--root", root, "--images", file, "--runtime-version", "2.4.2"}
	tests := []struct {
		name     string
		args     []string // after base
		wantCode int
		wantOut  []string // substrings of stdout
	}{
		{name: "kubelet version unknown", wantCode: exitOK, wantOut: []string{"OK: containerd pins its sandbox image registry.k8s.io/pause:3.10.2"}},
		{name: "kubelet 1.33", args: []string{"--kubelet-version", "v1.33.0"}, wantCode: exitOK},
		{name: "kubelet 1.35", args: []string{"--kubelet-version", "v1.35.0"}, wantCode: exitCheck, wantOut: []string{
			"FAIL: kubelet v1.35.0 no longer has --pod-infra-container-image and will not start: " +
				"remove it from KUBELET_EXTRA_ARGS at /etc/systemd/system/kubelet.service.d/20-sandbox.conf:2\n",
		}},
		{name: "kubelet 1.35, json", args: []string{"--kubelet-version", "v1.35.0", "-o", "json"}, wantCode: exitCheck, wantOut: []string{
			`"status": "will-not-start"`, `"answers": "kubelet-rejects-flag"`, `"urgency": "stops"`, `"fixes": [`,
		}},
		{name: "kubelet 1.35, summary", args: []string{"--kubelet-version", "v1.35.0", "-o", "summary"}, wantCode: exitCheck, wantOut: []string{
			"FAIL: kubelet will not start (kubelet-rejects-flag at /etc/systemd/system/kubelet.service.d/20-sandbox.conf:2)",
		}},
		{name: "kubelet 1.35 and kubeadm's config", args: []string{"--kubelet-version", "v1.35.0", "--kubeadm-config", "/etc/kubernetes/kubeadm.yaml", "-o", "yaml"},
			wantCode: exitCheck, wantOut: []string{"status: will-not-start\n", "path: /etc/kubernetes/kubeadm.yaml\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCmd(t, append(append([]string{}, base...), tt.args...)...)
			assert.Equal(t, tt.wantCode, code, "stdout %s\nstderr %s", stdout, stderr)
			for _, want := range tt.wantOut {
				assert.Contains(t, stdout, want)
			}
		})
	}
}

// TestVersionFlagsShared checks that audit and serve take every version
// flag resolve takes.
func TestVersionFlagsShared(t *testing.T) {
	t.Parallel()
	root := newRoot(context.Background(), io.Discard, io.Discard)
	find := func(name string) *cobra.Command {
		c, _, err := root.Find([]string{name})
		require.NoError(t, err, name)
		return c
	}
	resolveCmd := find("resolve")
	for _, name := range []string{"audit", "serve", "prepull"} {
		c := find(name)
		for _, flag := range []string{"root", "runtime-endpoint", "runtime-version", "kubelet-version", "kubeadm-version", "kubeadm-config"} {
			require.NotNil(t, resolveCmd.Flags().Lookup(flag), "resolve --%s", flag)
			assert.NotNil(t, c.Flags().Lookup(flag), "%s --%s", name, flag)
		}
	}
}
