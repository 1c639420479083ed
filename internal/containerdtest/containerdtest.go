package containerdtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version selects a containerd build.
type Version int

const (
	// V1 is containerd 1.6 from Debian's containerd package (1.6.20, config
	// version 2).
	V1 Version = 1
	// V2 is containerd 2.2 built from source (2.2.10, config version 3).
	V2 Version = 2
	// V17 is containerd 1.7 built from source (1.7.35, config version 2).
	V17 Version = 17
	// V23 is containerd 2.3 built from source (2.3.7, config version 4).
	V23 Version = 23
	// V24 is containerd 2.4 built from source (2.4.2, config version 4).
	V24 Version = 24
	// V233 is containerd 2.3.3 built from source (config version 4): the
	// newest release whose RunPodSandbox looks the sandbox image up by the
	// name as configured (issue 40; see TestLiveSandboxRun). Not in
	// [Versions], which holds one release per minor.
	V233 Version = 233
	// V24Pin is containerd 2.4.2 with contrib/containerd/pin.patch: its
	// pinned_images go through pin.Compile and IsPinned. Not in
	// [Versions]: it is no release.
	V24Pin Version = 2400
	// V24Status is containerd 2.4.2 with contrib/containerd/status.patch:
	// its CRI Status verbose info reports config.sandboxImage, as 1.x did
	// (pkg/cri/server/status.go, v1.7.35) and 2.x does not
	// (internal/cri/server/status.go, v2.4.2). Not in [Versions].
	V24Status Version = 2401
	// V24PinStatus is containerd 2.4.2 with pin.patch and status.patch.
	// Not in [Versions].
	V24PinStatus Version = 2402
)

// build describes one Version.
type build struct {
	name, release       string // "containerd-1.7", "1.7.35"
	envContainerd       string
	defaultContainerd   string // "" means under the cache: containerd/v<release>/containerd
	configVersion       int
	ctrFromV1, fromDeps bool
}

func (v Version) build() build {
	switch v {
	case V1:
		return build{name: "containerd-1.6", release: "1.6.20", envContainerd: EnvContainerd1,
			defaultContainerd: "/usr/bin/containerd", configVersion: 2, ctrFromV1: true}
	case V17:
		return build{name: "containerd-1.7", release: "1.7.35", envContainerd: EnvContainerd17, configVersion: 2, fromDeps: true}
	case V2:
		return build{name: "containerd-2.2", release: "2.2.10", envContainerd: EnvContainerd2, configVersion: 3, fromDeps: true}
	case V23:
		return build{name: "containerd-2.3", release: "2.3.7", envContainerd: EnvContainerd23, configVersion: 4, fromDeps: true}
	case V233:
		return build{name: "containerd-2.3.3", release: "2.3.3", envContainerd: EnvContainerd233, configVersion: 4, fromDeps: true}
	case V24:
		return build{name: "containerd-2.4", release: "2.4.2", envContainerd: EnvContainerd24, configVersion: 4, fromDeps: true}
	case V24Pin:
		return build{name: "containerd-2.4-pin", release: "2.4.2", envContainerd: EnvContainerd24Pin,
			defaultContainerd: filepath.Join(CacheDir(), "containerd-patched", "v2.4.2", "containerd"), configVersion: 4, fromDeps: true}
	case V24Status:
		return build{name: "containerd-2.4-status", release: "2.4.2", envContainerd: EnvContainerd24Status,
			defaultContainerd: filepath.Join(CacheDir(), "containerd-patched-status", "v2.4.2", "containerd"), configVersion: 4, fromDeps: true}
	case V24PinStatus:
		return build{name: "containerd-2.4-pin+status", release: "2.4.2", envContainerd: EnvContainerd24PinStatus,
			defaultContainerd: filepath.Join(CacheDir(), "containerd-patched-pin+status", "v2.4.2", "containerd"), configVersion: 4, fromDeps: true}
	}
	return build{name: fmt.Sprintf("containerd(%d)", int(v))}
}

// Versions returns every supported build, oldest first.
func Versions() []Version { return []Version{V1, V17, V2, V23, V24} }

// String returns a short name such as "containerd-1.7", usable as a subtest
// name.
func (v Version) String() string { return v.build().name }

// Release returns the exact containerd release of the build, such as "1.7.35".
func (v Version) Release() string { return v.build().release }

