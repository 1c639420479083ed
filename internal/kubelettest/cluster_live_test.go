package kubelettest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/clustertest"
	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/critesttest"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// The cluster's nodes: containerd 1.6.20, which never pins, and 2.4.2,
// which pins its configured sandbox image, both configured with the name
// the image is stored under.
var clusterNodes = []struct {
	name           string
	version        containerdtest.Version
	bridge, subnet string
	port           int
	unprotected    string
}{
	{"node-1-6", containerdtest.V1, "cni-a", "10.88.1.0/24", 10450, "1"},
	{"node-2-4", containerdtest.V24, "cni-b", "10.88.2.0/24", 10460, "0"},
}

// kustomizationPath is the shipped kustomization the test's overlay builds
// on.
const kustomizationPath = "../../deploy/kubernetes"

// clusterMonitoring is the test's own monitoring: a Prometheus object for the
// operator (no replicas: the operator generates its configuration, which a
// Prometheus server on the test's host runs; selecting every PodMonitor,
// PrometheusRule and ScrapeConfig), the service account and role it finds
// pods with (as kube-prometheus gives its Prometheus), and a ScrapeConfig
// for kube-state-metrics, which runs on the host. %[1]s is the API server's
// URL, %[2]s its CA file, %[3]s the file that holds the service account's
// token, %[4]s kube-state-metrics' address.
const clusterMonitoring = `apiVersion: v1
kind: Namespace
metadata:
  name: monitoring
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: prometheus
  namespace: monitoring
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: prometheus
rules:
  - apiGroups: [""]
    resources: [nodes, services, endpoints, pods]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: prometheus
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: prometheus
subjects:
  - kind: ServiceAccount
    name: prometheus
    namespace: monitoring
---
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata:
  name: k8s
  namespace: monitoring
spec:
  replicas: 0
  serviceAccountName: prometheus
  evaluationInterval: 10s
  podMonitorSelector: {}
  podMonitorNamespaceSelector: {}
  ruleSelector: {}
  ruleNamespaceSelector: {}
  scrapeConfigSelector: {}
  scrapeConfigNamespaceSelector: {}
  serviceMonitorSelector: {}
  serviceMonitorNamespaceSelector: {}
  apiserverConfig:
    host: %[1]s
    tlsConfig:
      caFile: %[2]s
    authorization:
      credentialsFile: %[3]s
---
apiVersion: monitoring.coreos.com/v1alpha1
kind: ScrapeConfig
metadata:
  name: kube-state-metrics
  namespace: monitoring
spec:
  honorLabels: true
  scrapeInterval: 10s
  staticConfigs:
    - targets: [%[4]q]
`

// Ports on the test's loopback.
const (
	ksmPort        = 8090
	prometheusPort = 9090
)

