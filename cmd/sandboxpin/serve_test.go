package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/audit"
)

// fakeServer runs serve with a counting fake audit on a loopback port.
type fakeServer struct {
	url    string
	audits atomic.Int64
	hup    chan os.Signal
	cancel context.CancelFunc
	done   chan error
}

func startFake(t *testing.T, minInterval time.Duration, audit func(ctx context.Context) nodeAudit) *fakeServer {
	t.Helper()
	s := &fakeServer{hup: make(chan os.Signal, 1), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	addr := make(chan net.Addr, 1)
	cfg := serveConfig{
		listen:      "127.0.0.1:0",
		interval:    time.Hour,
		minInterval: minInterval,
		audit: func(ctx context.Context) nodeAudit {
			s.audits.Add(1)
			return audit(ctx)
		},
		hup:   s.hup,
		log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		ready: func(a net.Addr) { addr <- a },
	}
	go func() { s.done <- serve(ctx, cfg) }()
	select {
	case a := <-addr:
		s.url = "http://" + a.String()
	case err := <-s.done:
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-s.done)
	})
	return s
}

// stop cancels the server and returns serve's result and how long it took.
func (s *fakeServer) stop(t *testing.T) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
		return time.Since(start), err
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10s")
		return 0, nil
	}
}

// scrape GETs /metrics and parses it.
func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics") //nolint:noctx // a test against a loopback server
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return parseExposition(t, resp.Body)
}

func okAudit(context.Context) nodeAudit {
	const img = "registry.k8s.io/pause:3.10.1"
	return nodeAudit{Finished: time.Now(), Verdict: &audit.Verdict{
		Status: audit.StatusOK, Runtime: "containerd", RuntimeVersion: "v2.2.9", SandboxImage: img,
		Sandbox: audit.Sandbox{Present: true, StoredAs: img, Spelling: audit.SpellingExact, StoredAsConfigured: true, Pinned: true}, MustPin: 1,
	}}
}

func TestServeMetrics(t *testing.T) {
	t.Parallel()
	s := startFake(t, time.Hour, okAudit)
	fams := scrape(t, s.url)
	v, ok := gauge(t, fams, metricSuccess)
	require.True(t, ok)
	assert.InDelta(t, 1.0, v, 0)
	v, ok = gauge(t, fams, metricUnprotected)
	require.True(t, ok)
	assert.Zero(t, v)
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", metricInfo, metricMustPin, metricPresent, metricConflicts, metricTimestamp} {
		assert.Contains(t, fams, name)
	}

	resp, err := http.Get(s.url + "/healthz") //nolint:noctx // a test against a loopback server
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok\n", string(body))

	resp, err = http.Get(s.url + "/nope") //nolint:noctx // a test against a loopback server
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestServeScrapeStorm scrapes 200 times in a tight loop: one audit per
// --min-interval, however often scraped.
func TestServeScrapeStorm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		minInterval time.Duration
	}{
		{name: "one hour", minInterval: time.Hour},
		{name: "50ms", minInterval: 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// From before the server starts: its first audit counts.
			start := time.Now()
			s := startFake(t, tt.minInterval, okAudit)
			for range 200 {
				fams := scrape(t, s.url)
				_, ok := gauge(t, fams, metricSuccess)
				require.True(t, ok)
			}
			elapsed := time.Since(start)
			limit := 1 + int64(elapsed/tt.minInterval)
			got := s.audits.Load()
			t.Logf("200 scrapes in %v: %d audits (limit %d)", elapsed, got, limit)
			assert.GreaterOrEqual(t, got, int64(1))
			assert.LessOrEqual(t, got, limit)
		})
	}
}

