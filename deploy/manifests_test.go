package deploy

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// exportedMetrics are the names sandboxpin exports (a contract: docs/design.md, Contract names).
var exportedMetrics = []string{
	"sandboxpin_audit_success",
	"sandboxpin_audit_timestamp_seconds",
	"sandboxpin_sandbox_image_info",
	"sandboxpin_sandbox_image_present",
	"sandboxpin_sandbox_image_stored_as_configured",
	"sandboxpin_must_pin_images",
	"sandboxpin_unprotected_images",
	"sandboxpin_conflicts",
}

// decodeStrict decodes the one YAML document in path into v: an unknown
// field, a duplicate key or a second document is an error.
func decodeStrict(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotRegexp(t, regexp.MustCompile(`(?m)^---`), string(data), "%s: one object a file", path)
	require.NoError(t, unmarshalStrict(data, v), "%s", path)
}

// unmarshalStrict decodes YAML as the API server does with
// fieldValidation=Strict: case-sensitive field names (encoding/json, and so
// sigs.k8s.io/yaml.UnmarshalStrict, would take "readonly" for "readOnly"),
// no unknown and no duplicate fields.
func unmarshalStrict(data []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// manifest is a file under kubernetes/ (or a patch), the API type it must
// decode into, and the apiVersion and kind it must state.
type manifest struct {
	path             string
	newObj           func() object
	apiVersion, kind string
}

// object is what every Kubernetes API type has.
type object interface {
	GetObjectKind() schema.ObjectKind
	GetName() string
}

func manifests() []manifest {
	return []manifest{
		{"kubernetes/00-namespace.yaml", func() object { return &corev1.Namespace{} }, "v1", "Namespace"},
		{"kubernetes/daemonset.yaml", func() object { return &appsv1.DaemonSet{} }, "apps/v1", "DaemonSet"},
		{"kubernetes/podmonitor.yaml", func() object { return &monitoringv1.PodMonitor{} }, "monitoring.coreos.com/v1", "PodMonitor"},
		{"kubernetes/prometheusrule.yaml", func() object { return &monitoringv1.PrometheusRule{} }, "monitoring.coreos.com/v1", "PrometheusRule"},
		{"kubernetes/fix/serviceaccount.yaml", func() object { return &corev1.ServiceAccount{} }, "v1", "ServiceAccount"},
		{"kubernetes/fix/clusterrole.yaml", func() object { return &rbacv1.ClusterRole{} }, "rbac.authorization.k8s.io/v1", "ClusterRole"},
		{"kubernetes/fix/clusterrolebinding.yaml", func() object { return &rbacv1.ClusterRoleBinding{} }, "rbac.authorization.k8s.io/v1", "ClusterRoleBinding"},
		{"kubernetes/fix/role-lease.yaml", func() object { return &rbacv1.Role{} }, "rbac.authorization.k8s.io/v1", "Role"},
		{"kubernetes/fix/rolebinding-lease.yaml", func() object { return &rbacv1.RoleBinding{} }, "rbac.authorization.k8s.io/v1", "RoleBinding"},
		{"kubernetes/fix/role-events.yaml", func() object { return &rbacv1.Role{} }, "rbac.authorization.k8s.io/v1", "Role"},
		{"kubernetes/fix/rolebinding-events.yaml", func() object { return &rbacv1.RoleBinding{} }, "rbac.authorization.k8s.io/v1", "RoleBinding"},
		{"kubernetes/fix/validatingadmissionpolicy.yaml", func() object { return &admissionv1.ValidatingAdmissionPolicy{} }, "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"},
		{"kubernetes/fix/validatingadmissionpolicybinding.yaml", func() object { return &admissionv1.ValidatingAdmissionPolicyBinding{} }, "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"},
		{"kubernetes/fix/daemonset.yaml", func() object { return &appsv1.DaemonSet{} }, "apps/v1", "DaemonSet"},
		{"kubernetes/fix/podmonitor.yaml", func() object { return &monitoringv1.PodMonitor{} }, "monitoring.coreos.com/v1", "PodMonitor"},
		{"kubernetes/fix/prometheusrule.yaml", func() object { return &monitoringv1.PrometheusRule{} }, "monitoring.coreos.com/v1", "PrometheusRule"},
		{"node-problem-detector/daemonset-patch.yaml", func() object { return &appsv1.DaemonSet{} }, "apps/v1", "DaemonSet"},
	}
}

// kustomizations are the directories `kubectl apply -k` takes: the
// exporter's and the fixer's.
var kustomizations = []string{"kubernetes", "kubernetes/fix"}

func TestManifestsDecodeStrictly(t *testing.T) {
	t.Parallel()
	var files []string
	for _, dir := range kustomizations {
		fs, err := filepath.Glob(dir + "/*.yaml")
		require.NoError(t, err)
		require.NotEmpty(t, fs)
		files = append(files, fs...)
	}
	for _, f := range files {
		if filepath.Base(f) == kustomizationFile {
			continue // TestKustomization
		}
		assert.True(t, slices.ContainsFunc(manifests(), func(m manifest) bool { return m.path == f }), "%s is checked", f)
	}
	for _, m := range manifests() {
		t.Run(m.path, func(t *testing.T) {
			t.Parallel()
			obj := m.newObj()
			decodeStrict(t, m.path, obj)
			assert.NotEmpty(t, obj.GetName())
			apiVersion, kind := obj.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()
			assert.Equal(t, m.apiVersion, apiVersion)
			assert.Equal(t, m.kind, kind)
		})
	}
}

// kustomizationFile is the file `kubectl apply -k DIR` reads in DIR.
const kustomizationFile = "kustomization.yaml"

// TestKustomization checks each kustomization.yaml strictly against the
// fields of kustomize's Kustomization it uses: it lists every other
// manifest in its directory, each once, and nothing else. (sigs.k8s.io/kustomize/api is
// not a dependency: v0.21.3 declares go 1.27.0, newer than this module's
// toolchain, and would raise kube-openapi across the workspace.)
func TestKustomization(t *testing.T) {
	t.Parallel()
	for _, dir := range kustomizations {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			var k struct {
				APIVersion string   `json:"apiVersion"`
				Kind       string   `json:"kind"`
				Resources  []string `json:"resources"`
			}
			decodeStrict(t, filepath.Join(dir, kustomizationFile), &k)
			assert.Equal(t, "kustomize.config.k8s.io/v1beta1", k.APIVersion)
			assert.Equal(t, "Kustomization", k.Kind)
			files, err := filepath.Glob(dir + "/*.yaml")
			require.NoError(t, err)
			var want []string
			for _, f := range files {
				if filepath.Base(f) != kustomizationFile {
					want = append(want, filepath.Base(f))
				}
			}
			assert.ElementsMatch(t, want, k.Resources, "%s/kustomization.yaml resources: every manifest once", dir)
		})
	}
}

