package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// buildCommand builds sandboxpin into a temporary directory.
func buildCommand(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sandboxpin")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

// servingProcess is `sandboxpin serve` run as a process.
type servingProcess struct {
	cmd    *exec.Cmd
	log    *runtimetest.SyncBuffer
	url    string
	exited chan struct{}
}

var servingAddr = regexp.MustCompile(`msg=serving addr=(\S+)`)

func startServe(t *testing.T, bin string, args ...string) *servingProcess {
	t.Helper()
	p := &servingProcess{log: &runtimetest.SyncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	p.cmd.Stderr = p.log
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("serve log:\n%s", p.log.String())
		}
	})
	require.Eventually(t, func() bool { return servingAddr.MatchString(p.log.String()) }, 10*time.Second, 10*time.Millisecond, "serve did not log its address")
	p.url = "http://" + servingAddr.FindStringSubmatch(p.log.String())[1]
	return p
}

// audits counts the audits the process logged.
func (p *servingProcess) audits() int {
	return strings.Count(p.log.String(), "msg=audit ") + strings.Count(p.log.String(), `msg="audit failed"`)
}

// scrapeText GETs /metrics and returns the exposition.
func scrapeText(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// sandboxpinLines keeps the exposition's sandboxpin_ lines, for the log.
func sandboxpinLines(exposition string) string {
	var keep []string
	for _, l := range strings.Split(exposition, "\n") {
		if strings.Contains(l, "sandboxpin_") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func mustGauge(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	v, ok := gauge(t, fams, name)
	require.True(t, ok, "no %s", name)
	return v
}

// nodeConfig is the node's /etc/containerd/config.toml for resolve to read:
// containerd 2.x does not report its sandbox image, so without it resolve
// falls back to the release's built-in default. It sets image the way the
// runtime's own config (containerdtest) does, in config version 2 for 1.x
// and 3 for 2.x (which 2.3 and 2.4 still read).
func nodeConfig(v containerdtest.Version, image string) string {
	if v.ConfigVersion() == 2 {
		return "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"" + image + "\"\n"
	}
	return "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"" + image + "\"\n"
}

// TestServeLive runs the built command's exporter against real containerd,
// scraped over HTTP on loopback. The runtime is reached through a symlink,
// so that it can be stopped and a new one started behind the same
// endpoint while serve keeps running.
func TestServeLive(t *testing.T) {
	t.Parallel()
	const stored = "registry.k8s.io/pause:3.10.1"
	type liveCase struct {
		name       string
		version    containerdtest.Version
		configured string // the runtime's sandbox image
		wantZero   bool   // sandboxpin_unprotected_images 0, else >= 1
		restart    bool   // stop the runtime and start it again
	}
	var tests []liveCase
	for _, v := range containerdtest.Versions() {
		// Only 1.6 never pins (measured here, as TestAuditLive does).
		pins := v != containerdtest.V1
		tests = append(tests, liveCase{name: v.String() + " exact name", version: v, configured: stored, wantZero: pins, restart: true})
		if pins {
			// The runtime pins the configured string only; it stores
			// the image under the canonical registry.k8s.io spelling.
			tests = append(tests, liveCase{name: v.String() + " alias spelling", version: v, configured: "k8s.gcr.io/pause:3.10.1"})
		}
	}
	containerdtest.Require(t, containerdtest.V1)
	bin := buildCommand(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			containerdtest.Require(t, tt.version)
			root := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o750))
			require.NoError(t, os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), []byte(nodeConfig(tt.version, tt.configured)), 0o600))
			linkDir, err := os.MkdirTemp("/tmp", "sbpl")
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(linkDir) })
			link := filepath.Join(linkDir, "cri.sock")
			opts := containerdtest.Options{
				SandboxImage: tt.configured,
				Images:       []containerdtest.Image{{Names: []string{stored}}, {Names: []string{"docker.io/library/busybox:1.36"}}},
			}
			// startRuntime starts containerd for the life of t behind link.
			startRuntime := func(t *testing.T) {
				c := containerdtest.Start(t, tt.version, opts)
				_ = os.Remove(link)
				require.NoError(t, os.Symlink(c.Socket, link))
			}
			p := startServe(t, bin, "--runtime-endpoint", "unix://"+link, "--root", root, "--min-interval", "0", "--interval", "1h")

			up := func(t *testing.T) {
				t.Helper()
				startRuntime(t)
				text := scrapeText(t, p.url)
				fams := parseExposition(t, strings.NewReader(text))
				require.InDelta(t, 1.0, mustGauge(t, fams, metricSuccess), 0, sandboxpinLines(text))
				assert.InDelta(t, 1.0, mustGauge(t, fams, metricPresent), 0)
				assert.GreaterOrEqual(t, mustGauge(t, fams, metricMustPin), 1.0)
				if unprotected := mustGauge(t, fams, metricUnprotected); tt.wantZero {
					assert.Zero(t, unprotected)
				} else {
					assert.GreaterOrEqual(t, unprotected, 1.0)
				}
				info := infoLabels(t, fams)
				assert.Equal(t, "containerd", info["runtime"])
				assert.Equal(t, tt.configured, info["image"])
				assert.NotEmpty(t, info["runtime_version"])
				assert.Contains(t, fams, "go_goroutines")
				assert.Contains(t, fams, "process_resident_memory_bytes")
				t.Logf("/metrics (sandboxpin_ lines) from containerd %s, process_resident_memory_bytes %.0f:\n%s",
					info["runtime_version"], fams["process_resident_memory_bytes"].GetMetric()[0].GetGauge().GetValue(), sandboxpinLines(text))
			}
			t.Run("up", up)
			if !tt.restart {
				return
			}
			t.Run("stopped", func(t *testing.T) {
				text := scrapeText(t, p.url)
				fams := parseExposition(t, strings.NewReader(text))
				assert.Zero(t, mustGauge(t, fams, metricSuccess), sandboxpinLines(text))
				assert.NotContains(t, fams, metricUnprotected)
				resp, err := http.Get(p.url + "/healthz") //nolint:noctx // a test against a loopback server
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				t.Logf("/metrics (sandboxpin_ lines) with the runtime stopped:\n%s", sandboxpinLines(text))
			})
			t.Run("back", up)

			// SIGHUP re-audits; SIGTERM stops within 1 s with exit 0.
			before := p.audits()
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
			require.Eventually(t, func() bool { return strings.Contains(p.log.String(), "trigger=SIGHUP") }, 10*time.Second, 10*time.Millisecond)
			assert.Greater(t, p.audits(), before)
			sent := time.Now()
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			select {
			case <-p.exited:
			case <-time.After(5 * time.Second):
				t.Fatal("serve did not stop on SIGTERM")
			}
			assert.Less(t, time.Since(sent), time.Second)
			assert.Equal(t, 0, p.cmd.ProcessState.ExitCode())
			assert.Contains(t, p.log.String(), "msg=stopping")
		})
	}
}

