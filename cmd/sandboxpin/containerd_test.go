package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
)

// TestResolveConfigV4 resolves the configs `containerd config default`
// writes on 2.3.7 and 2.4.2 (version = 4), which sandboxpin once refused.
func TestResolveConfigV4(t *testing.T) {
	t.Parallel()
	for _, root := range []string{"../../resolve/testdata/nodes/containerd-2.3-v4-default", "testdata/containerd-2.4-default"} {
		for _, extra := range [][]string{nil, {"--runtime-version", "2.3.7"}, {"--runtime-version", "v2.4.2"}} {
			t.Run(filepath.Base(root)+strings.Join(extra, "="), func(t *testing.T) {
				t.Parallel()
				code, out, errOut := runCmd(t, append([]string{"resolve", "--root", root}, extra...)...)
				assert.Equal(t, exitOK, code, "stderr: %s", errOut)
				assert.Contains(t, out, "Sandbox image: registry.k8s.io/pause:3.10.2 (containerd)")
				assert.Contains(t, out, "/etc/containerd/config.toml:")
				assert.Contains(t, out, "Conflicts: 0")
			})
		}
	}
}

func TestFirstEndpoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "c.sock")
	def := filepath.Join(dir, "default.sock")
	require.NoError(t, os.WriteFile(sock, nil, 0o600))
	require.NoError(t, os.WriteFile(def, nil, 0o600))
	tests := []struct {
		name   string
		config string // etc/containerd/config.toml, "" for none
		want   string
	}{
		{name: "no config: the defaults", want: "unix://" + def},
		{name: "v2 [grpc] address", config: "version = 2\n[grpc]\naddress = '" + sock + "'\n", want: "unix://" + sock},
		{name: "v4 plugin address", config: "version = 4\n[plugins.'io.containerd.server.v1.grpc']\naddress = '" + sock + "'\n", want: "unix://" + sock},
		{name: "v4 ignores [grpc]", config: "version = 4\n[grpc]\naddress = '" + sock + "'\n", want: "unix://" + def},
		{name: "named socket absent", config: "version = 2\n[grpc]\naddress = '" + filepath.Join(dir, "nope.sock") + "'\n", want: "unix://" + def},
		{name: "malformed config: the defaults", config: "version = 9\n", want: "unix://" + def},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if tt.config != "" {
				require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o750))
				require.NoError(t, os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), []byte(tt.config), 0o600))
			}
			got := firstEndpoint(os.DirFS(root), "", []string{"unix://" + filepath.Join(dir, "absent.sock"), "unix://" + def})
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestFirstEndpointUnderRoot: with --root, the kubelet's socket comes first
// (the shim's, after deploy/systemd's drop-in), every path is under the
// root, and /var/run is /run.
func TestFirstEndpointUnderRoot(t *testing.T) {
	t.Parallel()
	dropIn, err := os.ReadFile("../../deploy/systemd/kubelet-sandboxpin-shim.conf")
	require.NoError(t, err)
	const (
		containerd = "run/containerd/containerd.sock"
		shim       = "run/sandboxpin/shim.sock"
		crio       = "run/crio/crio.sock"
		// the kubelet's unit, as kubeadm's drop-in has its ExecStart
		unit    = "usr/lib/systemd/system/kubelet.service"
		kubeadm = "[Service]\nExecStart=/usr/bin/kubelet $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n"
	)
	tests := []struct {
		name  string
		files map[string]string // files under the root ("" for a socket's stand-in)
		want  string            // under the root, "" for none
	}{
		{name: "nothing", files: map[string]string{}},
		{name: "the default containerd socket", files: map[string]string{containerd: ""}, want: containerd},
		{name: "CRI-O's default, /var/run as /run", files: map[string]string{crio: ""}, want: crio},
		{name: "the shim's drop-in", files: map[string]string{containerd: "", shim: "", unit: kubeadm,
			"etc/systemd/system/kubelet.service.d/20-sandboxpin-shim.conf": string(dropIn)}, want: shim},
		{name: "the drop-in, the shim's socket gone", files: map[string]string{containerd: "", unit: kubeadm,
			"etc/systemd/system/kubelet.service.d/20-sandboxpin-shim.conf": string(dropIn)}, want: containerd},
		{name: "a socket on the host, not under the root", files: map[string]string{
			"etc/containerd/config.toml": "version = 2\n[grpc]\naddress = '/proc/self/exe'\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			for name, body := range tt.files {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o750))
				require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(body), 0o600))
			}
			want := ""
			if tt.want != "" {
				want = "unix://" + filepath.Join(root, tt.want)
			}
			assert.Equal(t, want, firstEndpoint(os.DirFS(root), root, cri.DefaultEndpoints()))
		})
	}
}

