package kubelettest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/kubelettest"
	"github.com/sandboxpin/sandboxpin/internal/release"
)

// daemonSetPath is the exporter's DaemonSet.
const daemonSetPath = "../../deploy/kubernetes/daemonset.yaml"

// exporterMetrics are the audit's series that the pod and a direct audit
// must agree on (docs/design.md, Contract names; the timestamp differs by nature).
var exporterMetrics = []string{
	"sandboxpin_audit_success",
	"sandboxpin_sandbox_image_info",
	"sandboxpin_sandbox_image_present",
	"sandboxpin_sandbox_image_stored_as_configured",
	"sandboxpin_must_pin_images",
	"sandboxpin_unprotected_images",
	"sandboxpin_conflicts",
}

// staticPodFromDaemonSet converts a DaemonSet manifest into a static pod
// manifest (JSON, which the kubelet reads as YAML), mechanically: the pod
// template's metadata and spec, with the DaemonSet's name and namespace,
// and two changes a test node needs: every hostPath is under root (the
// node's root directory), and hostNetwork is true (the harness's runtime
// has no CNI network; the exporter then listens in the runtime's network
// namespace). It returns the manifest and the container's image and args.
func staticPodFromDaemonSet(ds []byte, root string) (string, string, []string, error) {
	var obj struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			Template struct {
				Metadata map[string]any `json:"metadata"`
				Spec     map[string]any `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(ds, &obj); err != nil {
		return "", "", nil, err
	}
	meta, spec := obj.Spec.Template.Metadata, obj.Spec.Template.Spec
	if meta == nil || spec == nil {
		return "", "", nil, errors.New("no pod template")
	}
	meta["name"], meta["namespace"] = obj.Metadata.Name, obj.Metadata.Namespace
	spec["hostNetwork"] = true
	vols, _ := spec["volumes"].([]any)
	for _, v := range vols {
		if hp, ok := v.(map[string]any)["hostPath"].(map[string]any); ok {
			p, _ := hp["path"].(string)
			hp["path"] = filepath.Join(root, p)
		}
	}
	cs, _ := spec["containers"].([]any)
	if len(cs) != 1 {
		return "", "", nil, fmt.Errorf("%d containers, want 1", len(cs))
	}
	c, _ := cs[0].(map[string]any)
	image, _ := c["image"].(string)
	var args []string
	raw, _ := c["args"].([]any)
	for _, a := range raw {
		s, _ := a.(string)
		args = append(args, s)
	}
	pod, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}, "", "  ")
	return string(pod), image, args, err
}

// flagOf returns the value of --name=value in args.
func flagOf(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// findProcess returns the pid of a process whose command line (arguments
// joined by spaces) is cmdline.
func findProcess(cmdline string) (int, bool) {
	return findChild(cmdline, "")
}

// findChild is findProcess for a process whose parent's command line
// contains parent ("" for any parent): an exporter pod's process under the
// shim of the test's own containerd, whose command line names its socket
// (other tests, such as TestCluster, run the same command line at once).
func findChild(cmdline, parent string) (int, bool) {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || cmdlineOf(pid) != cmdline {
			continue
		}
		if parent == "" {
			return pid, true
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces; it ends at the
		// last ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil && strings.Contains(cmdlineOf(ppid), parent) {
			return pid, true
		}
	}
	return 0, false
}

// cmdlineOf returns the command line of process pid, its arguments joined
// by spaces, or "".
func cmdlineOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ")
}

// seriesOf returns the lines of an exposition that are samples of name.
func seriesOf(exposition, name string) []string {
	var out []string
	for l := range strings.Lines(exposition) {
		if strings.HasPrefix(l, name+" ") || strings.HasPrefix(l, name+"{") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// TestExporterPod runs deploy/kubernetes/daemonset.yaml's pod template,
// converted into a static pod (staticPodFromDaemonSet), under the real
// kubelet, in front of containerd 1.6.20 (which never pins): its image is
// the release's (internal/release: one layer, the static binary at
// /sandboxpin, as deploy/Dockerfile's), imported from its OCI archive. With
// SANDBOXPIN_RELEASE_DIR set (the DIR of `scripts/release.sh VERSION DIR`)
// it is that release's archive, under its own name in place of the
// manifest's; otherwise the test builds the binary and the archive, under
// the manifest's name. The exporter's /metrics must say what `sandboxpin audit -o
// prometheus` says when run directly on the same node: this proves the
// manifest's security context, hostPath mounts and socket path.
func TestExporterPod(t *testing.T) {
	t.Parallel()
	kubelettest.Require(t)
	ds, err := os.ReadFile(daemonSetPath)
	require.NoError(t, err)
	pause, err := pauseBinary()
	require.NoError(t, err)

	root := t.TempDir()
	pod, image, args, err := staticPodFromDaemonSet(ds, root)
	require.NoError(t, err)
	ctrd := containerdtest.Start(t, containerdtest.V1, containerdtest.Options{
		SandboxImage: storedPause, RestrictOOMScoreAdj: true, Offline: true,
	})
	ctrd.Import(t, containerdtest.Image{Names: []string{storedPause}, Executable: pause})
	archive, released := releasedImage(t)
	if released != "" {
		pod, image = strings.ReplaceAll(pod, strconv.Quote(image), strconv.Quote(released)), released
	} else {
		archive = buildImage(t, image)
	}
	ctrd.ImportArchive(t, archive, image)
	t.Logf("the pod runs %s, imported from %s", image, archive)
	removePodsAtCleanup(t, ctrd.Endpoint)

	// The node under root: containerd's config where the manifest's
	// /host/etc mount finds it, and its socket at the default path, where
	// the exporter looks for it under /host (the manifest names none; a
	// hard link reaches the same socket).
	etc := filepath.Join(root, "etc", "containerd")
	require.NoError(t, os.MkdirAll(etc, 0o750))
	copyFile(t, filepath.Join(ctrd.Dir, "config.toml"), filepath.Join(etc, "config.toml"))
	require.Empty(t, flagOf(args, "runtime-endpoint"), "the manifest names no socket")
	sock := filepath.Join(root, "run/containerd/containerd.sock")
	require.NoError(t, os.MkdirAll(filepath.Dir(sock), 0o750))
	require.NoError(t, os.Link(ctrd.Socket, sock))

	k := kubelettest.Start(t, kubelettest.Options{RuntimeEndpoint: ctrd.Endpoint, NoDiskPressure: true,
		StaticPods: map[string]string{"sandboxpin.json": pod}})

	// The exporter's process, by its command line: the image's entrypoint
	// and the manifest's args.
	cmdline := "/sandboxpin " + strings.Join(args, " ")
	listen := flagOf(args, "listen")
	_, port, err := net.SplitHostPort(listen)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var (
		metrics string
		pid     int
	)
	for {
		if p, ok := findChild(cmdline, ctrd.Socket); ok {
			pid = p
			if metrics, err = kubelettest.GetInNetns(ctx, p, "http://127.0.0.1:"+port+"/metrics"); err == nil && len(seriesOf(metrics, "sandboxpin_audit_success")) > 0 {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the exporter pod never served /metrics (last error %v)\nkubelet log:\n%s\ncontainerd log:\n%s", err, k.Log(), ctrd.Log())
		case <-k.Exited():
			t.Fatalf("the kubelet exited:\n%s", k.Log())
		case <-time.After(time.Second):
		}
	}

	// The manifest's security context, as the process has it: root, no
	// capability, no privilege escalation, the runtime's seccomp filter.
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, want := range []string{"CapEff:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
		assert.Contains(t, string(status), want+"\n", "/proc/%d/status of the exporter", pid)
	}
	assert.Regexp(t, `(?m)^Uid:\t0\t`, string(status))

	bin, err := sandboxpinBinary()
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	// As the exporter asks: the socket it finds under the root.
	audit := exec.Command(bin, "audit", "--root", root, "-o", "prometheus")
	audit.Stdout, audit.Stderr = &stdout, &stderr
	err = audit.Run()
	var exit *exec.ExitError
	require.True(t, err == nil || errors.As(err, &exit), "audit: %v\n%s", err, stderr.String())
	t.Logf("audit on the node (exit %d):\n%s", audit.ProcessState.ExitCode(), stdout.String())
	for _, name := range exporterMetrics {
		want := seriesOf(stdout.String(), name)
		require.NotEmpty(t, want, "audit -o prometheus has %s", name)
		assert.Equal(t, want, seriesOf(metrics, name), "%s: the pod's /metrics and the node's audit", name)
	}
	assert.Equal(t, []string{"sandboxpin_unprotected_images 1"}, seriesOf(metrics, "sandboxpin_unprotected_images"), "containerd 1.6.20 pins nothing")
	t.Logf("the exporter pod's /metrics:\n%s", strings.Join(append(seriesOf(metrics, "sandboxpin_sandbox_image_info"), seriesOf(metrics, "sandboxpin_unprotected_images")...), "\n"))
}

// releasedImage returns the image archive of the release in
// $SANDBOXPIN_RELEASE_DIR and its name, or "", "" when it is not set.
func releasedImage(t *testing.T) (archive, name string) {
	t.Helper()
	dir := os.Getenv("SANDBOXPIN_RELEASE_DIR")
	if dir == "" {
		return "", ""
	}
	archives, err := filepath.Glob(filepath.Join(dir, "sandboxpin-image-*.oci.tar"))
	require.NoError(t, err)
	require.Len(t, archives, 1, "one image archive in SANDBOXPIN_RELEASE_DIR %s", dir)
	version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(archives[0]), "sandboxpin-image-"), ".oci.tar")
	return archives[0], "ghcr.io/sandboxpin/sandboxpin:" + version
}

// buildImage builds the static binary and the release's image of it, named
// name, and returns the archive's path.
func buildImage(t *testing.T, name string) string {
	t.Helper()
	static, err := goBuild("sandboxpin-static", "", "github.com/sandboxpin/sandboxpin/cmd/sandboxpin", "CGO_ENABLED=0", "GOFLAGS=-trimpath")
	require.NoError(t, err)
	exe, err := os.ReadFile(static)
	require.NoError(t, err)
	idx, err := release.Image("test", []release.Binary{{Arch: runtime.GOARCH, Data: exe}})
	require.NoError(t, err)
	var archive bytes.Buffer
	require.NoError(t, release.WriteArchive(&archive, name, idx))
	path := filepath.Join(t.TempDir(), "image.oci.tar")
	require.NoError(t, os.WriteFile(path, archive.Bytes(), 0o600))
	return path
}

// TestStaticPodFromDaemonSet checks the conversion on the shipped manifest:
// the DaemonSet's name and namespace, hostNetwork, every hostPath under the
// root, and the container's image and args as the manifest has them.
func TestStaticPodFromDaemonSet(t *testing.T) {
	t.Parallel()
	ds, err := os.ReadFile(daemonSetPath)
	require.NoError(t, err)
	pod, image, args, err := staticPodFromDaemonSet(ds, "/node")
	require.NoError(t, err)
	var got struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name, Namespace string
		} `json:"metadata"`
		Spec struct {
			HostNetwork bool `json:"hostNetwork"`
			Volumes     []struct {
				HostPath *struct {
					Path string `json:"path"`
				} `json:"hostPath"`
			} `json:"volumes"`
		} `json:"spec"`
	}
	require.NoError(t, json.Unmarshal([]byte(pod), &got))
	assert.Equal(t, "Pod", got.Kind)
	assert.Equal(t, "sandboxpin", got.Metadata.Name)
	assert.Equal(t, "sandboxpin", got.Metadata.Namespace)
	assert.True(t, got.Spec.HostNetwork)
	require.NotEmpty(t, got.Spec.Volumes)
	for _, v := range got.Spec.Volumes {
		if v.HostPath != nil {
			assert.True(t, strings.HasPrefix(v.HostPath.Path, "/node/"), "hostPath %s under the root", v.HostPath.Path)
		}
	}
	assert.NotEmpty(t, image)
	assert.Equal(t, "serve", args[0])
	assert.Empty(t, flagOf(args, "runtime-endpoint"), "the exporter finds the socket under --root")
}
