package main

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/audit"
)

// parseExposition parses the Prometheus text format with the parser
// Prometheus' own scraping code uses.
func parseExposition(t testing.TB, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	require.NoError(t, err)
	return fams
}

// gauge returns the value of the only sample of the gauge name, and whether
// there is one.
func gauge(t testing.TB, fams map[string]*dto.MetricFamily, name string) (float64, bool) {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	require.Equal(t, dto.MetricType_GAUGE, f.GetType(), name)
	require.Len(t, f.GetMetric(), 1, name)
	return f.GetMetric()[0].GetGauge().GetValue(), true
}

// infoLabels returns the labels of the only sample of sandboxpin_sandbox_image_info.
func infoLabels(t testing.TB, fams map[string]*dto.MetricFamily) map[string]string {
	t.Helper()
	f, ok := fams[metricInfo]
	require.True(t, ok, "no %s", metricInfo)
	require.Len(t, f.GetMetric(), 1, metricInfo)
	got := map[string]string{}
	for _, l := range f.GetMetric()[0].GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	return got
}

func TestAuditCollector(t *testing.T) {
	t.Parallel()
	finished := time.Date(2026, 12, 2, 17, 0, 0, 500_000_000, time.UTC)
	const stored = "registry.k8s.io/pause:3.10.1"
	verdict := func(v audit.Verdict) nodeAudit { return nodeAudit{Finished: finished, Verdict: &v} }
	tests := []struct {
		name     string
		audit    nodeAudit
		want     map[string]float64 // absent names must not be exported
		wantCode int
		summary  string // -o summary
	}{
		{
			name: "protected",
			audit: verdict(audit.Verdict{
				Status: audit.StatusOK, Runtime: "containerd", RuntimeVersion: "v2.2.9", SandboxImage: stored,
				Sandbox: audit.Sandbox{Present: true, StoredAs: stored, StoredAsConfigured: true, Pinned: true}, MustPin: 1,
			}),
			want: map[string]float64{
				metricSuccess: 1, metricTimestamp: 1796230800.5, metricPresent: 1, metricStoredAs: 1, metricMustPin: 1,
				metricUnprotected: 0, metricConflicts: 0, metricInfo: 1,
			},
			wantCode: exitOK,
			summary:  "OK: containerd pins sandbox image registry.k8s.io/pause:3.10.1",
		},
		{
			// The alias through a pinning shim: present and pinned, yet
			// the runtime's lookup of the configured name finds nothing.
			name: "stored only as an alias",
			audit: verdict(audit.Verdict{
				Status: audit.StatusNotStoredAsConfigured, Runtime: "containerd", RuntimeVersion: "v2.4.2", SandboxImage: "k8s.gcr.io/pause:3.10.1",
				Sandbox: audit.Sandbox{Present: true, StoredAs: stored, Spelling: audit.SpellingAlias, Pinned: true}, MustPin: 1,
			}),
			want: map[string]float64{
				metricSuccess: 1, metricTimestamp: 1796230800.5, metricPresent: 1, metricStoredAs: 0, metricMustPin: 1,
				metricUnprotected: 0, metricConflicts: 0, metricInfo: 1,
			},
			wantCode: exitCheck,
			summary:  "FAIL: sandbox image k8s.gcr.io/pause:3.10.1 (containerd) is stored only as the alias registry.k8s.io/pause:3.10.1; the runtime pulls it for new pods; on the node: sandboxpin fix",
		},
		{
			name: "unprotected",
			audit: verdict(audit.Verdict{
				Status: audit.StatusUnpinned, Runtime: "containerd", RuntimeVersion: "1.6.20", SandboxImage: "k8s.gcr.io/pause:3.10.1",
				Sandbox: audit.Sandbox{Present: true, StoredAs: "sha256:1"}, MustPin: 2, Unprotected: 2, Conflicts: 1,
			}),
			want: map[string]float64{
				metricSuccess: 1, metricTimestamp: 1796230800.5, metricPresent: 1, metricStoredAs: 0, metricMustPin: 2,
				metricUnprotected: 2, metricConflicts: 1, metricInfo: 1,
			},
			wantCode: exitCheck,
			summary:  "FAIL: containerd does not pin sandbox image k8s.gcr.io/pause:3.10.1 (stored as sha256:1); the kubelet's image GC may delete it; on the node: sandboxpin fix",
		},
		{
			name:     "missing",
			audit:    verdict(audit.Verdict{Status: audit.StatusAbsent, Runtime: "cri-o", SandboxImage: "registry.k8s.io/pause:3.10"}),
			want:     map[string]float64{metricSuccess: 1, metricTimestamp: 1796230800.5, metricPresent: 0, metricStoredAs: 0, metricMustPin: 0, metricUnprotected: 0, metricConflicts: 0, metricInfo: 1},
			wantCode: exitCheck,
			summary:  "FAIL: sandbox image registry.k8s.io/pause:3.10 (cri-o) is not in the runtime's image store; pre-pull it under that name; on the node: sandboxpin fix",
		},
		{
			name:     "failed",
			audit:    nodeAudit{Finished: finished, Err: errors.New("runtime down")},
			want:     map[string]float64{metricSuccess: 0, metricTimestamp: 1796230800.5},
			wantCode: exitError,
			summary:  "UNKNOWN: the audit failed: runtime down",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(newAuditCollector(func() (nodeAudit, bool) { return tt.audit, true }))
			var buf bytes.Buffer
			require.NoError(t, writeExposition(&buf, reg))
			fams := parseExposition(t, &buf)
			assert.Len(t, fams, len(tt.want), "exported families")
			for name, want := range tt.want {
				got, ok := gauge(t, fams, name)
				if assert.True(t, ok, "no %s", name) {
					assert.InDelta(t, want, got, 1e-3, name)
				}
			}
			if _, ok := tt.want[metricInfo]; ok {
				assert.Equal(t, map[string]string{"runtime": string(tt.audit.Verdict.Runtime), "runtime_version": tt.audit.Verdict.RuntimeVersion, "image": tt.audit.Verdict.SandboxImage}, infoLabels(t, fams))
			}
			assert.Equal(t, tt.wantCode, tt.audit.exitCode())
			assert.Equal(t, tt.summary, tt.audit.summary())
		})
	}
}

