package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

const k3sUnit = "etc/systemd/system/k3s.service"

// k3sTests are k3s nodes and the pause image they will write.
var k3sTests = []struct {
	name     string
	files    map[string]string
	want     string // "value@file:line", "" for none
	wantLine int    // the line a ConfigError names, 0 for no error
}{
	{name: "nothing", files: map[string]string{k3sUnit: "[Service]\nExecStart=/usr/local/bin/k3s server\n"}},
	{
		name:  "the command line over the config",
		files: map[string]string{k3sUnit: "[Service]\nExecStart=/usr/local/bin/k3s server --pause-image=a/p:1\n", "etc/rancher/k3s/config.yaml": "pause-image: b/p:2\n"},
		want:  "a/p:1@/etc/systemd/system/k3s.service:2",
	},
	{
		name: "drop-ins by name, .yaml and .yml only, the first document",
		files: map[string]string{k3sUnit: "[Service]\nExecStart=/usr/local/bin/k3s agent\n", "etc/rancher/k3s/config.yaml": "pause-image: b/p:2\n",
			"etc/rancher/k3s/config.yaml.d/20-b.YML":  "x: 1\npause-image: 'd/p:4'\n---\npause-image: e/p:5\n",
			"etc/rancher/k3s/config.yaml.d/10-a.yaml": "pause-image: c/p:3\n", "etc/rancher/k3s/config.yaml.d/30-c.conf": "pause-image: f/p:6\n"},
		want: "d/p:4@/etc/rancher/k3s/config.yaml.d/20-b.YML:2",
	},
	{
		name:  "K3S_CONFIG_FILE over --config",
		files: map[string]string{k3sUnit: "[Service]\nEnvironment=K3S_CONFIG_FILE=/etc/k3s.yaml\nExecStart=/usr/local/bin/k3s server -c /etc/other.yaml\n", "etc/k3s.yaml": "pause-image: g/p:7\n", "etc/other.yaml": "pause-image: h/p:8\n"},
		want:  "g/p:7@/etc/k3s.yaml:1",
	},
	{name: "no unit: the default files", files: map[string]string{"etc/rancher/k3s/config.yaml": "\n\npause-image: i/p:9\n"}, want: "i/p:9@/etc/rancher/k3s/config.yaml:3"},
	{name: "not a string", files: map[string]string{"etc/rancher/k3s/config.yaml": "a: 1\npause-image:\n  - x\n"}, wantLine: 3},
	{name: "not YAML", files: map[string]string{"etc/rancher/k3s/config.yaml": "a: 1\n b: [\n"}, wantLine: 2},
}

func TestReadK3sPauseImage(t *testing.T) {
	t.Parallel()
	for _, tt := range k3sTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, _, err := ReadK3sPauseImage(nodetest.MapFS(tt.files), "k3s")
			if tt.wantLine != 0 {
				var ce *nodefs.ConfigError
				require.ErrorAs(t, err, &ce)
				assert.ErrorIs(t, err, nodefs.ErrInvalidConfig)
				assert.Equal(t, tt.wantLine, ce.Line, "%v", err)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			if tt.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tt.want, got.Value+"@"+got.Origin())
		})
	}
}

// FuzzK3sConfig checks that reading k3s's config never panics, that an
// error comes with no value, and that a value names the file it is in.
func FuzzK3sConfig(f *testing.F) {
	for _, tt := range k3sTests {
		f.Add(tt.files["etc/rancher/k3s/config.yaml"])
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, _, err := ReadK3sPauseImage(nodetest.MapFS(map[string]string{"etc/rancher/k3s/config.yaml": in}), "k3s")
		if err != nil {
			if got != nil {
				t.Fatalf("ReadK3sPauseImage = %v with error %v", got, err)
			}
			return
		}
		if got != nil && (got.Path != "/etc/rancher/k3s/config.yaml" || got.Value == "" || got.Line < 1) {
			t.Fatalf("ReadK3sPauseImage = %+v", got)
		}
	})
}
