package cridockerdtest

import (
	"context"
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

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// Version is a cri-dockerd release that scripts/deps.sh builds.
type Version string

// The builds: the oldest and the newest release the module proxy serves
// (v0.3.14, v0.3.17, v0.4.0, v0.4.3 and v0.4.4 download; see
// scripts/deps.sh). v0.4.0 cannot run here: it refuses Docker API 1.41, that
// of Debian 12's Docker Engine ("docker API version is older than 1.42.0":
// MinimumDockerAPIVersion in libdocker/client.go at v0.4.0; 1.26.0 at
// v0.3.14 and v0.4.4).
const (
	V0314 Version = "v0.3.14"
	V044  Version = "v0.4.4"
	// V044Pin is v0.4.4 with contrib/cri-dockerd/pin.patch;
	// not in Versions: no release.
	V044Pin Version = "v0.4.4+pin"
)

// patchSuffix marks a build with contrib/cri-dockerd/pin.patch.
const patchSuffix = "+pin"

// Versions returns every release build, oldest first.
func Versions() []Version { return []Version{V0314, V044} }

// Release is the version without its "v" or patch mark, as `cri-dockerd
// --version` prints it ("cri-dockerd 0.4.4 (98c4823)").
func (v Version) Release() string {
	return strings.TrimSuffix(strings.TrimPrefix(string(v), "v"), patchSuffix)
}

// Patched reports whether v is built with contrib/cri-dockerd/pin.patch.
func (v Version) Patched() bool { return strings.HasSuffix(string(v), patchSuffix) }

// Env is the variable that names v's binary:
// SANDBOXPIN_CRI_DOCKERD_0_4_4 for v0.4.4, SANDBOXPIN_CRI_DOCKERD_PATCHED
// for the patched build.
func (v Version) Env() string {
	if v.Patched() {
		return "SANDBOXPIN_CRI_DOCKERD_PATCHED"
	}
	return "SANDBOXPIN_CRI_DOCKERD_" + strings.ReplaceAll(v.Release(), ".", "_")
}

// Binary returns v's binary from the environment, or its place in the
// cache (scripts/deps.sh's build_cridockerd and build_cridockerd_patched).
func (v Version) Binary() string {
	if s := os.Getenv(v.Env()); s != "" {
		return s
	}
	dir := "cri-dockerd"
	if v.Patched() {
		dir = "cri-dockerd-patched"
	}
	return filepath.Join(containerdtest.CacheDir(), dir, "v"+v.Release(), "cri-dockerd")
}

// Environment variables that name Docker Engine's programs.
const (
	EnvDockerd = "SANDBOXPIN_DOCKERD"
	EnvDocker  = "SANDBOXPIN_DOCKER"
)

// EngineVersion is the Docker Engine of Debian 12's docker.io package, as
// its Version API reports it.
const EngineVersion = "20.10.24+dfsg1"

// startTimeout bounds the wait for dockerd and cri-dockerd to answer; each
// starts in under a second here.
const startTimeout = 60 * time.Second

// ErrExited is returned when dockerd or cri-dockerd exits before it answers.
var ErrExited = errors.New("cridockerdtest: exited before it was ready")

func env(k, def string) string {
	if s := os.Getenv(k); s != "" {
		return s
	}
	return def
}

func dockerd() string { return env(EnvDockerd, "/usr/sbin/dockerd") }

// docker is Debian's client: another docker earlier in PATH may be of a
// different release.
func docker() string { return env(EnvDocker, "/usr/bin/docker") }

const howTo = "run `bash scripts/deps.sh` as root (it installs Debian's docker.io and builds cri-dockerd)"

// Available reports whether v can run here, and if not, why.
func Available(v Version) (bool, string) {
	if os.Geteuid() != 0 {
		return false, "cri-dockerd needs root; " + howTo
	}
	for _, bin := range []string{dockerd(), docker(), v.Binary(), "unshare", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			return false, fmt.Sprintf("cri-dockerd %s: %s not found (%v); %s", v, bin, err, howTo)
		}
	}
	return true, ""
}