// ConfigVersion returns the config.toml version the helper writes for v: 2
// for 1.6 and 1.7, 3 for 2.2, 4 for 2.3 and 2.4.
func (v Version) ConfigVersion() int { return v.build().configVersion }

// Environment variables read by the helper.
const (
	EnvRequire      = runtimetest.EnvRequire
	EnvCache        = runtimetest.EnvCache
	EnvContainerd1  = "SANDBOXPIN_CONTAINERD1"
	EnvContainerd17 = "SANDBOXPIN_CONTAINERD_1_7"
	EnvContainerd2  = "SANDBOXPIN_CONTAINERD2"
	EnvContainerd23 = "SANDBOXPIN_CONTAINERD_2_3"
	EnvContainerd24 = "SANDBOXPIN_CONTAINERD_2_4"
	// EnvContainerd233 is the containerd 2.3.3 of [V233].
	EnvContainerd233 = "SANDBOXPIN_CONTAINERD_2_3_3"
	// EnvContainerd24Pin is the patched containerd 2.4.2 of [V24Pin].
	EnvContainerd24Pin = "SANDBOXPIN_CONTAINERD_2_4_PATCHED"
	EnvCtr1            = "SANDBOXPIN_CTR1"
	EnvCtr2            = "SANDBOXPIN_CTR2"
	// EnvShim24 is containerd 2.4's containerd-shim-runc-v2: pods on 2.x
	// need their own release's shim (with Debian's 1.6 shim, 2.4.2 fails
	// RunPodSandbox with "type with url … not found").
	EnvShim24 = "SANDBOXPIN_CONTAINERD_2_4_SHIM"

	// EnvContainerd24Status is the containerd 2.4.2 of [V24Status].
	EnvContainerd24Status = "SANDBOXPIN_CONTAINERD_2_4_STATUS"
	// EnvContainerd24PinStatus is the containerd 2.4.2 of [V24PinStatus].
	EnvContainerd24PinStatus = "SANDBOXPIN_CONTAINERD_2_4_PIN_STATUS"
)

// startTimeout bounds the wait for the CRI plugin; containerd boots in well
// under a second here, but CI machines can be slow: a CI run with the
// cluster test beside the kubelet rows on two cores saw containerd 2.4.2
// still loading its plugins after 60 s.
const startTimeout = 2 * time.Minute

// Options configure a containerd instance.
type Options struct {
	// SandboxImage is the configured sandbox image: sandbox_image for 1.x
	// (config version 2), pinned_images.sandbox for 2.x (versions 3 and 4).
	// "" keeps the runtime's default.
	SandboxImage string
	// Images are imported into the k8s.io namespace before Start returns.
	Images []Image
	// ConfigVersion overrides the config version written (0: the build's
	// own, [Version.ConfigVersion]), to see how a build reads an older
	// file: version 3 on 2.3+ keeps the [grpc] address and
	// pinned_images.sandbox.
	ConfigVersion int
	// RestrictOOMScoreAdj sets the CRI plugin's restrict_oom_score_adj, so
	// that containers and sandboxes (-998) get an oom_score_adj no lower
	// than containerd's own. Pods need it on a machine without
	// CAP_SYS_RESOURCE: there runc fails a negative value with "can't get
	// final child's PID from pipe: EOF".
	RestrictOOMScoreAdj bool
	// Offline runs containerd in a network namespace of its own that holds
	// only loopback: a pull (such as of a deleted sandbox image, when a pod
	// needs it) fails at once, and nothing leaves the machine; hostNetwork
	// pods share that namespace. The CRI and ttrpc sockets are unix
	// sockets, reachable as ever.
	Offline bool
	// Registry is the host:port of a plain-HTTP registry (such as
	// registrytest's) that serves the images of every registry: the helper
	// writes a hosts.toml naming it for registry.k8s.io, k8s.gcr.io,
	// docker.io and _default under the CRI plugin's registry config_path,
	// so that a CRI PullImage of "registry.k8s.io/pause:3.10.1" fetches
	// "pause:3.10.1" from it. An Offline containerd cannot reach it.
	Registry string
	// Metrics is the host:port of containerd's Prometheus metrics
	// (/v1/metrics; on 1.6.20 grpc_server_handled_total counts every CRI
	// call by method and code, seen in TestSoak); "" serves none. With Offline the address is in
	// containerd's own network namespace, where any port is free.
	Metrics string
	// ExtraTOML is appended to the config as is, such as a
	// [plugins."io.containerd.grpc.v1.cri"] table in a version 3 file.
	ExtraTOML string
	// Wrap is a command that runs containerd: its words, then containerd's
	// path and arguments (for example nsenter into a node's mount namespace,
	// as internal/clustertest does; the shims and runc inherit it, so the
	// pods' hostPath volumes resolve there). It must exec containerd, so that
	// the signals of Stop reach it. Not with Offline.
	Wrap []string
}

