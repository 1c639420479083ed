package remedy

import (
	"cmp"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/resolve"
)

// The files of a kubelet node as its packages install them.
const (
	// kubelet.service of the Debian and RPM kubelet packages:
	// cmd/krel/templates/latest/kubelet/kubelet.service of
	// kubernetes/release at v0.21.1, installed to %{_unitdir} by
	// kubelet.spec there.
	pkgKubeletService = `[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
`
	// pkgKubeadmDropIn is 10-kubeadm.conf of the kubeadm package:
	// cmd/krel/templates/latest/kubeadm/10-kubeadm.conf of
	// kubernetes/release at v0.21.1, which kubeadm.spec installs to
	// %{_unitdir}/kubelet.service.d/ and, for the Debian package
	// (debbuild), rewrites /etc/sysconfig/kubelet to /etc/default/kubelet.
	pkgKubeadmDropIn = `# Note: This dropin only works with kubeadm and kubelet v1.11+
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# This is a file that "kubeadm init" and "kubeadm join" generates at runtime, populating the KUBELET_KUBEADM_ARGS variable dynamically
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# This is a file that the user can use for overrides of the kubelet args as a last resort. Preferably, the user should use
# the .NodeRegistration.KubeletExtraArgs object in the configuration files instead. KUBELET_EXTRA_ARGS should be sourced from this file.
EnvironmentFile=-/etc/sysconfig/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`
	// pkgKubeletEnv is /etc/default/kubelet (Debian) or
	// /etc/sysconfig/kubelet (RPM): cmd/krel/templates/latest/kubelet/kubelet.env
	// of kubernetes/release at v0.21.1, per kubelet.spec there.
	pkgKubeletEnv = "KUBELET_EXTRA_ARGS=\n"
	// pkgCRIDockerService is packaging/systemd/cri-docker.service of
	// Mirantis/cri-dockerd at v0.4.3 (unchanged since 33b18752, "Bump for
	// 0.2.4", through main 246bd657), which its packages install.
	pkgCRIDockerService = `[Unit]
Description=CRI Interface for Docker Application Container Engine
Documentation=https://docs.mirantis.com
After=network-online.target firewalld.service docker.service
Wants=network-online.target
Requires=cri-docker.socket

[Service]
Type=notify
ExecStart=/usr/bin/cri-dockerd --container-runtime-endpoint fd://
ExecReload=/bin/kill -s HUP $MAINPID
TimeoutSec=0
RestartSec=2
Restart=always

# Note that StartLimit* options were moved from "Service" to "Unit" in systemd 229.
# Both the old, and new location are accepted by systemd 229 and up, so using the old location
# to make them work for either version of systemd.
StartLimitBurst=3

# Note that StartLimitInterval was renamed to StartLimitIntervalSec in systemd 230.
# Both the old, and new name are accepted by systemd 230 and up, so using the old name to make
# this option work for either version of systemd.
StartLimitInterval=60s

# Having non-zero Limit*s causes performance problems due to accounting overhead
# in the kernel. We recommend using cgroups to do container-local accounting.
LimitNOFILE=infinity
LimitNPROC=infinity
LimitCORE=infinity

# Comment TasksMax if your systemd version does not support it.
# Only systemd 226 and above support this option.
TasksMax=infinity
Delegate=yes
KillMode=process

[Install]
WantedBy=multi-user.target
`
	// pkgContainerd is a containerd 2.4 config (version 4) that pins
	// the sandbox image the kubelet's flag names.
	pkgContainerd = "version = 4\n\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"registry.k8s.io/pause:3.10.2\"\n"

	pause    = "registry.k8s.io/pause:3.10.2"
	pauseArg = "--pod-infra-container-image=" + pause
	// kubeadmFlags is kubeadm-flags.env as kubeadm writes it:
	// KUBELET_KUBEADM_ARGS=%q (cmd/kubeadm/app/phases/kubelet/flags.go
	// WriteKubeletDynamicEnvFile @v1.35.0).
	kubeadmFlags     = `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock"` + "\n"
	kubeadmFlagsPod  = `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock ` + pauseArg + `"` + "\n"
	kubeadmDropInDir = "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf"
)

