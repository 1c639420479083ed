package deploy

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// update rewrites ruleTestsPath from the captures.
var update = flag.Bool("update", false, "rewrite "+ruleTestsPath)

const (
	// ruleTestsPath holds promtool's unit tests of the alert rules,
	// generated from the captures by TestAlertRuleTestsUpToDate.
	ruleTestsPath = "prometheus/alerts.test.yaml"
	// rulesFile is the file the unit tests load: the rule groups of
	// kubernetes/prometheusrule.yaml, written next to them by the tests.
	rulesFile = "rules.yaml"
	// captureDir holds `sandboxpin audit -o prometheus` as the live rows of
	// internal/kubelettest saw it (TestKubeletGC, go test -update there).
	captureDir = "testdata/audit"
	// job is the job label Prometheus gives the PodMonitor's targets: its
	// namespace and name, as it sets no jobLabel (PodMonitorSpec.JobLabel
	// in prometheus-operator pkg/apis/monitoring/v1/podmonitor_types.go at
	// v0.95.2).
	job = "sandboxpin/sandboxpin"
	// fixJob is the job of the fixer's PodMonitor's targets.
	fixJob = "sandboxpin/sandboxpin-fix"
	// node is the node label of every scenario's series.
	node = "worker-1"
	// scrape is the PodMonitor's interval and the unit tests' step.
	scrape = time.Minute
)

// Envpromtool names promtool (built by scripts/deps.sh).
const envPromtool = "SANDBOXPIN_PROMTOOL"

// promtool returns the promtool binary, or skips the test (fails it under
// SANDBOXPIN_REQUIRE_RUNTIMES=1) when there is none.
func promtool(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(envPromtool)
	runtimetest.Require(t, "promtool", func() (bool, string) {
		if bin == "" {
			return false, envPromtool + " is not set; run `bash scripts/deps.sh` and source its env.sh"
		}
		if _, err := exec.LookPath(bin); err != nil {
			return false, fmt.Sprintf("promtool: %v; run `bash scripts/deps.sh`", err)
		}
		return true, ""
	})
	return bin
}

// loadRules returns the groups of both PrometheusRules (ruleFiles), as one
// rule file: the Prometheus Operator writes one file a PrometheusRule,
// which Prometheus evaluates alike.
func loadRules(t *testing.T) []monitoringv1.RuleGroup {
	t.Helper()
	var groups []monitoringv1.RuleGroup
	for _, f := range ruleFiles {
		var pr monitoringv1.PrometheusRule
		decodeStrict(t, f, &pr)
		groups = append(groups, pr.Spec.Groups...)
	}
	return groups
}

// rulesYAML is the PrometheusRule's groups as a Prometheus rule file, with
// from replaced by to in the expressions and for: durations (a mistake made
// on purpose; "" for none).
func rulesYAML(t *testing.T, from, to string) []byte {
	t.Helper()
	groups := loadRules(t)
	changed := from == ""
	for _, g := range groups {
		for i, r := range g.Rules {
			if e := r.Expr.String(); strings.Contains(e, from) && from != "" {
				g.Rules[i].Expr = intstr.FromString(strings.Replace(e, from, to, 1))
				changed = true
			}
			if r.For != nil && string(*r.For) == from {
				d := monitoringv1.Duration(to)
				g.Rules[i].For, changed = &d, true
			}
		}
	}
	require.True(t, changed, "no expression or for: has %q", from)
	b, err := yaml.Marshal(map[string]any{"groups": groups})
	require.NoError(t, err)
	return b
}

// A state is what one scrape of the node's exporter finds.
type state struct {
	capture string // file in captureDir; "" for no sandboxpin series
	up      bool   // the scrape succeeded
	// frozen keeps the audit timestamp where it was: serve answers, but
	// its audits no longer finish.
	frozen bool
	// gone is a node without an exporter pod: no target, so no up series
	// either.
	gone bool
	// fix is the state the node's fixer reports ("" for no fixer), and
	// halted whether it sees the rollout halted.
	fix    string
	halted bool
}