// TestAuditLiveVersions runs audit and resolve against containerd 1.7.35,
// 2.3.7 and 2.4.2, with --root holding the config each runs with: the exact
// name is pinned by the runtime (exit 0), the alias is not (exit 1), and
// resolve gives the configured image (exit 0) on config versions 2 and 4.
func TestAuditLiveVersions(t *testing.T) {
	t.Parallel()
	const stored = "registry.k8s.io/pause:3.10.1"
	tests := []struct {
		version    containerdtest.Version
		configured string
		wantCode   int
		wantOut    string
	}{
		{version: containerdtest.V17, configured: stored, wantCode: exitOK, wantOut: "OK: containerd pins its sandbox image registry.k8s.io/pause:3.10.1"},
		{version: containerdtest.V17, configured: "k8s.gcr.io/pause:3.10.1", wantCode: exitCheck,
			wantOut: "does not pin its sandbox image k8s.gcr.io/pause:3.10.1 (stored as registry.k8s.io/pause:3.10.1)"},
		{version: containerdtest.V23, configured: stored, wantCode: exitOK, wantOut: "OK: containerd pins its sandbox image registry.k8s.io/pause:3.10.1"},
		{version: containerdtest.V23, configured: "k8s.gcr.io/pause:3.10.1", wantCode: exitCheck,
			wantOut: "does not pin its sandbox image k8s.gcr.io/pause:3.10.1 (stored as registry.k8s.io/pause:3.10.1)"},
		{version: containerdtest.V24, configured: stored, wantCode: exitOK, wantOut: "OK: containerd pins its sandbox image registry.k8s.io/pause:3.10.1"},
		{version: containerdtest.V24, configured: "k8s.gcr.io/pause:3.10.1", wantCode: exitCheck,
			wantOut: "does not pin its sandbox image k8s.gcr.io/pause:3.10.1 (stored as registry.k8s.io/pause:3.10.1)"},
	}
	for _, tt := range tests {
		t.Run(tt.version.String()+"/"+tt.configured, func(t *testing.T) {
			t.Parallel()
			c := containerdtest.Start(t, tt.version, containerdtest.Options{
				SandboxImage: tt.configured,
				Images:       []containerdtest.Image{{Names: []string{stored}}, {Names: []string{"docker.io/library/busybox:1.36"}}},
			})
			cfg, err := os.ReadFile(filepath.Join(c.Dir, "config.toml"))
			require.NoError(t, err)
			root := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o750))
			require.NoError(t, os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), cfg, 0o600)) //nolint:gosec // G703: the test's own temporary directory

			code, out, errOut := runCmd(t, "audit", "--runtime-endpoint", c.Endpoint, "--root", root)
			assert.Equal(t, tt.wantCode, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, tt.wantOut)

			code, out, errOut = runCmd(t, "resolve", "--runtime-endpoint", c.Endpoint, "--root", root)
			assert.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, "Sandbox image: "+tt.configured+" (containerd)")
			assert.Contains(t, out, "Conflicts: 0")
		})
	}
}
