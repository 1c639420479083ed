package deploy

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// fixDir holds the fixer's manifests.
const fixDir = "kubernetes/fix"

// The fixer's identity, as the policy and the bindings name it.
const (
	fixNamespace      = "sandboxpin"
	fixServiceAccount = "sandboxpin-fix"
)

// TestFixSharesNoObject checks that the fixer's kustomization and the
// exporter's apply no object in common (server-side apply of both then has
// nothing to fight over, and deleting the fixer leaves the exporter), and
// that neither's pod selectors pick the other's pods.
func TestFixSharesNoObject(t *testing.T) {
	t.Parallel()
	type id struct{ apiVersion, kind, namespace, name string }
	objects := map[string][]id{}
	for _, dir := range kustomizations {
		files, err := filepath.Glob(dir + "/*.yaml")
		require.NoError(t, err)
		for _, f := range files {
			if filepath.Base(f) == kustomizationFile {
				continue
			}
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			var o struct {
				APIVersion string            `json:"apiVersion"`
				Kind       string            `json:"kind"`
				Metadata   metav1.ObjectMeta `json:"metadata"`
			}
			require.NoError(t, yaml.Unmarshal(data, &o), f)
			objects[dir] = append(objects[dir], id{o.APIVersion, o.Kind, o.Metadata.Namespace, o.Metadata.Name})
			if o.Metadata.Namespace != "" && o.Metadata.Namespace != "default" {
				assert.Equal(t, fixNamespace, o.Metadata.Namespace, "%s: in the namespace 00-namespace.yaml makes", f)
			}
		}
	}
	for _, o := range objects[fixDir] {
		assert.NotContains(t, objects["kubernetes"], o, "both kustomizations apply %v", o)
	}

	var exporter, fixer appsv1.DaemonSet
	decodeStrict(t, "kubernetes/daemonset.yaml", &exporter)
	decodeStrict(t, fixDir+"/daemonset.yaml", &fixer)
	var exporterPM, fixerPM monitoringv1.PodMonitor
	decodeStrict(t, "kubernetes/podmonitor.yaml", &exporterPM)
	decodeStrict(t, fixDir+"/podmonitor.yaml", &fixerPM)
	tests := []struct {
		name     string
		selector *metav1.LabelSelector
		pods     map[string]string // the pods' labels
		want     bool
	}{
		{name: "the exporter's DaemonSet, the fixer's pods", selector: exporter.Spec.Selector, pods: fixer.Spec.Template.Labels},
		{name: "the fixer's DaemonSet, the exporter's pods", selector: fixer.Spec.Selector, pods: exporter.Spec.Template.Labels},
		{name: "the exporter's PodMonitor, the fixer's pods", selector: &exporterPM.Spec.Selector, pods: fixer.Spec.Template.Labels},
		{name: "the fixer's PodMonitor, the exporter's pods", selector: &fixerPM.Spec.Selector, pods: exporter.Spec.Template.Labels},
		{name: "the fixer's DaemonSet, its pods", selector: fixer.Spec.Selector, pods: fixer.Spec.Template.Labels, want: true},
		{name: "the fixer's PodMonitor, its pods", selector: &fixerPM.Spec.Selector, pods: fixer.Spec.Template.Labels, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sel, err := metav1.LabelSelectorAsSelector(tt.selector)
			require.NoError(t, err)
			assert.Equal(t, tt.want, sel.Matches(labels.Set(tt.pods)))
		})
	}
}

