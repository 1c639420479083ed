package config

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

const kubeadmFile = "etc/kubernetes/kubeadm.yaml"

func TestReadKubeadmKubeletExtraArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		content   string
		want      string   // the flag's value, "" if absent
		wantLine  int      // its line
		wantAll   []string // every value, when there are more than one
		wantLines []int    // their lines
		wantError string
	}{
		{
			name: "v1beta4 list, every item of the name (the last wins)",
			content: "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n" +
				"  - name: pod-infra-container-image\n    value: registry.k8s.io/pause:3.9\n  - name: node-ip\n    value: 10.0.0.1\n" +
				"  - name: pod-infra-container-image\n    value: registry.k8s.io/pause:3.10\n",
			want: "registry.k8s.io/pause:3.10", wantAll: []string{"registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.10"}, wantLines: []int{5, 9},
		},
		{
			name: "an InitConfiguration and a JoinConfiguration",
			content: "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n" +
				"  - name: pod-infra-container-image\n    value: registry.k8s.io/pause:3.9\n---\n" +
				"apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n    pod-infra-container-image: registry.k8s.io/pause:3.10\n",
			want: "registry.k8s.io/pause:3.10", wantAll: []string{"registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.10"}, wantLines: []int{5, 12},
		},
		{
			name:    "v1 list, after a ClusterConfiguration",
			content: "apiVersion: kubeadm.k8s.io/v1\nkind: ClusterConfiguration\n---\napiVersion: kubeadm.k8s.io/v1\nkind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n  - {name: pod-infra-container-image, value: \"mirror.example/pause:3.10\"}\n",
			want:    "mirror.example/pause:3.10", wantLine: 8,
		},
		{
			name:    "v1beta3 map",
			content: "apiVersion: kubeadm.k8s.io/v1beta3\nkind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n    cgroup-driver: systemd\n    pod-infra-container-image: k8s.gcr.io/pause:3.6\n",
			want:    "k8s.gcr.io/pause:3.6", wantLine: 6,
		},
		{
			name:    "other flags only",
			content: "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n  - name: node-ip\n    value: 10.0.0.1\n",
		},
		{
			name:      "a map where v1beta4 wants a list",
			content:   "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n    pod-infra-container-image: x\n",
			wantError: "/etc/kubernetes/kubeadm.yaml:5: nodeRegistration.kubeletExtraArgs: invalid configuration: kubeadm.k8s.io/v1beta4 wants a list of {name, value}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadKubeadm(nodetest.MapFS(map[string]string{kubeadmFile: tt.content}), kubeadmFile)
			if tt.wantError != "" {
				require.ErrorIs(t, err, nodefs.ErrInvalidConfig)
				assert.ErrorContains(t, err, tt.wantError)
				return
			}
			require.NoError(t, err)
			if tt.want == "" {
				assert.Empty(t, got.KubeletSandboxArgs)
				return
			}
			want, lines := tt.wantAll, tt.wantLines
			if want == nil {
				want, lines = []string{tt.want}, []int{tt.wantLine}
			}
			require.Len(t, got.KubeletSandboxArgs, len(want))
			for i, a := range got.KubeletSandboxArgs {
				assert.Equal(t, want[i], a.Value)
				assert.Equal(t, lines[i], a.Line)
				assert.Equal(t, "nodeRegistration.kubeletExtraArgs", a.Key)
				assert.Equal(t, "--pod-infra-container-image", a.Flag)
			}
		})
	}
}

func TestReadKubeadm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		content    string
		wantRepo   string // imageRepository, "" if unset
		wantLine   int    // its line
		wantK8s    string // kubernetesVersion
		wantSocket string // criSocket
	}{
		{
			name: "multi-document v1beta4",
			content: `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  criSocket: unix:///var/run/crio/crio.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.31.2
imageRepository: mirror.example/k8s
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
`,
			wantRepo: "mirror.example/k8s", wantLine: 9, wantK8s: "v1.31.2", wantSocket: "unix:///var/run/crio/crio.sock",
		},
		{
			// kubeadm 1.37's API: cmd/kubeadm/app/apis/kubeadm/v1/types.go
			// (v1.37.2) keeps ClusterConfiguration.ImageRepository
			// `json:"imageRepository"` at the top level.
			name:     "v1 of kubeadm 1.37",
			content:  "apiVersion: kubeadm.k8s.io/v1\nkind: ClusterConfiguration\nkubernetesVersion: v1.37.2\nimageRepository: mirror.example/k8s\n",
			wantRepo: "mirror.example/k8s", wantLine: 4, wantK8s: "v1.37.2",
		},
		{
			name:    "v1beta3 without repository",
			content: "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nkubernetesVersion: 1.28.4\n",
			wantK8s: "1.28.4",
		},
		{
			name:    "not kubeadm",
			content: "apiVersion: v1\nkind: ConfigMap\nimageRepository: x\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadKubeadm(nodetest.MapFS(map[string]string{kubeadmFile: tt.content}), kubeadmFile)
			require.NoError(t, err)
			val := func(f *Found) string {
				if f == nil {
					return ""
				}
				return f.Value
			}
			assert.Equal(t, tt.wantRepo, val(got.ImageRepository))
			if got.ImageRepository != nil {
				assert.Equal(t, tt.wantLine, got.ImageRepository.Line)
			}
			assert.Equal(t, tt.wantK8s, val(got.KubernetesVersion))
			assert.Equal(t, tt.wantSocket, val(got.CRISocket))
		})
	}
}

func TestReadKubeadmErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		content  string
		wantLine int // line the error names
	}{
		{name: "bad yaml in second document", content: "apiVersion: v1\nkind: X\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: [\n", wantLine: 5},
		{name: "tab indentation", content: "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n\tpodSubnet: x\n", wantLine: 4},
		{name: "wrong type", content: "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nimageRepository: [a]\n", wantLine: 1},
		{name: "two ClusterConfigurations", content: "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n", wantLine: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadKubeadm(nodetest.MapFS(map[string]string{kubeadmFile: tt.content}), kubeadmFile)
			require.ErrorIs(t, err, nodefs.ErrInvalidConfig)
			var ce *nodefs.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "/"+kubeadmFile, ce.Path)
			assert.Equal(t, tt.wantLine, ce.Line, "line in %v", err)
		})
	}
	_, err := ReadKubeadm(nodetest.MapFS(nil), kubeadmFile)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}
