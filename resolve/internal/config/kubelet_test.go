package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

func TestReadKubelet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		files        map[string]string
		wantNil      bool     // no flag file
		wantImages   []string // every --pod-infra-container-image, effect order
		wantOrigins  []string // their file:line
		wantEndpoint string   // last --container-runtime-endpoint
	}{
		{name: "absent", files: map[string]string{}, wantNil: true},
		{
			name:         "kubeadm 1.31 file",
			files:        map[string]string{kubeletFlagsEnv: `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock --pod-infra-container-image=registry.k8s.io/pause:3.10"` + "\n"},
			wantImages:   []string{"registry.k8s.io/pause:3.10"},
			wantOrigins:  []string{"/var/lib/kubelet/kubeadm-flags.env:1"},
			wantEndpoint: "unix:///var/run/containerd/containerd.sock",
		},
		{
			name:  "empty args",
			files: map[string]string{kubeletFlagsEnv: "KUBELET_KUBEADM_ARGS=\"\"\n"},
		},
		{
			name: "space form, duplicate, extra args win",
			files: map[string]string{
				kubeletFlagsEnv:       "# written by kubeadm\n\nKUBELET_KUBEADM_ARGS=\"--pod-infra-container-image a.example/p:1 --pod-infra-container-image=b.example/p:2\"\n",
				"etc/default/kubelet": "KUBELET_EXTRA_ARGS=--node-ip=10.0.0.1 --pod-infra-container-image=c.example/p:3\n",
			},
			wantImages:  []string{"b.example/p:2", "c.example/p:3"},
			wantOrigins: []string{"/var/lib/kubelet/kubeadm-flags.env:3", "/etc/default/kubelet:1"},
		},
		{
			name: "sysconfig, single quotes, last assignment wins",
			files: map[string]string{
				"etc/sysconfig/kubelet": "KUBELET_EXTRA_ARGS='--pod-infra-container-image=x.example/p:1'\nKUBELET_EXTRA_ARGS='--pod-infra-container-image=y.example/p:1'\n",
			},
			wantImages:  []string{"y.example/p:1"},
			wantOrigins: []string{"/etc/sysconfig/kubelet:2"},
		},
		{
			name: "Go-quoted escapes and continuation",
			files: map[string]string{
				kubeletFlagsEnv: "KUBELET_KUBEADM_ARGS=\"--node-labels=\\\"a=b\\\" \\\n--pod-infra-container-image=registry.k8s.io/pause:3.9\"\n",
			},
			wantImages:  []string{"registry.k8s.io/pause:3.9"},
			wantOrigins: []string{"/var/lib/kubelet/kubeadm-flags.env:1"},
		},
		{
			name: "kubeadm's drop-in, a drop-in of the user's sets KUBELET_EXTRA_ARGS",
			files: map[string]string{
				"lib/systemd/system/kubelet.service":                       "[Service]\nExecStart=/usr/bin/kubelet\n",
				"usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf": kubeadmDropIn,
				"etc/systemd/system/kubelet.service.d/20-pause.conf":       "[Service]\n# pinned by hand\nEnvironment=\"KUBELET_EXTRA_ARGS=--node-ip=10.0.0.1 --pod-infra-container-image=registry.k8s.io/pause:3.9\"\n",
				kubeletFlagsEnv: `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock"` + "\n",
			},
			wantImages:   []string{"registry.k8s.io/pause:3.9"},
			wantOrigins:  []string{"/etc/systemd/system/kubelet.service.d/20-pause.conf:3"},
			wantEndpoint: "unix:///run/containerd/containerd.sock",
		},
		{
			name: "an EnvironmentFile's variable overrides Environment=",
			files: map[string]string{
				"lib/systemd/system/kubelet.service":                       "[Service]\nExecStart=/usr/bin/kubelet\n",
				"usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf": kubeadmDropIn,
				"etc/systemd/system/kubelet.service.d/20-pause.conf":       "[Service]\nEnvironment=KUBELET_EXTRA_ARGS=--pod-infra-container-image=registry.k8s.io/pause:3.9\n",
				"etc/default/kubelet":                                      "KUBELET_EXTRA_ARGS=\n",
			},
		},
		{
			name: "a literal flag in a drop-in's ExecStart, before the variables",
			files: map[string]string{
				"etc/systemd/system/kubelet.service": "[Service]\nExecStart=/usr/bin/kubelet\n",
				"etc/systemd/system/kubelet.service.d/10-kubeadm.conf": "[Service]\nEnvironment=\"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml\"\n" +
					"ExecStart=\nExecStart=/usr/bin/kubelet \\\n  --pod-infra-container-image registry.k8s.io/pause:3.8 \\\n  $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS\n",
				kubeletFlagsEnv: `KUBELET_KUBEADM_ARGS="--pod-infra-container-image=registry.k8s.io/pause:3.10"` + "\n",
			},
			wantImages:  []string{"registry.k8s.io/pause:3.8", "registry.k8s.io/pause:3.10"},
			wantOrigins: []string{"/etc/systemd/system/kubelet.service.d/10-kubeadm.conf:5", "/var/lib/kubelet/kubeadm-flags.env:1"},
		},
		{
			name: "a unit whose ExecStart names no variable reads no flag file",
			files: map[string]string{
				"etc/systemd/system/kubelet.service": "[Service]\nExecStart=/usr/bin/kubelet --config=/etc/kubelet.yaml\n",
				kubeletFlagsEnv:                      `KUBELET_KUBEADM_ARGS="--pod-infra-container-image=registry.k8s.io/pause:3.10"` + "\n",
			},
		},
		{
			name: "${VAR} and a drop-in masked by a higher directory's",
			files: map[string]string{
				"lib/systemd/system/kubelet.service":             "[Service]\nExecStart=/usr/bin/kubelet ${KUBELET_EXTRA_ARGS}\n",
				"lib/systemd/system/kubelet.service.d/30-x.conf": "[Service]\nEnvironment=KUBELET_EXTRA_ARGS=--pod-infra-container-image=lower.example/p:1\n",
				"etc/systemd/system/kubelet.service.d/30-x.conf": "[Service]\nEnvironment=KUBELET_EXTRA_ARGS=--pod-infra-container-image=upper.example/p:1\n",
			},
			wantImages:  []string{"upper.example/p:1"},
			wantOrigins: []string{"/etc/systemd/system/kubelet.service.d/30-x.conf:2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadKubelet(nodetest.MapFS(tt.files))
			require.NoError(t, err)
			if tt.wantNil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			var imgs, origins []string
			for _, a := range got.SandboxArgs {
				imgs = append(imgs, a.Value)
				origins = append(origins, a.Origin())
			}
			assert.Equal(t, tt.wantImages, imgs, "images")
			assert.Equal(t, tt.wantOrigins, origins, "origins")
			ep := ""
			if got.Endpoint != nil {
				ep = got.Endpoint.Value
			}
			assert.Equal(t, tt.wantEndpoint, ep, "endpoint")
		})
	}
}

