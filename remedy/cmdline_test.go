package remedy

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// k3sConfig is the containerd config k3s writes from its --pause-image.
const k3sConfig = "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"

// cmdlineTests are nodes whose runtime's command line decides where its
// sandbox image is read (issue 51): the plan must edit there.
var cmdlineTests = []struct {
	name      string
	files     map[string]string // node path -> content
	opts      resolve.Options   // versions; Root is set by the test
	answers   resolve.Kind      // the finding the plan answers
	wantEdits []string          // the files the plan edits, in order
	wantSteps []resolve.Action  // the plan's steps, in order
	// wantManual is the place a step for a person must name, when the
	// value cannot be edited exactly (the plan is then not applied).
	wantManual string
}{
	{
		name: "CRI-O --pause-image written with an escape",
		files: map[string]string{
			"/usr/lib/systemd/system/crio.service": "[Service]\nEnvironmentFile=/etc/sysconfig/crio\nExecStart=/usr/bin/crio --pause-image=${IMG}\n",
			"/etc/sysconfig/crio":                  "IMG=registry.k8s.io/pause\\:3.10\n",
		},
		opts:       resolve.Options{RuntimeVersion: "1.33.2", KubeadmVersion: "v1.34.1"},
		answers:    resolve.KindKubeadmDiffers,
		wantSteps:  []resolve.Action{resolve.ActionEdit},
		wantManual: "/etc/sysconfig/crio:1",
	},
	{
		name: "k3s --pause-image in its unit",
		files: map[string]string{
			"/etc/systemd/system/k3s.service": "[Service]\nType=notify\nExecStart=/usr/local/bin/k3s \\\n    server \\\n\t'--pause-image' \\\n\t'rancher/mirrored-pause:3.6' \\\n\n",
			k3sConfig:                         "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"rancher/mirrored-pause:3.6\"\n",
		},
		opts:      resolve.Options{RuntimeVersion: "2.4.2"},
		answers:   resolve.KindContainerdShortNeverPinned,
		wantEdits: []string{k3sConfig, "/etc/systemd/system/k3s.service"},
		wantSteps: []resolve.Action{resolve.ActionPull, resolve.ActionRestart},
	},
	{
		name: "k3s-agent --pause-image in its environment file",
		files: map[string]string{
			"/etc/systemd/system/k3s-agent.service":     "[Service]\nEnvironmentFile=-/etc/systemd/system/k3s-agent.service.env\nExecStart=/usr/local/bin/k3s agent $K3S_ARGS\n",
			"/etc/systemd/system/k3s-agent.service.env": "K3S_URL=https://10.0.0.1:6443\nK3S_ARGS=\"--node-label=a=b --pause-image=rancher/mirrored-pause:3.6\"\n",
			k3sConfig: "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"rancher/mirrored-pause:3.6\"\n",
		},
		opts:      resolve.Options{RuntimeVersion: "2.4.2"},
		answers:   resolve.KindContainerdShortNeverPinned,
		wantEdits: []string{k3sConfig, "/etc/systemd/system/k3s-agent.service.env"},
		wantSteps: []resolve.Action{resolve.ActionPull, resolve.ActionRestart},
	},
	{
		name: "cri-dockerd's flag from its environment file",
		files: map[string]string{
			"/usr/lib/systemd/system/cri-docker.service": "[Service]\nEnvironmentFile=-/etc/default/cri-docker\nExecStart=/usr/bin/cri-dockerd --container-runtime-endpoint fd:// --pod-infra-container-image=${PAUSE}\n",
			"/etc/default/cri-docker":                    "# the sandbox image\nPAUSE=registry.k8s.io/pause:3.9\n",
		},
		opts:      resolve.Options{RuntimeVersion: "0.3.17", KubeadmVersion: "v1.34.1"},
		answers:   resolve.KindKubeadmDiffers,
		wantEdits: []string{"/etc/default/cri-docker"},
		wantSteps: []resolve.Action{resolve.ActionPull, resolve.ActionRestart},
	},
	{
		name: "k3s pause-image in config.yaml",
		files: map[string]string{
			"/etc/systemd/system/k3s.service": "[Service]\nExecStart=/usr/local/bin/k3s server\n",
			"/etc/rancher/k3s/config.yaml":    "write-kubeconfig-mode: \"0644\"\npause-image: \"rancher/mirrored-pause:3.6\"\n",
			k3sConfig:                         "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"rancher/mirrored-pause:3.6\"\n",
		},
		opts:      resolve.Options{RuntimeVersion: "2.4.2"},
		answers:   resolve.KindContainerdShortNeverPinned,
		wantEdits: []string{k3sConfig, "/etc/rancher/k3s/config.yaml"},
		wantSteps: []resolve.Action{resolve.ActionPull, resolve.ActionRestart},
	},
	{
		name: "k3s with no pause-image anywhere",
		files: map[string]string{
			"/etc/systemd/system/k3s.service": "[Service]\nExecStart=/usr/local/bin/k3s server\n",
			k3sConfig:                         "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"rancher/mirrored-pause:3.6\"\n",
		},
		opts:      resolve.Options{RuntimeVersion: "2.4.2"},
		answers:   resolve.KindContainerdShortNeverPinned,
		wantEdits: []string{k3sConfig, "/etc/rancher/k3s/config.yaml.d/90-sandboxpin.yaml"},
		wantSteps: []resolve.Action{resolve.ActionPull, resolve.ActionRestart},
	},
	{
		name: "containerd --config /etc/containerd/custom.toml",
		files: map[string]string{
			"/usr/lib/systemd/system/containerd.service":           "[Service]\nExecStart=/usr/bin/containerd\n",
			"/etc/systemd/system/containerd.service.d/custom.conf": "[Service]\nExecStart=\nExecStart=/usr/bin/containerd --config /etc/containerd/custom.toml\n",
			"/etc/containerd/config.toml":                          "version = 3\n[plugins.\"io.containerd.cri.v1.images\".pinned_images]\n  sandbox = \"registry.k8s.io/pause:3.10.1\"\n",
			"/etc/containerd/custom.toml":                          "version = 3\n[plugins.\"io.containerd.cri.v1.images\".pinned_images]\n  sandbox = \"pause:3.10.1\"\n",
		},
		opts:      resolve.Options{RuntimeVersion: "2.2.9"},
		answers:   resolve.KindContainerdShortNeverPinned,
		wantEdits: []string{"/etc/containerd/custom.toml"},
		wantSteps: []resolve.Action{resolve.ActionPull, resolve.ActionRestart},
	},
	{
		name: "containerd --config naming a file without the key",
		files: map[string]string{
			"/lib/systemd/system/containerd.service": "[Service]\nExecStart=/usr/bin/containerd -c /etc/containerd/custom.toml\n",
			"/etc/containerd/config.toml":            "version = 3\n[plugins.\"io.containerd.cri.v1.images\".pinned_images]\n  sandbox = \"registry.k8s.io/pause:3.10.2\"\n",
			"/etc/containerd/custom.toml":            "version = 3\n",
		},
		opts:      resolve.Options{RuntimeVersion: "2.2.9", KubeadmVersion: "v1.36.0"},
		answers:   resolve.KindKubeadmDiffers,
		wantEdits: []string{"/etc/containerd/custom.toml"},
		wantSteps: []resolve.Action{resolve.ActionPull, resolve.ActionRestart},
	},
	{
		name: "CRI-O --pause-image in /etc/sysconfig/crio",
		files: map[string]string{
			"/usr/lib/systemd/system/crio.service": "[Service]\nEnvironmentFile=-/etc/sysconfig/crio\nExecStart=/usr/bin/crio \\\n  $CRIO_CONFIG_OPTIONS \\\n  $CRIO_STORAGE_OPTIONS\n",
			"/etc/sysconfig/crio":                  "# /etc/sysconfig/crio\nCRIO_CONFIG_OPTIONS=\"--log-level=info --pause-image registry.k8s.io/pause:3.10\"\n",
			"/etc/crio/crio.conf.d/10-crio.conf":   "[crio.image]\npause_image = \"registry.k8s.io/pause:3.9\"\n",
		},
		opts:      resolve.Options{RuntimeVersion: "1.33.2", KubeadmVersion: "v1.34.1"},
		answers:   resolve.KindKubeadmDiffers,
		wantEdits: []string{"/etc/sysconfig/crio"},
		wantSteps: []resolve.Action{resolve.ActionPull, resolve.ActionRestart},
	},
	{
		name: "CRI-O CONTAINER_PAUSE_IMAGE in its packaged unit",
		files: map[string]string{
			"/usr/lib/systemd/system/crio.service": "[Service]\nEnvironment=GOTRACEBACK=crash CONTAINER_PAUSE_IMAGE=registry.k8s.io/pause:3.10\nExecStart=/usr/bin/crio\n",
		},
		opts:      resolve.Options{RuntimeVersion: "1.33.2", KubeadmVersion: "v1.34.1"},
		answers:   resolve.KindKubeadmDiffers,
		wantEdits: []string{"/etc/systemd/system/crio.service.d/90-sandboxpin.conf"},
		wantSteps: []resolve.Action{resolve.ActionPull, resolve.ActionRestart},
	},
	{
		name: "CRI-O --config-dir",
		files: map[string]string{
			"/usr/lib/systemd/system/crio.service": "[Service]\nExecStart=/usr/bin/crio --config-dir=/etc/crio/site.d\n",
			"/etc/crio/site.d/10-site.conf":        "[crio.runtime]\ndefault_runtime = \"crun\"\n",
		},
		opts:      resolve.Options{RuntimeVersion: "1.37.0", KubeadmVersion: "v1.37.2"},
		answers:   resolve.KindKubeadmDiffers,
		wantEdits: []string{"/etc/crio/site.d/99-sandboxpin.conf"},
		wantSteps: []resolve.Action{resolve.ActionPull, resolve.ActionRestart},
	},
}