// TestFixRBAC checks that the fixer may do what README.md, "Fix a fleet",
// says and no more: read and patch Nodes, its Leases, Events on Nodes.
func TestFixRBAC(t *testing.T) {
	t.Parallel()
	var cr rbacv1.ClusterRole
	decodeStrict(t, fixDir+"/clusterrole.yaml", &cr)
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}}, cr.Rules)
	assert.Nil(t, cr.AggregationRule)

	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: fixServiceAccount, Namespace: fixNamespace}}
	var crb rbacv1.ClusterRoleBinding
	decodeStrict(t, fixDir+"/clusterrolebinding.yaml", &crb)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: cr.Name}, crb.RoleRef)
	assert.Equal(t, subject, crb.Subjects)

	var sa corev1.ServiceAccount
	decodeStrict(t, fixDir+"/serviceaccount.yaml", &sa)
	assert.Equal(t, fixServiceAccount, sa.Name)
	assert.Equal(t, fixNamespace, sa.Namespace)

	tests := []struct {
		name, role, binding string
		namespace           string // where the Role and its binding are
		rules               []rbacv1.PolicyRule
	}{
		{
			name: "leases", role: "role-lease.yaml", binding: "rolebinding-lease.yaml", namespace: fixNamespace,
			rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}}},
		},
		{
			// Node events are in "default", core/v1 (role-events.yaml says why).
			name: "events", role: "role-events.yaml", binding: "rolebinding-events.yaml", namespace: "default",
			rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r rbacv1.Role
			decodeStrict(t, filepath.Join(fixDir, tt.role), &r)
			assert.Equal(t, tt.namespace, r.Namespace)
			assert.Equal(t, tt.rules, r.Rules)
			var rb rbacv1.RoleBinding
			decodeStrict(t, filepath.Join(fixDir, tt.binding), &rb)
			assert.Equal(t, tt.namespace, rb.Namespace)
			assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: r.Name}, rb.RoleRef)
			assert.Equal(t, subject, rb.Subjects)
		})
	}
}

