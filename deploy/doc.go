// Package deploy is the Kubernetes manifests under kubernetes/ (a
// DaemonSet running `sandboxpin serve` on every node, a PodMonitor and a
// PrometheusRule) and kubernetes/fix/ (the opt-in fixer, `sandboxpin
// rollout`: its RBAC, a ValidatingAdmissionPolicy, DaemonSet, PodMonitor
// and alerts), the Grafana dashboard grafana/sandboxpin.json (its queries
// for other tests: [DashboardQueries]), node-problem-detector's custom plugin
// monitor under node-problem-detector/, the CRI shim's systemd unit and
// kubelet drop-in under systemd/ (checked with systemd-analyze verify), and
// the tests that check them by machine.
//
// The tests decode every manifest strictly into the Kubernetes API types
// (k8s.io/api, and the Prometheus Operator's monitoring/v1 for PodMonitor
// and PrometheusRule): an unknown or misspelt field is an error. They parse
// every alert expression with Prometheus' own PromQL parser and check that
// it names only metrics sandboxpin exports, decode the node-problem-detector
// config as node-problem-detector v1.36.0 does and run its plugin command
// against a live containerd. Prometheus runs the alert rules too: promtool
// (SANDBOXPIN_PROMTOOL, built by scripts/deps.sh) checks the rule groups
// extracted from the PrometheusRule and runs the unit tests in
// prometheus/alerts.test.yaml, generated from the series of testdata/audit
// that internal/kubelettest's live rows captured and the fixer's series.
// The fixer's ValidatingAdmissionPolicy is evaluated with cel-go, and every
// dashboard query is run by promtool on realistic series and must return
// one. This module keeps those dependencies out of the others.
package deploy