// debianKubelet is a kubeadm node as the Debian packages install it, with
// containerd; files replaces or adds files.
func debianKubelet(files map[string]string) map[string]string {
	node := map[string]string{
		"/usr/lib/systemd/system/kubelet.service": pkgKubeletService,
		kubeadmDropInDir:                     strings.ReplaceAll(pkgKubeadmDropIn, "/etc/sysconfig/kubelet", "/etc/default/kubelet"),
		"/etc/default/kubelet":               pkgKubeletEnv,
		"/var/lib/kubelet/kubeadm-flags.env": kubeadmFlags,
		"/etc/containerd/config.toml":        pkgContainerd,
	}
	maps.Copy(node, files)
	return node
}

// rpmKubelet is the same node as the RPM packages install it.
func rpmKubelet(files map[string]string) map[string]string {
	node := map[string]string{
		"/usr/lib/systemd/system/kubelet.service": pkgKubeletService,
		kubeadmDropInDir:                     pkgKubeadmDropIn,
		"/etc/sysconfig/kubelet":             pkgKubeletEnv,
		"/var/lib/kubelet/kubeadm-flags.env": kubeadmFlags,
		"/etc/containerd/config.toml":        pkgContainerd,
	}
	maps.Copy(node, files)
	return node
}

// execStartFlag is the kubeadm drop-in with the flag on its command line.
var execStartFlag = strings.ReplaceAll(pkgKubeadmDropIn, "$KUBELET_EXTRA_ARGS\n", "$KUBELET_EXTRA_ARGS "+pauseArg+"\n")

// execStartContinued is the kubeadm drop-in with its command line over
// lines, the flag on one of them.
var execStartContinued = strings.ReplaceAll(pkgKubeadmDropIn, "ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n",
	"ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS \\\n  "+pauseArg+" \\\n  $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n")

