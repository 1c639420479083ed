package kubelettest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/clustertest"
	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/critesttest"
	"github.com/sandboxpin/sandboxpin/internal/kubelettest"
	"github.com/sandboxpin/sandboxpin/internal/registrytest"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
	"github.com/sandboxpin/sandboxpin/internal/systemdtest"
)

// rolloutNodes are issue 53's nodes: containerd 1.7.35 and 2.4.2, each
// with the pause image stored under a name that the configured sandbox
// image is another spelling of, so that the runtime finds it for every
// sandbox but does not pin it, and the kubelet's image GC removes it.
//
// Neither takes the registry alias of the issue (k8s.gcr.io/pause for
// registry.k8s.io/pause) as it stands: both look the sandbox image up by
// the configured name, and with the image stored only under the other
// name no pod starts on an offline node (README.md's GC table: "no
// sandbox: pull of k8s.gcr.io/pause:3.10.1 fails"); stored under the
// alias as well, both pin it. So:
//
//   - 2.4.2 is configured with the short Docker Hub name pause:3.10.1 of
//     the stored docker.io/library/pause:3.10.1: 2.4 finds it
//     (TestLiveSandboxRun, internal/containerdtest) and pins by the exact
//     string only (README.md), so the plan is the edit of
//     /etc/containerd/config.toml and a restart (2.x relabels every
//     image at start).
//   - 1.7.35 normalizes both its lookup and its pin compare, so the short
//     name pins there; what leaves it unpinned with pods running is the
//     image stored before the config named it (1.x labels an image pinned
//     only when it stores a name, remedy's labelOn1x and TestFixUnderGC's
//     containerd-1.7/alias row): the image stored under the alias and
//     its registry.k8s.io name while the config named another image, then
//     the alias configured and containerd restarted. Its plan has a step
//     no edit answers on any spelling (the pinned label), see the test.
//
// wantState is where the rollout leaves each in write mode: done on both,
// 1.7.35's label step taken by `sandboxpin rollout` through containerd's
// images API on the node's socket, as `ctr images label` does (cmd's
// labelImage).
var rolloutNodes = []rolloutNode{
	{"node-1-7", containerdtest.V17, aliasPause, []string{aliasPause, storedPause}, "cni-c", "10.88.3.0/24", 10470, "done"},
	{"node-2-4", containerdtest.V24, shortPause, []string{shortPauseStored}, "cni-d", "10.88.4.0/24", 10480, "done"},
}

type rolloutNode struct {
	name       string
	version    containerdtest.Version
	configured string   // the sandbox image in containerd's config
	stored     []string // the names the pause image is stored under
	bridge     string
	subnet     string
	port       int
	wantState  string // the node's sandboxpin.io/fix-state after write mode
}

// decoyPause is the sandbox image a node's config names while breakNode
// stores the pause image: not stored, so the store does not pin it.
const decoyPause = "registry.k8s.io/pause:3.9"

// rolloutKubeletConfig makes the kubelet remove every unused image the
// runtime does not pin in its second periodic GC round, ImageGCPeriod (5
// min) after it starts, with no disk pressure (which would evict the
// pods): see kubelettest.ImageGCPeriod. The kubelet refuses a maximum age
// not above the minimum (2 min by default: "imageMaximumGCAge 1m0s must
// be greater than imageMinimumGCAge 2m0s", seen with v1.37.2). Its
// rounds' ends are logged under GCRoundVModule.
const rolloutKubeletConfig = "imageMinimumGCAge: 1m\nimageMaximumGCAge: 2m\n"

// busyboxImage is an image whose one file is Debian's static busybox, for
// the test's pods.
const busyboxImage = "sandboxpin.test/busybox:1"

