package kubeadmtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// A pre-flight run of kubeadm v1.37.2 against containerd 1.6.20 configured
// with k8s.gcr.io/pause:3.10.2 (trimmed).
const sampleStderr = `E1202 17:24:14.519072   16900 remote_runtime.go:1359] "RuntimeConfig from runtime service failed" err="rpc error: code = Unimplemented"
	[WARNING ContainerRuntimeVersion]: You must update your container runtime to a version that supports the CRI method RuntimeConfig.
	[WARNING Port-2379]: Port 2379 is in use
W1202 17:24:14.533196   16900 checks.go:920] detected that the sandbox image "k8s.gcr.io/pause:3.10.2" of the container runtime is inconsistent with that used by kubeadm. It is recommended to use "registry.k8s.io/pause:3.10.2" as the CRI sandbox image.
`

func TestParsePreflight(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		stdout       string
		stderr       string
		wantWarnings []string
		wantRuntime  string // RuntimeSandbox
		wantKubeadm  string // KubeadmSandbox
		wantPulled   bool
	}{
		{
			name:   "sandbox warning",
			stderr: sampleStderr,
			wantWarnings: []string{
				"[ContainerRuntimeVersion] You must update your container runtime to a version that supports the CRI method RuntimeConfig.",
				"[Port-2379] Port 2379 is in use",
				`detected that the sandbox image "k8s.gcr.io/pause:3.10.2" of the container runtime is inconsistent with that used by kubeadm. It is recommended to use "registry.k8s.io/pause:3.10.2" as the CRI sandbox image.`,
			},
			wantRuntime: "k8s.gcr.io/pause:3.10.2", wantKubeadm: "registry.k8s.io/pause:3.10.2",
		},
		{
			name:   "quiet",
			stdout: "[preflight] Running pre-flight checks\n[preflight] Pulling images required for setting up a Kubernetes cluster\n",
		},
		{
			name:       "a pull",
			stderr:     "I1202 17:24:14.533196   16900 checks.go:940] pulled image: registry.k8s.io/pause:3.10.2\n",
			wantPulled: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := PreflightResult{Stdout: tt.stdout, Stderr: tt.stderr}
			parsePreflight(&r)
			assert.Equal(t, tt.wantWarnings, r.Warnings)
			assert.Equal(t, tt.wantRuntime, r.RuntimeSandbox)
			assert.Equal(t, tt.wantKubeadm, r.KubeadmSandbox)
			assert.Equal(t, tt.wantRuntime != "", r.SandboxWarning != "")
			assert.Equal(t, tt.wantPulled, r.Pulled)
		})
	}
}

func TestParseImages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr bool
	}{
		{name: "kubeadm 1.37.2", in: `{"kind": "Images", "apiVersion": "output.kubeadm.k8s.io/v1alpha3", "images": ["registry.k8s.io/kube-apiserver:v1.37.2", "registry.k8s.io/pause:3.10.2"]}`,
			want: []string{"registry.k8s.io/kube-apiserver:v1.37.2", "registry.k8s.io/pause:3.10.2"}},
		{name: "not JSON", in: "registry.k8s.io/pause:3.10.2\n", wantErr: true},
		{name: "other kind", in: `{"kind": "Other", "images": ["x"]}`, wantErr: true},
		{name: "no images", in: `{"kind": "Images", "images": []}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseImages([]byte(tt.in))
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPauseImage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		images []string
		want   string
	}{
		{images: []string{"registry.k8s.io/kube-proxy:v1.37.2", "registry.k8s.io/pause:3.10.2", "registry.k8s.io/etcd:3.7.0-0"}, want: "registry.k8s.io/pause:3.10.2"},
		{images: []string{"mirror.example:5000/k8s/pause:3.10.2"}, want: "mirror.example:5000/k8s/pause:3.10.2"},
		{images: []string{"mirror.example/pause/not-pause:1", "registry.k8s.io/pauses:1"}, want: ""},
		{images: nil, want: ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, PauseImage(tt.images), "PauseImage(%q)", tt.images)
	}
}

func TestConfigYAML(t *testing.T) {
	t.Parallel()
	y := Config{KubernetesVersion: "v1.37.2", ImageRepository: "mirror.example/k8s", CRISocket: "unix:///tmp/x.sock"}.YAML()
	for _, want := range []string{
		"apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n",
		"  criSocket: unix:///tmp/x.sock\n",
		"kind: ClusterConfiguration\nkubernetesVersion: v1.37.2\nimageRepository: mirror.example/k8s\n",
	} {
		assert.Contains(t, y, want)
	}
	assert.NotContains(t, Config{}.YAML(), "imageRepository")
}

// TestImagesListLive runs the real kubeadm: the pause image it lists,
// offline with an explicit version and with a mirror imageRepository, is
// exactly the one resolve.KubeadmPauseImage returns, and Prepull for a node
// installed with that kubeadm config holds it verbatim.
func TestImagesListLive(t *testing.T) {
	Require(t)
	t.Parallel()
	_, version := Binary()
	require.Equal(t, version, Version(t), "kubeadm calls itself by its version (ldflags)")
	byFlag := PauseImage(ImagesListVersion(t, version))
	want, err := resolve.KubeadmPauseImage(version, "")
	require.NoError(t, err)
	assert.Equal(t, want, byFlag, "kubeadm config images list --kubernetes-version %s vs resolve.KubeadmPauseImage", version)
	for _, repo := range []string{"", "mirror.example/k8s", "registry.internal.example:5000/k8s"} {
		t.Run("imageRepository="+repo, func(t *testing.T) {
			t.Parallel()
			cfg := Config{KubernetesVersion: version, ImageRepository: repo}
			listed := PauseImage(ImagesList(t, cfg))
			require.NotEmpty(t, listed, "kubeadm lists a pause image")
			want, err := resolve.KubeadmPauseImage(version, repo)
			require.NoError(t, err)
			assert.Equal(t, want, listed, "kubeadm config images list vs resolve.KubeadmPauseImage")

			// A containerd 2.x node that uses another pause image, installed
			// with this kubeadm config: both names are pre-pulled.
			root := t.TempDir()
			write := func(name, content string) {
				p := filepath.Join(root, filepath.FromSlash(name))
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
				require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
			}
			write("etc/containerd/config.toml", "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = 'registry.k8s.io/pause:3.10'\n")
			write("etc/kubernetes/kubeadm.yaml", cfg.YAML())
			res, err := resolve.Resolve(context.Background(), resolve.Options{
				Root: os.DirFS(root), RuntimeVersion: "2.2.9",
				KubeadmVersion: version, KubeadmConfigPath: "etc/kubernetes/kubeadm.yaml",
			})
			require.NoError(t, err)
			assert.Contains(t, res.Prepull, listed, "Prepull holds kubeadm's pause image verbatim")
			assert.Contains(t, res.Prepull, "registry.k8s.io/pause:3.10", "and the runtime's")
		})
	}
}
