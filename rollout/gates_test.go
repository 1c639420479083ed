package rollout

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// node is Node node-a with a Ready condition of status ("" for none) and
// reason.
func node(status corev1.ConditionStatus, reason string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "3c1f"}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}}
	if status != "" {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: status, Reason: reason})
	}
	return n
}

// An answer of Prometheus' GET /api/v1/alerts, in the shape that
// client_golang reads (api/prometheus/v1/api.go@v1.25.0: AlertsResult,
// Alert), with alerts of kube-prometheus and of deploy/.
const alertsJSON = `{"status":"success","data":{"alerts":[
 {"labels":{"alertname":"Watchdog","severity":"none"},"annotations":{},"state":"firing","activeAt":"2026-12-07T01:00:00Z","value":"1e+00"},
 {"labels":{"alertname":"KubeNodeNotReady","node":"node-b"},"annotations":{},"state":"firing","activeAt":"2026-12-07T01:00:00Z","value":"1e+00"},
 {"labels":{"alertname":"KubeNodeNotReady","node":"node-c"},"annotations":{},"state":"firing","activeAt":"2026-12-07T01:00:00Z","value":"1e+00"},
 {"labels":{"alertname":"KubeletDown"},"annotations":{},"state":"pending","activeAt":"2026-12-07T01:00:00Z","value":"1e+00"},
 {"labels":{"alertname":"SandboxImageUnprotected"},"annotations":{},"state":"firing","activeAt":"2026-12-07T01:00:00Z","value":"1e+00"}
]}}`

func TestGatesCheck(t *testing.T) {
	t.Parallel()
	night, err := ParseWindow("02:00-05:00", time.UTC)
	require.NoError(t, err)
	noon := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		node     *corev1.Node   // the Node in the API; nil for none
		status   int            // Prometheus' HTTP status; 0 for no Prometheus
		body     string         // its answer
		blocking *regexp.Regexp // Gates.Blocking
		ignore   *regexp.Regexp // Gates.Ignore
		window   Window
		want     string           // the reason
		wantErr  error            // errors.Is, nil for none
		errCheck func(error) bool // or this, nil for none
		errHas   string           // in the error, "" for none
	}{
		{name: "all open", node: node(corev1.ConditionTrue, ""), status: 200, body: `{"status":"success","data":{"alerts":[]}}`},
		{name: "no prometheus", node: node(corev1.ConditionTrue, "")},
		{name: "not ready", node: node(corev1.ConditionFalse, "KubeletNotReady"), want: "node not Ready (KubeletNotReady)"},
		{name: "unknown", node: node(corev1.ConditionUnknown, ""), want: "node not Ready"},
		{name: "no condition", node: node("", ""), want: "node not Ready (no Ready condition)"},
		{
			name: "no node", want: "node Ready unknown",
			errCheck: apierrors.IsNotFound, errHas: "node-a",
		},
		{name: "window closed", window: night, want: "outside the window 02:00-05:00"},
		{
			name: "every firing alert blocks", node: node(corev1.ConditionTrue, ""), status: 200, body: alertsJSON,
			want: "alerts KubeNodeNotReady, SandboxImageUnprotected, Watchdog firing",
		},
		{
			name: "ignored", node: node(corev1.ConditionTrue, ""), status: 200, body: alertsJSON,
			ignore: regexp.MustCompile(`^(Watchdog|SandboxImageUnprotected)$`), want: "alert KubeNodeNotReady firing",
		},
		{
			name: "blocking only", node: node(corev1.ConditionTrue, ""), status: 200, body: alertsJSON,
			blocking: regexp.MustCompile(`^Kube`), want: "alert KubeNodeNotReady firing",
		},
		{
			name: "pending never blocks", node: node(corev1.ConditionTrue, ""), status: 200, body: alertsJSON,
			blocking: regexp.MustCompile(`^KubeletDown$`),
		},
		{
			name: "blocking and ignored", node: node(corev1.ConditionTrue, ""), status: 200, body: alertsJSON,
			blocking: regexp.MustCompile(`^Kube`), ignore: regexp.MustCompile(`NotReady`),
		},
		{
			name: "503", node: node(corev1.ConditionTrue, ""), status: 503, body: "overloaded",
			want: "Prometheus alerts unknown", wantErr: ErrPrometheus, errHas: "/api/v1/alerts: 503 Service Unavailable",
		},
		{
			name: "422 with Prometheus' error", node: node(corev1.ConditionTrue, ""), status: 422,
			body: `{"status":"error","errorType":"execution","error":"rules not loaded"}`,
			want: "Prometheus alerts unknown", wantErr: ErrPrometheus, errHas: "rules not loaded",
		},
		{
			name: "not JSON", node: node(corev1.ConditionTrue, ""), status: 200, body: "<html>login</html>",
			want: "Prometheus alerts unknown", wantErr: ErrPrometheus, errHas: "/api/v1/alerts: invalid character",
		},
		{
			name: "status error", node: node(corev1.ConditionTrue, ""), status: 200, body: `{"status":"error"}`,
			want: "Prometheus alerts unknown", wantErr: ErrPrometheus, errHas: `status "error"`,
		},
		{
			name: "not ready before alerts", node: node(corev1.ConditionFalse, ""), status: 503,
			want: "node not Ready",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fake.NewClientset()
			if tt.node != nil {
				c = fake.NewClientset(tt.node)
			}
			g := Gates{
				Client: c, Node: "node-a", Blocking: tt.blocking, Ignore: tt.ignore, Window: tt.window,
				Now: func() time.Time { return noon },
			}
			if tt.status != 0 {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path != "/prom/api/v1/alerts" || r.Method != http.MethodGet {
						http.NotFound(w, r)
						return
					}
					w.WriteHeader(tt.status)
					_, _ = w.Write([]byte(tt.body))
				}))
				t.Cleanup(srv.Close)
				g.Prometheus, g.HTTP = srv.URL+"/prom/", srv.Client()
			}
			got, err := g.Check(context.Background())
			assert.Equal(t, tt.want, got)
			if tt.wantErr == nil && tt.errCheck == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
			}
			if tt.errCheck != nil {
				assert.True(t, tt.errCheck(err), "error %v", err)
			}
			assert.ErrorContains(t, err, tt.errHas)
			if tt.status != 0 {
				assert.ErrorContains(t, err, g.Prometheus[:len(g.Prometheus)-1], "names the URL")
			}
		})
	}
}