// writtenPaths returns the node paths that remedy's golden plans write
// (their "+++ b/PATH" lines): every kind of file `sandboxpin fix` edits or
// creates.
func writtenPaths(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../remedy/testdata/plans/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files, "remedy's golden plans")
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for line := range strings.Lines(string(data)) {
			if p, ok := strings.CutPrefix(strings.TrimSpace(line), "+++ b/"); ok && !slices.Contains(out, "/"+p) {
				out = append(out, "/"+p)
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

// under reports whether the node path p is dir or lies below it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func TestFixDaemonSet(t *testing.T) {
	t.Parallel()
	var ds appsv1.DaemonSet
	decodeStrict(t, fixDir+"/daemonset.yaml", &ds)
	pod := ds.Spec.Template.Spec
	assert.Equal(t, map[string]string{"app.kubernetes.io/name": "sandboxpin-fix", "app.kubernetes.io/component": "fixer"}, ds.Spec.Template.Labels)
	assert.Equal(t, fixServiceAccount, pod.ServiceAccountName)
	require.NotNil(t, pod.AutomountServiceAccountToken)
	assert.True(t, *pod.AutomountServiceAccountToken, "the API token")
	assert.Contains(t, pod.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
	assert.False(t, pod.HostPID || pod.HostNetwork || pod.HostIPC, "no host namespaces")
	assert.Equal(t, int64(0), *pod.SecurityContext.RunAsUser)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)

	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	// The README's write-mode patch replaces args/1.
	require.GreaterOrEqual(t, len(c.Args), 2)
	assert.Equal(t, []string{"rollout", "--mode=plan"}, c.Args[:2])
	arg := func(name string) string {
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				return v
			}
		}
		return ""
	}
	assert.Equal(t, "/host", arg("root"))
	assert.Equal(t, ":9629", arg("metrics-listen"))
	assert.Empty(t, arg("runtime-endpoint"), "the socket the kubelet talks to, as the exporter")
	require.Len(t, c.Ports, 1)
	assert.Equal(t, int32(9629), c.Ports[0].ContainerPort)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		require.NotNil(t, p)
		assert.Equal(t, "/healthz", p.HTTPGet.Path)
		assert.Equal(t, c.Ports[0].Name, p.HTTPGet.Port.String())
	}
	assert.Equal(t, []corev1.EnvVar{
		{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
	}, c.Env)
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		assert.Contains(t, c.Resources.Requests, res)
		assert.Contains(t, c.Resources.Limits, res)
	}
	sc := c.SecurityContext
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.False(t, *sc.Privileged)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	// Measured (the comment in daemonset.yaml): owner and group kept on
	// files that root does not own.
	assert.Equal(t, []corev1.Capability{"CHOWN", "FOWNER"}, sc.Capabilities.Add)

	hostPaths := map[string]string{} // volume name -> host path
	for _, v := range pod.Volumes {
		require.NotNil(t, v.HostPath, v.Name)
		hostPaths[v.Name] = v.HostPath.Path
	}
	var rw, ro []string // host paths
	for _, m := range c.VolumeMounts {
		hp, ok := hostPaths[m.Name]
		require.True(t, ok, m.Name)
		assert.Equal(t, "/host"+hp, m.MountPath, "%s mounts the host's %s at /host%s", m.Name, hp, hp)
		if m.ReadOnly {
			ro = append(ro, hp)
		} else {
			rw = append(rw, hp)
		}
	}
	mountOf := func(p string, dirs []string) string {
		for _, d := range dirs {
			if under(p, d) {
				return d
			}
		}
		return ""
	}

	// Every file fix writes is under a read-write mount, and so is the
	// directory of its temporary file (beside it, or above a drop-in
	// directory): the same mount, as rename(2) needs.
	used := map[string]bool{}
	for _, p := range writtenPaths(t) {
		m := mountOf(p, rw)
		if assert.NotEmpty(t, m, "fix writes %s: no read-write mount has it", p) {
			used[m] = true
			tmpDir := path.Dir(p)
			if strings.HasSuffix(tmpDir, ".d") {
				tmpDir = path.Dir(tmpDir)
			}
			assert.True(t, under(tmpDir, m), "%s: its temporary's directory %s is in the mount %s", p, tmpDir, m)
		}
	}
	backups := arg("backup-dir")
	require.NotEmpty(t, backups)
	if m := mountOf(backups, rw); assert.NotEmpty(t, m, "the backups (%s) are under a read-write mount", backups) {
		used[m] = true
	}
	for _, m := range rw {
		assert.True(t, used[m], "%s is mounted read-write, but fix writes nothing there", m)
	}
	assert.True(t, slices.Contains(rw, "/etc"), "/etc: containerd, CRI-O, systemd drop-ins, default/sysconfig, rancher")

	// What the plan reads: the units the command lines come from, the
	// binaries and the dpkg database the versions come from
	// (resolve/internal/config/cridockerd.go unitDirs,
	// resolve/internal/nodeversion binaryDirs and dpkgStatus).
	all := append(slices.Clone(rw), ro...)
	for _, p := range []string{"/etc/systemd/system", "/usr/lib/systemd/system", "/usr/local/lib/systemd/system", "/lib/systemd/system", "/usr/bin", "/usr/local/bin", "/var/lib/dpkg/status"} {
		assert.NotEmpty(t, mountOf(p, all), "the plan reads %s", p)
	}
	// The runtime sockets, as the exporter has them, and the system bus.
	var exporter appsv1.DaemonSet
	decodeStrict(t, "kubernetes/daemonset.yaml", &exporter)
	for _, m := range exporter.Spec.Template.Spec.Containers[0].VolumeMounts {
		if strings.HasPrefix(m.MountPath, "/host/run/") {
			assert.True(t, slices.ContainsFunc(c.VolumeMounts, func(f corev1.VolumeMount) bool { return f.MountPath == m.MountPath && f.ReadOnly }), "the exporter's %s", m.MountPath)
		}
	}
	bus, ok := strings.CutPrefix(arg("systemd-address"), "unix:path=")
	require.True(t, ok, "--systemd-address names a unix socket")
	assert.True(t, socketMounted(bus, c.VolumeMounts), "the system bus %s is under a mount", bus)
}

func TestFixPodMonitor(t *testing.T) {
	t.Parallel()
	var ds appsv1.DaemonSet
	decodeStrict(t, fixDir+"/daemonset.yaml", &ds)
	var pm monitoringv1.PodMonitor
	decodeStrict(t, fixDir+"/podmonitor.yaml", &pm)
	assert.Equal(t, ds.Namespace, pm.Namespace)
	require.Len(t, pm.Spec.PodMetricsEndpoints, 1)
	ep := pm.Spec.PodMetricsEndpoints[0]
	assert.Equal(t, ds.Spec.Template.Spec.Containers[0].Ports[0].Name, *ep.Port)
	assert.Equal(t, "/metrics", ep.Path)
	require.NotEmpty(t, ep.RelabelConfigs)
	assert.Equal(t, "node", ep.RelabelConfigs[0].TargetLabel, "alerts name the node")
	assert.Equal(t, fixJob, pm.Namespace+"/"+pm.Name, "the job label the rule tests give the fixer's series")
}