// TestCommandLineNodes plans each node, verifies the plan, applies it to
// the node, and checks that only the planned files changed, that the
// finding is gone when the node is resolved again, and that a second plan
// is empty.
func TestCommandLineNodes(t *testing.T) {
	t.Parallel()
	for _, tt := range cmdlineTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := writeNode(t, tt.files)
			orig := readTree(t, dir)
			opts := tt.opts
			opts.Root = resolve.DirFS(dir)
			res, err := resolve.Resolve(ctx, opts)
			require.NoError(t, err)
			require.True(t, hasKind(res, tt.answers), "no %s before the plan: %+v", tt.answers, res.Conflicts)
			p, err := For(t.Context(), res, nil, opts.Root)
			require.NoError(t, err)
			var edited []string
			for _, e := range p.Edits {
				edited = append(edited, e.Path)
			}
			assert.Equal(t, tt.wantEdits, edited, "plan:\n%s", render(p))
			var steps []resolve.Action
			for _, s := range p.Steps {
				steps = append(steps, s.Action)
			}
			assert.Equal(t, tt.wantSteps, steps, "plan:\n%s", render(p))
			if tt.wantManual != "" {
				i := slices.IndexFunc(p.Steps, func(s Step) bool { return s.Action == resolve.ActionEdit })
				require.GreaterOrEqual(t, i, 0)
				assert.Contains(t, p.Steps[i].Message, tt.wantManual)
				assert.True(t, p.Remains())
				return
			}

			require.NoError(t, Verify(ctx, p, opts, nil))
			require.NoError(t, Apply(ctx, p, resolve.DirFS(dir), ApplyOptions{}))
			for path, content := range readTree(t, dir) {
				switch {
				case strings.HasPrefix(path, DefaultBackupDir+"/"), slices.Contains(edited, path):
				default:
					assert.Equal(t, orig[path], content, "%s changed but is not in the plan", path)
				}
			}
			res2, err := resolve.Resolve(ctx, opts)
			require.NoError(t, err)
			assert.False(t, hasKind(res2, tt.answers), "%s remains: %+v", tt.answers, res2.Conflicts)
			assert.False(t, hasKind(res2, resolve.KindRuntimeNotRestarted), "the command line and the config disagree: %+v", res2.Conflicts)
			p2, err := For(t.Context(), res2, nil, opts.Root)
			require.NoError(t, err)
			assert.Empty(t, p2.Edits, "a second plan edits:\n%s", render(p2))
		})
	}
}

// hasKind reports whether res has a conflict or note of kind k.
func hasKind(res *resolve.Result, k resolve.Kind) bool {
	for _, c := range res.Conflicts {
		if c.Kind == k {
			return true
		}
	}
	for _, n := range res.Notes {
		if n.Kind == k {
			return true
		}
	}
	return false
}