// TestClusterRollout is issue 53's proof on a real cluster (item 5), on
// the machinery of internal/clustertest: the control plane, and a node of
// containerd 1.7.35 and one of 2.4.2 whose pause image is stored unpinned
// under another spelling than the configured one (rolloutNodes); each
// node's systemd is the stand-in of internal/systemdtest on the node's
// /run/dbus/system_bus_socket, which is what the fixer restarts units
// through. It checks what the rollout stands on: a pod reaches the API
// server where an in-cluster client does (the kubernetes Service routed
// as kube-proxy would), `sandboxpin fix` plans an edit of the node's
// /etc/containerd/config.toml. Then the rollout: the shipped exporter and
// fixer applied (`kubectl apply --server-side -k` of an overlay that sets
// the image, the mode and --prometheus-url, as README.md's overlay);
// in plan mode every node publishes its state and no file of either node
// changes (hashed); the kubelet's GC removes the unpinned pause image on
// both; restarts through go-systemd's client on the node's bus keep the
// pods running; in write mode both nodes end done, one at a time (audit
// protected, the image pinned: on 1.7.35 by the label the rollout sets;
// the next GC round, awaited after the halt below, keeps it), the Events
// and Leases logged as the timeline; a fix made to fail
// (containerd's restart fails) marks the node failed, halts the rollout
// (the Lease's sandboxpin.io/halted, the alert SandboxpinFixHalted
// firing) and leaves the other node's files as they were; lifting the
// halt resumes it to done (pulling the pause image the GC would have
// removed while it was halted); every panel query of deploy/grafana's
// dashboard returns series from the test's Prometheus.
func TestClusterRollout(t *testing.T) {
	t.Parallel()
	clustertest.Require(t)
	systemdtest.Require(t)
	for _, n := range rolloutNodes {
		containerdtest.Require(t, n.version)
	}
	if !critesttest.Isolate(t, 40*time.Minute) {
		return
	}
	pause, err := pauseBinary()
	require.NoError(t, err)
	busybox, err := os.ReadFile(critesttest.DefaultBinaries().Busybox)
	require.NoError(t, err)
	bin, err := sandboxpinBinary()
	require.NoError(t, err)

	start := time.Now()
	cp := clustertest.Start(t)
	t.Logf("control plane ready in %v; the kubernetes Service %s:%s routed to %s", time.Since(start).Round(time.Millisecond), cp.ServiceIP, cp.ServicePort, cp.Server)
	// The registries a node pulls the pause image from, served here: a
	// node's fix needs a pull when the kubelet's GC removed the unpinned
	// image while the rollout was halted (the halt outlasts a GC round).
	// The decoy is not served.
	reg := registrytest.Start(t)
	for _, n := range rolloutNodes {
		for _, name := range append([]string{n.configured}, n.stored...) {
			reg.Push(t, name, containerdtest.Image{Names: []string{name}, Executable: pause})
		}
	}
	nodes := map[string]*clustertest.Node{}
	for _, n := range rolloutNodes {
		node := cp.StartNode(t, clustertest.NodeOptions{
			Name: n.name, Containerd: n.version, SandboxImage: decoyPause, Stored: n.stored, Pause: pause,
			Bridge: n.bridge, Subnet: n.subnet, Port: n.port, CNIBin: cniBin(t), Registry: reg.Addr,
			KubeletConfig: rolloutKubeletConfig, KubeletArgs: []string{"--vmodule=" + kubelettest.GCRoundVModule},
		})
		node.Containerd.Import(t, containerdtest.Image{Names: []string{busyboxImage}, Executable: busybox, Path: "/bin/busybox"})
		nodes[n.name] = node
	}
	cp.Wait(t, 3*time.Minute, func(out string) bool { return strings.Count(out, "True") == len(rolloutNodes) },
		"get", "nodes", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	t.Logf("nodes ready in %v", time.Since(start).Round(time.Millisecond))
	// Once the kubelets run (a kubelet exits when the runtime does not
	// answer as it starts; systemd's Restart=always, which would start it
	// again, is not in the stand-in).
	for _, n := range rolloutNodes {
		breakNode(t, nodes[n.name], n, pause)
	}

	// The API server's certificate is valid for the Service's address,
	// and the address reaches it (from this namespace: OUTPUT).
	ca, err := os.ReadFile(filepath.Join(cp.Dir, "pki/ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	readyz, err := runtimetest.Get(t.Context(), client, "https://"+cp.ServiceIP+":"+cp.ServicePort+"/readyz")
	require.NoError(t, err, "the API server through the kubernetes Service, its certificate checked")
	assert.Equal(t, "ok", strings.TrimSpace(readyz))

	// A pod on each node (its own network namespace, through the bridge:
	// PREROUTING) reaches the API server where an in-cluster client does:
	// KUBERNETES_SERVICE_HOST and _PORT from the kubelet, its service
	// account's token mounted (apiClientPod).
	// The controller-manager creates the namespace's service account.
	cp.Wait(t, time.Minute, func(string) bool { return true }, "-n", "default", "get", "serviceaccount", "default")
	for _, n := range rolloutNodes {
		cp.MustKubectl(t, "apply", "--server-side", "--filename="+writeTemp(t, apiClientPod(n.name)))
		cp.MustKubectl(t, "apply", "--server-side", "--filename="+writeTemp(t, sleeperPod(n.name)))
	}
	for _, n := range rolloutNodes {
		phase := cp.Wait(t, 3*time.Minute, func(out string) bool { return out == "Succeeded" || out == "Failed" },
			"get", "pod", "api-client-"+n.name, "-o", "jsonpath={.status.phase}")
		require.Equal(t, "Succeeded", phase, "a pod on %s reaches the API server with its in-cluster configuration: %s", n.name,
			cp.MustKubectl(t, "get", "pod", "api-client-"+n.name, "-o", "jsonpath={.status.containerStatuses[0].state.terminated}"))
		cp.Wait(t, 2*time.Minute, func(out string) bool { return out == "Running" }, "get", "pod", "sleeper-"+n.name, "-o", "jsonpath={.status.phase}")
	}
	t.Logf("pods on both nodes reached the API server at $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT in %v", time.Since(start).Round(time.Millisecond))
	sleepers := containerStarts(t, cp)

	// Before the GC: unprotected, and fix's plan, on each node.
	pauseIDs := map[string]string{}
	for _, n := range rolloutNodes {
		node := nodes[n.name]
		ids := imageIDs(t.Context(), t, node.Containerd.Endpoint)
		pauseIDs[n.name] = ids[n.stored[0]]
		require.NotEmpty(t, pauseIDs[n.name], "%s stores %s", n.name, n.stored[0])
		assert.False(t, pinnedByTag(t.Context(), t, node.Containerd.Endpoint)[n.stored[0]], "%s: the pause image is not pinned", n.name)
		code, out := nodeSandboxpin(t, node, bin, "audit")
		assert.Equal(t, 1, code, "%s: audit says unprotected:\n%s", n.name, out)
		t.Logf("%s: audit before the fix (exit %d):\n%s", n.name, code, out)
		code, plan := nodeSandboxpin(t, node, bin, "fix")
		t.Logf("%s: sandboxpin fix (exit %d):\n%s", n.name, code, plan)
		assert.Contains(t, plan, "/etc/containerd/config.toml", "%s: the plan edits the node's containerd config", n.name)
	}

	// The fixer, in plan mode: each node publishes its plan and nothing
	// on either node changes.
	r := deployRollout(t, cp, nodes)

	// The kubelet's GC removes the unpinned pause image on both nodes
	// (its second round, 5 min after it started).
	for _, n := range rolloutNodes {
		node := nodes[n.name]
		removed := regexp.MustCompile(`"Removing image to free bytes".*` + regexp.QuoteMeta(pauseIDs[n.name]))
		require.Eventually(t, func() bool { return removed.MatchString(node.KubeletLog()) }, 2*kubelettest.ImageGCPeriod, time.Second,
			"%s: the kubelet's GC removes the unpinned pause image", n.name)
		t.Logf("%s: the kubelet's GC before the fix:\n%s", n.name, gcLines(node.KubeletLog()))
		_, stored := imageIDs(t.Context(), t, node.Containerd.Endpoint)[n.stored[0]]
		assert.False(t, stored, "%s: the pause image is gone", n.name)
		// Stored again, unpinned as before.
		breakNode(t, node, n, pause)
	}

	// containerd.service restarted through the node's bus with
	// go-systemd's client, as the fixer does: the node's containerd
	// back on the node's socket, the node Ready, the pods running on.
	for _, n := range rolloutNodes {
		node := nodes[n.name]
		assert.Equal(t, "done", restartContainerd(t, node), "%s: restart containerd.service", n.name)
		waitCRI(t, node)
	}
	node := nodes["node-2-4"]
	node.FailNextRestart("containerd.service", errors.New("the test fails this restart"))
	assert.Equal(t, "failed", restartContainerd(t, node), "a restart made to fail")
	assert.False(t, criAnswers(t, node), "containerd is down after the failed restart")
	assert.Equal(t, "done", restartContainerd(t, node), "the restart after it")
	waitCRI(t, node)
	for _, n := range rolloutNodes {
		t.Logf("%s: the node's bus: %v", n.name, nodes[n.name].Bus.Restarts())
	}
	cp.Wait(t, 2*time.Minute, func(out string) bool { return strings.Count(out, "True") == len(rolloutNodes) },
		"get", "nodes", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	assert.Equal(t, sleepers, containerStarts(t, cp), "the pods ran on across the restarts")
	t.Logf("kubectl get nodes,pods -A -o wide:\n%s", cp.MustKubectl(t, "get", "nodes,pods", "-A", "-o", "wide"))

	// The rollout, in write mode; then a failure, the halt and its lift.
	r.write(t, pause)
	assert.Equal(t, sleepers, containerStarts(t, cp), "the pods ran on across the rollout's restarts")
}

// gcLines returns the kubelet's lines about image GC.
func gcLines(log string) string {
	re := regexp.MustCompile(`"Removing image to free bytes"|"Image garbage collection succeeded"|"Image garbage collection failed|image_gc_manager\.go`)
	var out []string
	for l := range strings.Lines(log) {
		if re.MatchString(l) {
			out = append(out, strings.TrimRight(l, "\n"))
		}
	}
	return strings.Join(out, "\n")
}

// nodeSandboxpin runs bin with args in the node's mount namespace (its
// files at their paths, the runtime's socket found as on a node) and
// returns its exit code and output.
func nodeSandboxpin(t *testing.T, n *clustertest.Node, bin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	argv := append(append(n.Enter(), bin), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	out, err := cmd.CombinedOutput()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return code, string(out)
}

// restartContainerd restarts containerd.service through the node's bus
// with go-systemd's client (Reload, then RestartUnit, waiting for its
// job), as the fixer does, and returns the job's result.
func restartContainerd(t *testing.T, n *clustertest.Node) string {
	const unit = "containerd.service"
	t.Helper()
	conn, err := sdbus.NewConnection(func() (*dbus.Conn, error) { return systemdtest.Dial(n.Bus.Address) })
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	require.NoError(t, conn.ReloadContext(ctx))
	ch := make(chan string, 1)
	_, err = conn.RestartUnitContext(ctx, unit, "replace", ch)
	require.NoError(t, err)
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		t.Fatalf("%s: no JobRemoved for %s", n.Name, unit)
		return ""
	}
}

// criAnswers reports whether the node's containerd answers CRI on the
// node's socket (/run/containerd/containerd.sock there).
func criAnswers(t *testing.T, n *clustertest.Node) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+filepath.Join(n.Dir, "run-containerd/containerd.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false
	}
	defer conn.Close()
	_, err = runtimeapi.NewRuntimeServiceClient(conn).Version(ctx, &runtimeapi.VersionRequest{})
	return err == nil
}

// waitCRI waits until the node's containerd answers on the node's socket.
func waitCRI(t *testing.T, n *clustertest.Node) {
	t.Helper()
	require.Eventually(t, func() bool { return criAnswers(t, n) }, time.Minute, time.Second, "%s: containerd answers on /run/containerd/containerd.sock", n.Name)
}

// containerStarts returns each pod's containers' start times and restart
// counts: equal before and after, the pods ran on.
func containerStarts(t *testing.T, cp *clustertest.ControlPlane) string {
	t.Helper()
	return cp.MustKubectl(t, "get", "pods", "-l", "sandboxpin.test/sleeper", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.containerStatuses[0].state.running.startedAt} {.status.containerStatuses[0].restartCount}{"\n"}{end}`)
}

// apiClientPod is a pod on node that connects to the API server where an
// in-cluster client does, with the token such a client sends. Not TLS:
// the API server refuses busybox's TLS client (wget: "TLS error from
// peer (alert code 40): handshake failure", seen here), so the pod checks
// the route, and the test the certificate from its own namespace.
func apiClientPod(node string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: api-client-%[1]s
  namespace: default
spec:
  nodeName: %[1]s
  restartPolicy: Never
  containers:
    - name: wget
      image: %[2]s
      imagePullPolicy: Never
      terminationMessagePolicy: FallbackToLogsOnError
      command:
        - /bin/busybox
        - sh
        - -c
        - >-
          test -s /var/run/secrets/kubernetes.io/serviceaccount/token &&
          /bin/busybox nc -w 10 "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT" </dev/null &&
          echo "connected to $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"
`, node, busyboxImage)
}

// sleeperPod is a pod on node that runs until the test ends.
func sleeperPod(node string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: sleeper-%[1]s
  namespace: default
  labels:
    sandboxpin.test/sleeper: "yes"
spec:
  nodeName: %[1]s
  containers:
    - name: sleep
      image: %[2]s
      imagePullPolicy: Never
      command: [/bin/busybox, sleep, "3600"]
`, node, busyboxImage)
}

// breakNode leaves a node as issue 53 finds it, through the node's files
// and its systemd (the stand-in): its containerd config naming decoyPause,
// containerd restarted, the pause image removed and stored again under
// the row's names, then the config naming the row's spelling and
// containerd restarted again. Each containerd stores the image unpinned
// that way (see rolloutNodes).
func breakNode(t *testing.T, n *clustertest.Node, r rolloutNode, pause []byte) {
	t.Helper()
	config := filepath.Join(n.Dir, "etc/containerd/config.toml")
	b, err := os.ReadFile(config)
	require.NoError(t, err)
	decoy := strings.ReplaceAll(string(b), fmt.Sprintf("%q", r.configured), fmt.Sprintf("%q", decoyPause))
	for _, name := range r.stored {
		decoy = strings.ReplaceAll(decoy, fmt.Sprintf("%q", name), fmt.Sprintf("%q", decoyPause))
	}
	require.Contains(t, decoy, fmt.Sprintf("%q", decoyPause), "%s: the sandbox image in %s", n.Name, config)
	n.WriteFile(t, "/etc/containerd/config.toml", decoy)
	require.Equal(t, "done", restartContainerd(t, n), "%s: restart containerd on the decoy", n.Name)
	waitCRI(t, n)
	removeImages(t, n, r.stored)
	n.Containerd.Import(t, containerdtest.Image{Names: r.stored, Executable: pause})
	n.WriteFile(t, "/etc/containerd/config.toml", strings.ReplaceAll(decoy, fmt.Sprintf("%q", decoyPause), fmt.Sprintf("%q", r.configured)))
	require.Equal(t, "done", restartContainerd(t, n), "%s: restart containerd on %s", n.Name, r.configured)
	waitCRI(t, n)
}

// removeImages removes the images names through the node's CRI socket,
// as the kubelet's GC does.
func removeImages(t *testing.T, n *clustertest.Node, names []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn := dial(ctx, t, n.Containerd.Endpoint)
	defer conn.Close()
	for _, name := range names {
		_, err := runtimeapi.NewImageServiceClient(conn).RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: name}})
		require.NoError(t, err, "%s: remove %s", n.Name, name)
	}
}

// writeTemp writes content into a temporary file and returns its path.
func writeTemp(t *testing.T, content string) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "*.yaml")
	require.NoError(t, err)
	_, err = f.WriteString(content)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return f.Name()
}
