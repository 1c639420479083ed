package criotest

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
)

// Version is the CRI-O release that scripts/deps.sh builds.
const Version = "v1.36.3"

// Environment variables read by the helper.
const (
	EnvCRIO   = "SANDBOXPIN_CRIO"
	EnvPinns  = "SANDBOXPIN_PINNS"
	EnvConmon = "SANDBOXPIN_CONMON"
	EnvRunc   = "SANDBOXPIN_RUNC"
	EnvSkopeo = "SANDBOXPIN_SKOPEO"
)

// startTimeout bounds the wait for CRI-O to answer; it starts in about half
// a second here.
const startTimeout = 60 * time.Second

// ErrExited is returned by [Run] and [CRIO.TryRestart] when CRI-O exits
// before it answers on its socket, as it does on a configuration it refuses.
var ErrExited = errors.New("criotest: crio exited before it was ready")

// Options configure a CRI-O instance.
type Options struct {
	// PauseImage is [crio.image] pause_image in crio.conf; "" leaves the
	// key out (CRI-O's default applies).
	PauseImage string
	// PinnedImages is [crio.image] pinned_images in crio.conf; nil leaves
	// the key out.
	PinnedImages []string
	// DropIns are files written to the drop-in directory
	// (Dir/etc/crio/crio.conf.d), by name, read after crio.conf in lexical
	// order.
	DropIns map[string]string
	// Images are loaded into CRI-O's storage before it starts.
	Images []containerdtest.Image
	// Offline runs CRI-O in a network namespace of its own that holds
	// only loopback: a pull (such as of a deleted pause image, which
	// RunPodSandbox pulls) fails at once, and nothing leaves the machine;
	// hostNetwork pods share that namespace.
	Offline bool
}

// Binaries are the programs a CRI-O instance needs.
type Binaries struct {
	CRIO, Pinns, Conmon, Runc, Skopeo string
}

// DefaultBinaries returns the binaries from the environment, or their
// defaults, whether or not they exist.
func DefaultBinaries() Binaries {
	env := func(k, def string) string {
		if s := os.Getenv(k); s != "" {
			return s
		}
		return def
	}
	dir := filepath.Join(containerdtest.CacheDir(), "crio", Version)
	return Binaries{
		CRIO:   env(EnvCRIO, filepath.Join(dir, "crio")),
		Pinns:  env(EnvPinns, filepath.Join(dir, "pinns")),
		Conmon: env(EnvConmon, "/usr/bin/conmon"),
		Runc:   env(EnvRunc, "/usr/sbin/runc"),
		Skopeo: env(EnvSkopeo, "/usr/bin/skopeo"),
	}
}

const howTo = "run `bash scripts/deps.sh` as root (it builds crio and pinns, and installs Debian's conmon, runc and skopeo)"

// Available reports whether CRI-O can run here, and if not, why.
func Available() (bool, string) {
	if os.Geteuid() != 0 {
		return false, "CRI-O needs root; " + howTo
	}
	b := DefaultBinaries()
	for _, bin := range []string{b.CRIO, b.Pinns, b.Conmon, b.Runc, b.Skopeo} {
		if _, err := exec.LookPath(bin); err != nil {
			return false, fmt.Sprintf("CRI-O: %s not found (%v); %s", bin, err, howTo)
		}
	}
	return true, ""
}

// Require skips the test when CRI-O cannot run here or under -short, or
// fails it when SANDBOXPIN_REQUIRE_RUNTIMES=1.
func Require(t testing.TB) {
	t.Helper()
	runtimetest.Require(t, "CRI-O", Available)
}