// layouts are kubelet 1.35 nodes with --pod-infra-container-image, which
// that kubelet does not start with, where the packages and kubeadm put it.
var layouts = []struct {
	name  string
	files map[string]string // node path → content
	opts  resolve.Options   // the versions; Root is set by the test
	// person is the file:line that a step for a person names, when the
	// text editor cannot change the file there byte-exactly.
	person string
	// kind is the finding the plan answers, kubelet-rejects-flag if "";
	// origins are its places, when checked.
	kind    resolve.Kind
	origins []string
}{
	{name: "kubeadm-flags.env", files: debianKubelet(map[string]string{"/var/lib/kubelet/kubeadm-flags.env": kubeadmFlagsPod})},
	{name: "Debian /etc/default/kubelet", files: debianKubelet(map[string]string{"/etc/default/kubelet": "KUBELET_EXTRA_ARGS=" + pauseArg + "\n"})},
	{name: "RPM /etc/sysconfig/kubelet", files: rpmKubelet(map[string]string{"/etc/sysconfig/kubelet": "KUBELET_EXTRA_ARGS=\"--node-ip=10.0.0.7 " + pauseArg + "\"\n"})},
	{name: "environment file continued, flag last", files: debianKubelet(map[string]string{
		"/etc/default/kubelet": "# extra\nKUBELET_EXTRA_ARGS=--node-ip=10.0.0.7 \\\n  " + pauseArg + "\n"})},
	{name: "environment file continued, flag first", files: rpmKubelet(map[string]string{
		"/etc/sysconfig/kubelet": "KUBELET_EXTRA_ARGS=" + pauseArg + " \\\n  --node-ip=10.0.0.7\n"})},
	{name: "environment file continued, flag between", files: rpmKubelet(map[string]string{
		"/etc/sysconfig/kubelet": "KUBELET_EXTRA_ARGS=\"--node-ip=10.0.0.7 \\\n  " + pauseArg + " \\\n  --v=2\"\n"})},
	{name: "twice in kubeadm-flags.env", files: debianKubelet(map[string]string{"/var/lib/kubelet/kubeadm-flags.env": `KUBELET_KUBEADM_ARGS="--pod-infra-container-image=registry.k8s.io/pause:3.9 --container-runtime-endpoint=unix:///run/containerd/containerd.sock ` + pauseArg + `"` + "\n"})},
	{name: "in kubeadm-flags.env and /etc/default/kubelet", files: debianKubelet(map[string]string{
		"/var/lib/kubelet/kubeadm-flags.env": kubeadmFlagsPod, "/etc/default/kubelet": "KUBELET_EXTRA_ARGS=" + pauseArg + "\n"})},
	{name: "packaged 10-kubeadm.conf, flag in ExecStart", files: debianKubelet(map[string]string{kubeadmDropInDir: execStartFlag})},
	{name: "packaged 10-kubeadm.conf, flag on an ExecStart continuation", files: rpmKubelet(map[string]string{kubeadmDropInDir: execStartContinued})},
	{name: "packaged 10-kubeadm.conf, flag in ExecStart twice", files: rpmKubelet(map[string]string{
		kubeadmDropInDir: strings.ReplaceAll(execStartContinued, "$KUBELET_EXTRA_ARGS\n", "$KUBELET_EXTRA_ARGS --pod-infra-container-image "+pause+"\n")})},
	{name: "10-kubeadm.conf in /etc, flag on an ExecStart continuation", files: debianKubelet(map[string]string{
		"/etc/systemd/system/kubelet.service.d/10-kubeadm.conf": execStartContinued})},
	// /etc/default/kubelet sets KUBELET_EXTRA_ARGS after Environment=
	// (systemd.exec(5)): a drop-in sets another variable.
	{name: "Environment= of a drop-in in /etc", files: debianKubelet(map[string]string{
		"/etc/systemd/system/kubelet.service.d/20-sandbox.conf": "[Service]\nEnvironment=\"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml " + pauseArg + "\"\n"})},
	{name: "kubeadm Init and Join configurations", origins: []string{"/var/lib/kubelet/kubeadm-flags.env:1", "/etc/kubernetes/kubeadm.yaml:5", "/etc/kubernetes/kubeadm.yaml:14"}, opts: resolve.Options{KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"}, files: debianKubelet(map[string]string{
		"/var/lib/kubelet/kubeadm-flags.env": kubeadmFlagsPod,
		"/etc/kubernetes/kubeadm.yaml": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n  - name: pod-infra-container-image\n    value: " + pause + "\n" +
			"---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n  - name: node-ip\n    value: 10.0.0.7\n  - name: pod-infra-container-image\n    value: " + pause + "\n"})},
	{name: "kubeadm v1beta4 item as a flow map", opts: resolve.Options{KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"}, files: debianKubelet(map[string]string{
		"/etc/kubernetes/kubeadm.yaml": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n  - {name: node-ip, value: 10.0.0.7}\n  - {name: pod-infra-container-image, value: \"" + pause + "\"}\n"})},
	{name: "kubeadm v1beta3 flow map", opts: resolve.Options{KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"}, person: "/etc/kubernetes/kubeadm.yaml:5", files: debianKubelet(map[string]string{
		"/etc/kubernetes/kubeadm.yaml": "apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\nnodeRegistration:\n  criSocket: unix:///run/containerd/containerd.sock\n  kubeletExtraArgs: {node-ip: 10.0.0.7, pod-infra-container-image: " + pause + "}\n"})},
	// The flag where kubeadm wrote it, and in the kubeadm config it came
	// from, as a value the editor cannot change exactly: the one edited,
	// the other a step for a person (issue 51: "remains after the edits").
	{name: "kubeadm-flags.env and a v1beta3 flow map", opts: resolve.Options{KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"}, person: "/etc/kubernetes/kubeadm.yaml:5", files: debianKubelet(map[string]string{
		"/var/lib/kubelet/kubeadm-flags.env": kubeadmFlagsPod,
		"/etc/kubernetes/kubeadm.yaml":       "apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\nnodeRegistration:\n  criSocket: unix:///run/containerd/containerd.sock\n  kubeletExtraArgs: {node-ip: 10.0.0.7, pod-infra-container-image: " + pause + "}\n"})},
	{name: "kubeadm Init as a list, Join as a flow sequence", opts: resolve.Options{KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"}, person: "/etc/kubernetes/kubeadm.yaml:13", files: debianKubelet(map[string]string{
		"/var/lib/kubelet/kubeadm-flags.env": kubeadmFlagsPod,
		"/etc/kubernetes/kubeadm.yaml": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n  - name: node-ip\n    value: 10.0.0.7\n  - name: pod-infra-container-image\n    value: " + pause + "\n" +
			"---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\nnodeRegistration:\n  kubeletExtraArgs: [{name: pod-infra-container-image, value: " + pause + "}]\n"})},
	{name: "Debian /etc/default/kubelet and quoted kubeadm keys", opts: resolve.Options{KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"}, person: "/etc/kubernetes/kubeadm.yaml:5", files: debianKubelet(map[string]string{
		"/etc/default/kubelet":         "KUBELET_EXTRA_ARGS=" + pauseArg + "\n",
		"/etc/kubernetes/kubeadm.yaml": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n  - \"name\": \"pod-infra-container-image\"\n    \"value\": \"" + pause + "\"\n"})},
	{name: "kubeadm v1beta4 flow sequence", opts: resolve.Options{KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"}, person: "/etc/kubernetes/kubeadm.yaml:4", files: debianKubelet(map[string]string{
		"/etc/kubernetes/kubeadm.yaml": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\nnodeRegistration:\n  kubeletExtraArgs: [{name: pod-infra-container-image, value: " + pause + "}]\n"})},
	{name: "kubeadm alias", opts: resolve.Options{KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"}, person: "/etc/kubernetes/kubeadm.yaml:6", files: debianKubelet(map[string]string{
		"/etc/kubernetes/kubeadm.yaml": "apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\nnodeRegistration:\n  criSocket: &pause " + pause + "\n  kubeletExtraArgs:\n    pod-infra-container-image: *pause\n"})},
	{name: "containerd, an escaped string", kind: resolve.KindFrozenRegistry, person: "/etc/containerd/config.toml:4", files: debianKubelet(map[string]string{
		"/etc/containerd/config.toml": "version = 4\n\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"k8s.gcr.io\\u002Fpause:3.10\"\n"})},
	{name: "containerd, a multi-line string", kind: resolve.KindFrozenRegistry, person: "/etc/containerd/config.toml:4", files: debianKubelet(map[string]string{
		"/etc/containerd/config.toml": "version = 4\n\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"\"\"\nk8s.gcr.io/pause:3.10\"\"\"\n"})},
	{name: "containerd 1.7, a multi-line literal string on one line", kind: resolve.KindFrozenRegistry, opts: resolve.Options{RuntimeVersion: "1.7.28"}, files: debianKubelet(map[string]string{
		"/etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = '''k8s.gcr.io/pause:3.10'''\n"})},
	{name: "containerd 1.7, a multi-line literal string", kind: resolve.KindFrozenRegistry, person: "/etc/containerd/config.toml:3", opts: resolve.Options{RuntimeVersion: "1.7.28"}, files: debianKubelet(map[string]string{
		"/etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = '''\nk8s.gcr.io/pause:3.10'''\n"})},
	{name: "cri-dockerd's packaged unit, kubeadm's image", kind: resolve.KindKubeadmDiffers, opts: resolve.Options{RuntimeVersion: "0.4.3", KubeadmVersion: "v1.35.0"}, files: map[string]string{
		"/usr/lib/systemd/system/kubelet.service": pkgKubeletService,
		kubeadmDropInDir:                             pkgKubeadmDropIn,
		"/etc/sysconfig/kubelet":                     pkgKubeletEnv,
		"/var/lib/kubelet/kubeadm-flags.env":         `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/cri-dockerd.sock"` + "\n",
		"/usr/lib/systemd/system/cri-docker.service": pkgCRIDockerService,
	}},
	{name: "cri-dockerd's packaged unit", opts: resolve.Options{RuntimeVersion: "0.4.3"}, files: map[string]string{
		"/usr/lib/systemd/system/kubelet.service": pkgKubeletService,
		kubeadmDropInDir:                         strings.ReplaceAll(pkgKubeadmDropIn, "/etc/sysconfig/kubelet", "/etc/default/kubelet"),
		"/etc/default/kubelet":                   pkgKubeletEnv,
		"/var/lib/kubelet/kubeadm-flags.env":     `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/cri-dockerd.sock ` + pauseArg + `"` + "\n",
		"/lib/systemd/system/cri-docker.service": pkgCRIDockerService,
	}},
}

