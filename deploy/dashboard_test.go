package deploy

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// grafanaPanel is what the tests read of a panel.
type grafanaPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

// grafanaDashboard is what the tests read of the dashboard.
type grafanaDashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Query      any    `json:"query"`
			Definition string `json:"definition"`
			IncludeAll bool   `json:"includeAll"`
			AllValue   string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

// labelValues is the node variable's query.
var labelValues = regexp.MustCompile(`^label_values\((\w+), node\)$`)

func loadDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	data, err := os.ReadFile(DashboardPath)
	require.NoError(t, err)
	var d grafanaDashboard
	require.NoError(t, json.Unmarshal(data, &d))
	return d
}

// TestDashboard checks the dashboard's frame: its variables, and that
// every panel asks the chosen Prometheus and has a place.
func TestDashboard(t *testing.T) {
	t.Parallel()
	d := loadDashboard(t)
	assert.GreaterOrEqual(t, d.SchemaVersion, 39)
	assert.NotEmpty(t, d.UID)
	vars := map[string]int{}
	for i, v := range d.Templating.List {
		vars[v.Name] = i
	}
	require.Contains(t, vars, "datasource")
	ds := d.Templating.List[vars["datasource"]]
	assert.Equal(t, "datasource", ds.Type)
	assert.Equal(t, "prometheus", ds.Query)
	require.Contains(t, vars, "node")
	nv := d.Templating.List[vars["node"]]
	assert.True(t, nv.IncludeAll)
	assert.Equal(t, ".*", nv.AllValue, "All is every node, as DashboardQueries has it")
	m := labelValues.FindStringSubmatch(nv.Definition)
	require.NotNil(t, m, "the node variable lists a metric's node labels: %q", nv.Definition)
	assert.Contains(t, exportedMetrics, m[1])

	ids, titles := map[int]bool{}, map[string]bool{}
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			assert.False(t, ids[p.ID], "panel id %d once", p.ID)
			assert.False(t, titles[p.Title], "panel title %q once", p.Title)
			ids[p.ID], titles[p.Title] = true, true
			assert.Positive(t, p.GridPos.W, p.Title)
			assert.Positive(t, p.GridPos.H, p.Title)
			assert.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "%s fits the grid", p.Title)
			if p.Type != "row" {
				require.NotNil(t, p.Datasource, p.Title)
				assert.Equal(t, "${datasource}", p.Datasource.UID, "%s asks the chosen Prometheus", p.Title)
				assert.NotEmpty(t, p.Targets, p.Title)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
}

// promtool's unit test file, for PromQL expressions (unit_testing_rules.md
// at Prometheus v3.15.1).
type (
	exprTests struct {
		RuleFiles          []string   `json:"rule_files"`
		EvaluationInterval string     `json:"evaluation_interval"`
		Tests              []exprTest `json:"tests"`
	}
	exprTest struct {
		Name        string        `json:"name"`
		Interval    string        `json:"interval"`
		InputSeries []inputSeries `json:"input_series"`
		Exprs       []promqlTest  `json:"promql_expr_test"`
	}
	promqlTest struct {
		Expr       string      `json:"expr"`
		EvalTime   string      `json:"eval_time"`
		ExpSamples []expSample `json:"exp_samples"`
	}
	expSample struct {
		Labels string  `json:"labels"`
		Value  float64 `json:"value"`
	}
)

// dashboardMinutes is how long the dashboard tests' series run.
const dashboardMinutes = 60

// dashboardSeries are two nodes for an hour: worker-1 with containerd
// 1.6.20 unprotected (a live capture) and its fixer in plan mode with a
// plan pending; worker-2 with containerd 2.4.2 fixed and its fixer done
// after one run.
func dashboardSeries(t *testing.T) []inputSeries {
	t.Helper()
	nodes := []struct {
		name, capture string
		fix           state
		done          int
	}{
		{"worker-1", "containerd-1.6-exact.prom", state{fix: "pending"}, 0},
		{"worker-2", "containerd-2.4-fixed.prom", state{fix: "done"}, 1},
	}
	var out []inputSeries
	for _, n := range nodes {
		samples := loadNodeCapture(t, n.capture, n.name)
		samples = append(samples, nodeFixSamples(n.name, n.fix, 0, n.done, 0)...)
		samples = append(samples, sample{series: seriesName("up", map[string]string{"job": job, "instance": n.name + ":9627", "node": n.name}), value: 1})
		for _, s := range samples {
			v := strconv.FormatFloat(s.value, 'g', -1, 64) + "x" + strconv.Itoa(dashboardMinutes)
			if strings.HasPrefix(s.series, timestampMetric+"{") {
				v = "0+60x" + strconv.Itoa(dashboardMinutes)
			}
			out = append(out, inputSeries{Series: s.series, Values: v})
		}
	}
	return out
}

