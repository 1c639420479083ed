//go:build unix

package resolve

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fuzzPaths are the node paths a fuzzed tree is made of.
var fuzzPaths = []string{
	"etc",
	"etc/containerd",
	"etc/containerd/config.toml",
	"etc/containerd/conf.d",
	"etc/containerd/conf.d/a.toml",
	"etc/crio",
	"etc/crio/crio.conf",
	"etc/crio/crio.conf.d",
	"etc/crio/crio.conf.d/a.conf",
	"etc/crio/crio.conf.d/sub",
	"etc/crio/crio.conf.d/sub/b.conf",
	"var/lib/kubelet",
	"var/lib/kubelet/kubeadm-flags.env",
	"etc/systemd/system",
	"etc/systemd/system/cri-docker.service",
	"etc/systemd/system/cri-docker.service.d",
	"etc/systemd/system/cri-docker.service.d/a.conf",
	"etc/kubernetes",
	"etc/kubernetes/kubeadm.yaml",
	"opt",
	"opt/real",
	"opt/real/config.toml",
}

// fuzzTargets are where a fuzzed link (or containerd import) points;
// {PARENT} is the directory that holds the root and the sentinel files.
var fuzzTargets = []string{
	"{PARENT}/sentinel.toml",
	"{PARENT}/etc",
	"{PARENT}",
	"{PARENT}/etc/containerd/config.toml",
	"{PARENT}/etc/crio/crio.conf.d",
	"{PARENT}/kubeadm.yaml",
	"..", "../..", "../../..", "../../../..", "../../../../../../../..",
	"../sentinel.toml", "../../sentinel.toml", "../../../sentinel.toml", "../../../../sentinel.toml",
	"../../etc", "../../../etc/containerd", "root/../../etc",
	"/", "/..", "/../..", ".", "/etc", "/etc/..", "/opt/real", "/opt/real/config.toml",
	"/dev/zero", "/proc/self/root", "/proc/self/cwd", "/etc/containerd/*.toml", "/*/*/*",
	"config.toml", "a.toml", "../crio.conf",
}

// fuzzContent is a file's content for a node path: a valid config of its
// kind naming insideImage, whose containerd imports name target.
func fuzzContent(p, target string) string {
	switch {
	case strings.HasPrefix(p, "etc/containerd") || strings.HasPrefix(p, "opt"):
		return "version = 2\nimports = [\"" + target + "\"]\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"" + insideImage + "\"\n"
	case strings.HasPrefix(p, "etc/crio"):
		return "[crio.image]\npause_image = \"" + insideImage + "\"\n"
	case strings.HasPrefix(p, "var/lib/kubelet"):
		return "KUBELET_KUBEADM_ARGS=\"--pod-infra-container-image=" + insideImage + "\"\n"
	case strings.HasPrefix(p, "etc/systemd"):
		return "[Service]\nExecStart=\nExecStart=/usr/bin/cri-dockerd --pod-infra-container-image=" + insideImage + "\n"
	default:
		return "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nimageRepository: registry.k8s.io\n"
	}
}

// safeParent makes the directories above rel inside root and reports
// whether they are real directories: a fuzzed tree must never make the
// test write through one of its own links (onto the host).
func safeParent(root, rel string) bool {
	dir := root
	parts := strings.Split(rel, "/")
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if os.Mkdir(dir, 0o750) != nil {
				return false
			}
		case err != nil || !fi.IsDir():
			return false
		}
	}
	_, err := os.Lstat(filepath.Join(root, rel))
	return errors.Is(err, fs.ErrNotExist)
}

// FuzzRootConfinement builds random node trees of directories, config files
// and symbolic links (to the host, to "..", to devices, in loops) and
// resolves them through DirFS: the sentinel files outside the root must
// never show in a result or an error, and Resolve must return promptly.
func FuzzRootConfinement(f *testing.F) {
	f.Add([]byte{2, 2, 0})                       // config.toml -> {PARENT}/sentinel.toml
	f.Add([]byte{2, 0, 1})                       // etc -> {PARENT}/etc
	f.Add([]byte{1, 2, 0, 2, 4, 12})             // an import of {PARENT}/sentinel.toml, a.toml -> ../sentinel.toml
	f.Add([]byte{2, 1, 16, 1, 2, 3})             // etc/containerd -> ../../etc
	f.Add([]byte{2, 7, 4, 1, 6, 0})              // crio.conf.d -> {PARENT}/etc/crio/crio.conf.d
	f.Add([]byte{2, 17, 8, 2, 19, 18})           // etc/kubernetes -> ../..; opt -> /
	f.Add([]byte{2, 2, 32, 2, 4, 31, 1, 21, 0})  // config.toml -> config.toml loop
	f.Add([]byte{1, 2, 29, 2, 0, 27, 2, 12, 26}) // a glob import, etc -> /dev/zero
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 3*32 {
			return
		}
		parent := t.TempDir()
		root := filepath.Join(parent, "root")
		if err := os.Mkdir(root, 0o750); err != nil {
			t.Fatal(err)
		}
		plant(t, parent, sentinelFiles())
		for i := 0; i+2 < len(ops); i += 3 {
			rel := fuzzPaths[int(ops[i+1])%len(fuzzPaths)]
			target := strings.ReplaceAll(fuzzTargets[int(ops[i+2])%len(fuzzTargets)], "{PARENT}", parent)
			if !safeParent(root, rel) {
				continue
			}
			p := filepath.Join(root, rel)
			var err error
			switch ops[i] % 3 {
			case 0:
				err = os.Mkdir(p, 0o750)
			case 1:
				err = os.WriteFile(p, []byte(fuzzContent(rel, target)), 0o600)
			case 2:
				err = os.Symlink(target, p)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, opts := range []Options{{}, {KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml", KubeadmVersion: "v1.31.0"}} {
			opts.Root = DirFS(root)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			res, err := Resolve(ctx, opts)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Resolve did not return in time")
			}
			if err != nil && strings.Contains(err.Error(), sentinelDomain) {
				t.Fatalf("error shows a file outside the root: %v", err)
			}
			if res != nil {
				b, err := json.Marshal(res)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(b), sentinelDomain) {
					t.Fatalf("result shows a file outside the root: %s", b)
				}
			}
		}
	})
}
