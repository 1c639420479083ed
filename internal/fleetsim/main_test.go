package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const captures = "../../deploy/testdata/audit"

func TestFleet(t *testing.T) {
	t.Parallel()
	f, err := newFleet(1000, 100, captures)
	require.NoError(t, err)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path) //nolint:noctx // a test against a loopback server
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	// Nodes 100, 200, … are broken, by the kinds in turn.
	tests := []struct {
		node       string
		wantStatus int
		want       string
	}{
		{"node-00001", http.StatusOK, "sandboxpin_unprotected_images 0"},
		{"node-00100", http.StatusOK, "sandboxpin_unprotected_images 1"},
		{"node-00500", http.StatusServiceUnavailable, "exporter down"},
		{"node-00600", http.StatusNotFound, ""},
		{"node-99999", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		code, body := get("/node/" + tt.node + "/metrics")
		assert.Equal(t, tt.wantStatus, code, tt.node)
		assert.Contains(t, body, tt.want, tt.node)
	}
	// The audit's timestamp is made current.
	_, body := get("/node/node-00001/metrics")
	assert.NotRegexp(t, `(?m)^sandboxpin_audit_timestamp_seconds(\{[^}]*\})? 1[0-6]\d{8}$`, body)
	assert.Regexp(t, `(?m)^sandboxpin_audit_timestamp_seconds(\{[^}]*\})? \d{10}$`, body)
	_, ksm := get("/ksm/metrics")
	assert.Equal(t, 1000, strings.Count(ksm, "kube_node_info{"))

	dir := t.TempDir()
	require.NoError(t, f.write(dir, "127.0.0.1:1", "../../deploy/kubernetes/prometheusrule.yaml"))
	var groups []targetGroup
	readJSON(t, filepath.Join(dir, "targets.json"), &groups)
	assert.Len(t, groups, 1000-1, "the gone node (node-00600) has no target")
	var expected map[string][]string
	readJSON(t, filepath.Join(dir, "expected.json"), &expected)
	assert.Len(t, expected, 10)
	assert.Equal(t, []string{"SandboxpinExporterMissing"}, expected["node-00600"])
	rules, err := os.ReadFile(filepath.Join(dir, "rules.yaml"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(rules), "groups:\n"), string(rules[:40]))
	assert.Contains(t, string(rules), "alert: SandboxpinExporterMissing")
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v))
}
