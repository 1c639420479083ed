package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// DashboardPath is the Grafana dashboard, relative to this module's
// directory.
const DashboardPath = "grafana/sandboxpin.json"

// dashboardVars are the values DashboardQueries puts in place of the
// dashboard's variables: every node, and Grafana's intervals at a 1m scrape.
var dashboardVars = strings.NewReplacer(
	"${node}", ".*", "$node", ".*",
	"${__rate_interval}", "5m", "$__rate_interval", "5m",
	"${__interval}", "1m", "$__interval", "1m",
	"${__range}", "1h", "$__range", "1h",
)

// dashboardVar finds a variable left in a query.
var dashboardVar = regexp.MustCompile(`\$\{?\w+`)

// DashboardQueries returns the PromQL expression of every panel target of
// the Grafana dashboard at path (rows' nested panels included), in panel
// order, ready to run against Prometheus as instant queries: the node
// variable is ".*" (every node), $__rate_interval and $__interval are 5m
// and 1m, $__range is 1h. A target without an expression, a variable it
// does not know, or a dashboard without any query is an error that names
// the panel.
func DashboardQueries(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	type panel struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []string
	var walk func([]json.RawMessage) error
	walk = func(ps []json.RawMessage) error {
		for _, raw := range ps {
			var p panel
			if err := json.Unmarshal(raw, &p); err != nil {
				return fmt.Errorf("%s: panel: %w", path, err)
			}
			for _, t := range p.Targets {
				if strings.TrimSpace(t.Expr) == "" {
					return fmt.Errorf("%s: panel %d %q, target %s: no expr", path, p.ID, p.Title, t.RefID)
				}
				q := dashboardVars.Replace(t.Expr)
				if v := dashboardVar.FindString(q); v != "" {
					return fmt.Errorf("%s: panel %d %q, target %s: unknown variable %s in %q", path, p.ID, p.Title, t.RefID, v, t.Expr)
				}
				out = append(out, q)
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w", path, ErrNoQueries)
	}
	return out, nil
}

// ErrNoQueries is returned for a dashboard without a single panel query.
var ErrNoQueries = errors.New("no panel queries")
