package resolve

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

func TestContainerdEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		files      map[string]string
		want       string
		wantOrigin string
	}{
		{name: "no config", files: map[string]string{}},
		{name: "v2 grpc address", files: map[string]string{ctrMain: "version = 2\n[grpc]\n  address = \"/run/k8s/c.sock\"\n"},
			want: "unix:///run/k8s/c.sock", wantOrigin: "/etc/containerd/config.toml:3"},
		{name: "v1 without version", files: map[string]string{ctrMain: "[grpc]\naddress = \"/run/k8s/c.sock\"\n"},
			want: "unix:///run/k8s/c.sock", wantOrigin: "/etc/containerd/config.toml:2"},
		{name: "v3 grpc address", files: map[string]string{ctrMain: "version = 3\n[grpc]\naddress = '/run/c3.sock'\n"},
			want: "unix:///run/c3.sock", wantOrigin: "/etc/containerd/config.toml:3"},
		{name: "v4 plugin table", files: map[string]string{ctrMain: "version = 4\n[plugins.'io.containerd.server.v1.grpc']\naddress = '/run/c4.sock'\n"},
			want: "unix:///run/c4.sock", wantOrigin: "/etc/containerd/config.toml:3"},
		{name: "v4 ignores [grpc]", files: map[string]string{ctrMain: "version = 4\n[grpc]\naddress = '/run/ignored.sock'\n"}},
		{name: "v3 ignores the v4 table", files: map[string]string{ctrMain: "version = 3\n[plugins.'io.containerd.server.v1.grpc']\naddress = '/run/c4.sock'\n"}},
		{name: "drop-in overrides", files: map[string]string{
			ctrMain:                        "version = 4\nimports = ['conf.d/*.toml']\n[plugins.'io.containerd.server.v1.grpc']\naddress = '/run/a.sock'\n",
			"etc/containerd/conf.d/b.toml": "version = 4\n[plugins.'io.containerd.server.v1.grpc']\naddress = '/run/b.sock'\n",
		}, want: "unix:///run/b.sock", wantOrigin: "/etc/containerd/conf.d/b.toml:3"},
		{name: "CRI disabled", files: map[string]string{ctrMain: "version = 2\ndisabled_plugins = ['io.containerd.grpc.v1.cri']\n[grpc]\naddress = '/run/docker.sock'\n"}},
		{name: "k3s first", files: map[string]string{
			"var/lib/rancher/k3s/agent/etc/containerd/config.toml": "version = 3\n[grpc]\naddress = '/run/k3s/containerd/containerd.sock'\n",
			ctrMain: "version = 2\n[grpc]\naddress = '/run/other.sock'\n",
		}, want: "unix:///run/k3s/containerd/containerd.sock", wantOrigin: "/var/lib/rancher/k3s/agent/etc/containerd/config.toml:3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, origin, err := ContainerdEndpoint(nodetest.MapFS(tt.files))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantOrigin, origin)
		})
	}
	_, _, err := ContainerdEndpoint(nodetest.MapFS(map[string]string{ctrMain: "version = 9\n"}))
	require.ErrorIs(t, err, ErrInvalidConfig)
}

func TestKubeletEndpoint(t *testing.T) {
	t.Parallel()
	const (
		unit    = "usr/lib/systemd/system/kubelet.service"
		kubeadm = "usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf"
		shim    = "etc/systemd/system/kubelet.service.d/20-sandboxpin-shim.conf"
	)
	kubeadmDropIn := "[Service]\nEnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\nEnvironmentFile=-/etc/default/kubelet\nExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n"
	shipped, err := os.ReadFile("../deploy/systemd/kubelet-sandboxpin-shim.conf")
	require.NoError(t, err)
	tests := []struct {
		name       string
		files      map[string]string
		want       string
		wantOrigin string
	}{
		{name: "no kubelet", files: map[string]string{}},
		{name: "no flag", files: map[string]string{unit: "[Service]\nExecStart=/usr/bin/kubelet\n", kubeadm: kubeadmDropIn}},
		{name: "kubeadm-flags.env", files: map[string]string{unit: "[Service]\nExecStart=/usr/bin/kubelet\n", kubeadm: kubeadmDropIn,
			"var/lib/kubelet/kubeadm-flags.env": "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///run/containerd/containerd.sock\"\n"},
			want: "unix:///run/containerd/containerd.sock", wantOrigin: "/var/lib/kubelet/kubeadm-flags.env:1"},
		// The shim's shipped drop-in: its KUBELET_EXTRA_ARGS comes after
		// kubeadm's flags on the command line, so the kubelet talks to the
		// shim.
		{name: "the shim's drop-in", files: map[string]string{unit: "[Service]\nExecStart=/usr/bin/kubelet\n", kubeadm: kubeadmDropIn, shim: string(shipped),
			"var/lib/kubelet/kubeadm-flags.env": "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///run/containerd/containerd.sock\"\n"},
			want: "unix:///run/sandboxpin/shim.sock", wantOrigin: "/etc/systemd/system/kubelet.service.d/20-sandboxpin-shim.conf:" + lineOf(t, string(shipped), "Environment=")},
		{name: "a path without scheme", files: map[string]string{unit: "[Service]\nExecStart=/usr/bin/kubelet --container-runtime-endpoint /run/crio/crio.sock\n"},
			want: "unix:///run/crio/crio.sock", wantOrigin: "/usr/lib/systemd/system/kubelet.service:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, origin, err := KubeletEndpoint(nodetest.MapFS(tt.files))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantOrigin, origin)
		})
	}
	_, _, err = KubeletEndpoint(nodetest.MapFS(map[string]string{"etc/default/kubelet": "KUBELET_EXTRA_ARGS=\"unterminated\n"}))
	require.ErrorIs(t, err, ErrInvalidConfig)
}

// lineOf returns the number of the first line of text that starts with
// prefix, as a string.
func lineOf(t *testing.T, text, prefix string) string {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return strconv.Itoa(i + 1)
		}
	}
	t.Fatalf("no line starts with %q", prefix)
	return ""
}
