package config

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
	"github.com/sandboxpin/sandboxpin/resolve/internal/yamlfile"
)

// checkConfigErr fails unless err is nil or a *nodefs.ConfigError for path that
// wraps nodefs.ErrInvalidConfig and names a line inside the file.
func checkConfigErr(t *testing.T, err error, path string, data []byte) {
	t.Helper()
	if err == nil {
		return
	}
	var ce *nodefs.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *nodefs.ConfigError", err, err)
	}
	if !errors.Is(err, nodefs.ErrInvalidConfig) {
		t.Fatalf("error %v does not wrap nodefs.ErrInvalidConfig", err)
	}
	if ce.Path != path {
		t.Fatalf("error path = %q, want %q", ce.Path, path)
	}
	checkLine(t, ce.Line, data)
}

func checkLine(t *testing.T, line int, data []byte) {
	t.Helper()
	if n := bytes.Count(data, []byte{'\n'}) + 1; line < 0 || line > n {
		t.Fatalf("line %d outside the file's %d lines", line, n)
	}
}

func checkFound(t *testing.T, f *Found, data []byte) {
	t.Helper()
	if f != nil {
		checkLine(t, f.Line, data)
	}
}

func FuzzContainerdConfig(f *testing.F) {
	for _, tt := range badTOML {
		f.Add([]byte(tt.content))
	}
	f.Add([]byte("version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\nsandbox = 'registry.k8s.io/pause:3.10.1'\n"))
	f.Add([]byte("version = 2\nimports = ['*.toml']\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = \"x\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := nodetest.MapFS(map[string]string{ctrMain: string(data)})
		cfg, err := ReadContainerd(fsys, ctrMain, "")
		checkConfigErr(t, err, "/"+ctrMain, data)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("ReadContainerd = %v, %v: want exactly one of them", cfg, err)
		}
		if cfg != nil {
			checkFound(t, cfg.Sandbox, data)
			for _, p := range cfg.Pinned {
				checkLine(t, p.Line, data)
			}
		}
		// As containerd 2.3 and later read it: the same errors, and lines
		// inside the file.
		cfg23, err23 := ReadContainerdAs(fsys, ctrMain, "", Loader23)
		checkConfigErr(t, err23, "/"+ctrMain, data)
		if (cfg23 == nil) == (err23 == nil) {
			t.Fatalf("ReadContainerdAs(Loader23) = %v, %v: want exactly one of them", cfg23, err23)
		}
		if cfg23 != nil {
			checkFound(t, cfg23.Sandbox, data)
			checkFound(t, cfg23.Socket, data)
		}
		// Through a budget, as resolve.Resolve and ContainerdEndpoint read it.
		if _, err := ReadContainerd(nodefs.NewBudget(context.Background(), fsys).Source(), ctrMain, ""); err != nil {
			checkConfigErr(t, err, "/"+ctrMain, data)
		}
	})
}

func FuzzCRIOConfig(f *testing.F) {
	for _, tt := range badTOML {
		f.Add([]byte(tt.content))
	}
	f.Add([]byte("[crio.image]\npause_image = \"registry.k8s.io/pause:3.10\"\npinned_images = [\"*\", \"a*\"]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ReadCRIO(nodetest.MapFS(map[string]string{crioMain: string(data)}))
		checkConfigErr(t, err, "/"+crioMain, data)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("ReadCRIO = %v, %v: want exactly one of them", cfg, err)
		}
		if cfg != nil {
			checkFound(t, cfg.PauseImage, data)
		}
	})
}

func FuzzSystemdUnit(f *testing.F) {
	f.Add([]byte("[Service]\nExecStart=\nExecStart=/usr/bin/cri-dockerd \\\n --pod-infra-container-image \"a b\"\n"))
	f.Add([]byte("[Service\n"))
	f.Add([]byte("[Service]\nExecStart=-@/x '--pod-infra-container-image=\\'\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ReadCRIDockerd(nodetest.MapFS(map[string]string{unitLib: string(data)}))
		checkConfigErr(t, err, "/"+unitLib, data)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("ReadCRIDockerd = %v, %v: want exactly one of them", cfg, err)
		}
		if cfg != nil {
			checkFound(t, cfg.PauseImage, data)
			checkFound(t, cfg.ExecStart, data)
		}
	})
}

func FuzzEnvFile(f *testing.F) {
	f.Add([]byte("KUBELET_KUBEADM_ARGS=\"--pod-infra-container-image=registry.k8s.io/pause:3.10\"\n"))
	f.Add([]byte("KUBELET_KUBEADM_ARGS='--x \\\n--pod-infra-container-image y'\n"))
	f.Add([]byte("KUBELET_KUBEADM_ARGS=\"unterminated\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ReadKubelet(nodetest.MapFS(map[string]string{kubeletFlagsEnv: string(data)}))
		checkConfigErr(t, err, "/"+kubeletFlagsEnv, data)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("ReadKubelet = %v, %v: want exactly one of them", cfg, err)
		}
		if cfg != nil {
			for _, a := range cfg.SandboxArgs {
				checkLine(t, a.Line, data)
			}
		}
	})
}