// The fixer's states (rollout.State; README.md, "Fix a fleet"), and those
// in which a node holds a Lease or has a plan not yet written.
var (
	fixStates  = []string{"none", "pending", "waiting", "blocked", "applying", "restarting", "checking", "done", "failed", "halted", "by-hand"}
	lockStates = []string{"blocked", "applying", "restarting", "checking"}
	planStates = []string{"pending", "waiting", "blocked", "applying", "failed", "halted"}
)

// fixSamples are the series the node's fixer serves in state s, which it
// entered at minute since, having finished done and failed runs.
func fixSamples(s state, since, done, failed int) []sample {
	return nodeFixSamples(node, s, since, done, failed)
}

// nodeFixSamples is fixSamples for the node named nodeName.
func nodeFixSamples(nodeName string, s state, since, done, failed int) []sample {
	if s.fix == "" {
		return nil
	}
	target := map[string]string{"job": fixJob, "instance": nodeName + ":9629", "node": nodeName}
	one := func(name string, v float64, extra ...string) sample {
		l := maps.Clone(target)
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return sample{series: seriesName(name, l), value: v}
	}
	b := func(ok bool) float64 {
		if ok {
			return 1
		}
		return 0
	}
	out := []sample{
		one("up", 1),
		one("sandboxpin_fix_pending", b(slices.Contains(planStates, s.fix))),
		one("sandboxpin_fix_by_hand", b(s.fix == "by-hand")),
		one("sandboxpin_fix_halted", b(s.halted)),
		one("sandboxpin_fix_lock_held", b(slices.Contains(lockStates, s.fix))),
		one("sandboxpin_fix_state_since_timestamp_seconds", float64(since)*scrape.Seconds()),
		one("sandboxpin_fix_runs_total", float64(done), "outcome", "done"),
		one("sandboxpin_fix_runs_total", float64(failed), "outcome", "failed"),
	}
	for _, st := range fixStates {
		out = append(out, one("sandboxpin_fix_state", b(st == s.fix), "state", st))
	}
	return out
}

// A phase is a state that lasts some minutes.
type phase struct {
	minutes int
	state
}

// fired is a span of minutes over which an alert's expression is true
// (firing from onset plus the rule's for:, to end, when it resolves).
type fired struct {
	alert      string
	onset, end int
	// labels are the alert's labels besides the rule's: nil is the node.
	labels map[string]string
}

// scenario is one node's history and the alerts it must raise.
type scenario struct {
	name   string
	phases []phase
	fires  []fired // every other alert stays silent
	// noKSM is a cluster without kube-state-metrics: no kube_node_info.
	noKSM bool
}

// The states the scenarios are made of.
var (
	fixedNode  = state{capture: "containerd-2.4-fixed.prom", up: true}
	down       = state{}
	notAudited = state{up: true} // serve restarted, before its first audit
	gone       = state{gone: true}
	aliasNode  = state{capture: "containerd-2.4-alias.prom", up: true}
)

// fixing is s with its fixer in state fix.
func fixing(s state, fix string) state {
	s.fix = fix
	return s
}

// phases that end at minute 40 with the node fixed for 20 more.
func badFor40(capture string) []phase {
	return []phase{{40, state{capture: capture, up: true}}, {20, fixedNode}}
}