// Require skips the test when v cannot run here or under -short, or fails it
// when SANDBOXPIN_REQUIRE_RUNTIMES=1.
func Require(t testing.TB, v Version) {
	t.Helper()
	runtimetest.Require(t, "cri-dockerd "+string(v), func() (bool, string) { return Available(v) })
}

// Options configure an instance.
type Options struct {
	// PodInfraImage is --pod-infra-container-image; "" leaves the flag out
	// (cri-dockerd's built-in default applies).
	PodInfraImage string
	// Images are loaded into Docker before cri-dockerd starts.
	Images []containerdtest.Image
}

// CRIDockerd is a Docker Engine with cri-dockerd in front of it.
type CRIDockerd struct {
	Version Version
	// Socket is cri-dockerd's CRI socket, Endpoint the same as a "unix://"
	// URL; DockerHost is Docker's API ("unix://Dir/docker.sock").
	Socket, Endpoint, DockerHost string
	// Dir holds everything. It is laid out as a node root for resolve:
	// UnitPath is Dir/etc/systemd/system/cri-docker.service, whose
	// ExecStart is the command line cri-dockerd runs with (the binary as
	// /usr/bin/cri-dockerd, a hard link or copy of the build at
	// Dir/usr/bin/cri-dockerd).
	Dir, UnitPath string
	// Args are cri-dockerd's arguments, as it was started.
	Args []string

	opts Options

	mu    sync.Mutex
	procs []*proc
}

// proc is a running program.
type proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// Start starts Docker Engine, loads opts.Images, starts cri-dockerd v with
// opts, and waits until it answers. It skips or fails the test as Require
// does when v cannot run. Everything is stopped and removed by t.Cleanup.
func Start(t testing.TB, v Version, opts Options) *CRIDockerd {
	t.Helper()
	Require(t, v)
	// Unix socket paths must stay under 108 bytes, and dockerd's
	// containerd puts its own below the exec root: a short directory.
	dir, err := os.MkdirTemp("/tmp", "sbd")
	if err != nil {
		t.Fatalf("cridockerdtest: %v", err)
	}
	c := &CRIDockerd{
		Version:    v,
		Dir:        dir,
		Socket:     filepath.Join(dir, "cri.sock"),
		DockerHost: "unix://" + filepath.Join(dir, "docker.sock"),
		UnitPath:   filepath.Join(dir, "etc", "systemd", "system", "cri-docker.service"),
		opts:       opts,
	}
	c.Endpoint = "unix://" + c.Socket
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			for _, name := range []string{"dockerd", "cri-dockerd"} {
				t.Logf("%s log:\n%s", name, c.Log(name))
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("cridockerdtest: cleanup: %v", err)
		}
	})
	for _, sub := range []string{"data", "exec", "cri-dockerd", "cni/bin", "cni/net.d", "cni/cache", "docker-config",
		"etc/systemd/system", "usr/bin"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatalf("cridockerdtest: %v", err)
		}
	}
	if err := c.startDockerd(); err != nil {
		t.Fatalf("%v", err)
	}
	if len(opts.Images) > 0 {
		c.Load(t, opts.Images...)
	}
	if err := linkOrCopy(v.Binary(), filepath.Join(dir, "usr", "bin", "cri-dockerd")); err != nil {
		t.Fatalf("cridockerdtest: %v", err)
	}
	c.Args = []string{
		"--docker-endpoint", c.DockerHost,
		"--container-runtime-endpoint", c.Endpoint,
		"--cri-dockerd-root-directory", filepath.Join(dir, "cri-dockerd"),
		"--network-plugin=",
		"--cni-bin-dir", filepath.Join(dir, "cni/bin"),
		"--cni-conf-dir", filepath.Join(dir, "cni/net.d"),
		"--cni-cache-dir", filepath.Join(dir, "cni/cache"),
		"--streaming-bind-addr", "127.0.0.1:0",
	}
	if opts.PodInfraImage != "" {
		c.Args = append(c.Args, "--pod-infra-container-image", opts.PodInfraImage)
	}
	if err := c.writeUnit(); err != nil {
		t.Fatalf("cridockerdtest: %v", err)
	}
	if err := c.startCRIDockerd(); err != nil {
		t.Fatalf("%v", err)
	}
	return c
}

