package kubelettest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// Environment variables read by the helper.
const (
	EnvKubelet        = "SANDBOXPIN_KUBELET"
	EnvKubeletVersion = "SANDBOXPIN_KUBELET_VERSION"
	EnvRequire        = runtimetest.EnvRequire
	EnvCache          = runtimetest.EnvCache
)

// DefaultVersion is the kubelet release scripts/deps.sh builds.
const DefaultVersion = "v1.37.2"

const (
	// GCInterval is how often the eviction manager looks at the node, and
	// so runs image GC while the node is under disk pressure:
	// evictionMonitoringPeriod in pkg/kubelet/kubelet.go at v1.37.2.
	GCInterval = 10 * time.Second
	// DefaultMinimumGCAge is the imageMinimumGCAge the helper configures:
	// the kubelet's default is 2 min (and a 0 in the file means that
	// default, pkg/kubelet/apis/config/v1beta1/defaults.go at v1.37.2); its
	// validation only refuses a negative age. 1 s lets an image go in the
	// second GC round after the kubelet first lists it.
	DefaultMinimumGCAge = time.Second
)

// startTimeout bounds the wait for "Started kubelet"; it takes 1–3 s here,
// but this machine and CI run other builds at the same time.
const startTimeout = 2 * time.Minute

// stopTimeout is how long Stop waits after SIGTERM before SIGKILL.
const stopTimeout = 15 * time.Second

// Options configure a kubelet.
type Options struct {
	// RuntimeEndpoint is the CRI socket, "unix:///path" (required). The
	// image service is the same socket.
	RuntimeEndpoint string
	// MinimumGCAge is imageMinimumGCAge; 0 means DefaultMinimumGCAge.
	MinimumGCAge time.Duration
	// NoDiskPressure turns disk pressure off, at any disk usage of the
	// host: no eviction thresholds on the file systems, and image GC by
	// usage only on a full disk. Image GC then runs only in the kubelet's
	// periodic round, every ImageGCPeriod, for MaximumGCAge.
	NoDiskPressure bool
	// MaximumGCAge is imageMaximumGCAge (KEP-4210); 0 leaves it unset (no
	// age-based GC). See ImageGCPeriod.
	MaximumGCAge time.Duration
	// VModule is the kubelet's --vmodule ("" for none), for example
	// GCRoundVModule.
	VModule string
	// StaticPods are written into the staticPodPath before the kubelet
	// starts: file name → manifest (YAML).
	StaticPods map[string]string
	// Verbosity is the kubelet's --v (0: only what it logs by default, which
	// includes the image GC lines).
	Verbosity int
	// ExtraArgs are appended to the kubelet's command line, as a unit's
	// $KUBELET_EXTRA_ARGS is (see [Run]).
	ExtraArgs []string
}

// Kubelet is a running kubelet.
type Kubelet struct {
	// Dir is the temporary directory that holds the root dir, cert dir,
	// pod logs, static pods, config and log.
	Dir string
	// ConfigPath is the KubeletConfiguration file, and Config its text.
	ConfigPath, Config string
	// Args are the kubelet's command-line arguments.
	Args []string

	log     *logBuffer
	logPath string
	logf    *os.File
	cmd     *exec.Cmd
	exited  chan struct{}
	stopMu  sync.Mutex
	stopped bool
	sysctls map[string]string // host values at Start
}

// Binary returns the kubelet binary and its version (from the environment or
// the defaults), whether or not it exists.
func Binary() (path, version string) {
	version = os.Getenv(EnvKubeletVersion)
	if version == "" {
		version = DefaultVersion
	}
	path = os.Getenv(EnvKubelet)
	if path == "" {
		path = filepath.Join(runtimetest.CacheDir(), "kubelet", version, "kubelet")
	}
	return path, version
}

// tools are the programs the isolation needs besides the kubelet
// (util-linux and iproute2).
var tools = []string{"unshare", "mount", "ip"}

