package resolve

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

func TestKubeletDefaultSandbox(t *testing.T) {
	t.Parallel()
	// cmd/kubelet/app/options/container_runtime.go at each tag.
	for v, want := range map[string]string{
		"v1.22.0": "k8s.gcr.io/pause:3.5", "v1.23.0": "k8s.gcr.io/pause:3.6", "v1.23.14": "k8s.gcr.io/pause:3.6",
		"v1.23.15": "registry.k8s.io/pause:3.6", "v1.23.17": "registry.k8s.io/pause:3.6", "v1.24.0": "k8s.gcr.io/pause:3.7",
		"v1.24.9": "registry.k8s.io/pause:3.7", "v1.24.17": "registry.k8s.io/pause:3.7", "v1.25.0": "registry.k8s.io/pause:3.8",
		"v1.26.0": "registry.k8s.io/pause:3.9", "v1.27.0": "registry.k8s.io/pause:3.9", "v1.28.0": "registry.k8s.io/pause:3.9",
		"v1.29.0": "registry.k8s.io/pause:3.9", "v1.21.0": "", "v1.30.0": "",
	} {
		pv, err := parseVersion(v)
		require.NoError(t, err)
		assert.Equal(t, want, kubeletDefaultSandbox(pv), v)
	}
}

func TestKubeletVersionNotes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, kubelet, sandbox string
		flag                   string // --pod-infra-container-image, "" for none
		wantNote, noNote       string
	}{
		{name: "1.22 ignores pinned", kubelet: "v1.22.17", sandbox: "registry.k8s.io/pause:3.6", wantNote: "ignores Image.pinned (honoured from 1.23.0)"},
		{name: "1.23 honours pinned", kubelet: "v1.23.0", sandbox: "k8s.gcr.io/pause:3.6", noNote: "ignores Image.pinned"},
		{name: "1.28 protects its default, which the runtime uses", kubelet: "v1.28.4", sandbox: "registry.k8s.io/pause:3.9",
			wantNote: "keeps its built-in default registry.k8s.io/pause:3.9 out of image GC even without --pod-infra-container-image: that is the runtime's"},
		{name: "1.26 protects its default, not the runtime's", kubelet: "1.26.1", sandbox: "registry.k8s.io/pause:3.10",
			wantNote: "not the runtime's registry.k8s.io/pause:3.10"},
		{name: "1.23.14 default is on k8s.gcr.io", kubelet: "v1.23.14", sandbox: "registry.k8s.io/pause:3.6",
			wantNote: "keeps its built-in default k8s.gcr.io/pause:3.6 out of image GC (no --pod-infra-container-image is set), not the runtime's"},
		{name: "1.29 protects nothing", kubelet: "v1.29.0", sandbox: "registry.k8s.io/pause:3.9", noNote: "built-in default"},
		{name: "the flag replaces the default", kubelet: "v1.27.3", sandbox: "registry.k8s.io/pause:3.9", flag: "registry.k8s.io/pause:3.9", noNote: "built-in default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{ctrMain: "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = \"" + tt.sandbox + "\"\n"}
			if tt.flag != "" {
				files[kubeletFlagsEnv] = "KUBELET_KUBEADM_ARGS=\"--pod-infra-container-image=" + tt.flag + "\"\n"
			}
			res, err := Resolve(context.Background(), Options{Root: nodetest.MapFS(files), KubeletVersion: tt.kubelet, RuntimeVersion: "1.7.35"})
			require.NoError(t, err)
			if tt.wantNote != "" {
				assert.True(t, containsSub(res.Notes, tt.wantNote), "no note contains %q in %q", tt.wantNote, res.Notes)
			}
			if tt.noNote != "" {
				assert.False(t, containsSub(res.Notes, tt.noNote), "a note contains %q in %q", tt.noNote, res.Notes)
			}
		})
	}
}