// writeUnit writes cri-docker.service as a package would, with the
// command line cri-dockerd runs with.
func (c *CRIDockerd) writeUnit() error {
	var b strings.Builder
	b.WriteString("[Unit]\nDescription=CRI Interface for Docker Application Container Engine\n" +
		"After=network-online.target docker.service\nRequires=docker.service\n\n[Service]\nType=notify\n")
	b.WriteString("ExecStart=/usr/bin/cri-dockerd")
	for _, a := range c.Args {
		b.WriteString(" " + systemdQuote(a))
	}
	b.WriteString("\nRestart=always\n\n[Install]\nWantedBy=multi-user.target\n")
	return os.WriteFile(c.UnitPath, []byte(b.String()), 0o600)
}

// systemdQuote quotes a for an ExecStart line when it needs it.
func systemdQuote(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t\"'\\;$%") {
		return a
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "%", "%%", "$", "$$").Replace(a) + `"`
}

// linkOrCopy makes dst the file src: a hard link, or a copy across file
// systems.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o700) //nolint:gosec // G306: a program
}

// dockerdScript runs in dockerd's new mount and network namespaces:
// loopback up, tmpfs over the host paths dockerd writes whatever its flags
// say, then dockerd itself (exec: one process, which Stop signals).
const dockerdScript = `set -e
ip link set lo up
mount --make-rprivate /
for d in /etc/docker /run /opt; do mkdir -p "$d"; mount -t tmpfs -o mode=0755 tmpfs "$d"; done
exec "$@"`

