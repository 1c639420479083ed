package kubeadmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// Environment variables read by the helper.
const (
	EnvKubeadm = "SANDBOXPIN_KUBEADM"
	// EnvKubeadmPatched names kubeadm with contrib/kubeadm's compare.patch
	// and fallback.patch.
	EnvKubeadmPatched = "SANDBOXPIN_KUBEADM_PATCHED"
	// EnvKubeadmPatchedCompare names kubeadm with contrib/kubeadm's
	// compare.patch alone.
	EnvKubeadmPatchedCompare = "SANDBOXPIN_KUBEADM_PATCHED_COMPARE"
	EnvKubeadmVersion        = "SANDBOXPIN_KUBEADM_VERSION"
	EnvRequire               = runtimetest.EnvRequire
	EnvCache                 = runtimetest.EnvCache
)

// DefaultVersion is the kubeadm release scripts/deps.sh builds.
const DefaultVersion = "v1.37.2"

// runTimeout bounds one kubeadm run; offline it ends in about a second.
const runTimeout = 2 * time.Minute

// IgnoredChecks are the pre-flight checks of kubeadm v1.37.2 that a test
// machine cannot satisfy (no kubelet, no kernel modules or sysctls set for
// Kubernetes, a runtime without the RuntimeConfig RPC, swap, small machines),
// by the names kubeadm gives them. The ImagePull check is not among them.
var IgnoredChecks = []string{
	"NumCPU", "Mem", "Swap", "SystemVerification",
	"FileExisting-kubelet", "KubeletVersion", "Service-kubelet",
	"FileContent--proc-sys-net-ipv4-ip_forward", "FileContent--proc-sys-net-bridge-bridge-nf-call-iptables",
	"FileExisting-crictl", "FileExisting-conntrack", "FileExisting-ip", "FileExisting-iptables",
	"FileExisting-mount", "FileExisting-nsenter", "FileExisting-ebtables", "FileExisting-ethtool",
	"FileExisting-socat", "FileExisting-tc", "FileExisting-touch",
	"Port-6443", "Port-10259", "Port-10257", "Port-10250", "Port-2379", "Port-2380",
	"DirAvailable--var-lib-etcd", "DirAvailable--etc-kubernetes-manifests",
	"FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml",
	"FileAvailable--etc-kubernetes-manifests-kube-controller-manager.yaml",
	"FileAvailable--etc-kubernetes-manifests-kube-scheduler.yaml",
	"FileAvailable--etc-kubernetes-manifests-etcd.yaml",
	"ContainerRuntimeVersion", "HTTPProxy", "HTTPProxyCIDR",
}

// cacheDir returns $SANDBOXPIN_CACHE, or ${XDG_CACHE_HOME:-$HOME/.cache}/sandboxpin.
func cacheDir() string {
	return runtimetest.CacheDir()
}

// Binary returns the kubeadm binary and its version (from the environment or
// the defaults), whether or not it exists.
func Binary() (path, version string) {
	version = os.Getenv(EnvKubeadmVersion)
	if version == "" {
		version = DefaultVersion
	}
	path = os.Getenv(EnvKubeadm)
	if path == "" {
		path = filepath.Join(cacheDir(), "kubeadm", version, "kubeadm")
	}
	return path, version
}

// PatchedBinary returns kubeadm with contrib/kubeadm's compare.patch and
// fallback.patch (from the environment, or where scripts/deps.sh's
// build_kubeadm_patched puts it), whether or not it exists.
func PatchedBinary() string {
	return patchedBinary(EnvKubeadmPatched, "compare+fallback")
}

// PatchedCompareBinary is [PatchedBinary] with compare.patch alone: the
// runtime's sandbox image compared as a reference, and no config read.
func PatchedCompareBinary() string {
	return patchedBinary(EnvKubeadmPatchedCompare, "compare")
}

// patchedBinary returns $env, or scripts/deps.sh's build of kubeadm with
// the patches variant names ("compare+fallback" for compare.patch and
// fallback.patch: build_patched's directory name).
func patchedBinary(env, variant string) string {
	if p := os.Getenv(env); p != "" {
		return p
	}
	_, version := Binary()
	return filepath.Join(cacheDir(), "kubeadm-patched-"+variant, version, "kubeadm")
}

// Available reports whether kubeadm can run its checks here, and if not, why.
func Available() (bool, string) {
	bin, _ := Binary()
	return available(bin)
}

// AvailablePatched is [Available] for [PatchedBinary].
func AvailablePatched() (bool, string) { return available(PatchedBinary()) }

// AvailablePatchedCompare is [Available] for [PatchedCompareBinary].
func AvailablePatchedCompare() (bool, string) { return available(PatchedCompareBinary()) }

func available(bin string) (bool, string) {
	if os.Geteuid() != 0 {
		return false, "kubeadm's pre-flight needs root"
	}
	if _, err := exec.LookPath(bin); err != nil {
		return false, fmt.Sprintf("kubeadm: %s not found (%v); run `bash scripts/deps.sh` as root (build_kubernetes), then source %s",
			bin, err, filepath.Join(cacheDir(), "env.sh"))
	}
	return true, ""
}

