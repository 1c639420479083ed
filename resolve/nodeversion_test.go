package resolve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

const (
	// debianContainerdStanza is containerd's stanza in Debian 12's
	// /var/lib/dpkg/status (internal/nodeversion/testdata/dpkg/debian-12-containerd-runc.status):
	// its Version is on line 8.
	debianStatusFile = "internal/nodeversion/testdata/dpkg/debian-12-containerd-runc.status"
	// debianContainerdConfig is the /etc/containerd/config.toml of Debian
	// 12's containerd package, which sets no sandbox image.
	debianContainerdConfig = "version = 2\n\n[plugins]\n  [plugins.\"io.containerd.grpc.v1.cri\"]\n" +
		"    [plugins.\"io.containerd.grpc.v1.cri\".cni]\n      bin_dir = \"/usr/lib/cni\"\n      conf_dir = \"/etc/cni/net.d\"\n" +
		"  [plugins.\"io.containerd.internal.v1.opt\"]\n    path = \"/var/lib/containerd/opt\"\n"
)

// rke2Config is the part of the config RKE2 generates that names its
// pause image (resolve/testdata/nodes/rke2-1.34.10).
const rke2Config = "version = 3\n\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"index.docker.io/rancher/mirrored-pause:3.10.2\"\n"

func debianStatus(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(debianStatusFile)
	require.NoError(t, err)
	return string(b)
}