func TestAuditCollectorBeforeFirstAudit(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newAuditCollector(func() (nodeAudit, bool) { return nodeAudit{}, false }))
	fams, err := reg.Gather()
	require.NoError(t, err)
	assert.Empty(t, fams)
}

func TestAuditPrometheusErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		wantOut    bool // the exposition with sandboxpin_audit_success 0
		wantErrOut string
	}{
		{name: "no socket", args: []string{"audit", "-o", "prometheus", "--root", sampleNode}, wantOut: true, wantErrOut: "no CRI socket"},
		{name: "absent socket", args: []string{"audit", "-o", "prometheus", "--runtime-endpoint", "unix:///nonexistent/x.sock", "--root", sampleNode}, wantOut: true, wantErrOut: "/nonexistent/x.sock"},
		{name: "bad output", args: []string{"audit", "-o", "xml", "--root", sampleNode}, wantErrOut: `--output "xml": want text, json, yaml, prometheus, summary`},
		{name: "summary no socket", args: []string{"audit", "-o", "summary", "--root", sampleNode}, wantErrOut: "no CRI socket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCmd(t, tt.args...)
			assert.Equal(t, exitError, code)
			assert.Contains(t, errOut, tt.wantErrOut)
			if tt.args[2] == "summary" {
				assert.Equal(t, "UNKNOWN: the audit failed: "+errNoSocket.Error()+"\n", out)
				return
			}
			if !tt.wantOut {
				assert.Empty(t, out)
				return
			}
			fams := parseExposition(t, bytes.NewBufferString(out))
			v, ok := gauge(t, fams, metricSuccess)
			require.True(t, ok, out)
			assert.Zero(t, v)
			_, ok = gauge(t, fams, metricUnprotected)
			assert.False(t, ok, "no verdict after a failed audit")
			for name := range fams {
				assert.Regexp(t, `^sandboxpin_`, name, "no Go or process metrics in the textfile output")
			}
		})
	}
}