// policyEnv is a CEL environment close to the one the API server gives a
// ValidatingAdmissionPolicy (k8s.io/apiserver v0.37.2
// pkg/cel/environment/base.go: optional types since 1.28, the strings
// extension): object, oldObject and request untyped, variables a map.
func policyEnv(t *testing.T) *cel.Env {
	t.Helper()
	env, err := cel.NewEnv(
		cel.OptionalTypes(),
		ext.Strings(ext.StringsVersion(2)),
		cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)),
	)
	require.NoError(t, err)
	return env
}

// eval compiles expr and evaluates it on vars.
func eval(t *testing.T, env *cel.Env, expr string, vars map[string]any) (any, error) {
	t.Helper()
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	prg, err := env.Program(ast)
	require.NoError(t, err)
	out, _, err := prg.Eval(vars)
	if err != nil {
		return nil, err
	}
	return out.Value(), nil
}

// TestFixPolicy evaluates the ValidatingAdmissionPolicy's expressions with
// cel-go on the requests it must let through and those it must deny. (The
// API server's own validator, k8s.io/apiserver v0.37.2's
// policy/validating with its CEL environment, compiled the policy and gave
// the same decisions on typed Nodes and user.DefaultInfo in a program run
// by hand; it is not a dependency of this module: it would pull in the API
// server's.)
func TestFixPolicy(t *testing.T) {
	t.Parallel()
	var vap admissionv1.ValidatingAdmissionPolicy
	decodeStrict(t, fixDir+"/validatingadmissionpolicy.yaml", &vap)
	var binding admissionv1.ValidatingAdmissionPolicyBinding
	decodeStrict(t, fixDir+"/validatingadmissionpolicybinding.yaml", &binding)
	assert.Equal(t, vap.Name, binding.Spec.PolicyName)
	assert.Equal(t, []admissionv1.ValidationAction{admissionv1.Deny}, binding.Spec.ValidationActions)
	assert.Nil(t, binding.Spec.ParamRef)
	assert.Equal(t, admissionv1.Fail, *vap.Spec.FailurePolicy)
	require.Len(t, vap.Spec.MatchConstraints.ResourceRules, 1)
	rule := vap.Spec.MatchConstraints.ResourceRules[0]
	assert.Equal(t, []string{""}, rule.APIGroups)
	assert.Equal(t, []string{"nodes"}, rule.Resources)
	assert.Equal(t, []admissionv1.OperationType{admissionv1.Update}, rule.Operations)

	env := policyEnv(t)
	const mine = "worker-1"
	node := func(name string, annotations, nodeLabels map[string]any, taints []any) map[string]any {
		meta := map[string]any{"name": name, "labels": nodeLabels}
		if annotations != nil {
			meta["annotations"] = annotations
		}
		spec := map[string]any{"podCIDR": "10.244.1.0/24"}
		if taints != nil {
			spec["taints"] = taints
		}
		return map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec}
	}
	lbl := map[string]any{"kubernetes.io/hostname": mine}
	ann := map[string]any{"node.alpha.kubernetes.io/ttl": "0", "sandboxpin.io/fix-state": "pending"}
	with := func(m map[string]any, k string, v any) map[string]any {
		out := map[string]any{}
		for kk, vv := range m {
			out[kk] = vv
		}
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	fixer := map[string]any{"username": "system:serviceaccount:sandboxpin:sandboxpin-fix", "extra": map[string]any{"authentication.kubernetes.io/node-name": []any{mine}}}
	tests := []struct {
		name             string
		user             map[string]any // request.userInfo
		oldObj, obj      map[string]any
		matched, allowed bool // the policy applies; and then lets it through
	}{
		{name: "its own node, a new fix annotation", user: fixer, oldObj: node(mine, ann, lbl, nil), obj: node(mine, with(ann, "sandboxpin.io/fix-plan", "edit /etc/containerd/config.toml"), lbl, nil), matched: true, allowed: true},
		{name: "its own node, a fix annotation changed", user: fixer, oldObj: node(mine, ann, lbl, nil), obj: node(mine, with(ann, "sandboxpin.io/fix-state", "done"), lbl, nil), matched: true, allowed: true},
		{name: "its own node, a fix annotation removed", user: fixer, oldObj: node(mine, ann, lbl, nil), obj: node(mine, with(ann, "sandboxpin.io/fix-state", nil), lbl, nil), matched: true, allowed: true},
		{name: "its own node, the first annotation", user: fixer, oldObj: node(mine, nil, lbl, nil), obj: node(mine, map[string]any{"sandboxpin.io/fix-state": "none"}, lbl, nil), matched: true, allowed: true},
		{name: "another node", user: fixer, oldObj: node("worker-2", ann, lbl, nil), obj: node("worker-2", with(ann, "sandboxpin.io/fix-state", "done"), lbl, nil), matched: true},
		{name: "a token that names no node", user: map[string]any{"username": fixer["username"], "extra": map[string]any{}}, oldObj: node(mine, ann, lbl, nil), obj: node(mine, with(ann, "sandboxpin.io/fix-state", "done"), lbl, nil), matched: true},
		{name: "a user without extra", user: map[string]any{"username": fixer["username"]}, oldObj: node(mine, ann, lbl, nil), obj: node(mine, with(ann, "sandboxpin.io/fix-state", "done"), lbl, nil), matched: true},
		{name: "its own node, another annotation changed", user: fixer, oldObj: node(mine, ann, lbl, nil), obj: node(mine, with(ann, "node.alpha.kubernetes.io/ttl", "30"), lbl, nil), matched: true},
		{name: "its own node, another annotation added", user: fixer, oldObj: node(mine, ann, lbl, nil), obj: node(mine, with(ann, "sandboxpin.io/halted", "x"), lbl, nil), matched: true},
		{name: "its own node, another annotation removed", user: fixer, oldObj: node(mine, ann, lbl, nil), obj: node(mine, with(ann, "node.alpha.kubernetes.io/ttl", nil), lbl, nil), matched: true},
		{name: "its own node, a label", user: fixer, oldObj: node(mine, ann, lbl, nil), obj: node(mine, ann, with(lbl, "node-role.kubernetes.io/x", ""), nil), matched: true},
		{name: "its own node, a taint", user: fixer, oldObj: node(mine, ann, lbl, nil), obj: node(mine, ann, lbl, []any{map[string]any{"key": "k", "effect": "NoSchedule"}}), matched: true},
		{name: "another user: not the policy's", user: map[string]any{"username": "system:node:worker-2", "extra": map[string]any{}}, oldObj: node(mine, ann, lbl, nil), obj: node(mine, ann, with(lbl, "x", "y"), nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]any{"object": tt.obj, "oldObject": tt.oldObj, "request": map[string]any{"userInfo": tt.user}}
			matched := true
			for _, mc := range vap.Spec.MatchConditions {
				got, err := eval(t, env, mc.Expression, vars)
				require.NoError(t, err, mc.Expression)
				matched = matched && got == true
			}
			require.Equal(t, tt.matched, matched, "matchConditions")
			if !matched {
				return
			}
			variables := map[string]any{}
			vars["variables"] = variables
			for _, v := range vap.Spec.Variables {
				got, err := eval(t, env, v.Expression, vars)
				require.NoError(t, err, v.Expression)
				variables[v.Name] = got
			}
			allowed := true
			for _, v := range vap.Spec.Validations {
				got, err := eval(t, env, v.Expression, vars)
				require.NoError(t, err, v.Expression)
				if got != true {
					allowed = false
					assert.True(t, v.Message != "" || v.MessageExpression != "", "a denial says why")
					if v.MessageExpression != "" {
						msg, err := eval(t, env, v.MessageExpression, vars)
						require.NoError(t, err, v.MessageExpression)
						assert.IsType(t, "", msg)
						t.Logf("denied: %s", msg)
					} else {
						t.Logf("denied: %s", v.Message)
					}
				}
			}
			assert.Equal(t, tt.allowed, allowed)
		})
	}
}

// TestFixPolicyCompileCatchesMistakes makes sure the compilation above can
// fail.
func TestFixPolicyCompileCatchesMistakes(t *testing.T) {
	t.Parallel()
	env := policyEnv(t)
	for _, expr := range []string{
		`object.metadata.name ==`,
		`variables.nodeName.startswith("x")`,
		`object.metadata.?annotations.orValu({})`,
		`request.userInfo.extra["k"] = []`,
	} {
		_, err := eval(t, env, expr, map[string]any{})
		assert.Error(t, err, expr)
	}
}
