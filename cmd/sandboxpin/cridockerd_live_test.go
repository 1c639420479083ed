package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/cridockerdtest"
)

// TestLiveCRIDockerdAudit runs resolve, audit (text and prometheus) and
// serve against real cri-dockerd 0.3.14 and 0.4.4 in front of Docker
// Engine, with --root at the instance's directory (laid out as a node:
// etc/systemd/system/cri-docker.service, whose ExecStart holds the flags).
// --root keeps sandboxpin from running the root's cri-dockerd, so
// --runtime-version gives its version, and the Version RPC's (Docker
// Engine's) is never taken for it. Each failing row then applies audit's
// FIX line with `docker tag`, and audit passes.
func TestLiveCRIDockerdAudit(t *testing.T) {
	t.Parallel()
	const stored = "registry.k8s.io/pause:3.10.1"
	tests := []struct {
		name       string
		stored     string // the name the pause image is loaded under
		configured string // --pod-infra-container-image
		wantCode   int
		wantAudit  string
	}{
		{name: "exact", stored: stored, configured: stored, wantCode: exitOK,
			wantAudit: "OK: cri-dockerd pins its sandbox image " + stored},
		{name: "alias", stored: stored, configured: "k8s.gcr.io/pause:3.10.1", wantCode: exitCheck,
			wantAudit: "FAIL: cri-dockerd does not pin its sandbox image k8s.gcr.io/pause:3.10.1 (stored as " + stored + ")"},
		{name: "docker.io/library", stored: "docker.io/library/pause:3.10.1", configured: "docker.io/library/pause:3.10.1", wantCode: exitCheck,
			wantAudit: "FAIL: cri-dockerd does not pin its sandbox image docker.io/library/pause:3.10.1"},
		{name: "familiar", stored: "docker.io/library/pause:3.10.1", configured: "pause:3.10.1", wantCode: exitOK,
			wantAudit: "OK: cri-dockerd pins its sandbox image pause:3.10.1"},
	}
	cridockerdtest.Require(t, cridockerdtest.V044)
	bin := buildCommand(t)
	for _, v := range cridockerdtest.Versions() {
		for _, tt := range tests {
			t.Run(string(v)+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				d := cridockerdtest.Start(t, v, cridockerdtest.Options{
					PodInfraImage: tt.configured,
					Images: []containerdtest.Image{
						{Names: []string{tt.stored}},
						{Names: []string{"docker.io/library/busybox:1.36"}},
					},
				})
				node := []string{"--root", d.Dir, "--runtime-endpoint", d.Endpoint, "--runtime-version", v.Release()}

				code, out, errOut := runCmd(t, append([]string{"resolve", "-o", "json"}, node...)...)
				require.Equal(t, exitOK, code, errOut)
				var res resolveJSON
				require.NoError(t, json.Unmarshal([]byte(out), &res), out)
				assert.Equal(t, tt.configured, res.SandboxImage)
				assert.Equal(t, "cri-dockerd", res.Runtime)
				assert.Empty(t, res.Conflicts, "the live cri-dockerd and its unit agree")
				var origins []string
				for _, cand := range res.Candidates {
					origins = append(origins, cand.Source+" "+cand.Image+" "+cand.Origin)
				}
				assert.Contains(t, origins, "cri-dockerd-flags "+tt.configured+" /etc/systemd/system/cri-docker.service:8")
				assert.Contains(t, origins, "runtime-info "+tt.configured+" runtime status (cri-dockerd on Docker Engine "+cridockerdtest.EngineVersion+")")

				code, out, errOut = runCmd(t, append([]string{"audit"}, node...)...)
				assert.Equal(t, tt.wantCode, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
				assert.Contains(t, out, tt.wantAudit)
				t.Logf("audit:\n%s", out)

				code, out, errOut = runCmd(t, append([]string{"audit", "-o", "prometheus"}, node...)...)
				assert.Equal(t, tt.wantCode, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
				fams := parseExposition(t, strings.NewReader(out))
				assert.InDelta(t, 1.0, mustGauge(t, fams, metricMustPin), 0, out)
				wantUnprotected := 0.0
				if tt.wantCode != exitOK {
					wantUnprotected = 1
				}
				assert.InDelta(t, wantUnprotected, mustGauge(t, fams, metricUnprotected), 0, out)
				info := infoLabels(t, fams)
				assert.Equal(t, "cri-dockerd", info["runtime"])
				assert.Equal(t, v.Release(), info["runtime_version"], "cri-dockerd's own version, not Docker's")

				if tt.wantCode == exitOK {
					return
				}
				// Apply the FIX line: configure the name Docker stores
				// (restart cri-dockerd with it, as a changed unit would);
				// then audit passes. For docker.io/library/… `docker tag`
				// cannot help: Docker stores that name in its familiar form.
				code, out, _ = runCmd(t, append([]string{"audit"}, node...)...)
				require.Equal(t, exitCheck, code)
				fix := regexp.MustCompile(`(?m)^FIX: configure the sandbox image as (\S+), the name it is stored under, in place of (\S+) \(/etc/systemd/system/cri-docker.service:8\)$`).
					FindStringSubmatch(out)
				require.NotNil(t, fix, out)
				t.Logf("%s", fix[0])
				assert.Equal(t, tt.configured, fix[2])
				d.Restart(t, fix[1])
				code, out, errOut = runCmd(t, append([]string{"audit"}, node...)...)
				assert.Equal(t, exitOK, code, "after the FIX:\nstdout:\n%s\nstderr:\n%s", out, errOut)
			})
		}
	}

	// serve: one process per version, scraped once, for the alias.
	for _, v := range cridockerdtest.Versions() {
		t.Run(string(v)+"/serve", func(t *testing.T) {
			t.Parallel()
			d := cridockerdtest.Start(t, v, cridockerdtest.Options{
				PodInfraImage: "k8s.gcr.io/pause:3.10.1",
				Images:        []containerdtest.Image{{Names: []string{stored}}},
			})
			p := startServe(t, bin, "--runtime-endpoint", d.Endpoint, "--root", d.Dir, "--runtime-version", v.Release(),
				"--min-interval", "0", "--interval", "1h")
			text := scrapeText(t, p.url)
			fams := parseExposition(t, strings.NewReader(text))
			require.InDelta(t, 1.0, mustGauge(t, fams, metricSuccess), 0, sandboxpinLines(text))
			assert.InDelta(t, 1.0, mustGauge(t, fams, metricPresent), 0, "the alias names the stored image")
			assert.InDelta(t, 0.0, mustGauge(t, fams, metricStoredAs), 0, "cri-dockerd looks the alias up, and nothing is stored under it")
			assert.InDelta(t, 1.0, mustGauge(t, fams, metricUnprotected), 0)
			info := infoLabels(t, fams)
			assert.Equal(t, v.Release(), info["runtime_version"])
			t.Logf("/metrics (sandboxpin_ lines) from cri-dockerd %s:\n%s", v.Release(), sandboxpinLines(text))
		})
	}
}

// TestLiveCRIDockerdPrepull runs prepull for a node whose cri-dockerd uses
// k8s.gcr.io/pause:3.10.1 while kubeadm names registry.k8s.io/pause:3.10.1:
// both are listed, and the note's `docker pull A && docker tag A B` is run
// (the pull is replaced by a load: nothing can be pulled offline). Then
// Docker lists the image under both names, and cri-dockerd pins it.
func TestLiveCRIDockerdPrepull(t *testing.T) {
	t.Parallel()
	v := cridockerdtest.V044
	const (
		configured = "k8s.gcr.io/pause:3.10.1"
		kubeadms   = "registry.k8s.io/pause:3.10.1"
	)
	d := cridockerdtest.Start(t, v, cridockerdtest.Options{PodInfraImage: configured})
	cfg := filepath.Join(d.Dir, "etc", "kubernetes", "kubeadm.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(cfg), 0o750))
	require.NoError(t, os.WriteFile(cfg, []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.34.1\n"), 0o600))

	code, out, errOut := runCmd(t, "prepull", "--root", d.Dir, "--runtime-endpoint", d.Endpoint, "--runtime-version", v.Release(),
		"--kubeadm-config", "/etc/kubernetes/kubeadm.yaml")
	require.Equal(t, exitOK, code, errOut)
	t.Logf("prepull:\n%s\nstderr:\n%s", out, errOut)
	assert.ElementsMatch(t, []string{configured, kubeadms}, strings.Fields(out))
	cmdRE := regexp.MustCompile("`docker pull (\\S+) && docker tag (\\S+) (\\S+)` \\(cri-dockerd\\)")
	m := cmdRE.FindStringSubmatch(errOut)
	require.NotNil(t, m, "no docker pull && docker tag note in %q", errOut)
	require.Equal(t, m[1], m[2])
	assert.ElementsMatch(t, []string{configured, kubeadms}, []string{m[1], m[3]})

	// `docker pull A`, offline: load A. Then the note's `docker tag A B`.
	d.Load(t, containerdtest.Image{Names: []string{m[1]}})
	d.Docker(t, "tag", m[2], m[3])
	var tags []string
	for _, ts := range d.RepoTags(t) {
		tags = append(tags, ts...)
	}
	assert.ElementsMatch(t, []string{configured, kubeadms}, tags, "one image under both names")
	code, out, errOut = runCmd(t, "audit", "--root", d.Dir, "--runtime-endpoint", d.Endpoint, "--runtime-version", v.Release())
	assert.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
}