// TestGatesPrometheusDown: no answer at all is an error naming the URL.
func TestGatesPrometheusDown(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	g := Gates{Prometheus: url}
	got, err := g.Check(context.Background())
	assert.Equal(t, "Prometheus alerts unknown", got)
	require.ErrorIs(t, err, ErrPrometheus)
	assert.ErrorContains(t, err, url+"/api/v1/alerts")
}

// TestGatesAlertsTooLarge: an answer past the bound is refused, not read.
func TestGatesAlertsTooLarge(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status":"success","data":{"alerts":[],"pad":"`))
		_, _ = w.Write([]byte(strings.Repeat("x", maxAlertsBytes)))
		_, _ = w.Write([]byte(`"}}`))
	}))
	t.Cleanup(srv.Close)
	g := Gates{Prometheus: srv.URL, HTTP: srv.Client()}
	_, err := g.Check(context.Background())
	require.ErrorIs(t, err, ErrPrometheus)
	assert.ErrorContains(t, err, "larger than")
}

// TestGatesAlertsTimeout: a Prometheus that takes the request and never
// answers closes the gate within Timeout; the pass goes on.
func TestGatesAlertsTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	g := Gates{Prometheus: srv.URL, HTTP: srv.Client(), Timeout: 100 * time.Millisecond}
	done := make(chan struct{})
	var got string
	var err error
	go func() {
		defer close(done)
		got, err = g.Check(context.Background())
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Check still waits for a Prometheus that does not answer")
	}
	assert.Equal(t, "Prometheus alerts unknown", got)
	require.ErrorIs(t, err, ErrPrometheus)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}