func TestResolveNodeVersions(t *testing.T) {
	t.Parallel()
	status := debianStatus(t)
	tests := []struct {
		name         string
		files        map[string]string // the root's files
		binaries     map[string]string // real binaries to place in the root; the test skips when one is absent
		opts         Options           // Root is set by the test
		wantImage    string            // Result.SandboxImage
		wantOrigin   string            // the winning candidate's Origin
		wantVersions []ComponentVersion
		wantNotes    []string // substrings that some Note must contain
		wantNoNote   string   // a substring no note has
		wantConflict string   // a substring of some Conflict.Message
	}{
		{
			name:       "Debian's containerd: default config, version from dpkg",
			files:      map[string]string{"etc/containerd/config.toml": debianContainerdConfig, dpkgStatus: status},
			wantImage:  "registry.k8s.io/pause:3.6",
			wantOrigin: "default of containerd 1.6.20 (version from /var/lib/dpkg/status:8)",
			wantVersions: []ComponentVersion{
				{Component: "containerd", Version: "1.6.20~ds1-1+deb12u3", Origin: "/var/lib/dpkg/status:8", Used: true},
			},
			wantNotes:  []string{"containerd 1.6.20 never reports Image.pinned"},
			wantNoNote: "cannot tell",
		},
		{
			name:      "Debian's containerd binary states no version: dpkg's is used",
			files:     map[string]string{"etc/containerd/config.toml": debianContainerdConfig, dpkgStatus: status},
			binaries:  map[string]string{"usr/bin/containerd": "/usr/bin/containerd"},
			wantImage: "registry.k8s.io/pause:3.6", wantOrigin: "default of containerd 1.6.20 (version from /var/lib/dpkg/status:8)",
			wantVersions: []ComponentVersion{
				{Component: "containerd", Version: "1.6.20~ds1-1+deb12u3", Origin: "/var/lib/dpkg/status:8", Used: true},
			},
			wantNotes: []string{"/usr/bin/containerd has Go build info, but it states no version (go1.19.8, no main module"},
		},
		{
			name:       "module-built containerd 2.4.2, version 4 config without a sandbox image",
			files:      map[string]string{"etc/containerd/config.toml": "version = 4\n"},
			binaries:   map[string]string{"usr/local/bin/containerd": nodetest.Containerd242},
			wantImage:  "registry.k8s.io/pause:3.10.2",
			wantOrigin: "default of containerd v2.4.2 (version from /usr/local/bin/containerd (Go build info))",
			wantVersions: []ComponentVersion{
				{Component: "containerd", Version: "v2.4.2", Origin: "/usr/local/bin/containerd (Go build info)", Used: true},
			},
			wantNoNote: "only containerd 2.3 and later read it",
		},
		{
			name:      "the packaged containerd was replaced",
			files:     map[string]string{"etc/containerd/config.toml": "version = 4\n", dpkgStatus: status},
			binaries:  map[string]string{"usr/local/bin/containerd": nodetest.Containerd242, "usr/bin/containerd": "/usr/bin/containerd"},
			wantImage: "registry.k8s.io/pause:3.10.2",
			wantVersions: []ComponentVersion{
				{Component: "containerd", Version: "v2.4.2", Origin: "/usr/local/bin/containerd (Go build info)", Used: true},
				{Component: "containerd", Version: "1.6.20~ds1-1+deb12u3", Origin: "/var/lib/dpkg/status:8"},
			},
			wantNotes: []string{"containerd's version differs between sources: /usr/local/bin/containerd (Go build info) says v2.4.2, " +
				"/var/lib/dpkg/status:8 (package containerd) says 1.6.20~ds1-1+deb12u3; v2.4.2 is used: the packaged binary was replaced"},
		},
		{
			name:      "Options.RuntimeVersion comes before the node's",
			files:     map[string]string{"etc/containerd/config.toml": debianContainerdConfig, dpkgStatus: status},
			opts:      Options{RuntimeVersion: "1.7.20"},
			wantImage: "registry.k8s.io/pause:3.8", wantOrigin: "default of containerd 1.7.20",
			wantVersions: []ComponentVersion{
				{Component: "containerd", Version: "1.7.20", Origin: "Options.RuntimeVersion", Used: true},
				{Component: "containerd", Version: "1.6.20~ds1-1+deb12u3", Origin: "/var/lib/dpkg/status:8"},
			},
			wantNotes: []string{"Options.RuntimeVersion says 1.7.20, /var/lib/dpkg/status:8 (package containerd) says 1.6.20~ds1-1+deb12u3; " +
				"1.7.20 is used: make sure the version given is this node's"},
		},
		{
			name:      "the live version comes first",
			files:     map[string]string{"etc/containerd/config.toml": debianContainerdConfig, dpkgStatus: status},
			opts:      Options{Live: fakeLive{info: criinfo.Info{Runtime: "containerd", RuntimeVersion: "1.6.20"}}, RuntimeVersion: "1.6.21"},
			wantImage: "registry.k8s.io/pause:3.6", wantOrigin: "default of containerd 1.6.20",
			wantVersions: []ComponentVersion{
				{Component: "containerd", Version: "1.6.20", Origin: "live Version RPC", Used: true},
				{Component: "containerd", Version: "1.6.21", Origin: "Options.RuntimeVersion"},
				{Component: "containerd", Version: "1.6.20~ds1-1+deb12u3", Origin: "/var/lib/dpkg/status:8"},
			},
			wantNotes:  []string{"Options.RuntimeVersion is 1.6.21 but the live containerd reports 1.6.20; the live version is used"},
			wantNoNote: "differs between sources",
		},
		{
			name: "a fake binary is a note, the package still counts",
			files: map[string]string{"etc/containerd/config.toml": debianContainerdConfig, dpkgStatus: status,
				"usr/local/bin/containerd": "#!/bin/sh\nexec /usr/bin/containerd \"$@\"\n", "opt/bin/containerd": "\x7fELF\x02\x01\x01garbage"},
			wantImage: "registry.k8s.io/pause:3.6",
			wantNotes: []string{
				"/usr/local/bin/containerd: no Go build info: unrecognized file format; containerd's version was not read from it",
				"/opt/bin/containerd: no Go build info",
			},
		},
		{
			name: "CRI-O, kubelet and kubeadm from their binaries",
			files: map[string]string{"etc/crio/crio.conf": "[crio.image]\n",
				"var/lib/kubelet/kubeadm-flags.env": "KUBELET_KUBEADM_ARGS=\"--pod-infra-container-image=registry.k8s.io/pause:3.9\"\n"},
			binaries:  map[string]string{"usr/bin/crio": nodetest.CRIO1363, "usr/bin/kubelet": nodetest.Kubelet1372, "usr/bin/kubeadm": nodetest.Kubeadm1372},
			wantImage: "registry.k8s.io/pause:3.10.1", wantOrigin: "default of cri-o v1.36.3 (version from /usr/bin/crio (Go build info))",
			wantVersions: []ComponentVersion{
				{Component: "cri-o", Version: "v1.36.3", Origin: "/usr/bin/crio (Go build info)", Used: true},
				{Component: "kubelet", Version: "v1.37.2", Origin: "/usr/bin/kubelet (Go build info)", Used: true},
				{Component: "kubeadm", Version: "v1.37.2", Origin: "/usr/bin/kubeadm (Go build info)", Used: true},
			},
			wantConflict: "kubelet v1.37.2 no longer has --pod-infra-container-image and will not start",
		},
		{
			// RKE2 runs the containerd and kubelet of its runtime image,
			// unpacked under /var/lib/rancher/rke2/bin (issue 51).
			name: "RKE2's kubelet from its bin directory",
			files: map[string]string{"var/lib/rancher/rke2/agent/etc/containerd/config.toml": rke2Config,
				"var/lib/kubelet/kubeadm-flags.env": "KUBELET_KUBEADM_ARGS=\"--pod-infra-container-image=registry.k8s.io/pause:3.9\"\n"},
			binaries:  map[string]string{"var/lib/rancher/rke2/bin/kubelet": nodetest.Kubelet1372},
			opts:      Options{RuntimeVersion: "v2.2.6-k3s1"},
			wantImage: "index.docker.io/rancher/mirrored-pause:3.10.2", wantOrigin: "/var/lib/rancher/rke2/agent/etc/containerd/config.toml:4",
			wantVersions: []ComponentVersion{
				{Component: "containerd", Version: "v2.2.6-k3s1", Origin: "Options.RuntimeVersion", Used: true},
				{Component: "kubelet", Version: "v1.37.2", Origin: "/var/lib/rancher/rke2/bin/kubelet (Go build info)", Used: true},
			},
			wantConflict: "kubelet v1.37.2 no longer has --pod-infra-container-image and will not start",
		},
		{
			name:      "RKE2's containerd from its bin directory",
			files:     map[string]string{"var/lib/rancher/rke2/agent/etc/containerd/config.toml": rke2Config},
			binaries:  map[string]string{"var/lib/rancher/rke2/bin/containerd": nodetest.Containerd242},
			wantImage: "index.docker.io/rancher/mirrored-pause:3.10.2", wantOrigin: "/var/lib/rancher/rke2/agent/etc/containerd/config.toml:4",
			wantVersions: []ComponentVersion{
				{Component: "containerd", Version: "v2.4.2", Origin: "/var/lib/rancher/rke2/bin/containerd (Go build info)", Used: true},
			},
		},
		{
			name: "kubelet and kubeadm packages",
			files: map[string]string{"etc/containerd/config.toml": debianContainerdConfig,
				dpkgStatus: status + "Package: kubeadm\nStatus: install ok installed\nVersion: 1.31.2-1.1\n\n" +
					"Package: kubelet\nStatus: hold ok installed\nVersion: 1.28.4-1.1\n",
			},
			wantImage: "registry.k8s.io/pause:3.6",
			wantVersions: []ComponentVersion{
				{Component: "containerd", Version: "1.6.20~ds1-1+deb12u3", Origin: "/var/lib/dpkg/status:8", Used: true},
				{Component: "kubelet", Version: "1.28.4-1.1", Origin: "/var/lib/dpkg/status:51", Used: true},
				{Component: "kubeadm", Version: "1.31.2-1.1", Origin: "/var/lib/dpkg/status:47", Used: true},
			},
			wantConflict: "kubeadm 1.31.2 pre-pulls and expects registry.k8s.io/pause:3.10 but containerd starts sandboxes with registry.k8s.io/pause:3.6",
			wantNotes:    []string{"kubelet 1.28.4 keeps its built-in default registry.k8s.io/pause:3.9 out of image GC"},
		},
		{
			// Built as its Makefile builds it (-trimpath, -X version stamp),
			// cri-dockerd's build info states no version: only the binary
			// tells, when the caller lets it run (Options.BinaryVersion).
			name: "cri-dockerd: a build without a stated version, asked through BinaryVersion",
			files: map[string]string{
				"lib/systemd/system/cri-docker.service": "[Service]\nExecStart=/usr/bin/cri-dockerd --container-runtime-endpoint fd://\n",
			},
			binaries: map[string]string{"usr/bin/cri-dockerd": nodetest.CRIDockerd044},
			opts: Options{Live: fakeLive{info: criinfo.Info{Runtime: "cri-dockerd", EngineVersion: "20.10.24+dfsg1"}},
				BinaryVersion: func(_ context.Context, component, path string) (string, error) {
					if component != "cri-dockerd" || path != "/usr/bin/cri-dockerd" {
						return "", fmt.Errorf("asked for %s at %s", component, path)
					}
					return "0.4.4", nil
				}},
			wantImage:  "registry.k8s.io/pause:3.10",
			wantOrigin: "default of cri-dockerd 0.4.4 (version from /usr/bin/cri-dockerd (--version))",
			wantVersions: []ComponentVersion{
				{Component: "cri-dockerd", Version: "0.4.4", Origin: "/usr/bin/cri-dockerd (--version)", Used: true},
			},
			wantNoNote: "Docker Engine's version",
		},
		{
			name: "cri-dockerd: BinaryVersion fails",
			files: map[string]string{
				"lib/systemd/system/cri-docker.service": "[Service]\nExecStart=/usr/bin/cri-dockerd --container-runtime-endpoint fd://\n",
			},
			binaries: map[string]string{"usr/bin/cri-dockerd": nodetest.CRIDockerd044},
			opts: Options{Live: fakeLive{info: criinfo.Info{Runtime: "cri-dockerd", EngineVersion: "20.10.24+dfsg1"}},
				BinaryVersion: func(context.Context, string, string) (string, error) { return "dev (HEAD)", nil }},
			wantNotes: []string{
				`/usr/bin/cri-dockerd has Go build info, but it states no version`,
				`and asking the binary failed: "dev (HEAD)" is not a release version`,
				"its CRI Version RPC reports the Docker Engine's version (20.10.24+dfsg1)",
			},
		},
		{
			name: "cri-dockerd: a build without a stated version, not asked",
			files: map[string]string{
				"lib/systemd/system/cri-docker.service": "[Service]\nExecStart=/usr/bin/cri-dockerd --container-runtime-endpoint fd://\n",
			},
			binaries: map[string]string{"usr/bin/cri-dockerd": nodetest.CRIDockerd044},
			opts:     Options{Live: fakeLive{info: criinfo.Info{Runtime: "cri-dockerd", EngineVersion: "20.10.24+dfsg1"}}},
			wantNotes: []string{
				"main module github.com/Mirantis/cri-dockerd (devel); no -X of github.com/Mirantis/cri-dockerd/cmd/version.Version in its recorded -ldflags",
				"its CRI Version RPC reports the Docker Engine's version (20.10.24+dfsg1)",
			},
		},
		{
			name: "cri-dockerd: the unit's ExecStart names the binary, the package's version is not read",
			files: map[string]string{
				"lib/systemd/system/cri-docker.service": "[Service]\nExecStart=/opt/cri/bin/cri-dockerd --container-runtime-endpoint fd://\n",
				"opt/cri/bin/cri-dockerd":               "not a binary",
				dpkgStatus:                              "Package: cri-dockerd\nStatus: install ok installed\nVersion: 0.3.16.3-0.debian-bookworm\n",
			},
			opts: Options{Live: fakeLive{info: criinfo.Info{Runtime: "cri-dockerd", RuntimeVersion: "28.0.1"}}},
			wantNotes: []string{
				"/opt/cri/bin/cri-dockerd: no Go build info",
				`/var/lib/dpkg/status:3: package cri-dockerd has version "0.3.16.3-0.debian-bookworm", which is not a release version`,
				"and no cri-dockerd binary or package on the node states one",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Root = DirFS(nodetest.WriteTree(t, tt.files, tt.binaries))
			res, err := Resolve(context.Background(), opts)
			requireResolved(t, res, err)
			assert.Equal(t, tt.wantImage, res.SandboxImage)
			if tt.wantOrigin != "" {
				var origins []string
				for _, c := range res.Candidates {
					if c.Role == RoleRuntimeUses {
						origins = append(origins, c.Origin)
					}
				}
				assert.Contains(t, origins, tt.wantOrigin)
			}
			if tt.wantVersions != nil {
				assert.Equal(t, tt.wantVersions, res.Versions)
			}
			for _, n := range tt.wantNotes {
				assert.True(t, containsSub(res.Notes, n), "no note contains %q in %q", n, res.Notes)
			}
			if tt.wantNoNote != "" {
				assert.False(t, containsSub(res.Notes, tt.wantNoNote), "a note contains %q in %q", tt.wantNoNote, res.Notes)
			}
			if tt.wantConflict != "" {
				var msgs []string
				for _, c := range res.Conflicts {
					msgs = append(msgs, c.Message)
				}
				assert.True(t, containsSub(msgs, tt.wantConflict), "no conflict contains %q in %q", tt.wantConflict, msgs)
			}
		})
	}
}