// kubeadmDropIn is the drop-in kubeadm's packages install (the deb
// package's 10-kubeadm.conf of kubernetes/release, abridged).
const kubeadmDropIn = `[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`

func TestReadKubeletErrors(t *testing.T) {
	t.Parallel()
	_, err := ReadKubelet(nodetest.MapFS(map[string]string{kubeletFlagsEnv: "A=1\nKUBELET_KUBEADM_ARGS=\"--x\n"}))
	require.ErrorIs(t, err, nodefs.ErrInvalidConfig)
	var ce *nodefs.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "/var/lib/kubelet/kubeadm-flags.env", ce.Path)
	assert.Equal(t, 2, ce.Line)
	assert.Equal(t, "KUBELET_KUBEADM_ARGS", ce.Key)
}

func TestRuntimeFromEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want criinfo.Runtime
	}{
		{"unix:///run/containerd/containerd.sock", criinfo.RuntimeContainerd},
		{"/run/k3s/containerd/containerd.sock", criinfo.RuntimeContainerd},
		{"unix:///var/run/crio/crio.sock", criinfo.RuntimeCRIO},
		{"unix:///var/run/cri-dockerd.sock", criinfo.RuntimeCRIDockerd},
		{"unix:///run/other.sock", criinfo.RuntimeUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, RuntimeFromEndpoint(tt.in), "RuntimeFromEndpoint(%q)", tt.in)
		})
	}
}