// Available reports whether a kubelet can run here, and if not, why.
func Available() (bool, string) {
	bin, _ := Binary()
	if os.Geteuid() != 0 {
		return false, "the kubelet needs root; run the tests as root (scripts/test.sh does so in CI)"
	}
	if _, err := exec.LookPath(bin); err != nil {
		return false, fmt.Sprintf("kubelet: %s not found (%v); run `bash scripts/deps.sh` as root (it builds the kubelet into %s), then source %s",
			bin, err, runtimetest.CacheDir(), filepath.Join(runtimetest.CacheDir(), "env.sh"))
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			return false, fmt.Sprintf("kubelet: %s not found (%v); install util-linux and iproute2", tool, err)
		}
	}
	return true, ""
}

// Require skips the test when a kubelet cannot run here, or fails it when
// SANDBOXPIN_REQUIRE_RUNTIMES=1.
func Require(t testing.TB) {
	t.Helper()
	runtimetest.Require(t, "kubelet", Available)
}

// KernelTunables returns the settings the kubelet sets on start unless they
// already hold these values (setupKernelTunables in
// pkg/kubelet/cm/container_manager_linux.go, values from
// k8s.io/component-helpers/node/util/sysctl, both at v1.37.2), as paths
// under /proc/sys. A harness covers each with a file that holds the value,
// in the kubelet's mount namespace, so the host keeps its own.
func KernelTunables() map[string]string { return maps.Clone(kernelTunables) }

// kernelTunables are KernelTunables.
var kernelTunables = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// Start starts a kubelet with opts and waits until it logs "Started kubelet".
// It skips or fails the test as Require does when the kubelet cannot run.
// The kubelet is stopped, checked for leftovers and removed by t.Cleanup.
func Start(t testing.TB, opts Options) *Kubelet {
	t.Helper()
	k, err := Run(t, opts)
	if err != nil {
		t.Fatalf("kubelettest: %v", err)
	}
	return k
}

// Run is Start, except that a kubelet that exits (or never logs "Started
// kubelet") does not fail the test: Run returns the error, with the
// kubelet's log, and the Kubelet, whose Log and Exited still answer. A
// kubelet that refuses its command line (an unknown flag in
// Options.ExtraArgs) exits so.
func Run(t testing.TB, opts Options) (*Kubelet, error) {
	t.Helper()
	Require(t)
	if opts.RuntimeEndpoint == "" {
		t.Fatal("kubelettest: Options.RuntimeEndpoint is required")
	}
	if p := strings.TrimPrefix(opts.RuntimeEndpoint, "unix://"); hidden(p) {
		t.Fatalf("kubelettest: the kubelet cannot see the endpoint %s under a directory it runs with hidden (%s)", opts.RuntimeEndpoint, hiddenDirs)
	}
	bin, _ := Binary()
	dir, err := os.MkdirTemp("/tmp", "sbk")
	if err != nil {
		t.Fatalf("kubelettest: %v", err)
	}
	k := &Kubelet{Dir: dir, log: &logBuffer{}, logPath: filepath.Join(dir, "kubelet.log")}
	k.sysctls = readSysctls()
	t.Cleanup(func() {
		k.stop()
		if k.logf != nil {
			_ = k.logf.Close()
		}
		if t.Failed() {
			t.Logf("kubelet log (%s):\n%s", k.logPath, k.Log())
		}
		k.checkLeftovers(t)
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("kubelettest: cleanup: %v", err)
		}
	})
	if err := k.prepare(opts); err != nil {
		t.Fatalf("kubelettest: %v", err)
	}
	if err := k.start(bin); err != nil {
		t.Fatalf("kubelettest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if _, err := k.WaitForLog(ctx, regexp.MustCompile(`"Started kubelet"`)); err != nil {
		return k, fmt.Errorf("the kubelet did not start: %w\nargs: %q\nconfig:\n%s\nlog:\n%s", err, k.Args, k.Config, k.Log())
	}
	return k, nil
}

