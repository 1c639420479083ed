package clustertest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/critesttest"
	"github.com/sandboxpin/sandboxpin/internal/kubelettest"
	"github.com/sandboxpin/sandboxpin/internal/systemdtest"
)

// NodeOptions configure a node.
type NodeOptions struct {
	// Name is the Node's name.
	Name string
	// Containerd is the runtime's build, SandboxImage its configured
	// sandbox image; Pause is the pause program imported under that name
	// (containerdtest.BuildPause), so that no pod pulls it.
	Containerd   containerdtest.Version
	SandboxImage string
	Pause        []byte
	// Stored are the names the pause program is imported under when they
	// are not SandboxImage (a registry alias of it, say): nil is
	// SandboxImage.
	Stored []string
	// KubeletConfig is appended to the node's KubeletConfiguration (such
	// as "imageMaximumGCAge: 1m\n"), and KubeletArgs to the kubelet's
	// command line (such as "--vmodule=kubelet=4").
	KubeletConfig string
	KubeletArgs   []string
	// Bridge and Subnet are the node's CNI bridge and pod range; each node
	// needs its own (they share the test's network namespace).
	Bridge, Subnet string
	// Port is the kubelet's port; its healthz port is Port+1.
	Port int
	// CNIBin is the directory of the CNI plugins (Debian's /usr/lib/cni).
	CNIBin string
	// Registry, when set, is the host:port of a plain-HTTP registry
	// (internal/registrytest) that containerd pulls through in place of
	// registry.k8s.io, k8s.gcr.io and docker.io (containerdtest.Options):
	// the node can pull as a node on a network does. "": every pull
	// fails, as on a node without a network.
	Registry string
}

// Node is a running node: a mount namespace of its own, held by a process,
// in which containerd and the kubelet run. In it the node's files are at
// their usual paths: /etc is an overlay (the host's /etc below, the node's
// files above), /run/containerd holds containerd's socket as
// containerd.sock, /var/lib/kubelet the kubelet's root and config,
// /run/sandboxpin is the shim's directory and /var/backups/sandboxpin the
// fixer's backups; /run, /var/lib, /var/log and /var/backups are
// otherwise empty; /run/dbus holds system_bus_socket, the bus of the
// node's systemd stand-in (Bus).
//
// containerd reads the node's /etc/containerd/config.toml, so that an
// edit of that file takes effect when containerd restarts.
type Node struct {
	Name string
	// Dir holds the node's directories: etc (the overlay's upper layer),
	// kubelet, run-containerd, run-sandboxpin, run-dbus, backups, and the
	// logs.
	Dir        string
	Containerd *containerdtest.Containerd
	// Bus is the node's system bus with the stand-in for systemd's
	// D-Bus API on it (internal/systemdtest): its units are
	// containerd.service and kubelet.service (see restartContainerd and
	// restartKubelet). It stands in for systemd executing those units;
	// what it leaves untested is in systemdtest's package comment.
	Bus *systemdtest.Bus

	t      testing.TB
	cp     *ControlPlane
	opts   NodeOptions
	holder *Process

	mu sync.Mutex
	// kubelets are the kubelet's processes, the running one last.
	kubelets []*Process
	// kubeletArgs are the kubelet's arguments as systemd would build them
	// from kubelet.service and its drop-ins (see Restart).
	kubeletArgs []string
	// fail holds the units whose next restart fails (FailNextRestart).
	fail map[string]error
}

// holderScript builds the node's mount namespace and then holds it: $1 is
// the node's directory. Each mount is gone with the namespace.
const holderScript = `set -e
d=$1
mount -t overlay sandboxpin-node -o lowerdir=/etc,upperdir=$d/etc,workdir=$d/etc-work /etc
for m in /run /var/lib /var/log /var/backups; do mount -t tmpfs -o mode=0755 sandboxpin-node $m; done
mkdir -p /run/containerd /run/sandboxpin /run/dbus /var/lib/kubelet /var/backups/sandboxpin
mount --bind $d/run-containerd /run/containerd
mount --bind $d/run-sandboxpin /run/sandboxpin
mount --bind $d/run-dbus /run/dbus
mount --bind $d/backups /var/backups/sandboxpin
mount --bind $d/kubelet /var/lib/kubelet
for f in $d/sysctl/*; do mount --bind "$f" "/proc/sys/$(basename "$f" | tr . /)"; done
echo ready
exec sleep infinity`

