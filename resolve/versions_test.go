package resolve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kubeadmTests are shared by TestKubeadmPauseImage and FuzzKubeadmPauseImage.
var kubeadmTests = []struct {
	name    string
	version string // kubeadm version
	repo    string // imageRepository
	want    string // pause image
	wantErr error  // sentinel, or nil
}{
	{name: "1.11", version: "v1.11.0", want: "k8s.gcr.io/pause:3.1"},
	{name: "1.17", version: "1.17.17", want: "k8s.gcr.io/pause:3.1"},
	{name: "1.18", version: "v1.18.0", want: "k8s.gcr.io/pause:3.2"},
	{name: "1.20", version: "v1.20.15", want: "k8s.gcr.io/pause:3.2"},
	{name: "1.21", version: "v1.21.14", want: "k8s.gcr.io/pause:3.4.1"},
	{name: "1.22.16", version: "v1.22.16", want: "k8s.gcr.io/pause:3.5"},
	{name: "1.22.17", version: "v1.22.17", want: "registry.k8s.io/pause:3.5"},
	{name: "1.23.14", version: "v1.23.14", want: "k8s.gcr.io/pause:3.6"},
	{name: "1.23.15", version: "v1.23.15", want: "registry.k8s.io/pause:3.6"},
	{name: "1.24.8", version: "1.24.8", want: "k8s.gcr.io/pause:3.7"},
	{name: "1.24.9-rc.0 before back-port", version: "v1.24.9-rc.0", want: "k8s.gcr.io/pause:3.7"},
	{name: "1.24.9", version: "v1.24.9", want: "registry.k8s.io/pause:3.7"},
	{name: "1.24.17", version: "v1.24.17", want: "registry.k8s.io/pause:3.7"},
	{name: "1.25.0-alpha.0", version: "v1.25.0-alpha.0", want: "k8s.gcr.io/pause:3.8"},
	{name: "1.25.0", version: "v1.25.0", want: "registry.k8s.io/pause:3.8"},
	{name: "1.26", version: "v1.26.0", want: "registry.k8s.io/pause:3.9"},
	{name: "1.30", version: "v1.30.14", want: "registry.k8s.io/pause:3.9"},
	{name: "1.31 rc", version: "v1.31.0-rc.1", want: "registry.k8s.io/pause:3.10"},
	{name: "1.33", version: "1.33.5", want: "registry.k8s.io/pause:3.10"},
	{name: "1.34", version: "v1.34.1", want: "registry.k8s.io/pause:3.10.1"},
	{name: "1.35 no patch", version: "v1.35", want: "registry.k8s.io/pause:3.10.1"},
	{name: "1.36", version: "v1.36.0", want: "registry.k8s.io/pause:3.10.2"},
	{name: "build metadata", version: "v1.30.2+k3s1", want: "registry.k8s.io/pause:3.9"},
	{name: "mirror repository", version: "v1.31.2", repo: "mirror.example/k8s/", want: "mirror.example/k8s/pause:3.10"},
	{name: "old repository on new kubeadm", version: "v1.31.2", repo: "k8s.gcr.io", want: "k8s.gcr.io/pause:3.10"},
	{name: "1.10 unknown", version: "v1.10.13", wantErr: ErrUnknownVersion},
	{name: "1.37 unknown", version: "v1.37.0", wantErr: ErrUnknownVersion},
	{name: "2.0 unknown", version: "v2.0.0", wantErr: ErrUnknownVersion},
	{name: "empty", version: "", wantErr: ErrUnknownVersion},
	{name: "garbage", version: "latest", wantErr: ErrUnknownVersion},
	{name: "leading zero", version: "v1.031.0", wantErr: ErrUnknownVersion},
	{name: "four parts", version: "1.31.0.1", wantErr: ErrUnknownVersion},
	{name: "empty pre-release", version: "1.31.0-", wantErr: ErrUnknownVersion},
}

func TestKubeadmPauseImage(t *testing.T) {
	t.Parallel()
	for _, tt := range kubeadmTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := KubeadmPauseImage(tt.version, tt.repo)
			assert.ErrorIs(t, err, tt.wantErr, "KubeadmPauseImage(%q, %q)", tt.version, tt.repo)
			assert.Equal(t, tt.want, got, "KubeadmPauseImage(%q, %q)", tt.version, tt.repo)
		})
	}
}

func TestRuntimeDefaultImage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		runtime string // runtime name
		version string // its version
		want    string // default sandbox image
		wantErr error  // sentinel, or nil
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
		{"docker", "1.0.0", "", ErrUnknownVersion},
		{"containerd", "", "", ErrUnknownVersion},
	}
	for _, tt := range tests {
		t.Run(tt.runtime+"@"+tt.version, func(t *testing.T) {
			t.Parallel()
			got, err := RuntimeDefaultImage(tt.runtime, tt.version)
			assert.ErrorIs(t, err, tt.wantErr, "RuntimeDefaultImage(%q, %q)", tt.runtime, tt.version)
			assert.Equal(t, tt.want, got, "RuntimeDefaultImage(%q, %q)", tt.runtime, tt.version)
		})
	}
}

func TestSourceRoleText(t *testing.T) {
	t.Parallel()
	for s := RuntimeInfo; s <= KubeadmDefault; s++ {
		b, err := s.MarshalText()
		assert.NoError(t, err)
		var back Source
		assert.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, s, back, "Source %q round trip", b)
		assert.Equal(t, string(b), s.String())
	}
	for r := RuntimeUses; r <= InstallerPulls; r++ {
		b, err := r.MarshalText()
		assert.NoError(t, err)
		var back Role
		assert.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, r, back, "Role %q round trip", b)
	}
	assert.Equal(t, "containerd-config", ContainerdConfig.String())
	assert.Equal(t, "kubelet-protects", KubeletProtects.String())
	_, err := Source(200).MarshalText()
	assert.Error(t, err)
	var s Source
	assert.Error(t, s.UnmarshalText([]byte("nope")))
	var r Role
	assert.Error(t, r.UnmarshalText([]byte("nope")))
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
