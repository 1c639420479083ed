package kubelettest_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/clustertest"
	"github.com/sandboxpin/sandboxpin/internal/kubelettest"
)

// fixKustomizationPath is the fixer's shipped kustomization.
const fixKustomizationPath = "../../deploy/kubernetes/fix"

// rolloutRun is the fleet rollout of TestClusterRollout: the shipped
// exporter and fixer on the cluster, the monitoring that watches them.
type rolloutRun struct {
	cp    *clustertest.ControlPlane
	nodes map[string]*clustertest.Node
	image string
	prom  *clustertest.Prometheus
	start time.Time
}

// deployRollout builds the image, applies the exporter and the fixer
// (plan mode) through the test's overlay, starts the monitoring, and
// checks plan mode: every node publishes its state, and no file under a
// node's etc/ or its kubelet's config changes.
func deployRollout(t *testing.T, cp *clustertest.ControlPlane, nodes map[string]*clustertest.Node) *rolloutRun {
	t.Helper()
	r := &rolloutRun{cp: cp, nodes: nodes, image: "ghcr.io/sandboxpin/sandboxpin:cluster-test", start: time.Now()}
	archive, released := releasedImage(t)
	if released != "" {
		r.image = released
	} else {
		archive = buildImage(t, r.image)
	}
	for _, n := range rolloutNodes {
		nodes[n.name].Containerd.ImportArchive(t, archive, r.image)
	}
	operator := cp.StartOperator(t)
	_ = operator
	before := map[string]map[string]string{}
	for name, n := range nodes {
		before[name] = nodeFiles(t, n)
	}
	// On a failure, what each fixer logged (its container's log under the
	// node's /var/log/pods, a tmpfs of the node's namespace).
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range rolloutNodes {
				t.Logf("%s: the fixer's log:\n%s", n.name, fixerLog(t, nodes[n.name]))
			}
		}
	})
	r.apply(t, "plan")
	cp.MustKubectl(t, "-n", "sandboxpin", "rollout", "status", "daemonset/sandboxpin-fix", "--timeout=4m")
	states := map[string]string{}
	for _, n := range rolloutNodes {
		states[n.name] = r.waitState(t, n.name, 3*time.Minute, "pending", "by-hand")
	}
	// One more pass of each fixer (--interval, 1m by default) after the
	// first, then the files again.
	time.Sleep(70 * time.Second)
	for _, n := range rolloutNodes {
		assert.Equal(t, before[n.name], nodeFiles(t, nodes[n.name]), "%s: plan mode changed a file", n.name)
		t.Logf("%s in plan mode: %s", n.name, r.annotations(t, n.name))
	}
	t.Logf("plan mode: %v, and no file changed on either node (%d and %d files hashed)", states, len(before["node-1-7"]), len(before["node-2-4"]))

	// Monitoring, as TestCluster: the operator's configuration for the
	// test's Prometheus object, run by a Prometheus on the node address
	// (the fixers' --prometheus-url).
	ksm := cp.StartKubeStateMetrics(t, ksmPort)
	_ = ksm
	token := filepath.Join(cp.Dir, "prometheus.token")
	monitoring := filepath.Join(cp.Dir, "monitoring.yaml")
	require.NoError(t, os.WriteFile(monitoring, []byte(fmt.Sprintf(clusterMonitoring,
		cp.Server, filepath.Join(cp.Dir, "pki/ca.crt"), token, fmt.Sprintf("127.0.0.1:%d", ksmPort))), 0o600))
	cp.MustKubectl(t, "apply", "--server-side", "-f", monitoring)
	require.NoError(t, os.WriteFile(token, []byte(cp.MustKubectl(t, "-n", "monitoring", "create", "token", "prometheus", "--duration=2h")), 0o600))
	config, rules := cp.GeneratedConfig(t, "monitoring", "k8s", "podMonitor/sandboxpin/sandboxpin-fix", 2*time.Minute)
	r.prom = cp.StartPrometheus(t, config, rules, prometheusPort)
	r.prom.WaitQuery(t, 2*time.Minute, `up{job="sandboxpin/sandboxpin-fix"} == 1`, func(v []clustertest.Sample) bool { return len(v) == len(rolloutNodes) })
	t.Logf("Prometheus at %s scrapes both fixers", r.prom.URL)
	return r
}