// TestKubeletLayouts plans each layout of [layouts] with kubelet 1.35,
// verifies the plan, applies it to the node's copy, and resolves again: the
// flag is gone, the bytes outside the plan are unchanged, and a second plan
// is empty; or, where the text editor cannot remove the flag exactly, the
// plan has a step for a person naming the file and line, and no edit there.
func TestKubeletLayouts(t *testing.T) {
	t.Parallel()
	for _, tc := range layouts {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			for p, content := range tc.files {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755))     //nolint:gosec // G301: a test node
				require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644)) //nolint:gosec // G306: a test node
			}
			orig := readTree(t, dir)
			opts := tc.opts
			opts.Root, opts.KubeletVersion = resolve.DirFS(dir), "1.35.0"
			if opts.RuntimeVersion == "" {
				opts.RuntimeVersion = "2.4.2"
			}
			res, err := resolve.Resolve(ctx, opts)
			require.NoError(t, err)
			kind := cmp.Or(tc.kind, resolve.KindKubeletRejectsFlag)
			found := kinds(res, kind)
			require.NotEmpty(t, found, "no %s", kind)
			if tc.origins != nil {
				assert.Equal(t, tc.origins, found)
			}

			p, err := For(t.Context(), res, nil, opts.Root)
			require.NoError(t, err)
			require.NoError(t, Verify(ctx, p, opts, nil), "plan:\n%s", render(p))
			if tc.person != "" {
				i := slices.IndexFunc(p.Steps, func(s Step) bool {
					return s.Action == resolve.ActionEdit && strings.Contains(s.Message, tc.person)
				})
				require.GreaterOrEqual(t, i, 0, "no step for a person names %s:\n%s", tc.person, render(p))
				assert.Equal(t, 1, strings.Count(render(p), "make it by hand"), "one step a change:\n%s", render(p))
				for _, e := range p.Edits {
					for _, c := range e.Changes {
						assert.NotEqual(t, tc.person, c.Origin(), "an edit of %s", tc.person)
					}
				}
				assert.True(t, p.Remains())
			}
			require.NoError(t, Apply(ctx, p, resolve.DirFS(dir), ApplyOptions{}))
			after := readTree(t, dir)
			for path, content := range after {
				if strings.HasPrefix(path, DefaultBackupDir+"/") {
					continue
				}
				if i := slices.IndexFunc(p.Edits, func(e Edit) bool { return e.Path == path }); i >= 0 {
					assert.Equal(t, string(p.Edits[i].After), content)
					continue
				}
				assert.Equal(t, orig[path], content, "%s changed but is not in the plan", path)
			}
			for path := range orig {
				assert.Contains(t, after, path, "%s was removed", path)
			}

			res2, err := resolve.Resolve(ctx, opts)
			require.NoError(t, err)
			p2, err := For(t.Context(), res2, nil, opts.Root)
			require.NoError(t, err)
			if tc.person != "" {
				assert.NotEmpty(t, kinds(res2, kind), "what a person changes")
				assert.Empty(t, p2.Edits, "a second plan edits:\n%s", render(p2))
				return
			}
			assert.Empty(t, kinds(res2, kind), "after:\n%s", render(p))
			assert.True(t, p2.Empty(), "a second plan:\n%s", render(p2))
		})
	}
}