// Require skips the test under -short or when kubeadm cannot run here, or
// fails it when SANDBOXPIN_REQUIRE_RUNTIMES=1.
func Require(t testing.TB) {
	t.Helper()
	runtimetest.Require(t, "kubeadm", Available)
}

// Config is what kubeadm is told, and which kubeadm.
type Config struct {
	// Binary is the kubeadm to run; "" is [Binary].
	Binary string
	// EtcContainerd, when set, is a directory that kubeadm sees as
	// /etc/containerd: it runs in a mount namespace of its own with the
	// directory bind-mounted there (the host's /etc/containerd must exist
	// as the mount point), so that kubeadm with fallback.patch reads the
	// test runtime's config.toml as the node's.
	EtcContainerd string
	// Verbosity, when above 0, is kubeadm's -v (klog's V levels: the
	// sandbox image check logs what it could not learn at 4).
	Verbosity int
	// KubernetesVersion is the ClusterConfiguration's kubernetesVersion;
	// "" means the kubeadm's own version (Binary), so nothing is fetched.
	KubernetesVersion string
	// ImageRepository is the ClusterConfiguration's imageRepository; ""
	// leaves kubeadm's default.
	ImageRepository string
	// CRISocket is InitConfiguration.nodeRegistration.criSocket (a
	// unix:// URL); needed by Preflight.
	CRISocket string
}

// YAML returns c as a kubeadm config file: an InitConfiguration and a
// ClusterConfiguration of kubeadm.k8s.io/v1beta4 (kubeadm 1.37.2 refuses its
// kubeadm.k8s.io/v1 outside `kubeadm config migrate/validate
// --allow-experimental-api`: cmd/kubeadm/app/util/config/common.go).
func (c Config) YAML() string {
	k8s := c.KubernetesVersion
	if k8s == "" {
		_, k8s = Binary()
	}
	var b strings.Builder
	b.WriteString("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n")
	// A fixed address from TEST-NET-1 (RFC 5737): without one kubeadm picks
	// the default route's interface, which a sandbox may not have, and a
	// loopback address makes it look for a global address on lo
	// (cmd/kubeadm/app/util/config/initconfiguration.go,
	// SetAPIEndpointDynamicDefaults). The pre-flight binds nothing.
	b.WriteString("localAPIEndpoint:\n  advertiseAddress: 192.0.2.10\n  bindPort: 6443\n")
	// localhost: the Hostname check resolves the node name, and this one
	// resolves from /etc/hosts, without a DNS query.
	b.WriteString("nodeRegistration:\n  name: localhost\n  imagePullPolicy: IfNotPresent\n")
	if c.CRISocket != "" {
		fmt.Fprintf(&b, "  criSocket: %s\n", c.CRISocket)
	}
	b.WriteString("---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n")
	fmt.Fprintf(&b, "kubernetesVersion: %s\n", k8s)
	if c.ImageRepository != "" {
		fmt.Fprintf(&b, "imageRepository: %s\n", c.ImageRepository)
	}
	return b.String()
}

// writeConfig writes c.YAML() into a temporary file.
func writeConfig(t testing.TB, c Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeadm.yaml")
	if err := os.WriteFile(path, []byte(c.YAML()), 0o600); err != nil {
		t.Fatalf("kubeadmtest: %v", err)
	}
	return path
}

// run runs kubeadm with args and returns stdout, stderr and the error.
func run(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runAs(t, Config{}, args...)
}