// TestStrictDecodingCatchesTypos makes sure the decoding above can fail.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("kubernetes/daemonset.yaml")
	require.NoError(t, err)
	tests := []struct{ name, from, to string }{
		{name: "misspelt field", from: "readOnly: true", to: "readonly: true"},
		{name: "field in the wrong place", from: "  updateStrategy:", to: "  tolerationz: []\n  updateStrategy:"},
		{name: "duplicate key", from: "    type: RollingUpdate\n", to: "    type: RollingUpdate\n    type: OnDelete\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bad := strings.Replace(string(data), tt.from, tt.to, 1)
			require.NotEqual(t, string(data), bad)
			assert.Error(t, unmarshalStrict([]byte(bad), &appsv1.DaemonSet{}))
		})
	}
}

func TestDaemonSet(t *testing.T) {
	t.Parallel()
	var ds appsv1.DaemonSet
	decodeStrict(t, "kubernetes/daemonset.yaml", &ds)
	pod := ds.Spec.Template.Spec
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	require.NoError(t, err)
	assert.True(t, sel.Matches(labels.Set(ds.Spec.Template.Labels)), "the selector selects the pods")

	// Every node, whatever its taints.
	assert.Contains(t, pod.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
	assert.False(t, *pod.AutomountServiceAccountToken)

	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, "serve", c.Args[0])
	assert.Contains(t, c.Args, "--root=/host")
	assert.Contains(t, c.Args, "--listen=:9627")
	require.Len(t, c.Ports, 1)
	assert.Equal(t, int32(9627), c.Ports[0].ContainerPort)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		require.NotNil(t, p)
		assert.Equal(t, "/healthz", p.HTTPGet.Path)
		assert.Equal(t, c.Ports[0].Name, p.HTTPGet.Port.String())
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		assert.Contains(t, c.Resources.Requests, res)
		assert.Contains(t, c.Resources.Limits, res)
	}
	sc := c.SecurityContext
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)

	// The node's files and sockets, read-only, under /host.
	hostPaths := map[string]string{} // volume name -> host path
	for _, v := range pod.Volumes {
		require.NotNil(t, v.HostPath, v.Name)
		hostPaths[v.Name] = v.HostPath.Path
	}
	mounted := map[string]bool{} // host path
	for _, m := range c.VolumeMounts {
		assert.True(t, m.ReadOnly, m.Name)
		hp, ok := hostPaths[m.Name]
		require.True(t, ok, m.Name)
		assert.Equal(t, "/host"+hp, m.MountPath, "%s mounts the host's %s at /host%s", m.Name, hp, hp)
		mounted[hp] = true
	}
	for _, p := range []string{"/etc", "/var/lib/kubelet", "/var/lib/rancher", "/run/containerd", "/run/crio", "/run/k3s/containerd", "/run/sandboxpin"} {
		assert.True(t, mounted[p], "%s is mounted", p)
	}
	// sandboxpin finds the socket under --root: the kubelet's (the shim's,
	// after deploy/systemd's drop-in), containerd's, the defaults. Each must
	// be under a mount.
	assert.NotContains(t, strings.Join(c.Args, " "), "--runtime-endpoint")
	for _, sock := range []string{"/run/sandboxpin/shim.sock", "/run/containerd/containerd.sock", "/run/crio/crio.sock", "/run/k3s/containerd/containerd.sock"} {
		assert.True(t, socketMounted("/host"+sock, c.VolumeMounts), "the socket %s is under a mount", sock)
	}
}