// apply applies the overlay of the shipped exporter and fixer that sets
// the image, the fixer's mode and --prometheus-url, as README.md's
// write-mode overlay does (--ignore-alerts's default lets through the
// alerts the fix itself answers, firing here before the fix).
func (r *rolloutRun) apply(t *testing.T, mode string) {
	t.Helper()
	overlay := t.TempDir()
	rel := func(p string) string {
		abs, err := filepath.Abs(p)
		require.NoError(t, err)
		rel, err := filepath.Rel(overlay, abs)
		require.NoError(t, err)
		return rel
	}
	name, tag, _ := strings.Cut(r.image, ":")
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
  - %s
images:
  - name: ghcr.io/sandboxpin/sandboxpin
    newName: %s
    newTag: %s
patches:
  - target: {kind: DaemonSet, name: sandboxpin-fix}
    patch: |-
      - op: replace
        path: /spec/template/spec/containers/0/args/1
        value: --mode=%s
      - op: add
        path: /spec/template/spec/containers/0/args/-
        value: --prometheus-url=http://%s:%d
`, rel(kustomizationPath), rel(fixKustomizationPath), name, tag, mode, clustertest.IP, prometheusPort)
	require.NoError(t, os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o600))
	t.Logf("the overlay (%s mode):\n%s", mode, kustomization)
	t.Logf("kubectl apply --server-side -k:\n%s", r.cp.MustKubectl(t, "apply", "--server-side", "-k", overlay))
}

// annotations returns the node's sandboxpin.io annotations, one line.
func (r *rolloutRun) annotations(t *testing.T, node string) string {
	t.Helper()
	var n struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.cp.MustKubectl(t, "get", "node", node, "-o", "json")), &n))
	var out []string
	for k, v := range n.Metadata.Annotations {
		if strings.HasPrefix(k, "sandboxpin.io/") {
			out = append(out, k+"="+v)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// waitState waits until the node's sandboxpin.io/fix-state is one of
// states and returns it.
func (r *rolloutRun) waitState(t *testing.T, node string, timeout time.Duration, states ...string) string {
	t.Helper()
	return r.cp.Wait(t, timeout, func(out string) bool { return slices.Contains(states, out) },
		"get", "node", node, "-o", `jsonpath={.metadata.annotations.sandboxpin\.io/fix-state}`)
}

// nodeFiles hashes every file under the node's etc/ (the overlay's upper
// layer: what the node changed of /etc) and the files directly under
// /var/lib/kubelet (config.yaml, kubeadm-flags.env) but the kubelet's own
// checkpoints (actuated_pods_state, allocated_pods_state: it rewrites them
// as pods come and go), by path.
func nodeFiles(t *testing.T, n *clustertest.Node) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(path string) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		out[strings.TrimPrefix(path, n.Dir+"/")] = hex.EncodeToString(sum[:8])
	}
	require.NoError(t, filepath.WalkDir(filepath.Join(n.Dir, "etc"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		add(path)
		return nil
	}))
	entries, err := os.ReadDir(filepath.Join(n.Dir, "kubelet"))
	require.NoError(t, err)
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasSuffix(e.Name(), "_state") {
			add(filepath.Join(n.Dir, "kubelet", e.Name()))
		}
	}
	return out
}

// timeline returns the Node Events of the rollout, oldest first, and the
// Leases.
func (r *rolloutRun) timeline(t *testing.T) string {
	t.Helper()
	events := r.cp.MustKubectl(t, "get", "events", "-n", "default", "--field-selector", "involvedObject.kind=Node", "--sort-by=.metadata.creationTimestamp",
		"-o", "custom-columns=TIME:.metadata.creationTimestamp,NODE:.involvedObject.name,TYPE:.type,REASON:.reason,MESSAGE:.message")
	var keep []string
	for l := range strings.Lines(events) {
		if strings.Contains(l, "SandboxpinFix") || strings.HasPrefix(l, "TIME") {
			keep = append(keep, strings.TrimRight(l, "\n"))
		}
	}
	leases := r.cp.MustKubectl(t, "-n", "sandboxpin", "get", "leases", "-o", "custom-columns=NAME:.metadata.name,HOLDER:.spec.holderIdentity,ACQUIRED:.spec.acquireTime,RENEWED:.spec.renewTime,TRANSITIONS:.spec.leaseTransitions,HALTED:.metadata.annotations.sandboxpin\\.io/halted")
	return strings.Join(keep, "\n") + "\n" + leases
}

// writeWindows returns, per node, when its Events say it entered
// applying and when it left checking (done or failed).
func (r *rolloutRun) writeWindows(t *testing.T) map[string][2]time.Time {
	t.Helper()
	out := r.cp.MustKubectl(t, "get", "events", "-n", "default", "--field-selector", "involvedObject.kind=Node", "-o",
		`jsonpath={range .items[*]}{.involvedObject.name} {.reason} {.metadata.creationTimestamp}{"\n"}{end}`)
	w := map[string][2]time.Time{}
	for l := range strings.Lines(out) {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		at, err := time.Parse(time.RFC3339, f[2])
		require.NoError(t, err)
		cur := w[f[0]]
		switch f[1] {
		case "SandboxpinFixApplying":
			if cur[0].IsZero() || at.Before(cur[0]) {
				cur[0] = at
			}
		case "SandboxpinFixDone", "SandboxpinFixFailed":
			if at.After(cur[1]) {
				cur[1] = at
			}
		}
		w[f[0]] = cur
	}
	return w
}

// write runs the rollout in write mode and then a failed fix: see
// TestClusterRollout.
func (r *rolloutRun) write(t *testing.T, pause []byte) {
	t.Helper()
	cp := r.cp
	before := map[string]map[string]string{}
	for name, n := range r.nodes {
		before[name] = nodeFiles(t, n)
	}
	r.apply(t, "write")
	cp.MustKubectl(t, "-n", "sandboxpin", "rollout", "status", "daemonset/sandboxpin-fix", "--timeout=4m")
	states := map[string]string{}
	for _, n := range rolloutNodes {
		states[n.name] = r.waitState(t, n.name, 6*time.Minute, "done", "failed", "by-hand", "halted")
		t.Logf("%s after write mode: %s", n.name, r.annotations(t, n.name))
	}
	t.Logf("the rollout's timeline:\n%s", r.timeline(t))
	for _, n := range rolloutNodes {
		node := r.nodes[n.name]
		t.Logf("%s: its bus: %v", n.name, node.Bus.Restarts())
		code, out := nodeSandboxpin(t, node, mustBinary(t), "audit")
		t.Logf("%s: audit after the rollout (exit %d):\n%s", n.name, code, out)
		if states[n.name] == "done" {
			assert.Equal(t, 0, code, "%s: done, and audit says protected", n.name)
			assert.True(t, pinnedByTag(t.Context(), t, node.Containerd.Endpoint)[n.stored[0]], "%s: the pause image pinned", n.name)
		} else {
			assert.Equal(t, before[n.name], nodeFiles(t, node), "%s: %s, and no file changed", n.name, states[n.name])
		}
	}
	for _, n := range rolloutNodes {
		assert.Equal(t, n.wantState, states[n.name], "%s's state after write mode", n.name)
	}
	windows := r.writeWindows(t)
	t.Logf("write windows: %v", windows)
	if a, b := windows["node-1-7"], windows["node-2-4"]; !a[0].IsZero() && !b[0].IsZero() {
		assert.True(t, a[1].Before(b[0]) || b[1].Before(a[0]) || a[1].Equal(b[0]) || b[1].Equal(a[0]), "one node at a time: %v", windows)
	}

	// Each node's GC rounds so far: the next one, after the node's
	// last write, must keep the pause image (awaited at the end, side by
	// side with the halt).
	rounds := map[string]int{}
	for _, n := range rolloutNodes {
		rounds[n.name] = len(kubelettest.GCRoundDone().FindAllString(r.nodes[n.name].KubeletLog(), -1))
	}

	// A failed fix halts the rollout: node-2-4 as it was, its next
	// containerd restart made to fail.
	failing, other := rolloutNodes[1], rolloutNodes[0]
	otherBefore := nodeFiles(t, r.nodes[other.name])
	breakNode(t, r.nodes[failing.name], failing, pause)
	r.nodes[failing.name].FailNextRestart("containerd.service", fmt.Errorf("the test fails this restart"))
	r.waitState(t, failing.name, 6*time.Minute, "failed")
	gcFrom := len(r.nodes[failing.name].KubeletLog())
	halted := cp.Wait(t, time.Minute, func(out string) bool { return out != "" }, "-n", "sandboxpin", "get", "lease", "sandboxpin-fix", "-o", `jsonpath={.metadata.annotations.sandboxpin\.io/halted}`)
	t.Logf("halted: the Lease's sandboxpin.io/halted: %s; %s: %s", halted, failing.name, r.annotations(t, failing.name))
	r.prom.WaitQuery(t, 4*time.Minute, `ALERTS{alertname="SandboxpinFixHalted",alertstate="firing"}`, func(v []clustertest.Sample) bool { return len(v) > 0 })
	assert.Equal(t, otherBefore, nodeFiles(t, r.nodes[other.name]), "%s untouched by the halted rollout", other.name)
	t.Logf("the halt's timeline:\n%s", r.timeline(t))
	// Halted, the node is as it was: unpinned, and the kubelet's GC
	// removes the pause image in its next round (5 min apart; in one CI
	// run before the halt was lifted, and the resumed fix, which then had
	// to pull the image, failed on a node without a registry). Removed
	// here as the GC does, so that the resumed fix pulls it, from the
	// test's registry.
	removeImages(t, r.nodes[failing.name], failing.stored)
	cp.MustKubectl(t, "-n", "sandboxpin", "annotate", "lease", "sandboxpin-fix", "sandboxpin.io/halted-")
	r.waitState(t, failing.name, 6*time.Minute, "done")
	t.Logf("after the halt was lifted: %s: %s", failing.name, r.annotations(t, failing.name))
	t.Logf("%s: the kubelet's GC since the failure:\n%s", failing.name, gcLines(r.nodes[failing.name].KubeletLog()[gcFrom:]))
	assert.Regexp(t, `fix-plan=[^=]*\bpull \S*pause:3\.10\.1`, r.annotations(t, failing.name), "%s: the resumed fix pulled the pause image", failing.name)
	assert.True(t, pinnedByTag(t.Context(), t, r.nodes[failing.name].Containerd.Endpoint)[failing.stored[0]], "%s: the pulled pause image pinned", failing.name)
	code, out := nodeSandboxpin(t, r.nodes[failing.name], mustBinary(t), "audit")
	assert.Equal(t, 0, code, "%s: audit after the resumed fix:\n%s", failing.name, out)
	t.Logf("%s: audit after the resumed fix (exit %d):\n%s", failing.name, code, out)
	t.Logf("the timeline after the lift:\n%s", r.timeline(t))

	// The kubelet's next GC round keeps the pause image where the
	// rollout pinned it: the other node's first round after write mode,
	// the failing node's first after the resumed fix.
	rounds[failing.name] = len(kubelettest.GCRoundDone().FindAllString(r.nodes[failing.name].KubeletLog(), -1))
	for _, n := range rolloutNodes {
		node := r.nodes[n.name]
		id := imageIDs(t.Context(), t, node.Containerd.Endpoint)[n.stored[0]]
		rounds := rounds[n.name]
		require.Eventually(t, func() bool { return len(kubelettest.GCRoundDone().FindAllString(node.KubeletLog(), -1)) > rounds },
			kubelettest.ImageGCPeriod+time.Minute, 5*time.Second, "%s: a GC round", n.name)
		_, kept := imageIDs(t.Context(), t, node.Containerd.Endpoint)[n.stored[0]]
		assert.Equal(t, states[n.name] == "done", kept, "%s: the kubelet's GC keeps the pause image %s after the rollout exactly where it ended done (%s)", n.name, id, states[n.name])
		t.Logf("%s: the kubelet's GC, the whole run:\n%s", n.name, gcLines(node.KubeletLog()))
	}

	// Every panel query of the dashboard returns series.
	queries := dashboardQueries(t, "../../deploy/grafana/sandboxpin.json")
	for _, q := range queries {
		v := r.prom.Query(t, q)
		assert.NotEmpty(t, v, "dashboard query %s", q)
	}
	t.Logf("%d dashboard queries, each with series", len(queries))
}

// mustBinary is sandboxpinBinary, failing t.
func mustBinary(t *testing.T) string {
	t.Helper()
	bin, err := sandboxpinBinary()
	require.NoError(t, err)
	return bin
}

// dashboardQueries returns every panel target's expression of the
// Grafana dashboard at path, its variables as deploy.DashboardQueries
// sets them (every node, a 5m rate interval; that module is not one this
// one requires: its requirements clash with this module's).
func dashboardQueries(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	vars := strings.NewReplacer("${node}", ".*", "$node", ".*", "${__rate_interval}", "5m", "$__rate_interval", "5m",
		"${__interval}", "1m", "$__interval", "1m", "${__range}", "1h", "$__range", "1h")
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if e, ok := v["expr"].(string); ok && e != "" {
				out = append(out, vars.Replace(e))
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	var d any
	require.NoError(t, json.Unmarshal(b, &d))
	walk(d)
	require.NotEmpty(t, out, "%s: no queries", path)
	return out
}

// fixerLog returns the last lines of the log of each sandboxpin-fix
// container the node's kubelet ran.
func fixerLog(t *testing.T, n *clustertest.Node) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
	defer cancel()
	argv := append(n.Enter(), "sh", "-c", `for f in /var/log/pods/sandboxpin_sandboxpin-fix-*/*/*.log; do echo "== $f"; tail -n 150 "$f"; done`)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}