// TestServeLiveScrapeStorm scrapes the exporter 200 times in a tight loop
// while it audits a real containerd: at most one audit per --min-interval.
func TestServeLiveScrapeStorm(t *testing.T) {
	t.Parallel()
	const minInterval = 100 * time.Millisecond
	c := containerdtest.Start(t, containerdtest.V2, containerdtest.Options{
		SandboxImage: "registry.k8s.io/pause:3.10.1",
		Images:       []containerdtest.Image{{Names: []string{"registry.k8s.io/pause:3.10.1"}}},
	})
	bin := buildCommand(t)
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), []byte(nodeConfig(containerdtest.V2, "registry.k8s.io/pause:3.10.1")), 0o600))
	// From before the process starts: its first audit counts.
	start := time.Now()
	p := startServe(t, bin, "--runtime-endpoint", c.Endpoint, "--root", root, "--min-interval", minInterval.String(), "--interval", "1h")
	for range 200 {
		fams := parseExposition(t, strings.NewReader(scrapeText(t, p.url)))
		require.InDelta(t, 1.0, mustGauge(t, fams, metricSuccess), 0)
	}
	elapsed := time.Since(start)
	limit := 1 + int(elapsed/minInterval)
	got := p.audits()
	t.Logf("start and 200 scrapes in %v with --min-interval %v: %d audits (limit %d)", elapsed, minInterval, got, limit)
	assert.LessOrEqual(t, got, limit)
	if elapsed > 2*minInterval {
		assert.GreaterOrEqual(t, got, 2, "a scrape after --min-interval re-audits")
	}
}
