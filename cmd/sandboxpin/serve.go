package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
)

const (
	// defaultListen is the exporter's port, the one after node_exporter's
	// 9100 range that the Prometheus default port allocations wiki page
	// does not list (9627, checked 2026-12).
	defaultListen = ":9627"
	// scrapeWait bounds how long a scrape waits for the audit it started:
	// half of Prometheus' default scrape_timeout (10s). A slower audit is
	// served by the next scrape; this one gets the previous result.
	scrapeWait = 5 * time.Second
	// shutdownWait bounds a clean stop: docs/design.md (Budgets) wants the command gone
	// within 1 s of SIGTERM, and a loaded machine takes more than half a
	// second of that to schedule the exit (CI measured 0.66 s).
	shutdownWait = 400 * time.Millisecond
	// serveExitGrace is serve's exit grace (see exitGrace): a clean stop
	// takes up to shutdownWait and then the running audit's end, which its
	// cancelled context brings within milliseconds; the process still ends
	// within a second of the signal.
	serveExitGrace = shutdownWait + 150*time.Millisecond
)

// serveConfig is what serve needs; runServe fills it from flags and the
// process, tests from their fakes.
type serveConfig struct {
	listen      string
	interval    time.Duration // background re-audit period
	minInterval time.Duration // no two audits start closer than this
	audit       func(context.Context) nodeAudit
	hup         <-chan os.Signal // re-audit requests (SIGHUP)
	log         *slog.Logger
	ready       func(addr net.Addr) // called once the listener is open; may be nil
}

func newServeCmd(ctx context.Context) *cobra.Command {
	var n nodeFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "A Prometheus exporter of the audit, for a DaemonSet",
		Long: "Serves the node's audit as Prometheus metrics on /metrics (and /healthz), for a DaemonSet. It audits at\n" +
			"start, every --interval, on SIGHUP and on a scrape when the last audit is older than --min-interval;\n" +
			"never two audits within --min-interval. A runtime that is down makes sandboxpin_audit_success 0.\n" +
			"SIGTERM stops it (exit 0). Logs go to stderr.",
		Args: noArgs,
	}
	n.register(c.Flags(), true)
	cfg := serveConfig{}
	c.Flags().StringVar(&cfg.listen, "listen", defaultListen, "the `ADDR` (host:port) to serve /metrics and /healthz on")
	c.Flags().DurationVar(&cfg.interval, "interval", 5*time.Minute, "re-audit the node this often (a `DURATION` such as 5m)")
	c.Flags().DurationVar(&cfg.minInterval, "min-interval", 30*time.Second, "never start two audits closer than this `DURATION`, however often scraped or signalled")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if cfg.interval <= 0 || cfg.minInterval < 0 {
			return &usageError{fmt.Errorf("--interval must be positive and --min-interval not negative (got %v, %v)", cfg.interval, cfg.minInterval)}
		}
		cfg.log = slog.New(slog.NewTextHandler(c.ErrOrStderr(), nil))
		cfg.audit = func(ctx context.Context) nodeAudit { return auditNode(ctx, &n) }
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		cfg.hup = hup
		if err := serve(ctx, cfg); err != nil {
			return fail(exitError, "%v", err)
		}
		return nil
	}
	return c
}