func (c *CRIDockerd) startDockerd() error {
	args := []string{"--net", "--mount", "--", "/bin/sh", "-c", dockerdScript, "cridockerdtest",
		dockerd(),
		"--data-root", filepath.Join(c.Dir, "data"),
		"--exec-root", filepath.Join(c.Dir, "exec"),
		"-H", c.DockerHost,
		"--pidfile", filepath.Join(c.Dir, "docker.pid"),
		"--iptables=false", "--ip6tables=false", "--bridge=none", "--storage-driver=vfs",
	}
	p, err := c.start("dockerd", "unshare", args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := waitFor(ctx, p, func() bool {
		_, err := c.docker(ctx, "version", "--format", "{{.Server.Version}}")
		return err == nil
	}); err != nil {
		return fmt.Errorf("cridockerdtest: dockerd did not become ready: %w\nlog:\n%s", err, c.Log("dockerd"))
	}
	return nil
}

// criDockerdScript runs in cri-dockerd's new namespaces: a /proc of its PID
// namespace (so it sees no dockerd or containerd to re-score), loopback up,
// then cri-dockerd.
const criDockerdScript = `set -e
mount --make-rprivate /
mount -t proc cridockerdtest-proc /proc
ip link set lo up
exec "$@"`

func (c *CRIDockerd) startCRIDockerd() error {
	args := append([]string{"--net", "--mount", "--pid", "--fork", "--kill-child", "--",
		"/bin/sh", "-c", criDockerdScript, "cridockerdtest", c.Version.Binary()}, c.Args...)
	p, err := c.start("cri-dockerd", "unshare", args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := waitFor(ctx, p, func() bool { return c.ready(ctx) }); err != nil {
		return fmt.Errorf("cridockerdtest: cri-dockerd %s did not become ready: %w\nlog:\n%s", c.Version, err, c.Log("cri-dockerd"))
	}
	return nil
}

// ready reports whether cri-dockerd answers Version.
func (c *CRIDockerd) ready(ctx context.Context) bool {
	conn, err := grpc.NewClient(c.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = runtimeapi.NewRuntimeServiceClient(conn).Version(ctx, &runtimeapi.VersionRequest{})
	return err == nil
}

// waitFor polls ok until it holds, p exits, or ctx ends.
func waitFor(ctx context.Context, p *proc, ok func() bool) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if ok() {
			return nil
		}
		select {
		case <-p.exited:
			return ErrExited
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// start starts name (bin args) with its output in Dir/name.log.
func (c *CRIDockerd) start(name, bin string, args []string) (*proc, error) {
	logPath := filepath.Join(c.Dir, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cridockerdtest: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = c.Dir
	// dockerd starts Debian's containerd and runc from PATH.
	cmd.Env = append(os.Environ(), "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DOCKER_CONFIG="+filepath.Join(c.Dir, "docker-config"))
	// Its own process group: a Ctrl-C of `go test` does not reach it
	// before the cleanup does, and Stop signals the whole group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("cridockerdtest: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(p.exited)
	}()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p, nil
}

// Log returns what name ("dockerd" or "cri-dockerd") wrote so far, over
// every start.
func (c *CRIDockerd) Log(name string) string {
	b, err := os.ReadFile(filepath.Join(c.Dir, name+".log"))
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// Stop stops cri-dockerd, then dockerd (SIGTERM to each process group,
// SIGKILL after 15 s).
func (c *CRIDockerd) Stop() {
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		stop(procs[i])
	}
	_ = os.Remove(c.Socket)
}

// StopCRIDockerd stops cri-dockerd only, as a crash would; dockerd runs on.
func (c *CRIDockerd) StopCRIDockerd() {
	c.mu.Lock()
	var keep []*proc
	var gone *proc
	for _, p := range c.procs {
		if p.name == "cri-dockerd" {
			gone = p
		} else {
			keep = append(keep, p)
		}
	}
	c.procs = keep
	c.mu.Unlock()
	if gone != nil {
		stop(gone)
	}
	_ = os.Remove(c.Socket)
}

// Restart restarts cri-dockerd with image as --pod-infra-container-image
// ("" for the built-in default), rewriting the unit to match.
func (c *CRIDockerd) Restart(t testing.TB, image string) {
	t.Helper()
	c.StopCRIDockerd()
	var args []string
	for i := 0; i < len(c.Args); i++ {
		if c.Args[i] == "--pod-infra-container-image" {
			i++
			continue
		}
		args = append(args, c.Args[i])
	}
	if image != "" {
		args = append(args, "--pod-infra-container-image", image)
	}
	c.Args = args
	c.opts.PodInfraImage = image
	if err := c.writeUnit(); err != nil {
		t.Fatalf("cridockerdtest: %v", err)
	}
	if err := c.startCRIDockerd(); err != nil {
		t.Fatalf("%v", err)
	}
}

// RestartFromUnit restarts cri-dockerd as systemd would after a
// daemon-reload: with the command line of the last ExecStart= in UnitPath
// and its drop-ins (UnitPath.d/*.conf, in lexical order; an empty
// ExecStart= resets), whatever wrote them. The unit is not rewritten. It
// understands what systemd.service(5) allows in the files a test writes:
// double- or single-quoted words, with backslash escapes, and the
// specifiers %% and $$.
func (c *CRIDockerd) RestartFromUnit(t testing.TB) {
	t.Helper()
	args, err := c.UnitArgs()
	if err != nil {
		t.Fatalf("cridockerdtest: %v", err)
	}
	c.StopCRIDockerd()
	c.Args = args
	c.opts.PodInfraImage = ""
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--pod-infra-container-image="); ok {
			c.opts.PodInfraImage = v
		} else if a == "--pod-infra-container-image" && i+1 < len(args) {
			c.opts.PodInfraImage = args[i+1]
		}
	}
	if err := c.startCRIDockerd(); err != nil {
		t.Fatalf("%v", err)
	}
}

// UnitArgs returns cri-dockerd's arguments (without the program) as UnitPath
// and its drop-ins give them: see RestartFromUnit.
func (c *CRIDockerd) UnitArgs() ([]string, error) {
	files := []string{c.UnitPath}
	dropIns, err := filepath.Glob(c.UnitPath + ".d/*.conf")
	if err != nil {
		return nil, err
	}
	sort.Strings(dropIns)
	files = append(files, dropIns...)
	var cmd string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		// Continuation lines joined, as systemd reads them.
		text := strings.ReplaceAll(strings.ReplaceAll(string(b), "\r\n", "\n"), "\\\n", " ")
		for _, line := range strings.Split(text, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "ExecStart="); ok {
				cmd = strings.TrimSpace(v)
			}
		}
	}
	if cmd == "" {
		return nil, fmt.Errorf("%s: no ExecStart", c.UnitPath)
	}
	words, err := unitWords(cmd)
	if err != nil {
		return nil, fmt.Errorf("%s: ExecStart=%s: %w", c.UnitPath, cmd, err)
	}
	if words[0] != "/usr/bin/cri-dockerd" {
		return nil, fmt.Errorf("%s: ExecStart runs %s, not /usr/bin/cri-dockerd", c.UnitPath, words[0])
	}
	return words[1:], nil
}