// scenarios are the unit tests: for each alert, a node on which it fires
// after its for: and resolves when the series clears; a healthy node; and a
// healthy node after its exporter restarts.
var scenarios = []scenario{
	{
		name:   "containerd 1.6.20, exact name: never pinned",
		phases: badFor40("containerd-1.6-exact.prom"),
		fires:  []fired{{"SandboxImageUnprotected", 0, 40, nil}},
	},
	{
		name:   "containerd 2.4.2, alias: not pinned, and not stored as configured",
		phases: badFor40("containerd-2.4-alias.prom"),
		fires:  []fired{{"SandboxImageUnprotected", 0, 40, nil}, {"SandboxImageNotStoredAsConfigured", 0, 40, nil}},
	},
	{
		name:   "containerd 2.4.2, alias, through the shim: pinned, but not stored as configured",
		phases: badFor40("containerd-2.4-alias-shim.prom"),
		fires:  []fired{{"SandboxImageNotStoredAsConfigured", 0, 40, nil}},
	},
	{
		name:   "containerd 1.6.20 after the kubelet deleted the pause image",
		phases: badFor40("containerd-1.6-exact-after-gc.prom"),
		fires:  []fired{{"SandboxImageMissing", 0, 40, nil}},
	},
	{
		name:   "the audit fails",
		phases: badFor40("audit-failed.prom"),
		fires:  []fired{{"SandboxpinAuditFailing", 0, 40, nil}},
	},
	{
		// The timestamp stays at minute 10: older than 1800 s from
		// minute 41 on.
		name:   "audits stop finishing",
		phases: []phase{{11, fixedNode}, {50, state{capture: fixedNode.capture, up: true, frozen: true}}, {20, fixedNode}},
		fires:  []fired{{"SandboxpinAuditFailing", 41, 61, nil}},
	},
	{
		name:   "the exporter does not answer",
		phases: []phase{{10, fixedNode}, {30, down}, {20, fixedNode}},
		fires:  []fired{{"SandboxpinExporterDown", 10, 40, nil}},
	},
	{
		name:   "the exporter pod is gone from the node (deleted, evicted, not scheduled)",
		phases: []phase{{10, fixedNode}, {30, gone}, {20, fixedNode}},
		fires:  []fired{{"SandboxpinExporterMissing", 10, 40, nil}},
	},
	{
		// What a cluster without kube-state-metrics gets: nothing.
		name:   "the exporter pod is gone, no kube-state-metrics",
		phases: []phase{{10, fixedNode}, {30, gone}, {20, fixedNode}},
		noKSM:  true,
	},
	{
		name:   "plan mode: a plan pending on an alias node, then fixed by hand",
		phases: []phase{{90, state{capture: aliasNode.capture, up: true, fix: "pending"}}, {20, state{capture: fixedNode.capture, up: true, fix: "none"}}},
		fires:  []fired{{"SandboxImageUnprotected", 0, 90, nil}, {"SandboxImageNotStoredAsConfigured", 0, 90, nil}, {"SandboxpinFixPending", 0, 90, nil}},
	},
	{
		name: "write mode: the node waits, writes, restarts, checks and is done",
		phases: []phase{
			{5, fixing(aliasNode, "waiting")}, {2, fixing(aliasNode, "blocked")}, {1, fixing(aliasNode, "applying")},
			{1, fixing(aliasNode, "restarting")}, {2, fixing(fixedNode, "checking")}, {30, fixing(fixedNode, "done")},
		},
	},
	{
		// Restarting from minute 2: more than 1800 s from minute 33.
		name:   "write mode: the runtime does not come back",
		phases: []phase{{2, fixing(aliasNode, "waiting")}, {50, fixing(aliasNode, "restarting")}, {20, fixing(fixedNode, "done")}},
		fires: []fired{
			{"SandboxImageUnprotected", 0, 52, nil}, {"SandboxImageNotStoredAsConfigured", 0, 52, nil},
			{"SandboxpinFixStuck", 33, 52, map[string]string{"node": node, "state": "restarting"}},
		},
	},
	{
		// Blocked from minute 0: more than 86400 s from minute 1441.
		name:   "write mode: a gate stays closed for a day",
		phases: []phase{{1500, fixing(aliasNode, "blocked")}, {20, fixing(fixedNode, "done")}},
		fires: []fired{
			{"SandboxImageUnprotected", 0, 1500, nil}, {"SandboxImageNotStoredAsConfigured", 0, 1500, nil},
			{"SandboxpinFixPending", 0, 1500, nil}, {"SandboxpinFixStuck", 1441, 1500, map[string]string{"node": node, "state": "blocked"}},
		},
	},
	{
		// One alert for the cluster: no node label.
		name: "write mode: the fix fails, the rollout halts, a person lifts the halt",
		phases: []phase{
			{3, fixing(aliasNode, "waiting")}, {1, fixing(aliasNode, "applying")},
			{30, state{capture: aliasNode.capture, up: true, fix: "failed", halted: true}},
			{5, fixing(aliasNode, "waiting")}, {1, fixing(aliasNode, "applying")}, {1, fixing(aliasNode, "restarting")},
			{2, fixing(fixedNode, "checking")}, {20, fixing(fixedNode, "done")},
		},
		fires: []fired{
			{"SandboxImageUnprotected", 0, 41, nil}, {"SandboxImageNotStoredAsConfigured", 0, 41, nil},
			{"SandboxpinFixHalted", 4, 34, map[string]string{}},
		},
	},
	{
		name:   "a healthy node",
		phases: []phase{{60, fixedNode}},
	},
	{
		name:   "a healthy node after its exporter restarts",
		phases: []phase{{20, fixedNode}, {1, down}, {1, notAudited}, {38, fixedNode}},
	},
}