// serve runs the exporter until ctx ends; it returns nil after a clean stop.
func serve(ctx context.Context, cfg serveConfig) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.listen)
	if err != nil {
		return err
	}
	a := &auditor{run: cfg.audit, minInterval: cfg.minInterval, log: cfg.log}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newAuditCollector(a.latest),
	)
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if done, _, _ := a.trigger(ctx, "scrape"); done != nil {
			wait, cancel := context.WithTimeout(r.Context(), scrapeWait)
			select {
			case <-done:
			case <-wait.Done():
			}
			cancel()
		}
		metrics.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		// Liveness only: a runtime that is down is a metric, not a reason
		// to restart the exporter.
		_, _ = io.WriteString(w, "ok\n")
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(cfg.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	cfg.log.Info("serving", "addr", ln.Addr().String(), "interval", cfg.interval, "min_interval", cfg.minInterval)
	if cfg.ready != nil {
		cfg.ready(ln.Addr())
	}

	a.trigger(ctx, "start")
	tick := time.NewTicker(cfg.interval)
	defer tick.Stop()
	var (
		deferred <-chan time.Time // a SIGHUP that came within --min-interval
		running  <-chan struct{}  // a SIGHUP that came during an audit
	)
	// reaudit answers a SIGHUP: now, after the running audit (which may
	// have read the node before the change the signal announces), or once
	// --min-interval has passed.
	reaudit := func() {
		done, started, after := a.trigger(ctx, "SIGHUP")
		switch {
		case started:
		case done != nil:
			running = done
		default:
			cfg.log.Info("SIGHUP: re-audit deferred by --min-interval", "after", after)
			deferred = time.After(after)
		}
	}
	for {
		select {
		case <-ctx.Done():
			cfg.log.Info("stopping")
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownWait)
			err := srv.Shutdown(sctx)
			cancel()
			if err != nil {
				_ = srv.Close()
			}
			a.wait()
			return nil
		case err := <-served:
			return err
		case <-tick.C:
			a.trigger(ctx, "interval")
		case <-cfg.hup:
			reaudit()
		case <-running:
			running = nil
			reaudit()
		case <-deferred:
			deferred = nil
			reaudit()
		}
	}
}

// auditor runs audits one at a time, no two starting within minInterval,
// and keeps the last result. Its methods are safe for concurrent use.
type auditor struct {
	run         func(context.Context) nodeAudit
	minInterval time.Duration
	log         *slog.Logger

	mu      sync.Mutex
	last    nodeAudit
	ended   bool          // an audit has ended: last is valid
	started time.Time     // when the latest audit started
	running chan struct{} // closed when the running audit ends; nil when none runs
	runs    int           // audits started
	wg      sync.WaitGroup
}

// trigger starts an audit unless one is running or the latest started less
// than minInterval ago, and reports whether it started one. done is closed
// when the running or just started audit ends, nil when none runs; after
// is how long until one may start (0 when one runs).
func (a *auditor) trigger(ctx context.Context, why string) (done <-chan struct{}, started bool, after time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running != nil {
		return a.running, false, 0
	}
	if a.runs > 0 {
		if since := time.Since(a.started); since < a.minInterval {
			return nil, false, a.minInterval - since
		}
	}
	ch := make(chan struct{})
	a.running = ch
	a.started = time.Now()
	a.runs++
	a.wg.Go(func() {
		res := a.run(ctx)
		a.report(why, &res)
		a.mu.Lock()
		a.last, a.ended, a.running = res, true, nil
		a.mu.Unlock()
		close(ch)
	})
	return ch, true, 0
}

// report logs an audit's outcome.
func (a *auditor) report(why string, res *nodeAudit) {
	if res.Err != nil {
		level := slog.LevelWarn
		if errors.Is(res.Err, context.Canceled) {
			level = slog.LevelInfo
		}
		a.log.Log(context.Background(), level, "audit failed", "trigger", why, "duration", res.Duration, "err", res.Err)
		return
	}
	v := res.Verdict
	a.log.Info("audit", "trigger", why, "duration", res.Duration, "status", v.Status, "runtime", v.Runtime,
		"runtime_version", v.RuntimeVersion, "sandbox_image", v.SandboxImage, "present", v.Sandbox.Present,
		"must_pin", v.MustPin, "unprotected", v.Unprotected, "conflicts", v.Conflicts)
}

// latest returns the last audit's result, false before the first ends.
func (a *auditor) latest() (nodeAudit, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last, a.ended
}

// wait waits for the running audit, if any.
func (a *auditor) wait() { a.wg.Wait() }