// TestCluster runs deploy/kubernetes on a real cluster: a control plane
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) and two
// nodes (kubelet and containerd 1.6.20, kubelet and containerd 2.4.2, each
// with a CNI bridge), with the Prometheus Operator, a Prometheus server on
// the configuration the operator generates from the shipped PodMonitor and
// PrometheusRule, and kube-state-metrics (internal/clustertest). It applies
// the operator's CRDs, then `kubectl apply --server-side -k` of an overlay
// whose only change is the image; the DaemonSet's pods must run on both
// nodes and say each its own node's verdict; SandboxImageUnprotected must be
// pending for the 1.6.20 node only, and go when that node is fixed as
// README.md says (the shim's unit and the kubelet's drop-in, the kubelet
// restarted); SandboxpinExporterMissing must be pending for a node whose
// exporter pod is gone.
func TestCluster(t *testing.T) {
	t.Parallel()
	clustertest.Require(t)
	for _, n := range clusterNodes {
		containerdtest.Require(t, n.version)
	}
	if !critesttest.Isolate(t, 25*time.Minute) {
		return
	}
	pause, err := pauseBinary()
	require.NoError(t, err)
	image := "ghcr.io/sandboxpin/sandboxpin:cluster-test"
	archive, released := releasedImage(t)
	if released != "" {
		image = released
	} else {
		archive = buildImage(t, image)
	}
	bin, err := sandboxpinBinary()
	require.NoError(t, err)

	start := time.Now()
	cp := clustertest.Start(t)
	t.Logf("control plane ready in %v", time.Since(start).Round(time.Millisecond))
	nodes := map[string]*clustertest.Node{}
	for _, n := range clusterNodes {
		node := cp.StartNode(t, clustertest.NodeOptions{
			Name: n.name, Containerd: n.version, SandboxImage: storedPause, Pause: pause,
			Bridge: n.bridge, Subnet: n.subnet, Port: n.port, CNIBin: cniBin(t),
		})
		node.Containerd.ImportArchive(t, archive, image)
		nodes[n.name] = node
	}
	cp.Wait(t, 3*time.Minute, func(out string) bool { return strings.Count(out, "True") == len(clusterNodes) },
		"get", "nodes", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	t.Logf("nodes ready in %v", time.Since(start).Round(time.Millisecond))

	// The operator's CRDs first, then the shipped manifests through an
	// overlay that only names the test's image.
	operator := cp.StartOperator(t)
	overlay := t.TempDir()
	base, err := filepath.Abs(kustomizationPath)
	require.NoError(t, err)
	// kustomize takes a base only by a relative path.
	base, err = filepath.Rel(overlay, base)
	require.NoError(t, err)
	_, tag, _ := strings.Cut(image, ":")
	kustomization := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - %s\nimages:\n  - name: ghcr.io/sandboxpin/sandboxpin\n    newName: %s\n    newTag: %s\n",
		base, strings.TrimSuffix(image, ":"+tag), tag)
	require.NoError(t, os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o600))
	t.Logf("the overlay:\n%s", kustomization)
	t.Logf("kubectl apply --server-side -k:\n%s", cp.MustKubectl(t, "apply", "--server-side", "-k", overlay))
	cp.MustKubectl(t, "-n", "sandboxpin", "rollout", "status", "daemonset/sandboxpin", "--timeout=4m")
	t.Logf("the DaemonSet rolled out in %v", time.Since(start).Round(time.Millisecond))

	// Pod Security admission holds the pods to the namespace's label: the
	// manifest's "privileged" admits its hostPath volumes, which the
	// baseline level would refuse.
	psa := cp.MustKubectl(t, "label", "--dry-run=server", "--overwrite", "namespace", "sandboxpin", "pod-security.kubernetes.io/enforce=baseline")
	assert.Contains(t, psa, "violate", "Pod Security admission warns of the pods a baseline namespace would refuse")
	t.Logf("the namespace at baseline (a server-side dry run):\n%s", psa)

	// Each pod on its own node, its /metrics its own node's verdict.
	pods := exporterPods(t, cp)
	require.Len(t, pods, len(clusterNodes), "one exporter pod a node")
	for _, n := range clusterNodes {
		p, ok := pods[n.name]
		require.True(t, ok, "an exporter pod on %s: %v", n.name, pods)
		metrics := waitMetrics(t, "http://"+p.ip+":9627/metrics")
		assert.Equal(t, []string{"sandboxpin_unprotected_images " + n.unprotected}, seriesOf(metrics, "sandboxpin_unprotected_images"), "%s's pod %s", n.name, p.name)
		t.Logf("%s: %s %s", n.name, p.name, strings.Join(append(seriesOf(metrics, "sandboxpin_sandbox_image_info"), seriesOf(metrics, "sandboxpin_unprotected_images")...), " "))
	}

	// Monitoring: the test's Prometheus object, its token, kube-state-metrics,
	// then a Prometheus server on what the operator generated.
	ksm := cp.StartKubeStateMetrics(t, ksmPort)
	token := filepath.Join(cp.Dir, "prometheus.token")
	monitoring := filepath.Join(cp.Dir, "monitoring.yaml")
	require.NoError(t, os.WriteFile(monitoring, []byte(fmt.Sprintf(clusterMonitoring,
		cp.Server, filepath.Join(cp.Dir, "pki/ca.crt"), token, fmt.Sprintf("127.0.0.1:%d", ksmPort))), 0o600))
	cp.MustKubectl(t, "apply", "--server-side", "-f", monitoring)
	require.NoError(t, os.WriteFile(token, []byte(cp.MustKubectl(t, "-n", "monitoring", "create", "token", "prometheus", "--duration=2h")), 0o600))
	config, rules := cp.GeneratedConfig(t, "monitoring", "k8s", "podMonitor/sandboxpin/sandboxpin", 2*time.Minute)
	require.Contains(t, config, "scrapeConfig/monitoring/kube-state-metrics")
	t.Logf("the operator's prometheus.yaml:\n%s", config)
	prom := cp.StartPrometheus(t, config, rules, prometheusPort)
	t.Logf("Prometheus on the operator's configuration in %v", time.Since(start).Round(time.Millisecond))

	// The shipped rule: pending for the 1.6.20 node, nothing for 2.4.2.
	unprotected := `ALERTS{alertname="SandboxImageUnprotected"}`
	prom.WaitQuery(t, 4*time.Minute, unprotected, func(v []clustertest.Sample) bool {
		return len(v) == 1 && v[0].Metric["node"] == "node-1-6" && v[0].Metric["alertstate"] == "pending"
	})
	t.Logf("pending for node-1-6 in %v", time.Since(start).Round(time.Millisecond))
	// Both pods discovered through the API server and scraped, labelled
	// with their nodes by the PodMonitor's relabeling.
	up := prom.WaitQuery(t, 2*time.Minute, `up{job="sandboxpin/sandboxpin"} == 1`, func(v []clustertest.Sample) bool { return len(v) == len(clusterNodes) })
	var upNodes []string
	for _, s := range up {
		upNodes = append(upNodes, s.Metric["node"])
	}
	assert.ElementsMatch(t, []string{"node-1-6", "node-2-4"}, upNodes)
	t.Logf("kubectl get nodes,pods -A -o wide:\n%s", cp.MustKubectl(t, "get", "nodes,pods", "-A", "-o", "wide"))
	t.Logf("Prometheus /api/v1/targets:\n%s", indentJSON(prom.Get(t, "/api/v1/targets")))
	alerts := prom.Get(t, "/api/v1/alerts")
	t.Logf("Prometheus /api/v1/alerts before the fix:\n%s", indentJSON(alerts))
	assert.Contains(t, alerts, `"runbook":"On the node run `, "the alert's runbook annotation")
	assert.Empty(t, prom.Query(t, `sandboxpin_unprotected_images{node="node-2-4"} != 0`), "2.4.2 pins")

	// The fix README.md gives: the shim's unit and the kubelet's drop-in,
	// the shim started (its unit's ExecStart), the kubelet restarted with
	// what the drop-in adds to its command line.
	fixed := nodes["node-1-6"]
	unit, err := os.ReadFile(shimUnitPath)
	require.NoError(t, err)
	dropIn, err := os.ReadFile("../../deploy/systemd/kubelet-sandboxpin-shim.conf")
	require.NoError(t, err)
	fixed.WriteFile(t, "/etc/systemd/system/sandboxpin-shim.service", string(unit))
	fixed.WriteFile(t, "/etc/systemd/system/kubelet.service.d/20-sandboxpin-shim.conf", string(dropIn))
	args, err := shimCommand(bin, "unix:///run/sandboxpin/shim.sock", "unix:///run/containerd/containerd.sock", "/", "127.0.0.1:9628")
	require.NoError(t, err)
	fixed.Start(t, "sandboxpin-shim", args...)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(fixed.Dir, "run-sandboxpin/shim.sock"))
		return err == nil
	}, time.Minute, 200*time.Millisecond, "the shim's socket")
	fixed.RestartKubelet(t, "--container-runtime-endpoint=unix:///run/sandboxpin/shim.sock")
	fixedAt := time.Now()
	prom.WaitQuery(t, 4*time.Minute, `sandboxpin_unprotected_images{node="node-1-6"} == 0`, func(v []clustertest.Sample) bool { return len(v) == 1 })
	prom.WaitQuery(t, time.Minute, unprotected, func(v []clustertest.Sample) bool { return len(v) == 0 })
	t.Logf("after the fix: the gauge 0 and the alert gone in %v", time.Since(fixedAt).Round(time.Millisecond))
	t.Logf("Prometheus /api/v1/alerts after the fix:\n%s", indentJSON(prom.Get(t, "/api/v1/alerts")))

	// A node without its exporter: keep the DaemonSet off node-2-4.
	cp.MustKubectl(t, "label", "node", "node-1-6", "sandboxpin.test/exporter=yes")
	cp.MustKubectl(t, "-n", "sandboxpin", "patch", "daemonset", "sandboxpin", "--type=merge", "-p",
		`{"spec":{"template":{"spec":{"nodeSelector":{"sandboxpin.test/exporter":"yes"}}}}}`)
	cp.Wait(t, 2*time.Minute, func(out string) bool { return strings.TrimSpace(out) == "" },
		"-n", "sandboxpin", "get", "pods", "--field-selector", "spec.nodeName=node-2-4", "-o", "name")
	gone := time.Now()
	prom.WaitQuery(t, 4*time.Minute, `ALERTS{alertname="SandboxpinExporterMissing"}`, func(v []clustertest.Sample) bool {
		return len(v) == 1 && v[0].Metric["node"] == "node-2-4" && v[0].Metric["alertstate"] == "pending"
	})
	t.Logf("SandboxpinExporterMissing pending for node-2-4 %v after its pod went", time.Since(gone).Round(time.Millisecond))
	assert.Empty(t, prom.Query(t, `ALERTS{alertname="SandboxpinExporterDown"}`), "no up series, so no ExporterDown")
	t.Logf("Prometheus /api/v1/alerts with node-2-4's exporter gone:\n%s", indentJSON(prom.Get(t, "/api/v1/alerts")))
	for _, p := range []*clustertest.Process{operator, ksm, prom.Process} {
		select {
		case <-p.Exited():
			t.Errorf("%s exited", p.Name)
		default:
		}
	}
}