// promtool's unit test file (docs/configuration/unit_testing_rules.md at
// Prometheus v3.15.1).
type (
	ruleTests struct {
		RuleFiles          []string   `json:"rule_files"`
		EvaluationInterval string     `json:"evaluation_interval"`
		Tests              []ruleTest `json:"tests"`
	}
	ruleTest struct {
		Name        string        `json:"name"`
		Interval    string        `json:"interval"`
		InputSeries []inputSeries `json:"input_series"`
		Alerts      []alertTest   `json:"alert_rule_test"`
	}
	inputSeries struct {
		Series string `json:"series"`
		Values string `json:"values"`
	}
	alertTest struct {
		EvalTime  string     `json:"eval_time"`
		Alertname string     `json:"alertname"`
		ExpAlerts []expAlert `json:"exp_alerts"`
	}
	expAlert struct {
		Labels      map[string]string `json:"exp_labels"`
		Annotations map[string]string `json:"exp_annotations"`
	}
)

// sample is one series of a capture.
type sample struct {
	series string // name{labels}, labels sorted
	value  float64
}

// loadCapture returns the series of a capture, with the node's target
// labels added as Prometheus adds them.
func loadCapture(t *testing.T, file string) []sample {
	t.Helper()
	return loadNodeCapture(t, file, node)
}

// loadNodeCapture is loadCapture for the node named nodeName.
func loadNodeCapture(t *testing.T, file, nodeName string) []sample {
	t.Helper()
	f, err := os.Open(filepath.Join(captureDir, file))
	require.NoError(t, err, "captured by internal/kubelettest's live rows with -update")
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(f)
	require.NoError(t, err, file)
	var out []sample
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		for _, m := range fams[name].GetMetric() {
			labels := map[string]string{"job": job, "instance": nodeName + ":9627", "node": nodeName}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out = append(out, sample{series: seriesName(name, labels), value: m.GetGauge().GetValue()})
		}
	}
	require.NotEmpty(t, out, file)
	return out
}

// seriesName writes name{labels} in promtool's series notation.
func seriesName(name string, labels map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+strconv.Quote(labels[k]))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

const timestampMetric = "sandboxpin_audit_timestamp_seconds"

// values compresses one value per minute ("_" for none, "stale", or a
// number) into promtool's expanding notation: "_xN" is N missing samples,
// "a+bxN" is a and N more, each b higher ("a-bxN": lower).
func values(vs []string) string {
	var out []string
	for i := 0; i < len(vs); {
		j := i + 1
		a, err := strconv.ParseFloat(vs[i], 64)
		if err != nil {
			for j < len(vs) && vs[j] == vs[i] {
				j++
			}
			if vs[i] == "_" {
				out = append(out, fmt.Sprintf("_x%d", j-i))
			} else {
				out = append(out, slices.Repeat([]string{vs[i]}, j-i)...)
			}
			i = j
			continue
		}
		var step float64
		for ; j < len(vs); j++ {
			v, err := strconv.ParseFloat(vs[j], 64)
			if err != nil || (j > i+1 && v-a != step*float64(j-i)) {
				break
			}
			step = (v - a) / float64(j-i)
		}
		switch {
		case j-i == 1:
			out = append(out, vs[i])
		case step == 0:
			out = append(out, fmt.Sprintf("%sx%d", vs[i], j-i-1))
		case step < 0: // "a-bxN": promtool reads no "+-"
			out = append(out, fmt.Sprintf("%s-%sx%d", vs[i], strconv.FormatFloat(-step, 'g', -1, 64), j-i-1))
		default:
			out = append(out, fmt.Sprintf("%s+%sx%d", vs[i], strconv.FormatFloat(step, 'g', -1, 64), j-i-1))
		}
		i = j
	}
	return strings.Join(out, " ")
}

