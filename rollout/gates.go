package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ErrPrometheus is Gates.Check's error when Prometheus' alerts could not
// be read: no answer, a status other than 200 OK, or an answer that is
// not the alerts API's JSON.
var ErrPrometheus = errors.New("rollout: prometheus alerts unreadable")

// maxAlertsBytes bounds the alerts answer read: a fleet's firing alerts
// take kilobytes; 32 MiB is far above any real answer and far below what
// would hurt the node.
const maxAlertsBytes = 32 << 20

// Gates are what must hold before a node writes. A zero field skips its
// gate: no Node, no Prometheus, the zero Window.
type Gates struct {
	Client kubernetes.Interface
	// Node is the Node that must be Ready.
	Node string
	// Prometheus is the base URL of the Prometheus API ("" skips the
	// check); an alert firing whose name matches Blocking (nil: every
	// alert) and not Ignore (nil: none) closes the gate. The regexps match
	// anywhere in the name ([regexp.Regexp.MatchString]); anchor them to
	// match whole names. HTTP nil is http.DefaultClient. Timeout bounds
	// the request (0 is 30s): a Prometheus that takes the connection and
	// never answers closes the gate, and does not hold up the pass.
	Prometheus string
	Blocking   *regexp.Regexp
	Ignore     *regexp.Regexp
	HTTP       *http.Client
	Timeout    time.Duration
	Window     Window
	// Now nil is time.Now.
	Now func() time.Time
}

// Check returns "" when every gate is open, else why one is closed (for
// people: "alert KubeNodeNotReady firing", "node not Ready", "outside the
// window 02:00-05:00"). An error is a gate it could not check, which
// counts as closed: the reason then names that gate.
//
// The gates are checked in this order, the cheapest first, and the first
// closed one answers: the window, the Node's Ready condition, the alerts
// firing in Prometheus.
func (g Gates) Check(ctx context.Context) (string, error) {
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	if !g.Window.Contains(now()) {
		reason := "outside the window " + g.Window.String()
		if loc := g.Window.Location; loc != nil && loc != time.UTC {
			reason += " " + loc.String()
		}
		return reason, nil
	}
	if g.Node != "" {
		if reason, err := g.nodeReady(ctx); reason != "" || err != nil {
			return reason, err
		}
	}
	if g.Prometheus != "" {
		return g.alerts(ctx)
	}
	return "", nil
}

// nodeReady checks the Node's Ready condition.
func (g Gates) nodeReady(ctx context.Context) (string, error) {
	node, err := g.Client.CoreV1().Nodes().Get(ctx, g.Node, metav1.GetOptions{})
	if err != nil {
		return "node Ready unknown", fmt.Errorf("rollout: node %s: %w", g.Node, err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return "", nil
		}
		if c.Reason != "" {
			return fmt.Sprintf("node not Ready (%s)", c.Reason), nil
		}
		return "node not Ready", nil
	}
	return "node not Ready (no Ready condition)", nil
}

// alertsAnswer is the part of Prometheus' GET /api/v1/alerts answer that
// Check reads: the envelope and each alert's labels and state, as
// prometheus/client_golang reads them (api/prometheus/v1/api.go@v1.25.0:
// epAlerts, AlertsResult, Alert, AlertStateFiring "firing").
type alertsAnswer struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	} `json:"data"`
}

// alerts checks the alerts firing in Prometheus. Like kured's
// --prometheus-url and --alert-filter-regexp (kubereboot/kured
// pkg/alerts/prometheus.go@9a4b8fdb), but it reads the alerts API rather
// than the ALERTS series, and pending alerts never block.
func (g Gates) alerts(ctx context.Context) (string, error) {
	const unknown = "Prometheus alerts unknown"
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u, err := url.JoinPath(g.Prometheus, "api/v1/alerts")
	if err != nil {
		return unknown, fmt.Errorf("%w: %q: %w", ErrPrometheus, g.Prometheus, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return unknown, fmt.Errorf("%w: %q: %w", ErrPrometheus, u, err)
	}
	client := g.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return unknown, fmt.Errorf("%w: %w", ErrPrometheus, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAlertsBytes+1))
	if err != nil {
		return unknown, fmt.Errorf("%w: GET %s: %w", ErrPrometheus, u, err)
	}
	var answer alertsAnswer
	jsonErr := json.Unmarshal(body, &answer)
	switch {
	case resp.StatusCode != http.StatusOK && answer.Error != "":
		return unknown, fmt.Errorf("%w: GET %s: %s: %s", ErrPrometheus, u, resp.Status, answer.Error)
	case resp.StatusCode != http.StatusOK:
		return unknown, fmt.Errorf("%w: GET %s: %s", ErrPrometheus, u, resp.Status)
	case len(body) > maxAlertsBytes:
		return unknown, fmt.Errorf("%w: GET %s: answer larger than %d bytes", ErrPrometheus, u, maxAlertsBytes)
	case jsonErr != nil:
		return unknown, fmt.Errorf("%w: GET %s: %w", ErrPrometheus, u, jsonErr)
	case answer.Status != "success":
		return unknown, fmt.Errorf("%w: GET %s: status %q, want \"success\"", ErrPrometheus, u, answer.Status)
	}
	var names []string
	for _, a := range answer.Data.Alerts {
		name := a.Labels["alertname"]
		if a.State != "firing" || (g.Blocking != nil && !g.Blocking.MatchString(name)) ||
			(g.Ignore != nil && g.Ignore.MatchString(name)) {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	switch len(names) {
	case 0:
		return "", nil
	case 1:
		return fmt.Sprintf("alert %s firing", names[0]), nil
	}
	return fmt.Sprintf("alerts %s firing", strings.Join(names, ", ")), nil
}