// Containerd is a running containerd.
type Containerd struct {
	// Version is the build that runs.
	Version Version
	// Socket is the path of the gRPC socket, and Endpoint the same as a
	// "unix://" URL.
	Socket, Endpoint string
	// Dir is the temporary directory that holds the socket, config, root,
	// state and log.
	Dir string

	ctr     string
	logPath string
	offline bool
	wrap    []string

	// The running process, replaced by Restart.
	bin    string
	logf   *os.File
	cmd    *exec.Cmd
	exited chan struct{}
}

// CacheDir returns $SANDBOXPIN_CACHE, or ${XDG_CACHE_HOME:-$HOME/.cache}/sandboxpin.
func CacheDir() string {
	return runtimetest.CacheDir()
}

// Binaries returns the containerd and ctr binaries for v (from the
// environment or the defaults), whether or not they exist. Every build but V1
// uses the ctr of SANDBOXPIN_CTR2 (ctr 2.4 imports into 1.7 and 2.x alike).
func Binaries(v Version) (containerd, ctr string) {
	env := func(k, def string) string {
		if s := os.Getenv(k); s != "" {
			return s
		}
		return def
	}
	bd := v.build()
	ctr1 := env(EnvCtr1, "/usr/bin/ctr")
	def := bd.defaultContainerd
	if def == "" {
		def = filepath.Join(CacheDir(), "containerd", "v"+bd.release, "containerd")
	}
	containerd = env(bd.envContainerd, def)
	if bd.ctrFromV1 {
		return containerd, ctr1
	}
	ctr = os.Getenv(EnvCtr2)
	if ctr == "" {
		ctr = filepath.Join(CacheDir(), "ctr", "v2.4.2", "ctr")
		if _, err := os.Stat(ctr); err != nil {
			// ctr 1.6 imports into containerd 2.2 just as well (checked
			// with 2.2.9); the image API did not change.
			ctr = ctr1
		}
	}
	return containerd, ctr
}

// Shim returns the containerd-shim-runc-v2 that v's pods need when it is not
// the one in PATH (Debian's, for 1.6): for V24, V24Pin, V24Status and
// V24PinStatus (the patches leave the shim alone), and for V23 and V233, whose pods run with 2.4.2's shim
// as well (seen live in TestLiveSandboxRun), SANDBOXPIN_CONTAINERD_2_4_SHIM
// or the one scripts/deps.sh builds into the cache, if it exists; else "".
func (v Version) Shim() string {
	switch v {
	case V23, V233, V24, V24Pin, V24Status, V24PinStatus:
	default:
		return ""
	}
	shim := os.Getenv(EnvShim24)
	if shim == "" {
		shim = filepath.Join(CacheDir(), "containerd-shim-runc-v2", "v"+V24.Release(), "containerd-shim-runc-v2")
	}
	if _, err := os.Stat(shim); err != nil { //nolint:gosec // G703: a path the test's environment names
		return ""
	}
	return shim
}

// howTo says how to get what v needs.
func howTo(v Version) string {
	if !v.build().fromDeps {
		return "run as root after `apt-get install -y containerd` (it brings ctr and runc)"
	}
	return "run `bash scripts/deps.sh` as root (it builds containerd " + v.Release() + " into " + CacheDir() +
		" and installs Debian's containerd for ctr and runc), then source " + filepath.Join(CacheDir(), "env.sh")
}

// Available reports whether v can run here, and if not, why.
func Available(v Version) (bool, string) {
	containerd, ctr := Binaries(v)
	if os.Geteuid() != 0 {
		return false, fmt.Sprintf("%v needs root; %s", v, howTo(v))
	}
	for _, bin := range []string{containerd, ctr} {
		if _, err := exec.LookPath(bin); err != nil {
			return false, fmt.Sprintf("%v: %s not found (%v); %s", v, bin, err, howTo(v))
		}
	}
	return true, ""
}