// generate builds the unit tests from the scenarios, the captures and the
// rules (their for:, labels and annotations).
func generate(t *testing.T) ruleTests {
	t.Helper()
	rules := map[string]monitoringv1.Rule{}
	for _, g := range loadRules(t) {
		for _, r := range g.Rules {
			rules[r.Alert] = r
		}
	}
	alerts := slices.Sorted(maps.Keys(rules))
	captures := map[string][]sample{}
	out := ruleTests{RuleFiles: []string{rulesFile}, EvaluationInterval: scrape.String()}
	for _, sc := range scenarios {
		total := 0
		for _, p := range sc.phases {
			total += p.minutes
			if c := p.capture; c != "" && captures[c] == nil {
				captures[c] = loadCapture(t, c)
			}
		}
		// One value per minute for each series any phase has.
		series := map[string][]string{}
		upSeries := seriesName("up", map[string]string{"job": job, "instance": node + ":9627", "node": node})
		minute, frozenAt := 0, 0
		prevFix, fixSince, done, failed := "", 0, 0, 0
		for _, p := range sc.phases {
			if p.fix != prevFix {
				fixSince, prevFix = minute, p.fix
				switch p.fix {
				case "done":
					done++
				case "failed":
					failed++
				}
			}
			samples := append(slices.Clone(captures[p.capture]), fixSamples(p.state, fixSince, done, failed)...)
			for range p.minutes {
				if !sc.noKSM {
					// kube-state-metrics' series keep their own node label
					// (honorLabels in kube-prometheus-stack).
					info := seriesName("kube_node_info", map[string]string{"job": "kube-state-metrics", "instance": "10.0.0.9:8080", "node": node})
					series[info] = append(series[info], "1")
				}
				up := "0"
				if p.up {
					up = "1"
				}
				if p.gone {
					up = "_"
					if vs := series[upSeries]; len(vs) > 0 && vs[len(vs)-1] != "_" && vs[len(vs)-1] != "stale" {
						up = "stale"
					}
				}
				series[upSeries] = append(series[upSeries], up)
				if !p.frozen {
					frozenAt = minute
				}
				seen := map[string]bool{}
				for _, s := range samples {
					v := strconv.FormatFloat(s.value, 'g', -1, 64)
					if strings.HasPrefix(s.series, timestampMetric+"{") {
						v = strconv.Itoa(frozenAt * int(scrape.Seconds()))
					}
					if series[s.series] == nil {
						series[s.series] = slices.Repeat([]string{"_"}, minute)
					}
					series[s.series] = append(series[s.series], v)
					seen[s.series] = true
				}
				for name, vs := range series {
					if name == upSeries || strings.HasPrefix(name, "kube_node_info{") || seen[name] {
						continue
					}
					// A series the scrape no longer has goes stale, as
					// Prometheus marks it.
					v := "_"
					if last := vs[len(vs)-1]; last != "_" && last != "stale" {
						v = "stale"
					}
					series[name] = append(vs, v)
				}
				minute++
			}
		}
		rt := ruleTest{Name: sc.name, Interval: scrape.String()}
		for _, name := range slices.Sorted(maps.Keys(series)) {
			rt.InputSeries = append(rt.InputSeries, inputSeries{Series: name, Values: values(series[name])})
		}
		// When each alert fires, and the minutes to look at: around
		// each change, and the last one.
		type window struct {
			from, end int
			labels    map[string]string
		}
		firing := map[string]window{}
		times := map[int]bool{total - 1: true}
		start := 0
		for _, p := range sc.phases {
			times[start+p.minutes-1] = true
			times[start+16] = true // past any for: of 15m
			start += p.minutes
		}
		for _, f := range sc.fires {
			r, ok := rules[f.alert]
			require.True(t, ok, "%s: no alert %s", sc.name, f.alert)
			require.NotNil(t, r.For, f.alert)
			wait, err := model.ParseDuration(string(*r.For))
			require.NoError(t, err, "%s: for: %s", f.alert, *r.For)
			from := f.onset + int(time.Duration(wait)/scrape)
			require.Less(t, from, f.end, "%s: %s cannot fire before it resolves", sc.name, f.alert)
			firing[f.alert] = window{from, f.end, f.labels}
			for _, m := range []int{from - 1, from, f.end - 1, f.end} {
				times[m] = true
			}
		}
		for _, m := range slices.Sorted(maps.Keys(times)) {
			if m < 0 || m >= total {
				continue
			}
			for _, a := range alerts {
				at := alertTest{EvalTime: (time.Duration(m) * scrape).String(), Alertname: a, ExpAlerts: []expAlert{}}
				if w, ok := firing[a]; ok && m >= w.from && m < w.end {
					at.ExpAlerts = append(at.ExpAlerts, expected(t, rules[a], value(t, a, sc, m), w.labels))
				}
				rt.Alerts = append(rt.Alerts, at)
			}
		}
		out.Tests = append(out.Tests, rt)
	}
	return out
}

