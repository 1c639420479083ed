package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
)

// TestAuditPrometheusLive runs audit -o prometheus and -o summary against
// real containerd: the same exit codes as the text output, an exposition
// that parses, and a one-line verdict.
func TestAuditPrometheusLive(t *testing.T) {
	t.Parallel()
	const stored = "registry.k8s.io/pause:3.10.1"
	type liveCase struct {
		version         containerdtest.Version
		wantCode        int
		wantUnprotected float64
	}
	var tests []liveCase
	for _, v := range containerdtest.Versions() {
		if v == containerdtest.V1 { // never pins
			tests = append(tests, liveCase{version: v, wantCode: exitCheck, wantUnprotected: 1})
			continue
		}
		tests = append(tests, liveCase{version: v, wantCode: exitOK, wantUnprotected: 0})
	}
	for _, tt := range tests {
		t.Run(tt.version.String(), func(t *testing.T) {
			t.Parallel()
			c := containerdtest.Start(t, tt.version, containerdtest.Options{
				SandboxImage: stored,
				Images:       []containerdtest.Image{{Names: []string{stored}}, {Names: []string{"docker.io/library/busybox:1.36"}}},
			})
			root := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o750))
			require.NoError(t, os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), []byte(nodeConfig(tt.version, stored)), 0o600))
			code, out, errOut := runCmd(t, "audit", "-o", "prometheus", "--runtime-endpoint", c.Endpoint, "--root", root)
			assert.Equal(t, tt.wantCode, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			fams := parseExposition(t, strings.NewReader(out))
			v, ok := gauge(t, fams, metricUnprotected)
			require.True(t, ok, out)
			assert.InDelta(t, tt.wantUnprotected, v, 0)
			v, ok = gauge(t, fams, metricMustPin)
			require.True(t, ok, out)
			assert.InDelta(t, 1.0, v, 0, "the sandbox image, not busybox")

			code, out, errOut = runCmd(t, "audit", "-o", "summary", "--runtime-endpoint", c.Endpoint, "--root", root)
			assert.Equal(t, tt.wantCode, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Equal(t, 1, strings.Count(out, "\n"), out)
			if tt.wantCode == exitOK {
				assert.Equal(t, "OK: containerd pins sandbox image "+stored+"\n", out)
			} else {
				assert.Equal(t, "FAIL: containerd does not pin sandbox image "+stored+" (stored as "+stored+"); the kubelet's image GC may delete it; on the node: sandboxpin fix\n", out)
			}
		})
	}
}