// StartNode starts a node of cp: its namespace, containerd (with the pause
// image and the CNI bridge) and the kubelet, registered with the API
// server. It does not wait for the Node to be Ready.
func (cp *ControlPlane) StartNode(t testing.TB, opts NodeOptions) *Node {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "sbn")
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	n := &Node{Name: opts.Name, Dir: dir, t: t, cp: cp, opts: opts, fail: map[string]error{}}
	for _, sub := range []string{"etc/kubernetes/pki", "etc/containerd", "etc/systemd/system/kubelet.service.d", "etc-work", "kubelet", "run-containerd", "run-sandboxpin", "run-dbus", "backups", "sysctl"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil { //nolint:gosec // G301: the node's /etc, /run and /var/lib/kubelet, world-readable as on a node
			t.Fatalf("clustertest: %v", err)
		}
	}
	// The node's namespace covers each setting the kubelet would change
	// with a file that holds its value, so the host keeps its own.
	for name, value := range kubelettest.KernelTunables() {
		if err := os.WriteFile(filepath.Join(dir, "sysctl", strings.ReplaceAll(name, "/", ".")), []byte(value+"\n"), 0o644); err != nil { //nolint:gosec // G306: read by the kubelet as /proc/sys
			t.Fatalf("clustertest: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := cp.nodeKubeconfig(ctx, opts.Name, filepath.Join(dir, "etc/kubernetes")); err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	copyFile(t, filepath.Join(cp.Dir, "pki/ca.crt"), filepath.Join(dir, "etc/kubernetes/pki/ca.crt"))
	n.holder = startProcess(t, dir, "namespace", "unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", holderScript, "sandboxpin-node", dir)
	if err := poll(ctx, 100*time.Millisecond, func() (bool, error) {
		select {
		case <-n.holder.Exited():
			return false, fmt.Errorf("the namespace's holder exited: %s", n.holder.Log())
		default:
		}
		return strings.Contains(n.holder.Log(), "ready"), nil
	}); err != nil {
		t.Fatalf("clustertest: node %s: %v", opts.Name, err)
	}

	n.Containerd = containerdtest.Start(t, opts.Containerd, containerdtest.Options{
		SandboxImage: opts.SandboxImage, RestrictOOMScoreAdj: true, Wrap: n.Enter(), Registry: opts.Registry,
	})
	c := n.Containerd
	conn, err := grpc.NewClient(c.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	// After the kubelet stopped (its cleanup runs first) and before
	// containerd stops: the pods' shims would outlive it.
	t.Cleanup(func() {
		containerdtest.RemoveSandboxes(t, runtimeapi.NewRuntimeServiceClient(conn))
		_ = conn.Close()
	})
	// The node's socket at its usual path (a hard link reaches the same
	// socket), and the config containerd runs with where a node keeps it:
	// from now on the file containerd's command line names is a symbolic
	// link to the node's /etc/containerd/config.toml (containerd runs in
	// the node's namespace, where that path resolves to the node's file),
	// so that a restart reads the node's file as edited.
	if err := n.linkSocket(); err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	copyFile(t, filepath.Join(c.Dir, "config.toml"), filepath.Join(dir, "etc/containerd/config.toml"))
	if err := os.Remove(filepath.Join(c.Dir, "config.toml")); err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	if err := os.Symlink("/etc/containerd/config.toml", filepath.Join(c.Dir, "config.toml")); err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	if err := critesttest.WriteBridge(filepath.Join(c.Dir, "cni"), filepath.Join(c.Dir, "cni-bin"), opts.CNIBin, filepath.Join(c.Dir, "cni-state"), opts.Bridge, opts.Subnet); err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	stored := opts.Stored
	if stored == nil {
		stored = []string{opts.SandboxImage}
	}
	c.Import(t, containerdtest.Image{Names: stored, Executable: opts.Pause})

	if err := os.WriteFile(filepath.Join(dir, "kubelet/config.yaml"), []byte(kubeletConfig(opts.Port)+opts.KubeletConfig), 0o644); err != nil { //nolint:gosec // G306: a node's kubelet config is world-readable
		t.Fatalf("clustertest: %v", err)
	}
	// kubeadm's kubelet.service and its drop-in (cmd/kubeadm/app/phases/
	// kubelet and the kubelet's packaging at v1.37.2), so that the node
	// reads as a kubeadm node; the kubelet's arguments are what systemd
	// would run from them.
	writeFile(t, filepath.Join(dir, "etc/systemd/system/kubelet.service"), KubeletService)
	writeFile(t, filepath.Join(dir, "etc/systemd/system/kubelet.service.d/10-kubeadm.conf"), KubeadmDropIn)
	n.kubeletArgs = []string{
		"--kubeconfig=/etc/kubernetes/kubelet.conf", "--config=/var/lib/kubelet/config.yaml",
		// A test node's name and address, as a kubeadm join's
		// nodeRegistration would put in kubeadm-flags.env.
		"--hostname-override=" + opts.Name, "--node-ip=" + IP,
	}
	n.kubeletArgs = append(n.kubeletArgs, opts.KubeletArgs...)
	if err := n.startKubelet(); err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	n.Bus = systemdtest.Start(t, filepath.Join(dir, "run-dbus/system_bus_socket"), systemdtest.Units{
		"containerd.service": func(ctx context.Context) error { return n.restart(ctx, "containerd.service", n.restartContainerd) },
		"kubelet.service":    func(ctx context.Context) error { return n.restart(ctx, "kubelet.service", n.restartKubelet) },
	})
	return n
}

// linkSocket makes the node's /run/containerd/containerd.sock the socket
// containerd listens on now (a new one after each start).
func (n *Node) linkSocket() error {
	link := filepath.Join(n.Dir, "run-containerd/containerd.sock")
	if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Link(n.Containerd.Socket, link)
}

// FailNextRestart makes the next restart of unit ("containerd.service"
// or "kubelet.service") through Bus stop the unit and fail with err
// without starting it again, as a unit whose ExecStart fails would (with
// no Restart= that brings it back); the restart after it works again.
func (n *Node) FailNextRestart(unit string, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fail[unit] = err
}

// restart is a restart of unit by Bus: do, or, after FailNextRestart, a
// stop and the failure.
func (n *Node) restart(ctx context.Context, unit string, do func(context.Context, bool) error) error {
	n.mu.Lock()
	err, fail := n.fail[unit]
	delete(n.fail, unit)
	n.mu.Unlock()
	if fail {
		_ = do(ctx, false)
		return err
	}
	return do(ctx, true)
}

// restartContainerd is `systemctl restart containerd` on the node:
// containerd stopped (SIGTERM to containerd alone, as its unit's
// KillMode=process does: containerd.service at v2.4.2; the shims and so
// the pods keep running), then started again in the node's
// namespace on the node's /etc/containerd/config.toml, and the node's
// socket linked to the new one. With start false it only stops.
func (n *Node) restartContainerd(ctx context.Context, start bool) error {
	if !start {
		n.Containerd.Stop(n.t)
		return nil
	}
	if err := n.Containerd.RestartContext(ctx); err != nil {
		return err
	}
	return n.linkSocket()
}

// restartKubelet is `systemctl restart kubelet`: RestartKubelet with no
// extra arguments. With start false it only stops.
func (n *Node) restartKubelet(_ context.Context, start bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.kubelets[len(n.kubelets)-1].Stop()
	if !start {
		return nil
	}
	return n.startKubeletLocked()
}

// Enter is the command prefix that runs a program in the node's mount
// namespace.
func (n *Node) Enter() []string {
	return []string{"nsenter", fmt.Sprintf("--mount=/proc/%d/ns/mnt", n.holder.cmd.Process.Pid), "--"}
}

func (n *Node) startKubelet() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.startKubeletLocked()
}

func (n *Node) startKubeletLocked() error {
	argv := append(append(n.Enter(), n.cp.bins.Kubelet), n.kubeletArgs...)
	p, err := newProcess(n.Dir, fmt.Sprintf("kubelet-%d", time.Now().UnixNano()), argv...)
	if err != nil {
		return err
	}
	n.t.Cleanup(func() { p.cleanup(n.t) })
	n.kubelets = append(n.kubelets, p)
	return nil
}

// Kubelet returns the kubelet's running process (the last started).
func (n *Node) Kubelet() *Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.kubelets[len(n.kubelets)-1]
}

// KubeletLog returns what every kubelet process of the node wrote, in
// the order they ran.
func (n *Node) KubeletLog() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var b strings.Builder
	for _, p := range n.kubelets {
		b.WriteString(p.Log())
	}
	return b.String()
}