// FuzzKubeletUnit reads a kubelet drop-in beside kubeadm's drop-in and
// flag file: every flag found names a line of the file it came from.
func FuzzKubeletUnit(f *testing.F) {
	f.Add([]byte("[Service]\nEnvironment=\"KUBELET_EXTRA_ARGS=--pod-infra-container-image=registry.k8s.io/pause:3.10\"\n"))
	f.Add([]byte("[Service]\nExecStart=\nExecStart=/usr/bin/kubelet --pod-infra-container-image \\\n x ${KUBELET_KUBEADM_ARGS} $KUBELET_EXTRA_ARGS\n"))
	f.Add([]byte("[Service]\nEnvironment=A=1 'KUBELET_EXTRA_ARGS=--x\n"))
	const dropIn = "etc/systemd/system/kubelet.service.d/20-x.conf"
	f.Fuzz(func(t *testing.T, data []byte) {
		files := map[string]string{
			"lib/systemd/system/kubelet.service":                   "[Service]\nExecStart=/usr/bin/kubelet\n",
			"lib/systemd/system/kubelet.service.d/10-kubeadm.conf": kubeadmDropIn,
			kubeletFlagsEnv: "KUBELET_KUBEADM_ARGS=\"--pod-infra-container-image=registry.k8s.io/pause:3.10\"\n",
			dropIn:          string(data),
		}
		cfg, err := ReadKubelet(nodetest.MapFS(files))
		checkConfigErr(t, err, "/"+dropIn, data)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("ReadKubelet = %v, %v: want exactly one of them", cfg, err)
		}
		if cfg == nil {
			return
		}
		for _, a := range append(cfg.SandboxArgs, ptrs(cfg.Endpoint)...) {
			if a.Path == "/"+dropIn {
				checkLine(t, a.Line, data)
			} else {
				checkLine(t, a.Line, []byte(files[strings.TrimPrefix(a.Path, "/")]))
			}
		}
	})
}

// ptrs returns the non-nil values of fs.
func ptrs(fs ...*Found) []Found {
	var out []Found
	for _, f := range fs {
		if f != nil {
			out = append(out, *f)
		}
	}
	return out
}

func FuzzKubeadmConfig(f *testing.F) {
	f.Add([]byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nimageRepository: x\n---\nkind: [\n"))
	f.Add([]byte("apiVersion: kubeadm.k8s.io/v1beta3\nkind: InitConfiguration\nnodeRegistration:\n  criSocket: /x\n"))
	f.Add([]byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n  - name: pod-infra-container-image\n    value: x\n"))
	f.Add([]byte("apiVersion: kubeadm.k8s.io/v1beta3\nkind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs: {pod-infra-container-image: x}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ReadKubeadm(nodetest.MapFS(map[string]string{kubeadmFile: string(data)}), kubeadmFile)
		checkConfigErr(t, err, "/"+kubeadmFile, data)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("ReadKubeadm = %v, %v: want exactly one of them", cfg, err)
		}
		if cfg != nil {
			checkFound(t, cfg.ImageRepository, data)
			for _, a := range cfg.KubeletSandboxArgs {
				checkFound(t, &a, data)
			}
		}
	})
}

// FuzzKubeadmVerdict is the differential target for kubeadm's config: on a
// file of one document, parseKubeadm refuses exactly what sigs.k8s.io/yaml
// (kubeadm's decoder) refuses, short of a limit and of one known
// difference: a document with an alias ('*') that go-yaml v3's parser
// refuses and v2's reads (such as "&0,\n*0") is refused, as its cost could
// not be bounded first.
func FuzzKubeadmVerdict(f *testing.F) {
	for _, tt := range yamlLimitTests {
		if len(tt.content) < 4096 {
			f.Add([]byte(tt.content))
		}
	}
	f.Add([]byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nimageRepository: x\n"))
	f.Add([]byte("a: &a [1, *a]\n"))
	f.Add([]byte("? [a]\n: b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for l := range strings.SplitSeq(string(data), "\n") {
			if t := strings.TrimRight(l, " \t\r"); t == "---" || strings.HasPrefix(t, "--- ") || t == "..." {
				return // one document: the split into documents is kubeadm's, not the decoder's
			}
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return // parseKubeadm skips a blank document, as its policy, not the decoder's
		}
		_, err := parseKubeadm("/"+kubeadmFile, data)
		checkConfigErr(t, err, "/"+kubeadmFile, data)
		if errors.Is(err, nodefs.ErrLimit) {
			return
		}
		var d kubeadmDoc
		werr := yaml.Unmarshal(data, &d)
		if werr == nil && err != nil && bytes.IndexByte(data, '*') >= 0 {
			var file yamlfile.File
			if _, _, perr := file.Parse(data, 1); perr != nil {
				return // the known difference
			}
		}
		if (werr == nil) != (err == nil) {
			t.Fatalf("parseKubeadm(%q) = %v, sigs.k8s.io/yaml says %v", data, err, werr)
		}
	})
}