// prepare writes the directories, static pods and config, and sets k.Args.
func (k *Kubelet) prepare(opts Options) error {
	for _, sub := range []string{"root", "pki", "pod-logs", "manifests", "sysctl"} {
		if err := os.Mkdir(filepath.Join(k.Dir, sub), 0o700); err != nil {
			return err
		}
	}
	for name, manifest := range opts.StaticPods {
		if strings.ContainsRune(name, '/') {
			return fmt.Errorf("static pod file name %q has a slash", name)
		}
		if err := os.WriteFile(filepath.Join(k.Dir, "manifests", name), []byte(manifest), 0o600); err != nil {
			return err
		}
	}
	for name, value := range kernelTunables {
		if err := os.WriteFile(k.sysctlFile(name), []byte(value+"\n"), 0o600); err != nil {
			return err
		}
	}
	k.Config = config(k.Dir, opts)
	k.ConfigPath = filepath.Join(k.Dir, "config.yaml")
	if err := os.WriteFile(k.ConfigPath, []byte(k.Config), 0o600); err != nil {
		return err
	}
	k.Args = []string{
		"--config=" + k.ConfigPath,
		"--root-dir=" + filepath.Join(k.Dir, "root"),
		"--cert-dir=" + filepath.Join(k.Dir, "pki"),
		// This machine (and many CI containers) lacks CAP_SYS_RESOURCE:
		// the kubelet's default -999 for itself would fail.
		"--oom-score-adj=0",
		"--hostname-override=" + NodeName,
		"--node-ip=127.0.0.1",
		fmt.Sprintf("--v=%d", opts.Verbosity),
	}
	if opts.VModule != "" {
		k.Args = append(k.Args, "--vmodule="+opts.VModule)
	}
	k.Args = append(k.Args, opts.ExtraArgs...)
	// No --kubeconfig: the kubelet runs standalone and talks to no API
	// server.
	return nil
}

