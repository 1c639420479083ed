package resolve

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

// k3sGenerated is the containerd config k3s writes from --pause-image.
const k3sGenerated = "var/lib/rancher/k3s/agent/etc/containerd/config.toml"

// commandNodeTests are nodes whose runtime's command line names its
// configuration (issue 51).
var commandNodeTests = []struct {
	name       string
	files      map[string]string
	opts       Options
	wantImage  string // Result.SandboxImage
	wantOrigin string // its winner's origin
	wantCmd    *RuntimeCommand
	wantKinds  []Kind // kinds some note or conflict must have
	wantNot    []Kind // kinds no note or conflict may have
}{
	{
		name: "containerd --config in a drop-in",
		files: map[string]string{
			"usr/lib/systemd/system/containerd.service":           "[Service]\nExecStart=/usr/bin/containerd\n",
			"etc/systemd/system/containerd.service.d/custom.conf": "[Service]\nExecStart=\nExecStart=/usr/bin/containerd --config /etc/containerd/custom.toml\n",
			"etc/containerd/config.toml":                          "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.9\"\n",
			"etc/containerd/custom.toml":                          "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.10\"\n",
		},
		opts:       Options{RuntimeVersion: "1.7.20"},
		wantImage:  "registry.k8s.io/pause:3.10",
		wantOrigin: "/etc/containerd/custom.toml:3",
		wantCmd: &RuntimeCommand{Config: &Setting{Value: "/etc/containerd/custom.toml",
			Location: Location{Path: "/etc/systemd/system/containerd.service.d/custom.conf", Line: 3, Key: "ExecStart", Flag: "--config"}}},
	},
	{
		name: "containerd -c naming no file",
		files: map[string]string{
			"lib/systemd/system/containerd.service": "[Service]\nExecStart=/usr/bin/containerd -c=/etc/containerd/gone.toml\n",
			"etc/containerd/config.toml":            "version = 2\n",
		},
		opts:      Options{RuntimeVersion: "1.7.20", Runtime: "containerd"},
		wantImage: "registry.k8s.io/pause:3.8", wantOrigin: "default of containerd 1.7.20",
		wantKinds: []Kind{KindConfigMistake},
	},
	{
		name: "CRI-O --pause-image in /etc/sysconfig/crio",
		files: map[string]string{
			"usr/lib/systemd/system/crio.service": "[Service]\nEnvironmentFile=-/etc/sysconfig/crio\nExecStart=/usr/bin/crio \\\n  $CRIO_CONFIG_OPTIONS \\\n  $CRIO_STORAGE_OPTIONS\n",
			"etc/sysconfig/crio":                  "# /etc/sysconfig/crio\nCRIO_CONFIG_OPTIONS=\"--pause-image=registry.k8s.io/pause:3.10.1\"\n",
			"etc/crio/crio.conf.d/10-crio.conf":   "[crio.image]\npause_image = \"registry.k8s.io/pause:3.10\"\n",
		},
		opts:       Options{RuntimeVersion: "1.33.2"},
		wantImage:  "registry.k8s.io/pause:3.10.1",
		wantOrigin: "/etc/sysconfig/crio:2",
		wantCmd: &RuntimeCommand{PauseImage: &Setting{Value: "registry.k8s.io/pause:3.10.1",
			Location: Location{Path: "/etc/sysconfig/crio", Line: 2, Key: "CRIO_CONFIG_OPTIONS", Flag: "--pause-image"}}},
		wantKinds: []Kind{KindUnitNote},
	},
	{
		name: "CRI-O CONTAINER_PAUSE_IMAGE and --config-dir",
		files: map[string]string{
			"etc/systemd/system/crio.service":   "[Service]\nEnvironment=CONTAINER_PAUSE_IMAGE=registry.k8s.io/pause:3.9\nExecStart=/usr/bin/crio --config-dir /etc/crio/site.d\n",
			"etc/crio/crio.conf.d/10-crio.conf": "[crio.image]\npinned_images = [\"ignored/*\"]\n",
			"etc/crio/site.d/10-site.conf":      "[crio.image]\npinned_images = [\"site/*\"]\n",
		},
		opts:       Options{RuntimeVersion: "1.33.2"},
		wantImage:  "registry.k8s.io/pause:3.9",
		wantOrigin: "/etc/systemd/system/crio.service:2",
		wantCmd: &RuntimeCommand{
			ConfigDir:  &Setting{Value: "/etc/crio/site.d", Location: Location{Path: "/etc/systemd/system/crio.service", Line: 3, Key: "ExecStart", Flag: "--config-dir"}},
			PauseImage: &Setting{Value: "registry.k8s.io/pause:3.9", Location: Location{Path: "/etc/systemd/system/crio.service", Line: 2, Key: "CONTAINER_PAUSE_IMAGE"}},
		},
	},
	{
		name: "CRI-O --config names its main file",
		files: map[string]string{
			"lib/systemd/system/crio.service": "[Service]\nExecStart=/usr/bin/crio -c /etc/crio/site.conf\n",
			"etc/crio/crio.conf":              "[crio.image]\npause_image = \"registry.k8s.io/pause:3.6\"\n",
			"etc/crio/site.conf":              "[crio.image]\npause_image = \"registry.k8s.io/pause:3.10\"\n",
		},
		opts:       Options{RuntimeVersion: "1.33.2"},
		wantImage:  "registry.k8s.io/pause:3.10",
		wantOrigin: "/etc/crio/site.conf:2",
		wantCmd: &RuntimeCommand{Config: &Setting{Value: "/etc/crio/site.conf",
			Location: Location{Path: "/lib/systemd/system/crio.service", Line: 2, Key: "ExecStart", Flag: "-c"}}},
	},
	{
		name: "CRI-O --config naming no file",
		files: map[string]string{
			"lib/systemd/system/crio.service": "[Service]\nExecStart=/usr/bin/crio --config=/etc/crio/gone.conf\n",
		},
		opts:      Options{RuntimeVersion: "1.33.2"},
		wantImage: "registry.k8s.io/pause:3.10", wantOrigin: "default of cri-o 1.33.2",
		wantKinds: []Kind{KindConfigMistake},
	},
	{
		name: "k3s --pause-image as written in its config",
		files: map[string]string{
			"etc/systemd/system/k3s.service": "[Service]\nExecStart=/usr/local/bin/k3s \\\n    server \\\n\t'--pause-image' \\\n\t'registry.example/pause:3.10' \\\n",
			k3sGenerated:                     "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.example/pause:3.10\"\n",
		},
		wantImage: "registry.example/pause:3.10", wantOrigin: "/" + k3sGenerated + ":3",
		wantCmd: &RuntimeCommand{PauseImage: &Setting{Value: "registry.example/pause:3.10",
			Location: Location{Path: "/etc/systemd/system/k3s.service", Line: 5, Key: "ExecStart", Flag: "--pause-image"}}},
		wantNot: []Kind{KindRuntimeNotRestarted},
	},
	{
		name: "k3s not restarted since its --pause-image changed",
		files: map[string]string{
			"etc/systemd/system/k3s-agent.service":     "[Service]\nEnvironmentFile=-/etc/systemd/system/k3s-agent.service.env\nExecStart=/usr/local/bin/k3s agent $K3S_OPTS\n",
			"etc/systemd/system/k3s-agent.service.env": "K3S_OPTS='--pause-image=registry.example/pause:3.10.1'\n",
			k3sGenerated: "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.example/pause:3.10\"\n",
		},
		wantImage: "registry.example/pause:3.10", wantOrigin: "/" + k3sGenerated + ":3",
		wantKinds: []Kind{KindRuntimeNotRestarted},
	},
	{
		name: "k3s config.yaml.d over config.yaml",
		files: map[string]string{
			"etc/systemd/system/k3s.service":             "[Service]\nExecStart=/usr/local/bin/k3s server\n",
			"etc/rancher/k3s/config.yaml":                "write-kubeconfig-mode: \"0644\"\npause-image: registry.example/pause:3.9\n",
			"etc/rancher/k3s/config.yaml.d/10-pause.yml": "# site\npause-image: \"registry.example/pause:3.10\"\n",
			"etc/rancher/k3s/config.yaml.d/20-note.txt":  "pause-image: ignored/pause:1\n",
			k3sGenerated: "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.example/pause:3.10\"\n",
		},
		wantImage: "registry.example/pause:3.10", wantOrigin: "/" + k3sGenerated + ":3",
		wantCmd: &RuntimeCommand{PauseImage: &Setting{Value: "registry.example/pause:3.10",
			Location: Location{Path: "/etc/rancher/k3s/config.yaml.d/10-pause.yml", Line: 2, Key: "pause-image"}}},
		wantNot: []Kind{KindRuntimeNotRestarted},
	},
	{
		name: "RKE2_CONFIG_FILE names the config",
		files: map[string]string{
			"usr/local/lib/systemd/system/rke2-server.service": "[Service]\nEnvironmentFile=-/usr/local/lib/systemd/system/rke2-server.env\nExecStart=/usr/local/bin/rke2 server\n",
			"usr/local/lib/systemd/system/rke2-server.env":     "RKE2_CONFIG_FILE=/etc/rke2.yaml\n",
			"etc/rke2.yaml": "pause-image: registry.example/pause:3.10.1\n",
			"var/lib/rancher/rke2/agent/etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.example/pause:3.10\"\n",
		},
		wantImage: "registry.example/pause:3.10", wantOrigin: "/var/lib/rancher/rke2/agent/etc/containerd/config.toml:3",
		wantCmd: &RuntimeCommand{PauseImage: &Setting{Value: "registry.example/pause:3.10.1",
			Location: Location{Path: "/etc/rke2.yaml", Line: 1, Key: "pause-image"}}},
		wantKinds: []Kind{KindRuntimeNotRestarted},
	},
}

func TestRuntimeCommand(t *testing.T) {
	t.Parallel()
	for _, tt := range commandNodeTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Root = nodetest.MapFS(tt.files)
			res, err := Resolve(context.Background(), opts)
			if !errors.Is(err, ErrNoSandboxImage) {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.wantImage, res.SandboxImage)
			assert.Equal(t, tt.wantOrigin, res.Winner.Origin)
			if tt.wantCmd != nil {
				assert.Equal(t, tt.wantCmd, res.RuntimeCommand)
			}
			kinds := map[Kind]bool{}
			for _, n := range res.Notes {
				kinds[n.Kind] = true
			}
			for _, c := range res.Conflicts {
				kinds[c.Kind] = true
			}
			for _, k := range tt.wantKinds {
				assert.True(t, kinds[k], "no %s in %+v %+v", k, res.Notes, res.Conflicts)
			}
			for _, k := range tt.wantNot {
				assert.False(t, kinds[k], "%s in %+v %+v", k, res.Notes, res.Conflicts)
			}
		})
	}
}