// CRIO is a CRI-O instance: running after Start, or stopped.
type CRIO struct {
	// Socket is the path of the CRI socket, and Endpoint the same as a
	// "unix://" URL.
	Socket, Endpoint string
	// Dir is the temporary directory that holds everything; it is laid out
	// as a node root: ConfigPath is Dir/etc/crio/crio.conf, ConfigDir is
	// Dir/etc/crio/crio.conf.d.
	Dir                   string
	ConfigPath, ConfigDir string
	// StorageRoot and RunRoot are CRI-O's containers-storage root and
	// runroot (driver vfs).
	StorageRoot, RunRoot string

	bin     Binaries
	opts    Options
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts CRI-O with opts and waits until it answers. It skips or
// fails the test as Require does when CRI-O cannot run. Everything is stopped
// and removed by t.Cleanup.
func Start(t testing.TB, opts Options) *CRIO {
	t.Helper()
	c, err := Run(t, opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return c
}

// Run is Start, but returns an error wrapping [ErrExited] when CRI-O refuses
// the configuration, instead of failing the test. The instance is returned
// either way (stopped on error), for its Log.
func Run(t testing.TB, opts Options) (*CRIO, error) {
	t.Helper()
	Require(t)
	// Unix socket paths must stay under 108 bytes: a short directory under
	// /tmp rather than t.TempDir, whose name holds the test name.
	dir, err := os.MkdirTemp("/tmp", "sbc")
	if err != nil {
		t.Fatalf("criotest: %v", err)
	}
	c := &CRIO{
		Dir:         dir,
		Socket:      filepath.Join(dir, "crio.sock"),
		ConfigPath:  filepath.Join(dir, "etc", "crio", "crio.conf"),
		ConfigDir:   filepath.Join(dir, "etc", "crio", "crio.conf.d"),
		StorageRoot: filepath.Join(dir, "storage"),
		RunRoot:     filepath.Join(dir, "run", "storage"),
		bin:         DefaultBinaries(),
		logPath:     filepath.Join(dir, "crio.log"),
	}
	c.Endpoint = "unix://" + c.Socket
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			t.Logf("crio log (without the configuration dumps):\n%s", c.shortLog())
		}
		// CRI-O's vfs storage may leave mounts behind (shm of sandboxes);
		// none is made here, since no pod runs.
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("criotest: cleanup: %v", err)
		}
	})
	for _, sub := range []string{"etc/crio/crio.conf.d", "etc/containers/registries.conf.d", "etc/sysconfig", "etc/cni/net.d",
		"opt/cni/bin", "var/log/crio/pods", "var/lib/crio", "run/crio/exits", "run/ns", "run/runc", "hooks.d",
		"cdi", "nri/conf.d", "nri/plugins", "policies", "keys", "storage", "run/storage"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatalf("criotest: %v", err)
		}
	}
	files := map[string]string{
		"etc/containers/policy.json":      `{"default":[{"type":"insecureAcceptAnything"}]}` + "\n",
		"etc/containers/registries.conf":  "unqualified-search-registries = []\nshort-name-mode = \"disabled\"\n",
		"etc/containers/storage.conf":     fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n", c.StorageRoot, c.RunRoot),
		"etc/containers/mounts.conf":      "",
		"etc/sysconfig/irqbalance.config": "",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatalf("criotest: %v", err)
		}
	}
	if len(opts.Images) > 0 {
		c.Load(t, opts.Images...)
	}
	c.opts = opts
	c.writeConfig(t)
	for name, content := range opts.DropIns {
		if err := os.WriteFile(filepath.Join(c.ConfigDir, name), []byte(content), 0o600); err != nil {
			t.Fatalf("criotest: %v", err)
		}
	}
	return c, c.start()
}

