package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// errNoSocket is an audit that found no CRI socket to ask.
// It fits node-problem-detector's 256 bytes of plugin output
// (deploy/node-problem-detector) after "UNKNOWN: the audit failed: ".
var errNoSocket = errors.New("no CRI socket: neither the kubelet's nor containerd's configured socket exists, nor a default one " +
	"(containerd's, CRI-O's, cri-dockerd's); give --runtime-endpoint URL, or --images FILE to audit offline")

// nodeAudit is what one audit of a node found.
type nodeAudit struct {
	// Err is why the audit could not read the node or ask the runtime;
	// Verdict is nil then.
	Err error
	// Finished is when the audit ended.
	Finished time.Time
	// Duration is how long it took.
	Duration time.Duration
	// Verdict is the library's verdict on the node.
	Verdict *audit.Verdict
}

// exitCode maps the audit to audit's exit codes: 2 when it failed, 3 when
// the sandbox image cannot be told, 1 when the node is not protected (it
// will not start, or its sandbox image is absent, unpinned or not stored
// as configured), else 0.
func (a *nodeAudit) exitCode() int {
	var ce *codeError
	switch {
	case errors.As(a.Err, &ce):
		return ce.code
	case a.Err != nil:
		return exitError
	case !a.Verdict.Protected():
		return exitCheck
	}
	return exitOK
}

// auditNode audits the node n names: resolve with the live runtime, then
// ListImages and the runtime's own lookup of the sandbox image, judged by
// package audit; with n.images, offline, from that file and the root. It
// dials afresh each time, so a runtime that restarted is found again. An
// Err is a *codeError with the exit code it means.
func auditNode(ctx context.Context, n *nodeFlags) (a nodeAudit) {
	start := time.Now()
	defer func() {
		a.Finished = time.Now()
		a.Duration = a.Finished.Sub(start)
	}()
	if n.images != "" {
		return auditOffline(ctx, n)
	}
	if n.endpointToAsk() == "" {
		return nodeAudit{Err: fail(exitError, "%w", errNoSocket)}
	}
	client, err := n.dial(ctx)
	if err != nil {
		return nodeAudit{Err: fail(exitError, "%v", err)}
	}
	defer client.Close()
	res, err := n.resolve(ctx, client)
	if err != nil {
		return nodeAudit{Err: fail(exitError, "%v", err)}
	}
	if err := n.unknown(res); err != nil {
		return nodeAudit{Err: err}
	}
	rctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	images, err := client.Images(rctx)
	if err != nil {
		return nodeAudit{Err: fail(exitError, "%v", err)}
	}
	found, err := lookup(rctx, client, res.SandboxImage)
	if err != nil {
		return nodeAudit{Err: fail(exitError, "%v", err)}
	}
	return judged(res, audit.Observation[*runtimeapi.Image]{Images: images, Lookup: found})
}

// judged is the audit of res with what the runtime reported.
func judged[I audit.Image](res *resolve.Result, obs audit.Observation[I]) nodeAudit {
	v, err := audit.Judge(res, obs)
	if err != nil {
		return nodeAudit{Err: fail(exitError, "%v", err)}
	}
	return nodeAudit{Verdict: v}
}

// Metric names (a contract: docs/design.md, Contract names).
const (
	metricSuccess     = "sandboxpin_audit_success"
	metricTimestamp   = "sandboxpin_audit_timestamp_seconds"
	metricInfo        = "sandboxpin_sandbox_image_info"
	metricPresent     = "sandboxpin_sandbox_image_present"
	metricStoredAs    = "sandboxpin_sandbox_image_stored_as_configured"
	metricMustPin     = "sandboxpin_must_pin_images"
	metricUnprotected = "sandboxpin_unprotected_images"
	metricConflicts   = "sandboxpin_conflicts"
)

// auditCollector exports the audit that last returns. It is a
// prometheus.Collector whose metrics are built at collection time, so that
// one registry serves every audit. last is called once per collection.
type auditCollector struct {
	last func() (nodeAudit, bool) // false before the first audit ends

	success, timestamp, info, present, storedAs, mustPin, unprotected, conflicts *prometheus.Desc
}

