package resolve

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

// kubeadmTests are shared by TestKubeadmPauseImage and FuzzKubeadmPauseImage.
var kubeadmTests = []struct {
	name    string
	version string // kubeadm version
	repo    string // imageRepository
	want    string // pause image
	wantErr error  // sentinel, or nil
}{
	{name: "1.11 names pause-<arch>", version: "v1.11.0", wantErr: ErrUnknownVersion},
	{name: "1.12", version: "v1.12.0", want: "k8s.gcr.io/pause:3.1"},
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
	{name: "1.25.0-alpha.0 before the bumps", version: "v1.25.0-alpha.0", want: "k8s.gcr.io/pause:3.7"},
	{name: "1.25.0-alpha.0 build metadata", version: "1.25.0-alpha.0+abc", want: "k8s.gcr.io/pause:3.7"},
	{name: "1.25.0", version: "v1.25.0", want: "registry.k8s.io/pause:3.8"},
	{name: "1.26.0-alpha.0 before the bump", version: "v1.26.0-alpha.0", want: "registry.k8s.io/pause:3.8"},
	{name: "1.25.0-rc.0", version: "v1.25.0-rc.0", want: "registry.k8s.io/pause:3.8"},
	{name: "1.26", version: "v1.26.0", want: "registry.k8s.io/pause:3.9"},
	{name: "1.30", version: "v1.30.14", want: "registry.k8s.io/pause:3.9"},
	{name: "1.31 rc not read: the tag changed during 1.31", version: "v1.31.0-rc.1", wantErr: ErrUnknownVersion},
	{name: "1.28 pre-release: 1.27 had the same tag", version: "v1.28.0-alpha.1", want: "registry.k8s.io/pause:3.9"},
	{name: "1.31 patch pre-release", version: "v1.31.4-rc.0", want: "registry.k8s.io/pause:3.10"},
	{name: "1.33", version: "1.33.5", want: "registry.k8s.io/pause:3.10"},
	{name: "1.34.0-alpha.0 before the bump", version: "v1.34.0-alpha.0", want: "registry.k8s.io/pause:3.10"},
	{name: "1.34.0-beta.0 still 3.10", version: "v1.34.0-beta.0", want: "registry.k8s.io/pause:3.10"},
	{name: "1.34.0-rc.1 not read", version: "v1.34.0-rc.1", wantErr: ErrUnknownVersion},
	{name: "1.36.0-rc.0", version: "v1.36.0-rc.0", want: "registry.k8s.io/pause:3.10.2"},
	{name: "1.36.0-beta.0 not read", version: "1.36.0-beta.0", wantErr: ErrUnknownVersion},
	{name: "1.34.0-alpha.0 mirror", version: "v1.34.0-alpha.0", repo: "mirror.example/k8s", want: "mirror.example/k8s/pause:3.10"},
	{name: "1.34", version: "v1.34.1", want: "registry.k8s.io/pause:3.10.1"},
	{name: "1.35 no patch", version: "v1.35", want: "registry.k8s.io/pause:3.10.1"},
	{name: "1.36", version: "v1.36.0", want: "registry.k8s.io/pause:3.10.2"},
	{name: "1.37", version: "v1.37.2", want: "registry.k8s.io/pause:3.10.2"},
	{name: "1.37 pre-release", version: "v1.37.0-rc.0", want: "registry.k8s.io/pause:3.10.2"},
	{name: "1.37 mirror", version: "v1.37.2", repo: "mirror.example/k8s", want: "mirror.example/k8s/pause:3.10.2"},
	{name: "build metadata", version: "v1.30.2+k3s1", want: "registry.k8s.io/pause:3.9"},
	{name: "mirror repository", version: "v1.31.2", repo: "mirror.example/k8s/", want: "mirror.example/k8s/pause:3.10"},
	{name: "old repository on new kubeadm", version: "v1.31.2", repo: "k8s.gcr.io", want: "k8s.gcr.io/pause:3.10"},
	{name: "1.10 unknown", version: "v1.10.13", wantErr: ErrUnknownVersion},
	{name: "1.38 unknown", version: "v1.38.0", wantErr: ErrUnknownVersion},
	{name: "1.38 beta read", version: "v1.38.0-beta.0", want: "registry.k8s.io/pause:3.10.2"},
	{name: "1.38 alpha as 1.37", version: "v1.38.0-alpha.2", want: "registry.k8s.io/pause:3.10.2"},
	{name: "1.38 pre-release not read", version: "v1.38.0-beta.1", wantErr: ErrUnknownVersion},
	{name: "1.38 rc not read", version: "v1.38.0-rc.0", wantErr: ErrUnknownVersion},
	{name: "pre-release without a dot", version: "v1.37.0-rc1", want: "registry.k8s.io/pause:3.10.2"},
	{name: "distribution build of a patch", version: "v1.36.3+rke2r1", want: "registry.k8s.io/pause:3.10.2"},
	{name: "k3s build with a dash", version: "v1.36.3-k3s1", want: "registry.k8s.io/pause:3.10.2"},
	{name: "Ubuntu package", version: "1.34.1-0ubuntu1", want: "registry.k8s.io/pause:3.10.1"},
	{name: "0.x unknown", version: "v0.37.2", wantErr: ErrUnknownVersion},
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

// TestKubeadmConflictSaysWhatKubeadmSees checks that the kubeadm conflict
// says whether kubeadm's own pre-flight will warn: only when the runtime
// reports its sandbox image over CRI (containerd 1.x, CRI-O), never on
// containerd 2.x.
func TestKubeadmConflictSaysWhatKubeadmSees(t *testing.T) {
	t.Parallel()
	v2 := "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = \"registry.k8s.io/pause:3.10\"\n"
	v3 := "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = 'registry.k8s.io/pause:3.10'\n"
	tests := []struct {
		name  string
		files map[string]string
		opts  Options
		want  string
	}{
		{name: "containerd 1.6", files: map[string]string{ctrMain: v2}, opts: Options{RuntimeVersion: "1.6.20"}, want: "and kubeadm's pre-flight warns;"},
		{name: "containerd 2.2 by version", files: map[string]string{ctrMain: v2}, opts: Options{RuntimeVersion: "2.2.9"}, want: "cannot see it (containerd 2.x reports no sandbox image over CRI)"},
		{name: "containerd by config version 3", files: map[string]string{ctrMain: v3}, want: "cannot see it"},
		{name: "containerd of unknown version", files: map[string]string{ctrMain: v2}, want: "warns only if the runtime reports its sandbox image"},
		{name: "live containerd 2 reports nothing", files: map[string]string{ctrMain: v2},
			opts: Options{Live: fakeLive{info: criinfo.Info{Runtime: "containerd", RuntimeVersion: "v2.4.2"}}}, want: "cannot see it"},
		{name: "live containerd 1.7 reports", files: map[string]string{ctrMain: v2},
			opts: Options{Live: fakeLive{info: criinfo.Info{Runtime: "containerd", RuntimeVersion: "v1.7.35", SandboxImage: "registry.k8s.io/pause:3.10", SandboxImageReported: true}}}, want: "and kubeadm's pre-flight warns;"},
		{name: "CRI-O", files: map[string]string{crioMain: "[crio.image]\npause_image = \"registry.k8s.io/pause:3.10\"\n"}, opts: Options{RuntimeVersion: "1.36.3"}, want: "and kubeadm's pre-flight warns;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Root = nodetest.MapFS(tt.files)
			opts.KubeadmVersion = "v1.37.2"
			res, err := Resolve(context.Background(), opts)
			require.NoError(t, err)
			require.Len(t, res.Conflicts, 1, "%+v", res.Conflicts)
			assert.Contains(t, res.Conflicts[0].Message, "kubeadm v1.37.2 pre-pulls and expects registry.k8s.io/pause:3.10.2")
			assert.Contains(t, res.Conflicts[0].Message, tt.want)
		})
	}
}