// value is the alert's $value at minute m of sc: only
// SandboxImageUnprotected's annotations use it (the count of unprotected
// images in the capture of that minute).
func value(t *testing.T, alert string, sc scenario, m int) float64 {
	t.Helper()
	if alert != "SandboxImageUnprotected" {
		return 0
	}
	for _, p := range sc.phases {
		if m < p.minutes {
			for _, s := range loadCapture(t, p.capture) {
				if strings.HasPrefix(s.series, "sandboxpin_unprotected_images{") {
					return s.value
				}
			}
		}
		m -= p.minutes
	}
	t.Fatalf("%s: no sandboxpin_unprotected_images at minute %d", sc.name, m)
	return 0
}

// expected is the alert r raises with labels (nil: the node's): those
// and the rule's, and its annotations with the labels and value filled in.
func expected(t *testing.T, r monitoringv1.Rule, v float64, labels map[string]string) expAlert {
	t.Helper()
	if labels == nil {
		labels = map[string]string{"node": node}
	}
	labels = maps.Clone(labels)
	annotations := map[string]string{}
	for k, a := range r.Annotations {
		for name, l := range labels {
			a = strings.ReplaceAll(a, "{{ $labels."+name+" }}", l)
		}
		a = strings.ReplaceAll(a, "{{ $value }}", strconv.FormatFloat(v, 'g', -1, 64))
		require.NotContains(t, a, "{{", "%s: annotation %s uses a template this test does not fill in", r.Alert, k)
		annotations[k] = a
	}
	maps.Copy(labels, r.Labels)
	return expAlert{Labels: labels, Annotations: annotations}
}

// ruleTestsHeader starts the generated file.
const ruleTestsHeader = `# promtool's unit tests of deploy/kubernetes/prometheusrule.yaml and
# deploy/kubernetes/fix/prometheusrule.yaml, generated by
# deploy/rules_test.go from the scenarios there, the series that the live
# tests captured (deploy/testdata/audit) and the fixer's series (fixSamples).
# Regenerate:
#   cd deploy && go test -run TestAlertRuleTestsUpToDate -update .
# Run (the rule groups are extracted from the PrometheusRule first):
#   cd deploy && go test -run TestAlertRules .
`

// TestAlertRuleTestsUpToDate checks that ruleTestsPath is what the
// scenarios, captures and rules give (or writes it under -update).
func TestAlertRuleTestsUpToDate(t *testing.T) {
	t.Parallel()
	b, err := yaml.Marshal(generate(t))
	require.NoError(t, err)
	got := ruleTestsHeader + string(b)
	if *update {
		require.NoError(t, os.WriteFile(ruleTestsPath, []byte(got), 0o644)) //nolint:gosec // G306: a committed test file
	}
	want, err := os.ReadFile(ruleTestsPath)
	require.NoError(t, err)
	assert.Equal(t, string(want), got, "%s is stale: go test -run TestAlertRuleTestsUpToDate -update .", ruleTestsPath)
}

// runPromtool runs promtool with args in dir, and returns its exit code and
// output.
func runPromtool(t *testing.T, bin, dir string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String()
	}
	require.NoError(t, err)
	return 0, out.String()
}