// runAs runs c's kubeadm with args, seeing c.EtcContainerd as
// /etc/containerd.
func runAs(t testing.TB, c Config, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := c.Binary
	if bin == "" {
		bin, _ = Binary()
	}
	if c.EtcContainerd != "" {
		// unshare(1) makes the new mount namespace's propagation private:
		// the bind mount never reaches the host.
		args = append([]string{"--mount", "sh", "-c", `mount --bind "$0" /etc/containerd && exec "$@"`, c.EtcContainerd, bin}, args...)
		bin = "unshare"
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Dir = t.TempDir()
	// No proxy and no kubeconfig from the caller's environment.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + cmd.Dir}
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// Version returns `kubeadm version -o short`.
func Version(t testing.TB) string {
	t.Helper()
	out, errOut, err := run(t, "version", "-o", "short")
	if err != nil {
		t.Fatalf("kubeadmtest: kubeadm version: %v\n%s", err, errOut)
	}
	return strings.TrimSpace(out)
}

// ImagesList runs `kubeadm config images list -o json --config FILE` with c
// written as the config file and returns the images in kubeadm's order.
func ImagesList(t testing.TB, c Config) []string {
	t.Helper()
	return imagesList(t, "--config", writeConfig(t, c))
}

// ImagesListVersion runs `kubeadm config images list -o json
// --kubernetes-version V` (no config file: kubeadm's defaults) and returns
// the images in kubeadm's order.
func ImagesListVersion(t testing.TB, kubernetesVersion string) []string {
	t.Helper()
	return imagesList(t, "--kubernetes-version", kubernetesVersion)
}

func imagesList(t testing.TB, args ...string) []string {
	t.Helper()
	out, errOut, err := run(t, append([]string{"config", "images", "list", "-o", "json"}, args...)...)
	if err != nil {
		t.Fatalf("kubeadmtest: kubeadm config images list: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	imgs, err := parseImages([]byte(out))
	if err != nil {
		t.Fatalf("kubeadmtest: kubeadm config images list: %v\n%s", err, out)
	}
	return imgs
}

// parseImages reads kubeadm's `config images list -o json` output
// (kind Images, apiVersion output.kubeadm.k8s.io/v1alpha3).
func parseImages(b []byte) ([]string, error) {
	var v struct {
		Kind   string   `json:"kind"`
		Images []string `json:"images"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("parse images JSON: %w", err)
	}
	if v.Kind != "Images" || len(v.Images) == 0 {
		return nil, fmt.Errorf("parse images JSON: kind %q with %d images, want kind Images with some", v.Kind, len(v.Images))
	}
	return v.Images, nil
}

// PauseImage returns the pause image among images (the one whose repository
// ends in "/pause"), or "".
func PauseImage(images []string) string {
	for _, img := range images {
		name, _, _ := strings.Cut(img, "@")
		if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
			name = name[:i]
		}
		if strings.HasSuffix(name, "/pause") {
			return img
		}
	}
	return ""
}

// PreflightResult is what `kubeadm init phase preflight` said.
type PreflightResult struct {
	// Stdout and Stderr are kubeadm's output.
	Stdout, Stderr string
	// Err is the command's error (nil when it exited 0).
	Err error
	// Warnings are the "[WARNING Check]: ..." lines and klog warning
	// messages, in order.
	Warnings []string
	// SandboxWarning is kubeadm's sandbox image warning, "" when it gave
	// none.
	SandboxWarning string
	// RuntimeSandbox and KubeadmSandbox are the two images the sandbox
	// warning names ("" without one).
	RuntimeSandbox, KubeadmSandbox string
	// Pulled reports whether kubeadm printed that it pulled an image
	// (it should not: the test stores them all).
	Pulled bool
}

// Preflight runs `kubeadm init phase preflight --config FILE
// --ignore-preflight-errors IgnoredChecks` with c (c.CRISocket is required)
// and returns what kubeadm said. It does not fail the test when kubeadm
// fails: the caller checks Err.
func Preflight(t testing.TB, c Config) PreflightResult {
	t.Helper()
	if c.CRISocket == "" {
		t.Fatal("kubeadmtest: Preflight needs Config.CRISocket")
	}
	var r PreflightResult
	args := []string{"init", "phase", "preflight", "--config", writeConfig(t, c),
		"--ignore-preflight-errors", strings.Join(IgnoredChecks, ",")}
	if c.Verbosity > 0 {
		args = append(args, fmt.Sprintf("--v=%d", c.Verbosity))
	}
	r.Stdout, r.Stderr, r.Err = runAs(t, c, args...)
	parsePreflight(&r)
	return r
}

var (
	// kubeadm's RunChecks prints "\t[WARNING Name]: message".
	checkWarningRE = regexp.MustCompile(`\[WARNING ([^\]]+)\]: (.*)`)
	// klog's header: "W1202 17:40:00.123456   12345 checks.go:920] message".
	klogWarningRE = regexp.MustCompile(`(?m)^W\d{4} [\d:.]+ +\d+ [^\]]+\] (.*)$`)
	// cmd/kubeadm/app/preflight/checks.go (v1.37.2), ImagePullCheck.Check.
	sandboxWarningRE = regexp.MustCompile(`detected that the sandbox image "([^"]*)" of the container runtime is inconsistent with that used by kubeadm\. It is recommended to use "([^"]*)" as the CRI sandbox image\.`)
	// cmd/kubeadm/app/preflight/checks.go: "[preflight] Pulling image"-like
	// lines come from klog V(1); pull failures are errors. A pull that
	// happened prints "Pulled" at V(1) only, so the test also checks the
	// runtime's images.
	pulledRE = regexp.MustCompile(`(?i)\bpulled? image\b`)
)

func parsePreflight(r *PreflightResult) {
	for _, text := range []string{r.Stdout, r.Stderr} {
		for _, m := range checkWarningRE.FindAllStringSubmatch(text, -1) {
			r.Warnings = append(r.Warnings, "["+m[1]+"] "+m[2])
		}
		for _, m := range klogWarningRE.FindAllStringSubmatch(text, -1) {
			r.Warnings = append(r.Warnings, m[1])
		}
		if m := sandboxWarningRE.FindStringSubmatch(text); m != nil && r.SandboxWarning == "" {
			r.SandboxWarning, r.RuntimeSandbox, r.KubeadmSandbox = m[0], m[1], m[2]
		}
		if pulledRE.MatchString(text) {
			r.Pulled = true
		}
	}
}
