package resolve

import (
	"context"
	"encoding/json"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo"
)

func TestRuntimeDefaultImage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		runtime criinfo.Runtime // runtime name
		version string          // its version
		want    string          // default sandbox image
		wantErr error           // sentinel, or nil
	}{
		{"containerd", "v1.6.0", "k8s.gcr.io/pause:3.6", nil},
		{"containerd", "1.6.8", "k8s.gcr.io/pause:3.6", nil},
		{"containerd", "1.6.9", "registry.k8s.io/pause:3.6", nil},
		{"containerd", "1.6.20~ds1", "registry.k8s.io/pause:3.6", nil},
		{"containerd", "v1.7.20", "registry.k8s.io/pause:3.8", nil},
		{"containerd", "v1.7.23-k3s2", "registry.k8s.io/pause:3.8", nil},
		{"containerd", "v2.0.0", "registry.k8s.io/pause:3.10", nil},
		{"containerd", "v2.1.4", "registry.k8s.io/pause:3.10", nil},
		{"containerd", "v2.2.9", "registry.k8s.io/pause:3.10.1", nil},
		{"containerd", "2.3.0-rc.0", "registry.k8s.io/pause:3.10.2", nil},
		// Each row below was read at the tag it names (see containerdDefault).
		{"containerd", "1.5.0", "k8s.gcr.io/pause:3.5", nil},
		{"containerd", "1.5.13", "k8s.gcr.io/pause:3.5", nil},
		{"containerd", "1.5.14", "registry.k8s.io/pause:3.5", nil},
		{"containerd", "1.5.18", "registry.k8s.io/pause:3.5", nil},
		{"containerd", "1.7.35", "registry.k8s.io/pause:3.8", nil},
		{"containerd", "v2.0.0-beta.0", "registry.k8s.io/pause:3.9", nil},
		{"containerd", "v2.0.0-beta.2", "registry.k8s.io/pause:3.9", nil},
		{"containerd", "v2.0.0-rc.2", "registry.k8s.io/pause:3.9", nil},
		{"containerd", "v2.0.0-rc.3", "registry.k8s.io/pause:3.10", nil},
		{"containerd", "v2.3.0-beta.0", "registry.k8s.io/pause:3.10.1", nil},
		{"containerd", "v2.3.0-beta.1", "registry.k8s.io/pause:3.10.2", nil},
		{"containerd", "2.3.7", "registry.k8s.io/pause:3.10.2", nil},
		{"containerd", "v2.4.0-beta.0", "registry.k8s.io/pause:3.10.2", nil},
		{"containerd", "2.4.2+unknown", "registry.k8s.io/pause:3.10.2", nil},
		{"containerd", "1.4.13", "", ErrUnknownVersion},
		{"containerd", "2.5.0", "", ErrUnknownVersion},
		{"cri-o", "1.17.5", "k8s.gcr.io/pause:3.1", nil},
		{"cri-o", "1.20.0", "k8s.gcr.io/pause:3.2", nil},
		{"cri-o", "1.22.1", "k8s.gcr.io/pause:3.5", nil},
		{"cri-o", "1.23.0", "k8s.gcr.io/pause:3.6", nil},
		{"cri-o", "1.24.0", "registry.k8s.io/pause:3.6", nil},
		{"cri-o", "1.27.0", "registry.k8s.io/pause:3.6", nil},
		{"cri-o", "1.27.1", "registry.k8s.io/pause:3.9", nil},
		{"cri-o", "1.30.4", "registry.k8s.io/pause:3.9", nil},
		{"cri-o", "1.31.0", "registry.k8s.io/pause:3.10", nil},
		{"cri-o", "1.33.2", "registry.k8s.io/pause:3.10", nil},
		{"cri-o", "1.34.0", "registry.k8s.io/pause:3.10.1", nil},
		{"cri-o", "2.0.0", "", ErrUnknownVersion},
		// cmd/cri/options/options.go at each tag (see criDockerdDefault).
		{"cri-dockerd", "0.2.0", "k8s.gcr.io/pause:3.1", nil},
		{"cri-dockerd", "0.2.1", "k8s.gcr.io/pause:3.6", nil},
		{"cri-dockerd", "0.2.5", "k8s.gcr.io/pause:3.6", nil},
		{"cri-dockerd", "0.2.6", "registry.k8s.io/pause:3.6", nil},
		{"cri-dockerd", "0.3.0", "registry.k8s.io/pause:3.6", nil},
		{"cri-dockerd", "0.4.3", "registry.k8s.io/pause:3.10", nil},
		{"cri-dockerd", "0.5.0", "", ErrUnknownVersion},
		{"cri-dockerd", "0.3.9", "registry.k8s.io/pause:3.6", nil},
		{"cri-dockerd", "0.3.10", "registry.k8s.io/pause:3.9", nil},
		{"cri-dockerd", "0.3.16", "registry.k8s.io/pause:3.9", nil},
		{"cri-dockerd", "0.3.17", "registry.k8s.io/pause:3.10", nil},
		{"cri-dockerd", "0.4.0", "registry.k8s.io/pause:3.10", nil},
		{"cri-dockerd", "0.1.0", "", ErrUnknownVersion},
		{"cri-dockerd", "1.0.0", "", ErrUnknownVersion},
		{"docker", "1.0.0", "", criinfo.ErrUnknownRuntime},
		{"crio", "1.31.0", "", criinfo.ErrUnknownRuntime},
		{criinfo.RuntimeUnknown, "1.31.0", "", criinfo.ErrUnknownRuntime},
		{"unknown", "", "", criinfo.ErrUnknownRuntime},
		{"containerd", "", "", ErrUnknownVersion},
	}
	for _, tt := range tests {
		t.Run(string(tt.runtime)+"@"+tt.version, func(t *testing.T) {
			t.Parallel()
			got, err := RuntimeDefaultImage(tt.runtime, tt.version)
			assert.ErrorIs(t, err, tt.wantErr, "RuntimeDefaultImage(%q, %q)", tt.runtime, tt.version)
			assert.Equal(t, tt.want, got, "RuntimeDefaultImage(%q, %q)", tt.runtime, tt.version)
		})
	}
}