// ruleTestsDir writes rules (a rule file) and the unit tests into a new
// directory.
func ruleTestsDir(t *testing.T, rules []byte) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, rulesFile), rules, 0o600))
	tests, err := os.ReadFile(ruleTestsPath)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(ruleTestsPath)), tests, 0o600)) //nolint:gosec // G703: a file in the test's own temporary directory
	return dir
}

// TestAlertRules runs Prometheus' own checks on the shipped rules: promtool
// check rules, and promtool test rules with the unit tests.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	dir := ruleTestsDir(t, rulesYAML(t, "", ""))
	code, out := runPromtool(t, bin, dir, "check", "rules", rulesFile)
	assert.Equal(t, 0, code, "promtool check rules:\n%s", out)
	code, out = runPromtool(t, bin, dir, "test", "rules", filepath.Base(ruleTestsPath))
	assert.Equal(t, 0, code, "promtool test rules:\n%s", out)
	t.Logf("promtool test rules: %s", strings.TrimSpace(out))
}

// TestAlertRulesCatchMistakes breaks the rules in a scratch copy, one
// mistake at a time, and checks that promtool then fails.
func TestAlertRulesCatchMistakes(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	tests := []struct {
		name      string
		from, to  string // the mistake
		checkFail bool   // promtool check rules fails too (not only the unit tests)
	}{
		{name: "threshold", from: "max by (node) (sandboxpin_unprotected_images) > 0", to: "max by (node) (sandboxpin_unprotected_images) > 1"},
		{name: "expression", from: "(sandboxpin_sandbox_image_stored_as_configured) == 0", to: "(sandboxpin_sandbox_image_stored_as_configured) == 1"},
		{name: "alias not told from missing", from: " and max by (node) (sandboxpin_sandbox_image_present) == 1", to: ""},
		{name: "job", from: `job="sandboxpin/sandboxpin"`, to: `job="sandboxpin"`},
		{name: "missing exporter told by up == 0", from: `unless on (node) max by (node) (up{job="sandboxpin/sandboxpin"})`, to: `and on (node) max by (node) (up{job="sandboxpin/sandboxpin"}) == 0`},
		{name: "for", from: "15m", to: "30m"},
		{name: "node label dropped", from: "max by (node) (sandboxpin_sandbox_image_present) == 0", to: "max(sandboxpin_sandbox_image_present) == 0"},
		{name: "a step stuck: threshold", from: "sandboxpin_fix_state_since_timestamp_seconds) > 1800", to: "sandboxpin_fix_state_since_timestamp_seconds) > 3600"},
		{name: "blocked told from waiting", from: `state="blocked"`, to: `state="waiting"`},
		{name: "halted: for", from: "1m", to: "5m"},
		{name: "halted: one alert a node", from: "max(sandboxpin_fix_halted)", to: "max by (node) (sandboxpin_fix_halted)"},
		{name: "pending: for", from: "1h", to: "2h"},
		{name: "syntax", from: "max by (node) (sandboxpin_unprotected_images) > 0", to: "max by (node) (sandboxpin_unprotected_images > 0", checkFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := ruleTestsDir(t, rulesYAML(t, tt.from, tt.to))
			code, out := runPromtool(t, bin, dir, "check", "rules", rulesFile)
			assert.Equal(t, tt.checkFail, code != 0, "promtool check rules exit %d:\n%s", code, out)
			code, out = runPromtool(t, bin, dir, "test", "rules", filepath.Base(ruleTestsPath))
			assert.NotEqual(t, 0, code, "promtool test rules passed with the mistake:\n%s", out)
			t.Logf("%s: promtool test rules exit %d: %s", tt.name, code, firstLines(out, 3))
		})
	}
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[:min(n, len(lines))], " | ")
}

// TestExporterDownJob checks that SandboxpinExporterDown selects the job
// Prometheus gives the PodMonitor's targets.
func TestExporterDownJob(t *testing.T) {
	t.Parallel()
	var pm monitoringv1.PodMonitor
	decodeStrict(t, "kubernetes/podmonitor.yaml", &pm)
	assert.Empty(t, pm.Spec.JobLabel, "the job label defaults to the PodMonitor's namespace/name")
	assert.Equal(t, pm.Namespace+"/"+pm.Name, job)
	assert.Contains(t, string(rulesYAML(t, "", "")), `up{job="`+job+`"}`)
}
