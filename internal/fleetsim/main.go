// Command fleetsim serves a simulated fleet of sandboxpin exporters to one
// Prometheus server, for scripts/fleet-sim.sh: N nodes, each a scrape target
// of its own (/node/NAME/metrics) that answers with a capture of a live
// audit (deploy/testdata/audit), the audit's timestamp made current; one node
// in a hundred is broken in a known way (see kinds), so the alerts that must
// fire are known node by node. It also serves kube-state-metrics'
// kube_node_info for every node (/ksm/metrics), so that a node without a
// target is seen.
//
//	fleetsim -nodes 5000 -captures deploy/testdata/audit \
//	  -rules deploy/kubernetes/prometheusrule.yaml -out DIR
//
// writes DIR/targets.json (Prometheus file_sd), DIR/rules.yaml (the
// PrometheusRule's groups as a rule file) and DIR/expected.json (node ->
// the alerts that must fire), prints its address, and serves until killed.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// A kind is how a node behaves, and which of the shipped alerts it raises.
type kind struct {
	name    string
	capture string   // file under -captures; "" for no answer
	status  int      // HTTP status of a scrape; 0 is 200
	gone    bool     // no target at all (the exporter pod is gone)
	alerts  []string // the alerts that must fire for the node
}

// kinds: the first is the healthy node, the others the broken ones, which
// take turns among the broken nodes.
var kinds = []kind{
	{name: "healthy", capture: "containerd-2.4-fixed.prom"},
	{name: "containerd 1.6.20: never pinned", capture: "containerd-1.6-exact.prom", alerts: []string{"SandboxImageUnprotected"}},
	{name: "containerd 2.4.2, alias", capture: "containerd-2.4-alias.prom", alerts: []string{"SandboxImageNotStoredAsConfigured", "SandboxImageUnprotected"}},
	{name: "pause image deleted", capture: "containerd-1.6-exact-after-gc.prom", alerts: []string{"SandboxImageMissing"}},
	{name: "audit failing", capture: "audit-failed.prom", alerts: []string{"SandboxpinAuditFailing"}},
	{name: "exporter down", status: http.StatusServiceUnavailable, alerts: []string{"SandboxpinExporterDown"}},
	{name: "exporter gone", gone: true, alerts: []string{"SandboxpinExporterMissing"}},
}

// timestamp matches the audit timestamp's sample line.
var timestamp = regexp.MustCompile(`(?m)^(sandboxpin_audit_timestamp_seconds(\{[^}]*\})?) .*$`)

// fleet is the simulated nodes.
type fleet struct {
	names    []string
	kindOf   map[string]int // index in kinds
	captures map[string][]byte
}

// newFleet makes n nodes, node-00001 on; every brokenEvery-th node is
// broken, by the kinds in turn.
func newFleet(n, brokenEvery int, captures string) (*fleet, error) {
	f := &fleet{kindOf: map[string]int{}, captures: map[string][]byte{}}
	for _, k := range kinds {
		if k.capture == "" || f.captures[k.capture] != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(captures, k.capture))
		if err != nil {
			return nil, err
		}
		f.captures[k.capture] = b
	}
	broken := 0
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("node-%05d", i)
		f.names = append(f.names, name)
		f.kindOf[name] = 0
		if i%brokenEvery == 0 {
			f.kindOf[name] = 1 + broken%(len(kinds)-1)
			broken++
		}
	}
	return f, nil
}

// ServeHTTP answers /node/NAME/metrics and /ksm/metrics.
func (f *fleet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ksm/metrics" {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintln(w, "# TYPE kube_node_info gauge")
		for _, n := range f.names {
			fmt.Fprintf(w, "kube_node_info{node=%q} 1\n", n)
		}
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, "/node/")
	name, ok2 := strings.CutSuffix(name, "/metrics")
	k, known := f.kindOf[name]
	if !ok || !ok2 || !known || kinds[k].gone {
		http.NotFound(w, r)
		return
	}
	kd := kinds[k]
	if kd.status != 0 {
		http.Error(w, kd.name, kd.status)
		return
	}
	body := timestamp.ReplaceAll(f.captures[kd.capture], []byte("${1} "+strconv.FormatInt(time.Now().Unix(), 10)))
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write(body)
}

// targetGroup is one entry of a file_sd file.
type targetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// write writes targets.json, expected.json and rules.yaml into dir.
func (f *fleet) write(dir, addr, rules string) error {
	var groups []targetGroup
	expected := map[string][]string{}
	for _, n := range f.names {
		kd := kinds[f.kindOf[n]]
		if len(kd.alerts) > 0 {
			expected[n] = kd.alerts
		}
		if kd.gone {
			continue
		}
		groups = append(groups, targetGroup{Targets: []string{addr}, Labels: map[string]string{"node": n, "__metrics_path__": "/node/" + n + "/metrics"}})
	}
	for name, v := range map[string]any{"targets.json": groups, "expected.json": expected} {
		b, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	b, err := ruleFile(rules)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "rules.yaml"), b, 0o600)
}

// ruleFile returns the groups of the PrometheusRule at path as a Prometheus
// rule file: what the Prometheus Operator puts in the server's rule files.
func ruleFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pr struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(b, &pr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(pr.Spec.Groups) == 0 {
		return nil, fmt.Errorf("%s: no spec.groups", path)
	}
	return yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
}

func main() {
	n := flag.Int("nodes", 5000, "how many nodes")
	every := flag.Int("broken-every", 100, "every Nth node is broken")
	captures := flag.String("captures", "deploy/testdata/audit", "the captured audits")
	rules := flag.String("rules", "deploy/kubernetes/prometheusrule.yaml", "the shipped PrometheusRule")
	out := flag.String("out", ".", "where to write targets.json, expected.json and rules.yaml")
	listen := flag.String("listen", "127.0.0.1:0", "the address to serve on (loopback)")
	flag.Parse()
	f, err := newFleet(*n, *every, *captures)
	if err != nil {
		log.Fatal(err)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if err := f.write(*out, l.Addr().String(), *rules); err != nil {
		log.Fatal(err)
	}
	fmt.Println(l.Addr().String())
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(l))
}