// Log returns what CRI-O wrote so far, over every start.
func (c *CRIO) Log() string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// shortLog is Log without the lines that print the whole configuration.
func (c *CRIO) shortLog() string {
	var b strings.Builder
	for _, line := range strings.Split(c.Log(), "\n") {
		if !strings.Contains(line, "Current CRI-O configuration") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// env is the environment of crio and skopeo: containers/image and
// containers/storage read these instead of /etc/containers.
func (c *CRIO) env() []string {
	return append(os.Environ(),
		"CONTAINERS_STORAGE_CONF="+filepath.Join(c.Dir, "etc/containers/storage.conf"),
		"CONTAINERS_REGISTRIES_CONF="+filepath.Join(c.Dir, "etc/containers/registries.conf"),
		"REGISTRIES_CONFIG_PATH="+filepath.Join(c.Dir, "etc/containers/registries.conf"),
		"CONTAINERS_POLICY_JSON="+filepath.Join(c.Dir, "etc/containers/policy.json"),
		"TMPDIR="+c.Dir,
	)
}

// start starts crio on the current config and waits until it answers.
func (c *CRIO) start() error {
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("criotest: %w", err)
	}
	cmd := exec.Command(c.bin.CRIO,
		"--config", c.ConfigPath,
		"--config-dir", c.ConfigDir,
		"--registries-conf", filepath.Join(c.Dir, "etc/containers/registries.conf"),
		"--registries-conf-dir", filepath.Join(c.Dir, "etc/containers/registries.conf.d"),
	)
	if c.opts.Offline {
		// unshare execs the shell, which execs crio: one process, so
		// that Reload's SIGHUP and Stop's signals reach crio itself.
		cmd = exec.Command("unshare", append([]string{"--net", "--", "/bin/sh", "-c", `ip link set lo up && exec "$@"`, "criotest"}, cmd.Args...)...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = c.Dir
	cmd.Env = c.env()
	// Its own process group, so that a Ctrl-C of `go test` does not reach it
	// before the cleanup does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("criotest: start %s: %w", c.bin.CRIO, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(exited)
	}()
	c.mu.Lock()
	c.cmd, c.exited = cmd, exited
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.waitReady(ctx, exited); err != nil {
		c.Stop()
		cfg, _ := os.ReadFile(c.ConfigPath)
		return fmt.Errorf("criotest: crio did not become ready: %w\nconfig:\n%s\nlog:\n%s", err, cfg, c.shortLog())
	}
	return nil
}

// Stop stops CRI-O (SIGTERM, then SIGKILL after 10s) if it runs.
func (c *CRIO) Stop() {
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	c.cmd = nil
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	runtimetest.Terminate(cmd.Process, exited, 10*time.Second)
	_ = os.Remove(c.Socket)
}

// Restart stops CRI-O and starts it again on the current config.
func (c *CRIO) Restart(t testing.TB) {
	t.Helper()
	if err := c.TryRestart(); err != nil {
		t.Fatalf("%v", err)
	}
}

// TryRestart is Restart, returning an error wrapping [ErrExited] when
// CRI-O refuses the config.
func (c *CRIO) TryRestart() error {
	c.Stop()
	return c.start()
}

// Configure rewrites crio.conf with pause_image and pinned_images as in
// opts (its DropIns and Images are ignored). It takes effect at the next
// Reload or Restart.
func (c *CRIO) Configure(t testing.TB, pauseImage string, pinnedImages []string) {
	t.Helper()
	c.opts.PauseImage, c.opts.PinnedImages = pauseImage, pinnedImages
	c.writeConfig(t)
}

// reloadDone and reloadFailed are what CRI-O 1.36 logs after a SIGHUP
// (server/server.go, startReloadWatcher, v1.36.3).
const (
	reloadDone   = "Configuration reload completed"
	reloadFailed = "Unable to reload configuration"
)

// Reload sends SIGHUP and waits until CRI-O logs that it reloaded its
// configuration (pause_image and pinned_images among others). It fails the
// test when CRI-O logs that the reload failed.
func (c *CRIO) Reload(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	cmd := c.cmd
	c.mu.Unlock()
	if cmd == nil {
		t.Fatal("criotest: Reload: crio is not running")
	}
	done, failed := strings.Count(c.Log(), reloadDone), strings.Count(c.Log(), reloadFailed)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatalf("criotest: SIGHUP: %v", err)
	}
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		log := c.Log()
		if strings.Count(log, reloadFailed) > failed {
			t.Fatalf("criotest: crio did not reload its config:\n%s", log)
		}
		if strings.Count(log, reloadDone) > done {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("criotest: crio did not log %q within %v", reloadDone, startTimeout)
}

// Load builds an OCI archive of each image and copies it into CRI-O's
// storage under each of its names, with skopeo; CRI-O need not run. It
// returns the image IDs, in order.
func (c *CRIO) Load(t testing.TB, images ...containerdtest.Image) []string {
	t.Helper()
	ids := make([]string, 0, len(images))
	for i, img := range images {
		archive := filepath.Join(c.Dir, fmt.Sprintf("image-%d.tar", i))
		id, err := containerdtest.WriteArchive(archive, []containerdtest.Image{img})
		if err != nil {
			t.Fatalf("criotest: write archive: %v", err)
		}
		ids = append(ids, id[0])
		// The archive's index lists the image once per name, all the same
		// manifest: select it by the first tag (any entry is the image), or
		// take the only entry.
		src := "oci-archive:" + archive
		if len(img.Names) > 1 {
			tag := ""
			for _, n := range img.Names {
				if j := strings.LastIndexByte(n, ':'); j > strings.LastIndexByte(n, '/') {
					tag = n[j+1:]
					break
				}
			}
			if tag == "" {
				t.Fatalf("criotest: image %q: one name needs a tag to select it in the archive", img.Names)
			}
			src += ":" + tag
		}
		for _, name := range img.Names {
			// Copying the same image under another name adds the name to the
			// stored image.
			c.copy(t, src, c.storageRef(name))
		}
		_ = os.Remove(archive)
	}
	return ids
}

// LoadByDigest stores img (its content made from its names, as Load does)
// under repo@<manifest digest> only, as an image pulled by digest is stored,
// and returns that reference. CRI-O need not run.
func (c *CRIO) LoadByDigest(t testing.TB, repo string, img containerdtest.Image) string {
	t.Helper()
	archive := filepath.Join(c.Dir, "image-by-digest.tar")
	defer os.Remove(archive)
	if _, err := containerdtest.WriteArchive(archive, []containerdtest.Image{img}); err != nil {
		t.Fatalf("criotest: write archive: %v", err)
	}
	dgst, err := manifestDigest(archive)
	if err != nil {
		t.Fatalf("criotest: %s: %v", archive, err)
	}
	ref := repo + "@" + dgst
	c.copy(t, "oci-archive:"+archive, c.storageRef(ref))
	return ref
}

// storageRef is the skopeo transport reference of name in CRI-O's storage.
func (c *CRIO) storageRef(name string) string {
	return fmt.Sprintf("containers-storage:[vfs@%s+%s]%s", c.StorageRoot, c.RunRoot, name)
}

// copyTimeout bounds one skopeo copy. A copy of the test's small images takes
// under a second even with fourteen instances loading at once beside four busy
// loops on two CPUs (measured); one CI run saw a first copy still running,
// with no output, after 60 s.
const copyTimeout = time.Minute

// copy copies src to dst with skopeo, or fails the test. A copy that
// outlives copyTimeout gets SIGQUIT, so that the log shows where skopeo (a
// Go program) was waiting, and is tried once more: the copy is idempotent.
func (c *CRIO) copy(t testing.TB, src, dst string) {
	t.Helper()
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), copyTimeout)
		cmd := c.skopeo(ctx, t, "--policy", filepath.Join(c.Dir, "etc/containers/policy.json"),
			"--registries-conf", filepath.Join(c.Dir, "etc/containers/registries.conf"),
			"copy", "--quiet", src, dst)
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
		cmd.WaitDelay = 10 * time.Second
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		switch {
		case err == nil:
			return
		case timedOut && try == 1:
			t.Logf("criotest: skopeo copy %s %s still ran after %v; trying once more. Its output:\n%s", src, dst, copyTimeout, out)
		default:
			t.Fatalf("criotest: skopeo copy %s %s (try %d): %v\n%s", src, dst, try, err, out)
		}
	}
}