// unitWords splits an ExecStart= command line into words.
func unitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote == 0 && (ch == ' ' || ch == '\t'):
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
			continue
		case quote == 0 && (ch == '"' || ch == '\''):
			quote, in = ch, true
			continue
		case quote != 0 && ch == quote:
			quote = 0
			continue
		case ch == '\\' && i+1 < len(s):
			i++
			ch = s[i]
		case (ch == '%' || ch == '$') && i+1 < len(s) && s[i+1] == ch:
			i++
		}
		w.WriteByte(ch)
		in = true
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if in {
		words = append(words, w.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command line")
	}
	return words, nil
}

func stop(p *proc) {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
	}
	// The group may outlive its leader (unshare's child): make sure.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// docker runs the docker client against this engine.
func (c *CRIDockerd) docker(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, docker(), append([]string{"--host", c.DockerHost}, args...)...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+filepath.Join(c.Dir, "docker-config"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Docker runs the docker client against this engine and returns its
// output, failing the test on an error.
func (c *CRIDockerd) Docker(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := c.docker(ctx, args...)
	if err != nil {
		t.Fatalf("cridockerdtest: %v", err)
	}
	return out
}

// Load loads images with `docker load`, each under every name in its Names
// (Docker stores them in its own spelling: `docker images` shows
// docker.io/library/busybox:1.36 as busybox:1.36).
func (c *CRIDockerd) Load(t testing.TB, images ...containerdtest.Image) {
	t.Helper()
	f, err := os.CreateTemp(c.Dir, "images-*.tar")
	if err != nil {
		t.Fatalf("cridockerdtest: %v", err)
	}
	_ = f.Close()
	defer func() { _ = os.Remove(f.Name()) }()
	if _, err := containerdtest.WriteDockerArchive(f.Name(), images); err != nil {
		t.Fatalf("cridockerdtest: %v", err)
	}
	c.Docker(t, "load", "--quiet", "--input", f.Name())
}

// Tag adds the name dst to the image src (`docker tag`).
func (c *CRIDockerd) Tag(t testing.TB, src, dst string) {
	t.Helper()
	c.Docker(t, "tag", src, dst)
}

// RepoTags returns the repo tags Docker stores for every image, by image
// ID, in `docker images` order.
func (c *CRIDockerd) RepoTags(t testing.TB) map[string][]string {
	t.Helper()
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(c.Docker(t, "images", "--no-trunc", "--format", "{{.ID}} {{.Repository}}:{{.Tag}}")), "\n") {
		id, tag, ok := strings.Cut(line, " ")
		if ok {
			m[id] = append(m[id], tag)
		}
	}
	return m
}