// TestServeScrapeStormConcurrent is the storm from 20 scrapers at once:
// they share the one audit.
func TestServeScrapeStormConcurrent(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s := startFake(t, time.Hour, func(ctx context.Context) nodeAudit {
		<-release
		return okAudit(ctx)
	})
	errs := make(chan error, 200)
	for range 20 {
		go func() {
			for range 10 {
				resp, err := http.Get(s.url + "/metrics") //nolint:noctx // a test against a loopback server
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
				errs <- err
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	for range 200 {
		require.NoError(t, <-errs)
	}
	assert.Equal(t, int64(1), s.audits.Load())
}

func TestServeSIGHUP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		minInterval time.Duration
	}{
		{name: "no min-interval", minInterval: 0},
		{name: "deferred by min-interval", minInterval: 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := startFake(t, tt.minInterval, okAudit)
			require.Eventually(t, func() bool { return s.audits.Load() == 1 }, 5*time.Second, 5*time.Millisecond, "the audit at start")
			sent := time.Now()
			s.hup <- syscall.SIGHUP
			require.Eventually(t, func() bool { return s.audits.Load() == 2 }, 5*time.Second, 5*time.Millisecond, "the audit on SIGHUP")
			if tt.minInterval > 0 {
				assert.GreaterOrEqual(t, time.Since(sent), tt.minInterval/2, "the SIGHUP audit waited for --min-interval")
			}
		})
	}
}

// TestServeSIGHUPDuringAudit re-audits after the running audit, which may
// have read the node before the change the signal announces.
func TestServeSIGHUPDuringAudit(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s := startFake(t, 0, func(ctx context.Context) nodeAudit {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return okAudit(ctx)
	})
	require.Eventually(t, func() bool { return s.audits.Load() == 1 }, 5*time.Second, time.Millisecond, "the audit at start runs")
	s.hup <- syscall.SIGHUP
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, int64(1), s.audits.Load(), "no second audit while one runs")
	close(release)
	require.Eventually(t, func() bool { return s.audits.Load() == 2 }, 5*time.Second, time.Millisecond, "the audit after the running one")
}

// TestServeRuntimeDown serves success 0 while the audit fails, and 1 again
// once it passes.
func TestServeRuntimeDown(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	down.Store(true)
	s := startFake(t, 0, func(ctx context.Context) nodeAudit {
		if down.Load() {
			return nodeAudit{Finished: time.Now(), Err: errors.New("no CRI socket")}
		}
		return okAudit(ctx)
	})
	fams := scrape(t, s.url)
	v, ok := gauge(t, fams, metricSuccess)
	require.True(t, ok)
	assert.Zero(t, v)
	assert.NotContains(t, fams, metricUnprotected)
	down.Store(false)
	fams = scrape(t, s.url)
	v, ok = gauge(t, fams, metricSuccess)
	require.True(t, ok)
	assert.InDelta(t, 1.0, v, 0)
	assert.Contains(t, fams, metricUnprotected)
}

// TestServeStops stops within the 1 s of SIGTERM that docs/design.md (Budgets) allows, even with an
// audit and a scrape waiting on it.
func TestServeStops(t *testing.T) {
	t.Parallel()
	s := startFake(t, 0, func(ctx context.Context) nodeAudit {
		<-ctx.Done()
		return nodeAudit{Finished: time.Now(), Err: ctx.Err()}
	})
	scraped := make(chan error, 1)
	go func() {
		resp, err := http.Get(s.url + "/metrics") //nolint:noctx // a test against a loopback server
		if err == nil {
			_ = resp.Body.Close()
		}
		scraped <- err
	}()
	time.Sleep(50 * time.Millisecond)
	took, err := s.stop(t)
	require.NoError(t, err)
	assert.Less(t, took, time.Second)
	select {
	case err := <-scraped:
		t.Logf("the waiting scrape ended with %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the scrape did not end")
	}
}

func TestServeFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		wantErrOut string
	}{
		{name: "zero interval", args: []string{"serve", "--interval", "0"}, wantErrOut: "--interval must be positive"},
		{name: "negative min-interval", args: []string{"serve", "--min-interval", "-1s"}, wantErrOut: "--min-interval"},
		{name: "bad listen", args: []string{"serve", "--listen", "127.0.0.1:99999"}, wantErrOut: "99999"},
		{name: "arguments", args: []string{"serve", "x"}, wantErrOut: `unexpected argument "x"`},
		{name: "bad flag", args: []string{"serve", "--nope"}, wantErrOut: "unknown flag: --nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, errOut := runCmd(t, tt.args...)
			assert.Equal(t, exitError, code)
			assert.Contains(t, errOut, tt.wantErrOut)
		})
	}
	code, out, _ := runCmd(t, "serve", "--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "--min-interval DURATION")
}