// Require skips the test when v cannot run here, or fails it when
// SANDBOXPIN_REQUIRE_RUNTIMES=1.
func Require(t testing.TB, v Version) {
	t.Helper()
	runtimetest.Require(t, v.String(), func() (bool, string) { return Available(v) })
}

// Start starts containerd v with opts and waits until its CRI plugin answers.
// It skips or fails the test as Require does when v cannot run. Everything is
// stopped and removed by t.Cleanup.
func Start(t testing.TB, v Version, opts Options) *Containerd {
	t.Helper()
	Require(t, v)
	bin, ctr := Binaries(v)

	// Unix socket paths must stay under 108 bytes: use a short directory
	// under /tmp rather than t.TempDir, whose name holds the test name.
	dir, err := os.MkdirTemp("/tmp", "sbp")
	if err != nil {
		t.Fatalf("containerdtest: %v", err)
	}
	c := &Containerd{
		Version: v,
		Socket:  filepath.Join(dir, "c.sock"),
		Dir:     dir,
		ctr:     ctr,
		logPath: filepath.Join(dir, "containerd.log"),
	}
	c.Endpoint = "unix://" + c.Socket
	for _, sub := range []string{"root", "state", "cni", "cni-bin"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatalf("containerdtest: %v", err)
		}
	}
	if opts.Registry != "" {
		if err := writeHosts(filepath.Join(dir, "certs.d"), opts.Registry); err != nil {
			t.Fatalf("containerdtest: %v", err)
		}
	}
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(c.config(opts)), 0o600); err != nil {
		t.Fatalf("containerdtest: %v", err)
	}
	logf, err := os.Create(c.logPath)
	if err != nil {
		t.Fatalf("containerdtest: %v", err)
	}
	c.bin, c.logf, c.offline, c.wrap = bin, logf, opts.Offline, opts.Wrap
	if err := c.start(); err != nil {
		_ = logf.Close()
		_ = os.RemoveAll(dir)
		t.Fatalf("containerdtest: %v", err)
	}
	t.Cleanup(func() {
		c.stop()
		_ = logf.Close()
		if t.Failed() {
			t.Logf("containerd log (%s):\n%s", bin, c.Log())
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("containerdtest: cleanup: %v", err)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.waitReady(ctx, c.exited); err != nil {
		t.Fatalf("containerdtest: %v did not become ready: %v\nconfig:\n%s\nlog:\n%s", v, err, c.config(opts), c.Log())
	}
	if len(opts.Images) > 0 {
		c.Import(t, opts.Images...)
	}
	return c
}

// start starts the containerd process with c's config.
func (c *Containerd) start() error {
	cmd := exec.Command(c.bin, "--config", filepath.Join(c.Dir, "config.toml"))
	if c.offline {
		// unshare execs the shell, which execs containerd: one process,
		// so the signals of stop reach containerd itself.
		cmd = exec.Command("unshare", "--net", "--", "/bin/sh", "-c", `ip link set lo up && exec "$@"`, "containerdtest",
			c.bin, "--config", filepath.Join(c.Dir, "config.toml"))
	}
	if len(c.wrap) > 0 {
		cmd = exec.Command(c.wrap[0], append(c.wrap[1:], c.bin, "--config", filepath.Join(c.Dir, "config.toml"))...)
	}
	cmd.Stdout, cmd.Stderr = c.logf, c.logf
	if shim := c.Version.Shim(); shim != "" {
		// containerd looks its runtime shim up in PATH.
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(shim)+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	cmd.Dir = c.Dir
	// Its own process group, so that a Ctrl-C of `go test` does not reach it
	// before the cleanup does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	c.cmd, c.exited = cmd, exited
	return nil
}

// stop ends the containerd process (SIGTERM, SIGKILL after 10 s), if one
// runs, and waits for it.
func (c *Containerd) stop() {
	if c.cmd == nil {
		return
	}
	runtimetest.Terminate(c.cmd.Process, c.exited, 10*time.Second)
	c.cmd = nil
}

// Stop stops containerd (SIGTERM) and waits until it has exited; its root,
// state and config stay for Restart. Not safe for concurrent use with
// Restart.
func (c *Containerd) Stop(t testing.TB) {
	t.Helper()
	c.stop()
}

// Restart starts containerd again after Stop, on the same socket, config,
// root and state, and waits until its CRI plugin answers.
func (c *Containerd) Restart(t testing.TB) {
	t.Helper()
	if err := c.RestartContext(context.Background()); err != nil {
		t.Fatalf("containerdtest: %v\nlog:\n%s", err, c.Log())
	}
}

// RestartContext is Restart for a caller that is not the test's goroutine
// (such as internal/systemdtest's stand-in for systemd): it stops
// containerd, starts it again with the same command line (its --config
// path read anew) and waits until its CRI plugin answers, or returns
// why not.
func (c *Containerd) RestartContext(ctx context.Context) error {
	c.stop()
	if err := c.start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := c.waitReady(ctx, c.exited); err != nil {
		return fmt.Errorf("%v did not become ready again: %w", c.Version, err)
	}
	return nil
}

// Log returns what containerd wrote so far.
func (c *Containerd) Log() string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// Import builds an OCI archive of images and imports it into the k8s.io
// namespace. It returns the image IDs, in order.
func (c *Containerd) Import(t testing.TB, images ...Image) []string {
	t.Helper()
	archive, err := os.CreateTemp(c.Dir, "images-*.tar")
	if err != nil {
		t.Fatalf("containerdtest: %v", err)
	}
	_ = archive.Close()
	defer os.Remove(archive.Name())
	ids, err := WriteArchive(archive.Name(), images)
	if err != nil {
		t.Fatalf("containerdtest: write archive: %v", err)
	}
	var names []string
	for _, img := range images {
		names = append(names, img.Names...)
	}
	c.importArchive(t, archive.Name(), runnable(images), names)
	return ids
}

// ImportArchive imports the OCI image layout archive at path (such as the
// release's image, internal/release), whose images are named names, ready to
// run.
func (c *Containerd) ImportArchive(t testing.TB, path string, names ...string) {
	t.Helper()
	c.importArchive(t, path, true, names)
}

// importArchive imports the archive at path, unpacked for the CRI
// snapshotter if run, and waits until CRI lists names.
func (c *Containerd) importArchive(t testing.TB, path string, run bool, names []string) {
	t.Helper()
	// --all-platforms: the archive names its platform, no need to match the
	// host's variant. --no-unpack: CRI lists images without snapshots, and
	// unpacking would need the snapshotter ctr picks, not the CRI one.
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	args := []string{"--address", c.Socket, "-n", "k8s.io", "images", "import"}
	if run {
		// Unpacked into the CRI plugin's snapshotter, so that sandboxes
		// and containers can be created from it.
		args = append(args, "--snapshotter", "native")
		if c.Version != V1 && c.Version != V17 {
			// Through the transfer service, ctr 2.4 fails to unpack
			// into containerd 2.4.2 with "unable to initialize
			// unpacker: no unpack platforms defined" (the service's
			// unpack_config is unset here): import client-side, as
			// ctr 1.x does.
			args = append(args, "--local", "--platform", "linux/"+runtime.GOARCH)
		}
	} else {
		args = append(args, "--all-platforms", "--no-unpack")
	}
	if c.Version == V17 {
		// ctr 2.x imports through the transfer service by default; that of
		// containerd 1.7.35 stores no image for our archive ("No images store
		// for sha256:…" in pkg/transfer/local/import.go), so import
		// client-side as ctr 1.x does.
		args = append(args, "--local")
	}
	out, err := exec.CommandContext(ctx, c.ctr, append(args, path)...).CombinedOutput()
	if err != nil {
		t.Fatalf("containerdtest: %s images import: %v\n%s\nlog:\n%s", c.ctr, err, out, c.Log())
	}
	// The CRI plugin learns about imported images from events, after ctr
	// returns: wait until ListImages shows every name.
	if err := c.waitListed(ctx, names); err != nil {
		t.Fatalf("containerdtest: imported images not listed by CRI: %v\nlog:\n%s", err, c.Log())
	}
}

// runnable reports whether any of images has an executable.
func runnable(images []Image) bool {
	for _, img := range images {
		if img.Executable != nil {
			return true
		}
	}
	return false
}

// waitListed polls ListImages until every name is a repo tag or repo digest
// of some image.
func (c *Containerd) waitListed(ctx context.Context, names []string) error {
	conn, err := grpc.DialContext(ctx, c.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials())) //nolint:staticcheck // SA1019: NewClient needs grpc 1.63, above this module's floor
	if err != nil {
		return err
	}
	defer conn.Close()
	is := runtimeapi.NewImageServiceClient(conn)
	for {
		began := time.Now()
		resp, err := is.ListImages(ctx, &runtimeapi.ListImagesRequest{}, grpc.MaxCallRecvMsgSize(64<<20))
		if err != nil {
			return err
		}
		// Every 20 ms, or, in a store of thousands of images, after
		// twice as long as a ListImages takes: the polling must not
		// starve the CRI plugin of the time it needs to take the
		// images in.
		wait := max(20*time.Millisecond, 2*time.Since(began))
		listed := map[string]bool{}
		for _, img := range resp.GetImages() {
			for _, tag := range img.GetRepoTags() {
				listed[tag] = true
			}
			for _, d := range img.GetRepoDigests() {
				listed[d] = true
			}
		}
		var missing []string
		for _, n := range names {
			if !listed[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: still missing %d names, such as %q", ctx.Err(), len(missing), missing[0])
		case <-time.After(wait):
		}
	}
}

// waitReady polls the CRI Version and Status RPCs until the runtime is ready.
func (c *Containerd) waitReady(ctx context.Context, exited <-chan struct{}) error {
	return runtimetest.WaitReady(ctx, c.Socket, exited, errors.New("containerd exited"), c.probe)
}

// probe asks the CRI plugin once whether it is ready.
func (c *Containerd) probe(ctx context.Context) error {
	conn, err := grpc.DialContext(ctx, c.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials())) //nolint:staticcheck // SA1019: NewClient needs grpc 1.63, above this module's floor
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	if _, err := rt.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		return err
	}
	st, err := rt.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return err
	}
	for _, cond := range st.GetStatus().GetConditions() {
		if cond.GetType() == runtimeapi.RuntimeReady && !cond.GetStatus() {
			return fmt.Errorf("RuntimeReady is false: %s", cond.GetMessage())
		}
	}
	if _, err := runtimeapi.NewImageServiceClient(conn).ListImages(ctx, &runtimeapi.ListImagesRequest{}); err != nil {
		return err
	}
	return nil
}