// privateVarLib is the shell command that hides the host's /var/lib under
// a tmpfs in a private mount namespace, then runs its arguments. As root,
// skopeo (containers/image) always opens its blob-info cache at
// /var/lib/containers/cache; it has no flag to move it.
const privateVarLib = `mount -t tmpfs -o mode=0755 sandboxpin /var/lib && exec "$0" "$@"`

var (
	unshareOnce sync.Once
	unsharePath string // "" when a private mount namespace cannot be made here
)

// skopeo returns the command that runs skopeo with args in c's environment,
// in a private mount namespace with its own /var/lib when the machine allows
// it (util-linux unshare, CAP_SYS_ADMIN), so that nothing is written under
// the host's /var/lib.
func (c *CRIO) skopeo(ctx context.Context, t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	unshareOnce.Do(func() {
		p, err := exec.LookPath("unshare")
		if err != nil {
			return
		}
		if exec.Command(p, "--mount", "--propagation", "private", "sh", "-c", privateVarLib, "true").Run() == nil {
			unsharePath = p
		}
	})
	var cmd *exec.Cmd
	if unsharePath != "" {
		cmd = exec.CommandContext(ctx, unsharePath, append([]string{"--mount", "--propagation", "private",
			"sh", "-c", privateVarLib, c.bin.Skopeo}, args...)...)
	} else {
		t.Logf("criotest: no private mount namespace here (unshare --mount failed): skopeo writes its blob-info cache under /var/lib/containers/cache")
		cmd = exec.CommandContext(ctx, c.bin.Skopeo, args...)
	}
	cmd.Env = c.env()
	return cmd
}