// dashboardChecks are the expressions that must each return one series of
// value 1 on dashboardSeries: for each query, that it returns a series,
// and for each of its selectors, that it selects one (a query may return a
// series while one of its selectors selects nothing: "or vector(0)").
func dashboardChecks(t *testing.T, queries []string) []promqlTest {
	t.Helper()
	var exprs []string
	for _, q := range queries {
		e, err := parser.NewParser(parser.Options{}).ParseExpr(q)
		require.NoError(t, err, q)
		require.Equal(t, parser.ValueTypeVector, e.Type(), "%s: a panel query is an instant vector", q)
		exprs = append(exprs, q)
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				if !slices.Contains(exprs, vs.String()) {
					exprs = append(exprs, vs.String())
				}
			}
			return nil
		})
	}
	var out []promqlTest
	for _, e := range exprs {
		out = append(out, promqlTest{
			Expr:       "clamp_max(count(" + e + "), 1)",
			EvalTime:   strconv.Itoa(dashboardMinutes-10) + "m",
			ExpSamples: []expSample{{Labels: "{}", Value: 1}},
		})
	}
	return out
}

// runDashboardChecks runs checks with promtool over dashboardSeries and
// returns its exit code and output.
func runDashboardChecks(t *testing.T, bin string, checks []promqlTest) (int, string) {
	t.Helper()
	tests := exprTests{RuleFiles: []string{}, EvaluationInterval: scrape.String(), Tests: []exprTest{{
		Name: "the dashboard's queries", Interval: scrape.String(), InputSeries: dashboardSeries(t), Exprs: checks,
	}}}
	b, err := yaml.Marshal(tests)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dashboard.test.yaml"), b, 0o600))
	return runPromtool(t, bin, dir, "test", "rules", "dashboard.test.yaml")
}

// TestDashboardQueries runs every panel query of the dashboard, and every
// selector in it, on realistic series with promtool: each must return a
// series. The node variable's metric must have series too.
func TestDashboardQueries(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	queries, err := DashboardQueries(DashboardPath)
	require.NoError(t, err)
	targets := 0
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			targets += len(p.Targets)
			walk(p.Panels)
		}
	}
	d := loadDashboard(t)
	walk(d.Panels)
	require.Len(t, queries, targets, "every target's query")
	for _, v := range d.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			queries = append(queries, m[1])
		}
	}
	for _, q := range queries {
		e, err := parser.NewParser(parser.Options{}).ParseExpr(q)
		require.NoError(t, err, q)
		for _, n := range metricNames(e) {
			if n != "up" {
				assert.Contains(t, append(slices.Clone(exportedMetrics), fixMetrics...), n, "%s names a metric sandboxpin exports", q)
			}
		}
	}
	checks := dashboardChecks(t, queries)
	code, out := runDashboardChecks(t, bin, checks)
	assert.Equal(t, 0, code, "promtool test rules:\n%s", out)
	t.Logf("%d queries, %d checks: %s", len(queries), len(checks), strings.TrimSpace(out))
}

// TestDashboardQueriesCatchMistakes makes sure a query that finds nothing
// fails TestDashboardQueries' checks.
func TestDashboardQueriesCatchMistakes(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	for _, q := range []string{
		`count(max by (node) (sandboxpin_unprotected_image{node=~".*"}) > 0) or vector(0)`, // a misspelt metric, hidden by "or"
		`sum by (state) (sandboxpin_fix_state{job="sandboxpin/sandboxpin"})`,               // the exporter's job
		`max by (node) (sandboxpin_fix_halted) == 1`,                                       // nothing is halted
		`max by (node) (sandboxpin_audit_success{node="worker-3"})`,                        // no such node
	} {
		t.Run(q, func(t *testing.T) {
			t.Parallel()
			code, out := runDashboardChecks(t, bin, dashboardChecks(t, []string{q}))
			assert.NotEqual(t, 0, code, "promtool passed %s:\n%s", q, out)
		})
	}
}

// TestDashboardQueriesErrors checks DashboardQueries on broken dashboards.
func TestDashboardQueriesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		json    string // the dashboard; "" for no file
		want    []string
		wantErr error  // sentinel, or nil
		errText string // in the error, or ""
	}{
		{name: "nested panels", json: `{"panels":[{"id":1,"targets":[{"expr":"up{node=~\"$node\"}"}]},{"id":2,"type":"row","panels":[{"id":3,"targets":[{"expr":"rate(x[$__rate_interval])"}]}]}]}`, want: []string{`up{node=~".*"}`, "rate(x[5m])"}},
		{name: "no file", wantErr: fs.ErrNotExist},
		{name: "no queries", json: `{"panels":[{"id":1,"type":"row"}]}`, wantErr: ErrNoQueries},
		{name: "no expr", json: `{"panels":[{"id":7,"title":"T","targets":[{"refId":"A"}]}]}`, errText: `panel 7 "T", target A: no expr`},
		{name: "unknown variable", json: `{"panels":[{"id":7,"title":"T","targets":[{"refId":"B","expr":"up{job=\"$job\"}"}]}]}`, errText: "unknown variable $job"},
		{name: "not JSON", json: `{"panels":[`, errText: "unexpected end of JSON input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "d.json")
			if tt.json != "" {
				require.NoError(t, os.WriteFile(path, []byte(tt.json), 0o600))
			}
			got, err := DashboardQueries(path)
			if tt.wantErr == nil && tt.errText == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
				return
			}
			require.Error(t, err)
			assert.Nil(t, got)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
			}
			assert.Contains(t, err.Error(), tt.errText)
			assert.Contains(t, err.Error(), path, "the error names the file")
		})
	}
}