func TestPodMonitor(t *testing.T) {
	t.Parallel()
	var ds appsv1.DaemonSet
	decodeStrict(t, "kubernetes/daemonset.yaml", &ds)
	var pm monitoringv1.PodMonitor
	decodeStrict(t, "kubernetes/podmonitor.yaml", &pm)
	assert.Equal(t, ds.Namespace, pm.Namespace)
	sel, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	require.NoError(t, err)
	assert.True(t, sel.Matches(labels.Set(ds.Spec.Template.Labels)), "the PodMonitor selects the DaemonSet's pods")
	require.Len(t, pm.Spec.PodMetricsEndpoints, 1)
	ep := pm.Spec.PodMetricsEndpoints[0]
	assert.Equal(t, ds.Spec.Template.Spec.Containers[0].Ports[0].Name, *ep.Port)
	a := ds.Spec.Template.Annotations
	assert.Equal(t, "true", a["prometheus.io/scrape"])
	assert.Equal(t, "9627", a["prometheus.io/port"])
	assert.Equal(t, "/metrics", a["prometheus.io/path"])
	assert.Equal(t, "node", ep.RelabelConfigs[0].TargetLabel, "alerts name the node")
}

// fixMetrics are the names `sandboxpin rollout` exports (README.md, "Fix a
// fleet").
var fixMetrics = []string{
	"sandboxpin_fix_pending",
	"sandboxpin_fix_by_hand",
	"sandboxpin_fix_state",
	"sandboxpin_fix_state_since_timestamp_seconds",
	"sandboxpin_fix_halted",
	"sandboxpin_fix_lock_held",
	"sandboxpin_fix_runs_total",
}

// ruleFiles are the PrometheusRules: the exporter's alerts and the fixer's.
var ruleFiles = []string{"kubernetes/prometheusrule.yaml", "kubernetes/fix/prometheusrule.yaml"}

// clusterAlerts are the alerts about the whole rollout, not one node.
var clusterAlerts = []string{"SandboxpinFixHalted"}

func TestPrometheusRule(t *testing.T) {
	t.Parallel()
	var alerts []string
	for _, f := range ruleFiles {
		var pr monitoringv1.PrometheusRule
		decodeStrict(t, f, &pr)
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				alerts = append(alerts, r.Alert)
				t.Run(r.Alert, func(t *testing.T) {
					t.Parallel()
					expr := r.Expr.String()
					e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
					require.NoError(t, err, "%s: %s", r.Alert, expr)
					assert.Equal(t, parser.ValueTypeVector, e.Type(), "an alert expression is an instant vector")
					names := metricNames(e)
					assert.NotEmpty(t, names)
					for _, n := range names {
						if n == "up" || n == "kube_node_info" {
							// Prometheus' own series for the PodMonitor's
							// targets (SandboxpinExporterDown), and
							// kube-state-metrics' one series a node
							// (SandboxpinExporterMissing).
							continue
						}
						assert.Contains(t, append(slices.Clone(exportedMetrics), fixMetrics...), n, "%s names a metric sandboxpin exports", r.Alert)
					}
					assert.NotEmpty(t, r.Annotations["runbook"], "a runbook line")
					assert.NotEmpty(t, r.Annotations["runbook_url"])
					assert.NotEmpty(t, r.Annotations["summary"])
					assert.NotNil(t, r.For)
					if slices.Contains(clusterAlerts, r.Alert) {
						assert.NotContains(t, expr, "node", "an alert about the rollout, one for the cluster")
					} else {
						assert.Contains(t, expr, "by (node", "the alert names the node")
					}
				})
			}
		}
	}
	slices.Sort(alerts)
	assert.Equal(t, []string{
		"SandboxImageMissing", "SandboxImageNotStoredAsConfigured", "SandboxImageUnprotected", "SandboxpinAuditFailing",
		"SandboxpinExporterDown", "SandboxpinExporterMissing", "SandboxpinFixHalted", "SandboxpinFixPending", "SandboxpinFixStuck",
	}, alerts)
}

// TestPromQLParserRejects makes sure the parser check above can fail.
func TestPromQLParserRejects(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{
		"max by (node) (sandboxpin_unprotected_images > 0",
		"sandboxpin_unprotected_images >> 0",
		`rate(sandboxpin_audit_success[5x])`,
	} {
		_, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
		assert.Error(t, err, expr)
	}
}

// metricNames returns the metric names the vector selectors of e name.
func metricNames(e parser.Expr) []string {
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}

// socketMounted reports whether path lies under one of mounts.
func socketMounted(path string, mounts []corev1.VolumeMount) bool {
	for _, m := range mounts {
		if strings.HasPrefix(path, m.MountPath+"/") {
			return true
		}
	}
	return false
}