func TestSourceRoleText(t *testing.T) {
	t.Parallel()
	for _, s := range []Source{SourceRuntimeInfo, SourceContainerdConfig, SourceCRIOConfig, SourceCRIDockerdFlags,
		SourceKubeletFlags, SourceKubeadmConfig, SourceRuntimeDefault, SourceKubeadmDefault} {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		var back Source
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, s, back, "Source %s round trip", b)
		assert.True(t, s.Known(), "%s", s)
	}
	for _, r := range []Role{RoleRuntimeUses, RoleKubeletProtects, RoleInstallerPulls} {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		var back Role
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, r, back, "Role %s round trip", b)
		assert.True(t, r.Known(), "%s", r)
	}
	assert.Equal(t, "containerd-config", SourceContainerdConfig.String())
	assert.Equal(t, "kubelet-protects", RoleKubeletProtects.String())
	var s Source
	assert.Error(t, s.UnmarshalText([]byte("No Such Source")))
	var r Role
	assert.Error(t, r.UnmarshalText([]byte("runtime_uses")))
}

func TestContainerdConfig4(t *testing.T) {
	t.Parallel()
	// version.ConfigVersion in version/version.go at each tag.
	for v, want := range map[string]bool{
		"1.7.35": false, "2.2.9": false, "2.3.0-beta.0": false, "2.3.0-beta.2": false,
		"2.3.0-rc.0": true, "2.3.0": true, "2.3.7": true, "2.4.0-beta.0": true, "2.4.2": true, "3.0.0": true,
	} {
		pv, err := parseVersion(v)
		require.NoError(t, err)
		assert.Equal(t, want, containerdConfig4(pv), v)
	}
}

// TestResolveUnknownRuntime checks that Resolve refuses a runtime outside
// criinfo's closed set ("crio" is CRI-O's binary, not its name), and takes
// criinfo.RuntimeUnknown as the zero value: detect it.
func TestResolveUnknownRuntime(t *testing.T) {
	t.Parallel()
	res, err := Resolve(context.Background(), Options{Root: fstest.MapFS{}, Runtime: criinfo.RuntimeUnknown})
	assert.ErrorIs(t, err, ErrNoSandboxImage, "Resolve(Runtime: unknown) of an empty root")
	if assert.NotNil(t, res) {
		assert.Equal(t, criinfo.RuntimeUnknown, res.Runtime)
	}
	for _, rt := range []criinfo.Runtime{"crio", "Unknown", "docker"} {
		res, err := Resolve(context.Background(), Options{Root: fstest.MapFS{}, Runtime: rt})
		assert.ErrorIs(t, err, criinfo.ErrUnknownRuntime, "Resolve(Runtime: %q)", rt)
		assert.Nil(t, res, "Resolve(Runtime: %q)", rt)
	}
}