// kinds are the origins of res's conflicts and notes of kind k.
func kinds(res *resolve.Result, k resolve.Kind) []string {
	var at []string
	for _, c := range res.Conflicts {
		if c.Kind == k {
			at = append(at, c.Origin())
		}
	}
	for _, n := range res.Notes {
		if n.Kind == k {
			at = append(at, n.Origin())
		}
	}
	return at
}

// TestVerifyLeftToPerson: a finding some of whose places are edited and
// the others handed to a person passes Verify; one of the edited places
// left unedited does not, a step for a person elsewhere notwithstanding.
func TestVerifyLeftToPerson(t *testing.T) {
	t.Parallel()
	var files map[string]string
	var opts resolve.Options
	for _, l := range layouts {
		if l.name == "kubeadm Init as a list, Join as a flow sequence" {
			files, opts = l.files, l.opts
		}
	}
	require.NotNil(t, files)
	ctx := context.Background()
	opts.Root, opts.KubeletVersion, opts.RuntimeVersion = resolve.DirFS(writeNode(t, files)), "1.35.0", "2.4.2"
	res, err := resolve.Resolve(ctx, opts)
	require.NoError(t, err)
	p, err := For(t.Context(), res, nil, opts.Root)
	require.NoError(t, err)
	require.Len(t, p.Edits, 2, "plan:\n%s", render(p))
	require.NoError(t, Verify(ctx, p, opts, nil))
	for k := range p.Edits {
		q := *p
		q.Edits = slices.Delete(slices.Clone(p.Edits), k, k+1)
		err := Verify(ctx, &q, opts, nil)
		require.ErrorIs(t, err, ErrUnverified, "without the edit of %s", p.Edits[k].Path)
		assert.Contains(t, err.Error(), "kubelet-rejects-flag remains after the edits")
	}
}