// manifestDigest returns the digest of the first manifest in the index of
// an OCI archive.
func manifestDigest(archive string) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			return "", fmt.Errorf("no index.json: %w", err)
		}
		if h.Name != "index.json" {
			continue
		}
		var index struct {
			Manifests []struct {
				Digest string `json:"digest"`
			} `json:"manifests"`
		}
		if err := json.NewDecoder(tr).Decode(&index); err != nil {
			return "", fmt.Errorf("index.json: %w", err)
		}
		if len(index.Manifests) == 0 {
			return "", errors.New("index.json lists no manifest")
		}
		return index.Manifests[0].Digest, nil
	}
}

// waitReady polls the CRI Version and ListImages RPCs until CRI-O answers.
func (c *CRIO) waitReady(ctx context.Context, exited <-chan struct{}) error {
	return runtimetest.WaitReady(ctx, c.Socket, exited, ErrExited, c.probe)
}

func (c *CRIO) probe(ctx context.Context) error {
	conn, err := grpc.DialContext(ctx, c.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials())) //nolint:staticcheck // SA1019: NewClient needs grpc 1.63, above this module's floor
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := runtimeapi.NewRuntimeServiceClient(conn).Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		return err
	}
	_, err = runtimeapi.NewImageServiceClient(conn).ListImages(ctx, &runtimeapi.ListImagesRequest{})
	return err
}

// Images lists the images through CRI, sorted by their first repo tag.
func (c *CRIO) Images(t testing.TB) []*runtimeapi.Image {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, c.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials())) //nolint:staticcheck // SA1019: as in probe
	if err != nil {
		t.Fatalf("criotest: dial: %v", err)
	}
	defer conn.Close()
	resp, err := runtimeapi.NewImageServiceClient(conn).ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatalf("criotest: ListImages: %v", err)
	}
	imgs := resp.GetImages()
	sort.Slice(imgs, func(i, j int) bool {
		return strings.Join(imgs[i].GetRepoTags(), ",") < strings.Join(imgs[j].GetRepoTags(), ",")
	})
	return imgs
}