func TestResolveDpkgStatusErrors(t *testing.T) {
	t.Parallel()
	cfg := map[string]string{"etc/containerd/config.toml": debianContainerdConfig}

	files := map[string]string{dpkgStatus: "Package: containerd\nnot a field\n"}
	for k, v := range cfg {
		files[k] = v
	}
	_, err := Resolve(context.Background(), Options{Root: nodetest.MapFS(files)})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, ErrInvalidConfig)
	assert.Equal(t, "/var/lib/dpkg/status", ce.Path)
	assert.Equal(t, 2, ce.Line)

	files[dpkgStatus] = strings.Repeat("X: y\n", nodefs.MaxFileSize/5+1)
	res, err := Resolve(context.Background(), Options{Root: nodetest.MapFS(files)})
	requireResolved(t, res, err)
	assert.True(t, containsSub(res.Notes, "/var/lib/dpkg/status: invalid configuration: limit exceeded: file is larger than"), "notes %q", res.Notes)
}

// TestRKE2BinSymlink reads RKE2's kubelet through /var/lib/rancher/rke2/bin,
// the absolute symlink RKE2 points at the current runtime image's bin
// directory, resolved inside the root.
func TestRKE2BinSymlink(t *testing.T) {
	t.Parallel()
	const data = "/var/lib/rancher/rke2/data/v1.34.10-rke2r1-0123456789ab/bin"
	root := nodetest.WriteTree(t, map[string]string{"var/lib/rancher/rke2/agent/etc/containerd/config.toml": rke2Config},
		map[string]string{data[1:] + "/kubelet": nodetest.Kubelet1372})
	require.NoError(t, os.Symlink(data, filepath.Join(root, "var/lib/rancher/rke2/bin")))
	res, err := Resolve(context.Background(), Options{Root: DirFS(root), RuntimeVersion: "v2.2.6-k3s1"})
	require.NoError(t, err)
	assert.Contains(t, res.Versions, ComponentVersion{Component: "kubelet", Version: "v1.37.2",
		Origin: "/var/lib/rancher/rke2/bin/kubelet (Go build info)", Used: true})
}
