package remedy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// writeNode writes files (by node path without the leading "/") under a
// new temporary root.
func writeNode(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, s := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o750))
		require.NoError(t, os.WriteFile(full, []byte(s), 0o600))
	}
	return dir
}

// TestKeepsTheImageInUse plans, verifies and applies the remedy of nodes
// on which the plan once changed or downgraded the image in use (issue
// 51), and checks the image each component uses after it, and that a
// second plan is empty.
func TestKeepsTheImageInUse(t *testing.T) {
	t.Parallel()
	const v3live = "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"registry.k8s.io/pause:3.10.1\"\n"
	tests := []struct {
		name      string
		files     map[string]string
		opts      resolve.Options
		wantImage string // the runtime's sandbox image after the plan
		wantEdits int    // files the plan edits
		wantIn    string // text the edited main file must hold after ("" for none)
	}{
		{
			name:      "kubeadm older than the configured image",
			files:     map[string]string{"etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.10.1\"\n"},
			opts:      resolve.Options{RuntimeVersion: "1.7.28", KubeadmVersion: "v1.32.5"},
			wantImage: "registry.k8s.io/pause:3.10.1",
		},
		{
			name:      "kubeadm older than the default",
			files:     map[string]string{"etc/containerd/config.toml": "version = 3\n"},
			opts:      resolve.Options{RuntimeVersion: "2.2.1", KubeadmVersion: "v1.33.5"},
			wantImage: "registry.k8s.io/pause:3.10.1",
		},
		{
			name:      "dead version 2 key beside the live one, 2.2",
			files:     map[string]string{"etc/containerd/config.toml": v3live + "[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.9\"\n"},
			opts:      resolve.Options{RuntimeVersion: "2.2.10"},
			wantImage: "registry.k8s.io/pause:3.10.1", wantEdits: 1,
		},
		{
			name: "dead key in a version 4 file, 2.4",
			files: map[string]string{"etc/containerd/config.toml": strings.Replace(v3live, "version = 3", "version = 4", 1) +
				"[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.9\"\n"},
			opts:      resolve.Options{RuntimeVersion: "2.4.2"},
			wantImage: "registry.k8s.io/pause:3.10.1", wantEdits: 1,
		},
		{
			name: "dead key in an imported file",
			files: map[string]string{
				"etc/containerd/config.toml":       "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"registry.k8s.io/pause:3.10.1\"\n",
				"etc/containerd/conf.d/10-ci.toml": "version = 3\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.9\"\n",
			},
			opts:      resolve.Options{RuntimeVersion: "2.2.10"},
			wantImage: "registry.k8s.io/pause:3.10.1", wantEdits: 1,
		},
		{
			name: "kubelet flag and kubeadm both differ: one target",
			files: map[string]string{
				"etc/containerd/config.toml":        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.8\"\n",
				"var/lib/kubelet/kubeadm-flags.env": "KUBELET_KUBEADM_ARGS=\"--pod-infra-container-image=registry.k8s.io/pause:3.6\"\n",
			},
			opts:      resolve.Options{RuntimeVersion: "1.7.28", KubeadmVersion: "v1.28.4", KubeletVersion: "v1.28.4"},
			wantImage: "registry.k8s.io/pause:3.9", wantEdits: 2,
		},
		{
			name:      "containerd version 1 file: the key version 1 reads",
			files:     map[string]string{"etc/containerd/config.toml": "[plugins.cri.containerd]\n  snapshotter = \"overlayfs\"\n"},
			opts:      resolve.Options{RuntimeVersion: "1.7.28", KubeadmVersion: "v1.28.4"},
			wantImage: "registry.k8s.io/pause:3.9", wantEdits: 1,
			wantIn: "[plugins.cri]\n  sandbox_image = \"registry.k8s.io/pause:3.9\"",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := writeNode(t, tt.files)
			opts := tt.opts
			opts.Root = resolve.DirFS(dir)
			res, err := resolve.Resolve(ctx, opts)
			require.NoError(t, err)
			before := res.SandboxImage
			p, err := For(t.Context(), res, nil, opts.Root)
			require.NoError(t, err)
			require.Len(t, p.Edits, tt.wantEdits, "plan:\n%s", render(p))
			require.NoError(t, Verify(ctx, p, opts, nil), "plan:\n%s", render(p))
			require.NoError(t, Apply(ctx, p, resolve.DirFS(dir), ApplyOptions{}))

			res2, err := resolve.Resolve(ctx, opts)
			require.NoError(t, err)
			assert.Equal(t, tt.wantImage, res2.SandboxImage, "the image in use (was %s)", before)
			if tt.wantIn != "" {
				b, err := os.ReadFile(filepath.Join(dir, "etc/containerd/config.toml"))
				require.NoError(t, err)
				assert.Contains(t, string(b), tt.wantIn)
			}
			img := kubeletImage(res2)
			assert.True(t, img == "" || img == res2.SandboxImage, "the kubelet protects %s, the runtime uses %s", img, res2.SandboxImage)
			p2, err := For(t.Context(), res2, nil, opts.Root)
			require.NoError(t, err)
			assert.Empty(t, p2.Edits, "a second plan edits:\n%s", render(p2))
		})
	}
}

// TestVerifyInvariants feeds Verify plans that break one invariant each,
// made by hand from a node's real plan.
func TestVerifyInvariants(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.9\"\n",
		"etc/containerd/unread.toml": "version = 2\n",
	}
	edit := func(p *Plan, from, to string) {
		e := &p.Edits[0]
		e.After = []byte(strings.Replace(string(e.Before), from, to, 1))
	}
	tests := []struct {
		name   string
		change func(p *Plan)
		want   string // in the error
	}{
		{name: "the plan as made", change: func(*Plan) {}},
		{name: "a downgrade", change: func(p *Plan) { edit(p, "pause:3.9", "pause:3.8") }, want: "a lower version"},
		{name: "an image no finding names", change: func(p *Plan) { edit(p, "pause:3.9", "pause:3.11") }, want: "no finding names wrong"},
		{name: "not stored and no step", change: func(p *Plan) { p.Steps = nil }, want: "no step stores it"},
		{name: "two values for one key", change: func(p *Plan) {
			c := p.Edits[0].Changes[0]
			c.To = "registry.k8s.io/pause:3.11"
			p.Edits[0].Changes = append(p.Edits[0].Changes, c)
		}, want: "two changes of"},
		{name: "a file containerd does not read", change: func(p *Plan) {
			p.Edits = append(p.Edits, Edit{Path: "/etc/containerd/unread.toml", Component: "containerd", Before: []byte("version = 2\n"),
				After: []byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.10\"\n")})
		}, want: "does not read this file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			opts := resolve.Options{RuntimeVersion: "1.7.28", KubeadmVersion: "v1.32.5", Root: resolve.DirFS(writeNode(t, files))}
			res, err := resolve.Resolve(ctx, opts)
			require.NoError(t, err)
			p, err := For(t.Context(), res, nil, opts.Root)
			require.NoError(t, err)
			require.Len(t, p.Edits, 1, "plan:\n%s", render(p))
			tt.change(p)
			err = Verify(ctx, p, opts, nil)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrUnverified)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