// hidden reports whether path is under one of hiddenDirs (or /var/run, a
// link to /run).
func hidden(path string) bool {
	for _, d := range append(strings.Fields(hiddenDirs), "/var/run") {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// NodeName is the kubelet's --hostname-override.
const NodeName = "sandboxpin-e2e"

// sysctlFile is the file in k.Dir that covers /proc/sys/name.
func (k *Kubelet) sysctlFile(name string) string {
	return filepath.Join(k.Dir, "sysctl", strings.ReplaceAll(name, "/", "."))
}

// hiddenDirs are covered by an empty tmpfs in the kubelet's mount namespace:
// it writes under them whatever its flags say (/var/log/containers, always
// created in initializeModules of pkg/kubelet/kubelet.go at v1.37.2;
// /run/xtables.lock of its iptables calls; anything a default path under
// /var/lib would catch), and the host keeps none of it.
const hiddenDirs = "/run /var/log /var/lib"

// hugePages is where the kubelet (through cAdvisor) finds the machine's huge
// page sizes; it gives every container a hugetlb limit of 0 for each. This
// machine (like many containers) has the hugetlb controller enabled in
// /proc/cgroups but not mounted: containerd 1.6.20 and 2.4.2 start such
// containers, but CRI-O 1.36.3 passes the limits on and runc fails with
// "cannot set hugetlb limit: container could not join or create cgroup"
// (seen live in TestKubeletGC). The kubelet's mount namespace covers the
// directory with an empty tmpfs, so it sees no huge page sizes and sets no
// such limits.
const hugePages = "/sys/kernel/mm/hugepages"

// isolate is the script unshare runs in the new namespaces before it becomes
// the kubelet: loopback up, the kernel settings covered (see the package
// documentation), then exec. $1 is the directory of covering files; the
// kubelet and its arguments follow.
const isolate = `set -e
dir=$1; shift
ip link set lo up
for d in ` + hiddenDirs + `; do
	mount -t tmpfs -o mode=0755 kubelettest "$d"
done
# No huge page sizes: see hugePages.
if [ -d ` + hugePages + ` ]; then
	mount -t tmpfs -o mode=0755,ro kubelettest ` + hugePages + `
fi
for f in "$dir"/*; do
	mount --bind "$f" "/proc/sys/$(basename "$f" | tr . /)"
done
exec "$@"`

// start starts the kubelet process.
func (k *Kubelet) start(bin string) error {
	logf, err := os.Create(k.logPath)
	if err != nil {
		return err
	}
	k.logf = logf
	args := append([]string{"--mount", "--propagation", "private", "--net", "--",
		"/bin/sh", "-c", isolate, "kubelettest", filepath.Join(k.Dir, "sysctl"), bin}, k.Args...)
	cmd := exec.Command("unshare", args...)
	cmd.Dir = k.Dir
	w := &teeWriter{buf: k.log, file: logf}
	cmd.Stdout, cmd.Stderr = w, w
	// Its own process group, so that a Ctrl-C of `go test` does not reach
	// it before the cleanup does, and so that Stop can end any child.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start unshare: %w", err)
	}
	k.cmd, k.exited = cmd, make(chan struct{})
	go func() {
		err := cmd.Wait()
		k.log.exit(err)
		close(k.exited)
	}()
	return nil
}

// Stop stops the kubelet (SIGTERM, then SIGKILL after 15 s) and waits until
// it and every process of its group have exited. Calling it again does
// nothing.
func (k *Kubelet) Stop(t testing.TB) {
	t.Helper()
	k.stop()
}

func (k *Kubelet) stop() {
	k.stopMu.Lock()
	defer k.stopMu.Unlock()
	if k.cmd == nil || k.stopped {
		return
	}
	k.stopped = true
	pgid := k.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-k.exited:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-k.exited
	}
	// A child the kubelet started (none is expected) would keep the
	// namespaces alive.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// Exited returns a channel that is closed when the kubelet process has
// exited.
func (k *Kubelet) Exited() <-chan struct{} { return k.exited }

// Log returns what the kubelet wrote so far (standard output and error).
func (k *Kubelet) Log() string { return k.log.String() }

// errExited is returned by the waits when the kubelet exits first.
var errExited = errors.New("the kubelet exited")

// WaitForLog waits until a line of the kubelet's log matches re, and returns
// the first such line. It fails when ctx ends or the kubelet exits first.
func (k *Kubelet) WaitForLog(ctx context.Context, re *regexp.Regexp) (string, error) {
	lines, err := k.WaitForLogCount(ctx, re, 1)
	if err != nil {
		return "", err
	}
	return lines[0], nil
}

// WaitForLogCount waits until n lines of the kubelet's log match re, and
// returns them.
func (k *Kubelet) WaitForLogCount(ctx context.Context, re *regexp.Regexp, n int) ([]string, error) {
	return k.log.wait(ctx, re, n)
}

// Lines returns the lines of the kubelet's log so far that match re.
func (k *Kubelet) Lines(re *regexp.Regexp) []string { return k.log.match(re, 0) }

// RemovingImage matches the line the kubelet logs when its image GC deletes
// the image with ID id (the runtime's image ID, "sha256:…"); an empty id
// matches any deletion. The message is freeImage's in
// pkg/kubelet/images/image_gc_manager.go at v1.37.2:
//
//	I1203 17:05:41.123456  4242 image_gc_manager.go:529] "Removing image to free bytes" imageID="sha256:…" size=… runtimeHandler=""
func RemovingImage(id string) *regexp.Regexp {
	if id == "" {
		return regexp.MustCompile(`"Removing image to free bytes" imageID=`)
	}
	return regexp.MustCompile(`"Removing image to free bytes" imageID="` + regexp.QuoteMeta(id) + `"`)
}

// GCRound matches the line the kubelet logs at the start of each image GC
// round that the eviction manager triggers (DeleteUnusedImages in
// pkg/kubelet/images/image_gc_manager.go at v1.37.2).
func GCRound() *regexp.Regexp {
	return regexp.MustCompile(`"Attempting to delete unused images"`)
}

// readSysctls returns the host's values of kernelTunables.
func readSysctls() map[string]string {
	got := make(map[string]string, len(kernelTunables))
	for name := range kernelTunables {
		b, err := os.ReadFile(filepath.Join("/proc/sys", name))
		if err != nil {
			got[name] = "error: " + err.Error()
			continue
		}
		got[name] = strings.TrimSpace(string(b))
	}
	return got
}

// checkLeftovers reports, as test errors, what a stopped kubelet left on the
// host: a mount under k.Dir, or a kernel setting that changed.
func (k *Kubelet) checkLeftovers(t testing.TB) {
	t.Helper()
	if k.cmd == nil {
		return
	}
	if now := readSysctls(); fmt.Sprint(now) != fmt.Sprint(k.sysctls) {
		t.Errorf("kubelettest: kernel settings changed while the kubelet ran: %v, before %v", now, k.sysctls)
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Errorf("kubelettest: %v", err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), k.Dir) {
			t.Errorf("kubelettest: a mount is left under %s: %s", k.Dir, sc.Text())
		}
	}
}