// config returns the containerd config for c: version 2 for 1.6 and 1.7
// (sandbox_image), 3 for 2.2 and 4 for 2.3+ (pinned_images.sandbox). In
// version 4 the server addresses live in io.containerd.server.v1.* plugin
// tables; a top-level [grpc] address is ignored there (seen live with 2.3.7
// and 2.4.2, which then listen on /run/containerd/containerd.sock).
func (c *Containerd) config(opts Options) string {
	return c.baseConfig(opts) + opts.ExtraTOML
}

// baseConfig is config without Options.ExtraTOML.
func (c *Containerd) baseConfig(opts Options) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	var b strings.Builder
	version := c.Version.ConfigVersion()
	if opts.ConfigVersion != 0 {
		version = opts.ConfigVersion
	}
	common := func(disabled []string) {
		fmt.Fprintf(&b, "version = %d\nroot = %s\nstate = %s\n", version, q(filepath.Join(c.Dir, "root")), q(filepath.Join(c.Dir, "state")))
		ds := make([]string, len(disabled))
		for i, d := range disabled {
			ds[i] = q(d)
		}
		fmt.Fprintf(&b, "disabled_plugins = [%s]\n\n", strings.Join(ds, ", "))
		if version >= 4 {
			b.WriteString("[debug]\n  level = \"info\"\n\n")
			fmt.Fprintf(&b, "[plugins.'io.containerd.server.v1.grpc']\n  address = %s\n\n", q(c.Socket))
			fmt.Fprintf(&b, "[plugins.'io.containerd.server.v1.ttrpc']\n  address = %s\n\n", q(c.Socket+".ttrpc"))
			b.WriteString("[plugins.'io.containerd.server.v1.debug']\n  address = \"\"\n\n")
			fmt.Fprintf(&b, "[plugins.'io.containerd.server.v1.metrics']\n  address = %s\n\n", q(opts.Metrics))
			return
		}
		fmt.Fprintf(&b, "[grpc]\n  address = %s\n\n[ttrpc]\n  address = %s\n\n", q(c.Socket), q(c.Socket+".ttrpc"))
		fmt.Fprintf(&b, "[debug]\n  address = \"\"\n  level = \"info\"\n\n[metrics]\n  address = %s\n\n", q(opts.Metrics))
	}
	cniConf, cniBin := q(filepath.Join(c.Dir, "cni")), q(filepath.Join(c.Dir, "cni-bin"))
	if version == 2 {
		common([]string{
			"io.containerd.internal.v1.opt",
			"io.containerd.snapshotter.v1.aufs",
			"io.containerd.snapshotter.v1.blockfile",
			"io.containerd.snapshotter.v1.btrfs",
			"io.containerd.snapshotter.v1.devmapper",
			"io.containerd.snapshotter.v1.zfs",
			"io.containerd.tracing.processor.v1.otlp",
			"io.containerd.internal.v1.tracing",
			"io.containerd.nri.v1.nri",
		})
		b.WriteString("[plugins.\"io.containerd.grpc.v1.cri\"]\n")
		if opts.SandboxImage != "" {
			fmt.Fprintf(&b, "  sandbox_image = %s\n", q(opts.SandboxImage))
		}
		if opts.RestrictOOMScoreAdj {
			b.WriteString("  restrict_oom_score_adj = true\n")
		}
		b.WriteString("  [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n    snapshotter = \"native\"\n")
		fmt.Fprintf(&b, "  [plugins.\"io.containerd.grpc.v1.cri\".cni]\n    conf_dir = %s\n    bin_dir = %s\n", cniConf, cniBin)
		if opts.Registry != "" {
			fmt.Fprintf(&b, "  [plugins.\"io.containerd.grpc.v1.cri\".registry]\n    config_path = %s\n", q(filepath.Join(c.Dir, "certs.d")))
		}
		return b.String()
	}
	common([]string{
		"io.containerd.internal.v1.opt",
		"io.containerd.nri.v1.nri",
		"io.containerd.snapshotter.v1.blockfile",
		"io.containerd.snapshotter.v1.btrfs",
		"io.containerd.snapshotter.v1.devmapper",
		"io.containerd.snapshotter.v1.erofs",
		"io.containerd.differ.v1.erofs",
		"io.containerd.snapshotter.v1.zfs",
		"io.containerd.tracing.processor.v1.otlp",
		"io.containerd.internal.v1.tracing",
	})
	b.WriteString("[plugins.'io.containerd.cri.v1.images']\n  snapshotter = \"native\"\n")
	if opts.SandboxImage != "" {
		fmt.Fprintf(&b, "  [plugins.'io.containerd.cri.v1.images'.pinned_images]\n    sandbox = %s\n", q(opts.SandboxImage))
	}
	if opts.RestrictOOMScoreAdj {
		b.WriteString("\n[plugins.'io.containerd.cri.v1.runtime']\n  restrict_oom_score_adj = true\n")
	}
	fmt.Fprintf(&b, "\n[plugins.'io.containerd.cri.v1.runtime'.cni]\n  conf_dir = %s\n  bin_dirs = [%s]\n", cniConf, cniBin)
	if opts.Registry != "" {
		fmt.Fprintf(&b, "\n[plugins.'io.containerd.cri.v1.images'.registry]\n  config_path = %s\n", q(filepath.Join(c.Dir, "certs.d")))
		// CRI pulls through the transfer service, which without this
		// fails with "unable to initialize unpacker: no unpack platforms
		// defined" here (seen with 2.4.2; its default names the
		// overlayfs snapshotter: plugins/transfer/plugin_defaults_linux.go,
		// v2.4.2). Unpack into the CRI plugin's snapshotter instead.
		fmt.Fprintf(&b, "\n[[plugins.'io.containerd.transfer.v1.local'.unpack_config]]\n  platform = %s\n  snapshotter = \"native\"\n  differ = \"walking\"\n", q("linux/"+runtime.GOARCH))
	}
	return b.String()
}

// registryHosts are the registries whose pulls Options.Registry serves;
// "_default" is the directory that containerd falls back to for any other
// host (core/remotes/docker/config/config_unix.go, hostPaths, v2.4.2).
var registryHosts = []string{"registry.k8s.io", "k8s.gcr.io", "docker.io", "_default"}

// writeHosts writes dir/HOST/hosts.toml for each of registryHosts, sending
// pulls and resolves to the plain-HTTP registry at addr. The format is
// containerd's hosts.toml (docs/hosts.md, v2.4.2; read by 1.6 as well).
func writeHosts(dir, addr string) error {
	body := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+addr, "http://"+addr)
	for _, h := range registryHosts {
		if err := os.MkdirAll(filepath.Join(dir, h), 0o750); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, h, "hosts.toml"), []byte(body), 0o600); err != nil {
			return err
		}
	}
	return nil
}
