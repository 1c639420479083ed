package crishim

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"
)

// Metric names, under the sandboxpin_shim_ prefix.
const (
	metricCalls      = "sandboxpin_shim_calls_total"
	metricPinned     = "sandboxpin_shim_images_pinned_total"
	metricReloads    = "sandboxpin_shim_rule_reloads_total"
	metricReconnects = "sandboxpin_shim_runtime_reconnects_total"
	metricRules      = "sandboxpin_shim_rules"
	metricLoaded     = "sandboxpin_shim_rules_loaded"
)

// Reload results, the values of the result label of metricReloads.
const (
	reloadOK     = "ok"     // new rules in use
	reloadFailed = "failed" // no rules loaded yet, and this load failed too
	reloadKept   = "kept"   // the load failed, the previous rules stay
)

// otherMethod labels the calls of methods this cri-api version does not
// know: a client may send any path, and each label value costs memory for
// good, so only the known methods get their own.
const otherMethod = "other"

// maxCode is the largest gRPC status code with a name (Unauthenticated);
// larger ones count as Unknown.
const maxCode = 16

// methodIndex numbers the CRI methods of cri-api, 1 on; 0 is otherMethod.
var methodIndex = sync.OnceValue(func() map[string]int {
	idx := map[string]int{}
	criMethods(func(path string, _ bool) { idx[path] = len(idx) + 1 })
	return idx
})

// methodNames is methodIndex the other way round.
var methodNames = sync.OnceValue(func() []string {
	idx := methodIndex()
	names := make([]string, len(idx)+1)
	names[0] = otherMethod
	for m, i := range idx {
		names[i] = m
	}
	return names
})

// methodID returns the index of a method path for metrics.
func methodID(path string) int { return methodIndex()[path] }

// metrics are the shim's Prometheus metrics. A nil *metrics records
// nothing. Its methods are safe for concurrent use, and record without
// allocating: the counters of each method and code are made once.
type metrics struct {
	reg        *prometheus.Registry
	calls      *prometheus.CounterVec
	callCache  []sync.Map // by method index: code -> prometheus.Counter
	pinned     prometheus.Counter
	reloads    *prometheus.CounterVec
	reconnects prometheus.Counter
	rules      prometheus.Gauge
	loaded     prometheus.Gauge
}

// newMetrics returns the shim's metrics in a registry of their own, with
// the Go and process collectors.
func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricCalls,
			Help: "CRI calls forwarded to the runtime, by method (\"other\" for methods this build does not know) and gRPC status code.",
		}, []string{"method", "code"}),
		callCache: make([]sync.Map, len(methodNames())),
		pinned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricPinned,
			Help: "Images the shim set pinned on in the runtime's answers (ListImages, ImageStatus, StreamImages), counted once per answer.",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricReloads,
			Help: "Loads of the pin rules, by result: ok (new rules in use), failed (no rules yet), kept (failed, the previous rules stay).",
		}, []string{"result"}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricReconnects,
			Help: "Times the shim reached the runtime again after losing it.",
		}),
		rules: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricRules,
			Help: "Pin rules in use: the node's resolved pins (or the Loader's), the sandbox image when added, and the extra patterns.",
		}),
		loaded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricLoaded,
			Help: "1 once pin rules are loaded; before, image calls fail with Unavailable.",
		}),
	}
	for _, r := range []string{reloadOK, reloadFailed, reloadKept} {
		m.reloads.WithLabelValues(r)
	}
	m.reg.MustRegister(m,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// own returns the shim's own metrics.
func (m *metrics) own() []prometheus.Collector {
	return []prometheus.Collector{m.calls, m.pinned, m.reloads, m.reconnects, m.rules, m.loaded}
}

// Describe sends the descriptors of the shim's own metrics.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.own() {
		c.Describe(ch)
	}
}

// Collect sends the shim's own metrics.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.own() {
		c.Collect(ch)
	}
}

var _ prometheus.Collector = (*metrics)(nil)

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// call counts a call of method (an index of methodID) that ended with code.
func (m *metrics) call(method int, code codes.Code) {
	if m == nil {
		return
	}
	if method < 0 || method >= len(m.callCache) {
		method = 0
	}
	if code > maxCode {
		code = codes.Unknown
	}
	cache := &m.callCache[method]
	c, ok := cache.Load(code)
	if !ok {
		c, _ = cache.LoadOrStore(code, m.calls.WithLabelValues(methodNames()[method], code.String()))
	}
	c.(prometheus.Counter).Inc() //nolint:forcetypeassert // the cache holds counters only
}

// pin counts n images the shim pinned.
func (m *metrics) pin(n int) {
	if m == nil || n == 0 {
		return
	}
	m.pinned.Add(float64(n))
}

// reload counts a load of the rules with its result.
func (m *metrics) reload(result string) {
	if m == nil {
		return
	}
	m.reloads.WithLabelValues(result).Inc()
}

// setRules records the number of rules in use, once they are loaded.
func (m *metrics) setRules(n int) {
	if m == nil {
		return
	}
	m.rules.Set(float64(n))
	m.loaded.Set(1)
}

// reconnect counts a return of the runtime.
func (m *metrics) reconnect() {
	if m == nil {
		return
	}
	m.reconnects.Inc()
}
