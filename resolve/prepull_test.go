package resolve

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

// TestPrepull checks the pre-pull rule: every exact string a consumer on the
// node looks up (the runtime's sandbox image as configured, kubeadm's pause
// image as kubeadm names it, the runtime's exact pinned images), merged only
// when identical, with a note on each pair of spellings of one image.
func TestPrepull(t *testing.T) {
	t.Parallel()
	v3 := func(sandbox string, extra ...string) string {
		s := "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = '" + sandbox + "'\n"
		for i, e := range extra {
			s += "  extra" + string(rune('a'+i)) + " = '" + e + "'\n"
		}
		return s
	}
	const kubeadmV1 = "apiVersion: kubeadm.k8s.io/v1\nkind: ClusterConfiguration\nkubernetesVersion: v1.37.2\nimageRepository: mirror.example/k8s\n"
	tests := []struct {
		name        string
		files       map[string]string
		opts        Options
		wantPrepull []string
		wantNotes   []string // substrings of pre-pull notes, one per note, in order
	}{
		{
			name:        "identical strings are one entry",
			files:       map[string]string{ctrMain: v3("registry.k8s.io/pause:3.10.2")},
			opts:        Options{RuntimeVersion: "2.2.9", KubeadmVersion: "v1.37.2"},
			wantPrepull: []string{"registry.k8s.io/pause:3.10.2"},
		},
		{
			name:        "containerd 2.2 default and kubeadm 1.37: two tags",
			files:       map[string]string{},
			opts:        Options{RuntimeVersion: "2.2.9", Runtime: "containerd", KubeadmVersion: "v1.37.2"},
			wantPrepull: []string{"registry.k8s.io/pause:3.10.1", "registry.k8s.io/pause:3.10.2"},
		},
		{
			name:        "alias spelling on containerd: both names, ctr tag",
			files:       map[string]string{ctrMain: v3("k8s.gcr.io/pause:3.10.2")},
			opts:        Options{RuntimeVersion: "2.2.9", KubeadmVersion: "v1.37.2"},
			wantPrepull: []string{"k8s.gcr.io/pause:3.10.2", "registry.k8s.io/pause:3.10.2"},
			wantNotes: []string{"pre-pull: k8s.gcr.io/pause:3.10.2 and registry.k8s.io/pause:3.10.2 are one image under two names (a registry alias)" +
				", and each is looked up by its exact name: pull it once and store it under both, e.g. " +
				"`ctr -n k8s.io images pull k8s.gcr.io/pause:3.10.2 && ctr -n k8s.io images tag k8s.gcr.io/pause:3.10.2 registry.k8s.io/pause:3.10.2` (containerd)"},
		},
		{
			name:        "kubeadm v1 config with a mirror, containerd pinned extras",
			files:       map[string]string{ctrMain: v3("registry.k8s.io/pause:3.10.2", "mirror.example/agent:1.0", "registry.k8s.io/pause:3.10.2"), "k.yaml": kubeadmV1},
			opts:        Options{RuntimeVersion: "2.2.9", KubeadmConfigPath: "k.yaml"},
			wantPrepull: []string{"registry.k8s.io/pause:3.10.2", "mirror.example/k8s/pause:3.10.2", "mirror.example/agent:1.0"},
		},
		{
			name: "CRI-O: exact pins pre-pulled, globs not, skopeo hint",
			files: map[string]string{"etc/crio/crio.conf": "[crio.image]\npause_image = \"registry.k8s.io/pause:3.10.2\"\n" +
				"pinned_images = [\"quay.io/myorg/agent*\", \"docker.io/library/busybox:1.36\", \"busybox:1.36\"]\n"},
			opts:        Options{RuntimeVersion: "1.36.3", KubeadmVersion: "v1.37.2", KubeadmConfigPath: ""},
			wantPrepull: []string{"registry.k8s.io/pause:3.10.2", "docker.io/library/busybox:1.36", "busybox:1.36"},
			wantNotes: []string{"pre-pull: docker.io/library/busybox:1.36 and busybox:1.36 are one image under two names (a registry alias), and each is looked up by its exact name: " +
				"pull it once and store it under both, e.g. `skopeo copy containers-storage:docker.io/library/busybox:1.36 containers-storage:busybox:1.36` after pulling docker.io/library/busybox:1.36"},
		},
		{
			name:        "different images get no pre-pull note",
			files:       map[string]string{ctrMain: v3("registry.k8s.io/pause:3.10")},
			opts:        Options{RuntimeVersion: "2.2.9", KubeadmVersion: "v1.37.2"},
			wantPrepull: []string{"registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10.2"},
		},
		{
			// Issue 52: the invalid string was listed, and an installer
			// failed to pull it; the conflict says where it is.
			name:        "an invalid sandbox reference is not pre-pulled",
			files:       map[string]string{ctrMain: v3("Registry.K8S.io/Pause:3.10", "mirror.example/agent:1.0")},
			opts:        Options{RuntimeVersion: "2.2.9", KubeadmVersion: "v1.37.2"},
			wantPrepull: []string{"registry.k8s.io/pause:3.10.2", "mirror.example/agent:1.0"},
		},
		{
			name:        "unresolved variables are not pre-pulled",
			files:       map[string]string{ctrMain: v3("${REGISTRY}/pause:3.10.2")},
			opts:        Options{RuntimeVersion: "2.2.9"},
			wantPrepull: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Root = nodetest.MapFS(tt.files)
			res, err := Resolve(context.Background(), opts)
			require.NoError(t, err)
			assert.Equal(t, tt.wantPrepull, res.Prepull)
			var notes []string
			for _, n := range res.Notes {
				if n.Kind == KindPrepullTwoNames {
					notes = append(notes, n.Message)
				}
			}
			if assert.Len(t, notes, len(tt.wantNotes), "pre-pull notes %q", notes) {
				for i, want := range tt.wantNotes {
					assert.Contains(t, notes[i], want)
				}
			}
		})
	}
}