// waitMetrics returns url's body once it has sandboxpin_audit_success.
func waitMetrics(t *testing.T, url string) string {
	t.Helper()
	var body string
	require.Eventually(t, func() bool {
		// The test runs in the cluster's network namespace
		// (critesttest.Isolate), where the pods' addresses are routed.
		b, err := runtimetest.Get(t.Context(), http.DefaultClient, url)
		body = b
		return err == nil && len(seriesOf(b, "sandboxpin_audit_success")) > 0
	}, 2*time.Minute, time.Second, "%s", url)
	return body
}

// indentJSON indents a JSON document for the log, or returns it as it is.
func indentJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return s
	}
	return string(b)
}

// cniBin is the directory of the CNI plugins.
func cniBin(t *testing.T) string {
	t.Helper()
	return critesttest.DefaultBinaries().CNIBin
}

// exporterPod is an exporter pod as the API server has it.
type exporterPod struct{ name, ip string }

// exporterPods returns the running exporter pods by node.
func exporterPods(t *testing.T, cp *clustertest.ControlPlane) map[string]exporterPod {
	t.Helper()
	out := cp.MustKubectl(t, "-n", "sandboxpin", "get", "pods", "-l", "app.kubernetes.io/name=sandboxpin", "-o",
		`jsonpath={range .items[*]}{.spec.nodeName} {.metadata.name} {.status.podIP} {.status.phase}{"\n"}{end}`)
	pods := map[string]exporterPod{}
	for l := range strings.Lines(out) {
		f := strings.Fields(l)
		if len(f) == 4 && f[3] == "Running" {
			pods[f[0]] = exporterPod{f[1], f[2]}
		}
	}
	return pods
}