// RestartKubelet stops the kubelet and starts it again with extra arguments
// after its own, as `systemctl restart kubelet` does after a drop-in added
// them to $KUBELET_EXTRA_ARGS (the last of kubeadm's ExecStart).
func (n *Node) RestartKubelet(t testing.TB, extra ...string) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.kubelets[len(n.kubelets)-1].Stop()
	n.kubeletArgs = append(n.kubeletArgs, extra...)
	if err := n.startKubeletLocked(); err != nil {
		t.Fatalf("clustertest: %v", err)
	}
}

// Start runs a program in the node's namespace, as a unit of the node
// would; t.Cleanup stops it.
func (n *Node) Start(t testing.TB, name string, argv ...string) *Process {
	t.Helper()
	return startProcess(t, n.Dir, name, append(n.Enter(), argv...)...)
}

// WriteFile writes a file of the node at path (absolute, under /etc: the
// overlay's upper layer).
func (n *Node) WriteFile(t testing.TB, path, content string) {
	t.Helper()
	rel, ok := strings.CutPrefix(path, "/etc/")
	if !ok {
		t.Fatalf("clustertest: %s is not under /etc", path)
	}
	writeFile(t, filepath.Join(n.Dir, "etc", rel), content)
}

// kubeletConfig is the node's KubeletConfiguration: the runtime's socket at
// its usual path; cgroupfs and no QoS cgroups (as kubelettest: no systemd,
// and this machine's cgroup v1); no eviction at any disk usage; servers on
// the node's address at port and port+1; no API server calls to the
// kubelet (nothing here needs logs or exec).
func kubeletConfig(port int) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
oomScoreAdj: 0
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
evictionHard:
  imagefs.available: "0%%"
  imagefs.inodesFree: "0%%"
  nodefs.available: "0%%"
  nodefs.inodesFree: "0%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, IP, port, port+1)
}

// KubeletService and KubeadmDropIn are the shapes of the kubelet's
// systemd unit and kubeadm's drop-in (10-kubeadm.conf).
const (
	KubeletService = `[Unit]
Description=kubelet: The Kubernetes Node Agent

[Service]
ExecStart=/usr/bin/kubelet
Restart=always

[Install]
WantedBy=multi-user.target
`
	KubeadmDropIn = `[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`
)

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { //nolint:gosec // G301: a node's config directories are world-readable
		t.Fatalf("clustertest: %v", err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil { //nolint:gosec // G306: a node's config files are world-readable
		t.Fatalf("clustertest: %v", err)
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	writeFile(t, to, string(b))
}
