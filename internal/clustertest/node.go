package clustertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/critesttest"
	"github.com/sandboxpin/sandboxpin/internal/kubelettest"
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
	// Bridge and Subnet are the node's CNI bridge and pod range; each node
	// needs its own (they share the test's network namespace).
	Bridge, Subnet string
	// Port is the kubelet's port; its healthz port is Port+1.
	Port int
	// CNIBin is the directory of the CNI plugins (Debian's /usr/lib/cni).
	CNIBin string
}

// Node is a running node: a mount namespace of its own, held by a process,
// in which containerd and the kubelet run. In it the node's files are at
// their usual paths: /etc is an overlay (the host's /etc below, the node's
// files above), /run/containerd holds containerd's socket as
// containerd.sock, /var/lib/kubelet the kubelet's root and config, and
// /run/sandboxpin is the shim's directory; /run, /var/lib and /var/log are
// otherwise empty.
type Node struct {
	Name string
	// Dir holds the node's directories: etc (the overlay's upper layer),
	// kubelet, run-containerd, run-sandboxpin, and the logs.
	Dir        string
	Containerd *containerdtest.Containerd
	Kubelet    *Process

	cp     *ControlPlane
	opts   NodeOptions
	holder *Process
	// kubeletArgs are the kubelet's arguments as systemd would build them
	// from kubelet.service and its drop-ins (see Restart).
	kubeletArgs []string
}

// holderScript builds the node's mount namespace and then holds it: $1 is
// the node's directory. Each mount is gone with the namespace.
const holderScript = `set -e
d=$1
mount -t overlay sandboxpin-node -o lowerdir=/etc,upperdir=$d/etc,workdir=$d/etc-work /etc
for m in /run /var/lib /var/log; do mount -t tmpfs -o mode=0755 sandboxpin-node $m; done
mkdir -p /run/containerd /run/sandboxpin /var/lib/kubelet
mount --bind $d/run-containerd /run/containerd
mount --bind $d/run-sandboxpin /run/sandboxpin
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
	n := &Node{Name: opts.Name, Dir: dir, cp: cp, opts: opts}
	for _, sub := range []string{"etc/kubernetes/pki", "etc/containerd", "etc/systemd/system/kubelet.service.d", "etc-work", "kubelet", "run-containerd", "run-sandboxpin", "sysctl"} {
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
		SandboxImage: opts.SandboxImage, RestrictOOMScoreAdj: true, Wrap: n.Enter(),
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
	// socket), and the config containerd runs with where a node keeps it.
	if err := os.Link(c.Socket, filepath.Join(dir, "run-containerd/containerd.sock")); err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	copyFile(t, filepath.Join(c.Dir, "config.toml"), filepath.Join(dir, "etc/containerd/config.toml"))
	if err := critesttest.WriteBridge(filepath.Join(c.Dir, "cni"), filepath.Join(c.Dir, "cni-bin"), opts.CNIBin, filepath.Join(c.Dir, "cni-state"), opts.Bridge, opts.Subnet); err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	c.Import(t, containerdtest.Image{Names: []string{opts.SandboxImage}, Executable: opts.Pause})

	if err := os.WriteFile(filepath.Join(dir, "kubelet/config.yaml"), []byte(kubeletConfig(opts.Port)), 0o644); err != nil { //nolint:gosec // G306: a node's kubelet config is world-readable
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
	n.startKubelet(t)
	return n
}

// Enter is the command prefix that runs a program in the node's mount
// namespace.
func (n *Node) Enter() []string {
	return []string{"nsenter", fmt.Sprintf("--mount=/proc/%d/ns/mnt", n.holder.cmd.Process.Pid), "--"}
}

func (n *Node) startKubelet(t testing.TB) {
	t.Helper()
	argv := append(append(n.Enter(), n.cp.bins.Kubelet), n.kubeletArgs...)
	n.Kubelet = startProcess(t, n.Dir, fmt.Sprintf("kubelet-%d", time.Now().UnixNano()), argv...)
}

// RestartKubelet stops the kubelet and starts it again with extra arguments
// after its own, as `systemctl restart kubelet` does after a drop-in added
// them to $KUBELET_EXTRA_ARGS (the last of kubeadm's ExecStart).
func (n *Node) RestartKubelet(t testing.TB, extra ...string) {
	t.Helper()
	n.Kubelet.Stop()
	n.kubeletArgs = append(n.kubeletArgs, extra...)
	n.startKubelet(t)
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