// writeConfig writes crio.conf: every path in Dir, pause_image and
// pinned_images from c.opts.
func (c *CRIO) writeConfig(t testing.TB) {
	t.Helper()
	if err := os.WriteFile(c.ConfigPath, []byte(c.config()), 0o600); err != nil {
		t.Fatalf("criotest: %v", err)
	}
}

// ImageSection is the line of crio.conf that starts the [crio.image] table,
// which the harness writes last: pause_image, then pinned_images follow it
// (each on one line) when set.
const ImageSection = "[crio.image]"

func (c *CRIO) config() string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	p := func(rel string) string { return q(filepath.Join(c.Dir, rel)) }
	var b strings.Builder
	fmt.Fprintf(&b, "# written by criotest\n[crio]\nroot = %s\nrunroot = %s\nstorage_driver = \"vfs\"\n", q(c.StorageRoot), q(c.RunRoot))
	fmt.Fprintf(&b, "log_dir = %s\nversion_file = %s\nversion_file_persist = %s\nclean_shutdown_file = %s\n",
		p("var/log/crio/pods"), p("run/crio/version"), p("var/lib/crio/version"), p("var/lib/crio/clean.shutdown"))
	fmt.Fprintf(&b, "\n[crio.api]\nlisten = %s\nstream_address = \"127.0.0.1\"\nstream_port = \"0\"\n", q(c.Socket))
	fmt.Fprintf(&b, "\n[crio.runtime]\ncgroup_manager = \"cgroupfs\"\nconmon_cgroup = \"pod\"\ndefault_runtime = \"runc\"\n")
	fmt.Fprintf(&b, "decryption_keys_path = %s\nirqbalance_config_file = %s\nirqbalance_config_restore_file = \"disable\"\n",
		p("keys"), p("etc/sysconfig/irqbalance.config"))
	fmt.Fprintf(&b, "cdi_spec_dirs = [%s]\nhooks_dir = [%s]\ndefault_mounts_file = %s\n", p("cdi"), p("hooks.d"), p("etc/containers/mounts.conf"))
	fmt.Fprintf(&b, "container_exits_dir = %s\ncontainer_attach_socket_dir = %s\nnamespaces_dir = %s\npinns_path = %s\n",
		p("run/crio/exits"), p("run/crio"), p("run/ns"), q(c.bin.Pinns))
	fmt.Fprintf(&b, "\n[crio.runtime.runtimes.runc]\nruntime_path = %s\nruntime_type = \"oci\"\nruntime_root = %s\nmonitor_path = %s\nmonitor_cgroup = \"pod\"\n",
		q(c.bin.Runc), p("run/runc"), q(c.bin.Conmon))
	fmt.Fprintf(&b, "\n[crio.network]\nnetwork_dir = %s\nplugin_dirs = [%s]\n", p("etc/cni/net.d"), p("opt/cni/bin"))
	fmt.Fprintf(&b, "\n[crio.metrics]\nenable_metrics = false\n")
	fmt.Fprintf(&b, "\n[crio.nri]\nenable_nri = false\nnri_listen = %s\nnri_plugin_dir = %s\nnri_plugin_config_dir = %s\n",
		p("nri/nri.sock"), p("nri/plugins"), p("nri/conf.d"))
	fmt.Fprintf(&b, "\n%s\nsignature_policy = %s\nsignature_policy_dir = %s\nnamespaced_auth_dir = %s\n",
		ImageSection, p("etc/containers/policy.json"), p("policies"), p("etc/crio/auth"))
	if c.opts.PauseImage != "" {
		fmt.Fprintf(&b, "pause_image = %s\n", q(c.opts.PauseImage))
	}
	if c.opts.PinnedImages != nil {
		ps := make([]string, len(c.opts.PinnedImages))
		for i, s := range c.opts.PinnedImages {
			ps[i] = q(s)
		}
		fmt.Fprintf(&b, "pinned_images = [%s]\n", strings.Join(ps, ", "))
	}
	return b.String()
}
