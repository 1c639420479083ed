package resolve

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

// TestFixesKeepTheImageInUse holds the resolver's rules that keep the
// image a node uses (issue 51): kubeadm-differs moves the runtime forward
// only, a dead key beside a live one is removed (its value is not moved
// over the live one), and the kubelet flag's fix follows the runtime's
// image after kubeadm-differs' fix.
func TestFixesKeepTheImageInUse(t *testing.T) {
	t.Parallel()
	const v3 = "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"registry.k8s.io/pause:3.10.1\"\n"
	tests := []struct {
		name     string
		files    map[string]string // the node's files
		opts     Options
		wantFix  []Fix  // every fix, compared on Answers, Action, From, To (and Path, Line where set)
		wantNote []Kind // kinds that must be notes, not conflicts
		noKind   []Kind // kinds that must be neither a conflict nor have a fix
	}{
		{
			name:     "kubeadm older than the configured image: a note, no edit",
			files:    map[string]string{"etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.10.1\"\n"},
			opts:     Options{RuntimeVersion: "1.7.28", KubeadmVersion: "v1.32.5"},
			wantNote: []Kind{KindKubeadmDiffers},
			noKind:   []Kind{KindKubeadmDiffers},
		},
		{
			name:     "kubeadm older than the runtime's default: no key is added",
			files:    map[string]string{"etc/containerd/config.toml": "version = 3\n"},
			opts:     Options{RuntimeVersion: "2.2.1", KubeadmVersion: "v1.33.5"},
			wantNote: []Kind{KindKubeadmDiffers},
			noKind:   []Kind{KindKubeadmDiffers},
		},
		{
			name:    "kubeadm newer: the runtime moves forward",
			files:   map[string]string{"etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.9\"\n"},
			opts:    Options{RuntimeVersion: "1.7.28", KubeadmVersion: "v1.32.5"},
			wantFix: []Fix{{Answers: KindKubeadmDiffers, Action: ActionEdit, From: "registry.k8s.io/pause:3.9", To: "registry.k8s.io/pause:3.10"}},
		},
		{
			name: "a dead version 2 key beside the live one is removed",
			files: map[string]string{"etc/containerd/config.toml": v3 +
				"[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.9\"\n"},
			opts: Options{RuntimeVersion: "2.2.10"},
			wantFix: []Fix{{Answers: KindConfigMistake, Action: ActionRemove, From: "registry.k8s.io/pause:3.9",
				Location: Location{Path: "/etc/containerd/config.toml", Line: 5}}},
		},
		{
			name: "a dead key in a version 4 file on 2.4",
			files: map[string]string{"etc/containerd/config.toml": "version = 4\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"registry.k8s.io/pause:3.10.1\"\n" +
				"[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.9\"\n"},
			opts:    Options{RuntimeVersion: "2.4.2"},
			wantFix: []Fix{{Answers: KindConfigMistake, Action: ActionRemove, From: "registry.k8s.io/pause:3.9"}},
		},
		{
			name: "a dead key in an imported file",
			files: map[string]string{
				"etc/containerd/config.toml":       "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"registry.k8s.io/pause:3.10.1\"\n",
				"etc/containerd/conf.d/10-ci.toml": "version = 3\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.9\"\n",
			},
			opts: Options{RuntimeVersion: "2.2.10"},
			wantFix: []Fix{{Answers: KindConfigMistake, Action: ActionRemove, From: "registry.k8s.io/pause:3.9",
				Location: Location{Path: "/etc/containerd/conf.d/10-ci.toml", Line: 3}}},
		},
		{
			name: "kubelet-flag-differs follows kubeadm-differs' move of the runtime",
			files: map[string]string{
				"etc/containerd/config.toml":        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.8\"\n",
				"var/lib/kubelet/kubeadm-flags.env": "KUBELET_KUBEADM_ARGS=\"--pod-infra-container-image=registry.k8s.io/pause:3.6\"\n",
			},
			opts: Options{RuntimeVersion: "1.7.28", KubeadmVersion: "v1.28.4", KubeletVersion: "v1.28.4"},
			wantFix: []Fix{
				{Answers: KindKubeletFlagDiffers, Action: ActionEdit, From: "registry.k8s.io/pause:3.6", To: "registry.k8s.io/pause:3.9"},
				{Answers: KindKubeadmDiffers, Action: ActionEdit, From: "registry.k8s.io/pause:3.8", To: "registry.k8s.io/pause:3.9"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Root = nodetest.MapFS(tt.files)
			res, err := Resolve(context.Background(), opts)
			require.NoError(t, err)
			for _, want := range tt.wantFix {
				found := false
				for _, f := range res.Fixes {
					if f.Answers == want.Answers && f.Action == want.Action && f.From == want.From && f.To == want.To &&
						(want.Path == "" || f.Path == want.Path && f.Line == want.Line) {
						found = true
					}
				}
				assert.True(t, found, "no fix %+v among %+v", want, res.Fixes)
			}
			for _, f := range res.Fixes {
				for _, want := range tt.wantFix {
					if f.Answers == want.Answers {
						assert.Equal(t, want.To, f.To, "a fix of %s to another value: %+v", f.Answers, f)
					}
				}
			}
			for _, k := range tt.wantNote {
				assert.Contains(t, kindsOfNotes(res), k)
			}
			for _, k := range tt.noKind {
				for _, c := range res.Conflicts {
					assert.NotEqual(t, k, c.Kind, "conflict %s", c.Message)
				}
				for _, f := range res.Fixes {
					assert.NotEqual(t, k, f.Answers, "fix %+v", f)
				}
			}
		})
	}
}

func kindsOfNotes(res *Result) []Kind {
	var ks []Kind
	for _, n := range res.Notes {
		ks = append(ks, n.Kind)
	}
	return ks
}