func newAuditCollector(last func() (nodeAudit, bool)) *auditCollector {
	return &auditCollector{
		last:        last,
		success:     prometheus.NewDesc(metricSuccess, "1 when the last audit could read the node and ask the runtime, else 0.", nil, nil),
		timestamp:   prometheus.NewDesc(metricTimestamp, "When the last audit finished, in seconds since the Unix epoch.", nil, nil),
		info:        prometheus.NewDesc(metricInfo, "The sandbox image the node resolves to, always 1.", []string{"runtime", "runtime_version", "image"}, nil),
		present:     prometheus.NewDesc(metricPresent, "1 when the runtime stores the sandbox image under any alias spelling, else 0.", nil, nil),
		storedAs:    prometheus.NewDesc(metricStoredAs, "1 when the runtime's own lookup of the configured sandbox image name (ImageStatus by that exact string) finds an image, else 0: with 0 the runtime pulls the sandbox image for the next pod, which fails while no registry answers.", nil, nil),
		mustPin:     prometheus.NewDesc(metricMustPin, "How many stored images the node's rules pin.", nil, nil),
		unprotected: prometheus.NewDesc(metricUnprotected, "How many of the images the node's rules pin the runtime itself reports pinned=false: the kubelet's image GC may delete them.", nil, nil),
		conflicts:   prometheus.NewDesc(metricConflicts, "How many conflicts resolving the node's sandbox image found.", nil, nil),
	}
}

// Describe sends every descriptor.
func (c *auditCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.success, c.timestamp, c.info, c.present, c.storedAs, c.mustPin, c.unprotected, c.conflicts} {
		ch <- d
	}
}

// Collect sends the last audit's metrics: nothing before the first audit
// ends, and only success (0) and the timestamp after a failed one, so that
// no stale verdict outlives the audit that made it.
func (c *auditCollector) Collect(ch chan<- prometheus.Metric) {
	a, ok := c.last()
	if !ok {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	gauge(c.success, b2f(a.Err == nil))
	gauge(c.timestamp, float64(a.Finished.UnixNano())/1e9)
	if a.Err != nil {
		return
	}
	v := a.Verdict
	gauge(c.info, 1, string(v.Runtime), v.RuntimeVersion, v.SandboxImage)
	gauge(c.present, b2f(v.Sandbox.Present))
	gauge(c.storedAs, b2f(v.Sandbox.StoredAsConfigured))
	gauge(c.mustPin, float64(v.MustPin))
	gauge(c.unprotected, float64(v.Unprotected))
	gauge(c.conflicts, float64(v.Conflicts))
}

// writeExposition writes what g gathers to w in the Prometheus text format.
func writeExposition(w io.Writer, g prometheus.Gatherer) error {
	families, err := g.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}

// auditPrometheus is `audit -o prometheus`: the audit's metrics on w,
// for node_exporter's textfile collector, with audit's exit codes. A failed
// audit still writes sandboxpin_audit_success 0 (and says why on stderr),
// so that the textfile shows the failure instead of a stale verdict. The
// Go and process collectors are left out: they would describe this
// short-lived process, and clash with node_exporter's own.
func auditPrometheus(w io.Writer, a nodeAudit) error {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newAuditCollector(func() (nodeAudit, bool) { return a, true }))
	if err := writeExposition(w, reg); err != nil {
		return fail(exitError, "%v", err)
	}
	if a.Err != nil {
		return a.Err
	}
	return exit(a.exitCode())
}

// summary is the audit's verdict in one line.
func (a *nodeAudit) summary() string {
	s := a.verdictLine()
	if strings.HasPrefix(s, "FAIL: ") {
		s += "; on the node: sandboxpin fix"
	}
	return s
}

// verdictLine is the summary without what to run.
func (a *nodeAudit) verdictLine() string {
	if a.Err != nil {
		return fmt.Sprintf("UNKNOWN: the audit failed: %v", a.Err)
	}
	v := a.Verdict
	switch v.Status {
	case audit.StatusWillNotStart:
		what := "the node"
		for _, n := range v.Findings {
			if n.Kind == v.Fix.Answers && n.Component != "" {
				what = string(n.Component)
				break
			}
		}
		return fmt.Sprintf("FAIL: %s will not start (%s at %s); %s", what, v.Fix.Answers, v.Fix.Where(), v.Fix.Action)
	case audit.StatusAbsent:
		return fmt.Sprintf("FAIL: sandbox image %s (%s) is not in the runtime's image store; pre-pull it under that name", v.SandboxImage, v.Runtime)
	case audit.StatusUnpinned:
		return fmt.Sprintf("FAIL: %s does not pin sandbox image %s (stored as %s); the kubelet's image GC may delete it", v.Runtime, v.SandboxImage, v.Sandbox.StoredAs)
	case audit.StatusNotStoredAsConfigured:
		return fmt.Sprintf("FAIL: sandbox image %s (%s) is stored only as the alias %s; the runtime pulls it for new pods", v.SandboxImage, v.Runtime, v.Sandbox.StoredAs)
	}
	return fmt.Sprintf("OK: %s pins sandbox image %s", v.Runtime, v.SandboxImage)
}
