package crishim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// Sentinel errors. Test with [errors.Is].
var (
	// ErrInvalidOptions is wrapped by the errors of [New] for [Options]
	// that cannot work: a missing or relative endpoint, Listen and
	// Listener both or neither, a bad pattern in Pins, neither Node nor
	// Loader or both, a Node with a Live runtime of its own, a negative
	// ShutdownGrace, a MetricsListen that is not host:port. The error
	// names the field.
	ErrInvalidOptions = errors.New("invalid shim options")
	// ErrListen is wrapped by the errors of [New] for an address it cannot
	// listen on (Listen or MetricsListen), beside the operating system's
	// error.
	ErrListen = errors.New("cannot listen")
	// ErrInUse is wrapped beside [ErrListen] when another server holds
	// the address: a server answers on the Listen socket, or the
	// MetricsListen port is taken (EADDRINUSE).
	ErrInUse = errors.New("address in use")
	// ErrLoader is wrapped by the errors of [New] and [Shim.Reload] when
	// the [Loader] returned a nil matcher without an error, or panicked
	// (the panic is recovered).
	ErrLoader = errors.New("pin rules loader failed")
	// ErrClosed is returned by [Shim.Serve] on a shim that serves or
	// served already (Serve runs once), or that [Shim.Close] released.
	ErrClosed = errors.New("shim closed")
)

// Options configures a [Shim]. A zero field means "not given"; Listen or
// Listener (not both), RuntimeEndpoint, and Node or Loader (not both) are
// required.
type Options struct {
	// Listen is the shim's socket, unix:///path or /path. The shim makes
	// it (a stale socket that nothing answers on is replaced), gives it
	// the mode and owner of the runtime's socket, and removes it when it
	// stops.
	Listen string
	// Listener, when not nil, is the socket to serve on instead of one at
	// Listen, which must then be "": one that systemd's socket activation
	// passes in (net.FileListener of file descriptor 3), or any listener
	// of one's own. The shim owns it from the call to New on: it closes
	// it when it stops or when New fails, and neither removes its file
	// nor changes its mode or owner.
	Listener net.Listener
	// RuntimeEndpoint is the runtime's socket, unix:///path or /path.
	RuntimeEndpoint string
	// Node, when not nil, resolves the node's rules ([resolve.Result.Matcher])
	// at start and at each reload: [resolve.Resolve] with these options and,
	// as their Live runtime, the runtime at RuntimeEndpoint, so Node.Live
	// must be nil. Its Root is the node's root file system (resolve.DirFS
	// of a directory; nil is the host's "/", as for Resolve), and its
	// aliases and versions apply as they do for Resolve.
	Node *resolve.Options
	// Loader, when not nil, gives the rules instead of resolving the node:
	// it is called at start and at each reload, and the matcher it returns
	// is used (with Pins) until the next load succeeds.
	Loader Loader
	// Pins are extra pin patterns, in pin's Strict mode, labelled
	// PinsSource in Explain and the debug log.
	Pins []string
	// PinsSource labels Pins; "" is [resolve.ExtraSource] ("--pin"), as
	// `sandboxpin check` labels them.
	PinsSource string
	// ShutdownGrace is how long [Shim.Serve] waits, once its context ends,
	// for the calls in flight before it cuts them off (streams such as
	// GetContainerEvents never end by themselves); 0 is 5 seconds.
	ShutdownGrace time.Duration
	// MetricsListen is the host:port to serve /metrics and /healthz on;
	// "" serves neither.
	MetricsListen string
	// Logger receives the shim's log; nil discards it. With debug
	// enabled, each image the shim pins is logged with its rule.
	Logger *slog.Logger
}

// Loader returns the rules the shim pins by. It is called from one
// goroutine at a time; ctx bounds the load. It returns a matcher or an
// error: a nil matcher without an error is a failed load wrapping
// [ErrLoader] (return the zero pin.Matcher to pin nothing), and so is a
// panic.
type Loader func(ctx context.Context) (*pin.Matcher, error)

// Shim is a transparent CRI proxy: it forwards every call to the runtime
// unchanged and sets Image.Pinned in the answers to ListImages, ImageStatus
// and StreamImages. Make one with [New], run it with [Shim.Serve];
// [Shim.Reload] may be called from any goroutine meanwhile.
type Shim struct {
	upstream    *grpc.ClientConn // to the runtime
	runtimePath string
	lis         net.Listener
	listenPath  string       // the socket file the shim made; "" for Options.Listener
	metricsLis  net.Listener // nil without Options.MetricsListen
	load        loader
	pins        pin.Set
	loaded      atomic.Bool // pins holds rules: a load has succeeded
	log         *slog.Logger
	metrics     *metrics
	closeOnce   sync.Once
	closed      atomic.Bool   // Close ran
	served      atomic.Bool   // Serve ran
	grace       time.Duration // Options.ShutdownGrace, or its default
}

// New checks o, connects to the runtime, loads the rules and listens on
// o.Listen (and o.MetricsListen), with the mode, owner and group of the
// runtime's socket when it exists, or takes o.Listener. A runtime whose
// socket does not exist yet is no error: the shim serves anyway, answers
// the image calls Unavailable and loads the rules once the runtime
// answers. A node configuration that does not resolve is an error. Errors
// about o wrap [ErrInvalidOptions]; an address it cannot listen on,
// [ErrListen] (and [ErrInUse]); a Loader that returns no matcher and no
// error, or panics, [ErrLoader].
func New(ctx context.Context, o Options) (s *Shim, err error) {
	if o.Listener != nil {
		defer func() {
			if err != nil {
				_ = o.Listener.Close()
			}
		}()
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var listenPath string
	switch {
	case o.Listener != nil && o.Listen != "":
		return nil, fmt.Errorf("%w: both Listen and Listener: give one", ErrInvalidOptions)
	case o.Listener == nil:
		if listenPath, err = socketPath(o.Listen); err != nil {
			return nil, fmt.Errorf("%w: Listen: %w", ErrInvalidOptions, err)
		}
	}
	if o.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(o.MetricsListen); err != nil {
			return nil, fmt.Errorf("%w: MetricsListen: %w", ErrInvalidOptions, err)
		}
	}
	runtimePath, err := socketPath(o.RuntimeEndpoint)
	if err != nil {
		return nil, fmt.Errorf("%w: RuntimeEndpoint: %w", ErrInvalidOptions, err)
	}
	extra, err := pin.Compile(o.Pins, pin.WithSource(cmp.Or(o.PinsSource, resolve.ExtraSource)))
	if err != nil {
		return nil, fmt.Errorf("%w: Pins: %w", ErrInvalidOptions, err)
	}
	met := newMetrics()
	var load loader
	switch {
	case o.Loader != nil && o.Node != nil:
		return nil, fmt.Errorf("%w: both Node and Loader: give one", ErrInvalidOptions)
	case o.Loader != nil:
		load = joinLoader(o.Loader, extra, met)
	case o.Node == nil:
		return nil, fmt.Errorf("%w: no Node and no Loader: give the node's resolve.Options (a zero one reads this node's \"/\") or a Loader", ErrInvalidOptions)
	case o.Node.Live != nil:
		return nil, fmt.Errorf("%w: Node.Live: the shim asks the runtime at RuntimeEndpoint; leave it nil", ErrInvalidOptions)
	default:
		load = joinLoader(nodeLoader(o.RuntimeEndpoint, *o.Node, log), extra, met)
	}
	if o.ShutdownGrace < 0 {
		return nil, fmt.Errorf("%w: ShutdownGrace %v: want 0 (5 s) or more", ErrInvalidOptions, o.ShutdownGrace)
	}
	s, err = newShim(ctx, o.Listener, listenPath, runtimePath, load, met, log)
	if err != nil {
		return nil, err
	}
	s.grace = cmp.Or(o.ShutdownGrace, s.grace)
	if o.MetricsListen != "" {
		if s.metricsLis, err = (&net.ListenConfig{}).Listen(ctx, "tcp", o.MetricsListen); err != nil {
			_ = s.Close()
			return nil, listenError("MetricsListen "+o.MetricsListen, err)
		}
	}
	return s, nil
}

// listenError is the error of New for an address what it cannot listen
// on: it wraps ErrListen, ErrInUse when the cause is EADDRINUSE, and the
// cause.
func listenError(what string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w: %w: %s: %w", ErrListen, ErrInUse, what, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrListen, what, err)
}

// newShim is New after the options: it connects to the runtime at
// runtimePath, loads the rules with load and serves on lis, or listens on
// listenPath when lis is nil. A load that fails because the runtime's
// socket does not exist yet is no error (see New).
func newShim(ctx context.Context, lis net.Listener, listenPath, runtimePath string, load loader, met *metrics, log *slog.Logger) (*Shim, error) {
	upstream, err := dialRuntime(runtimePath)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the runtime: %w", err)
	}
	s := &Shim{upstream: upstream, runtimePath: runtimePath, load: load, log: log, metrics: met, grace: shutdownGrace}
	if err := s.Reload(ctx); err != nil {
		if !errors.Is(err, cri.ErrNoSocket) {
			_ = upstream.Close()
			return nil, fmt.Errorf("cannot start: %w", err)
		}
		// The runtime is not up yet (the shim started first, or the
		// runtime restarts): serve anyway, so that the kubelet finds the
		// socket, and answer image calls Unavailable until the rules load.
		log.Warn("the runtime is not reachable yet: serving, image calls fail with Unavailable until it is",
			"runtime", runtimePath, "retry", retryInterval, "err", err)
	}
	if lis != nil {
		s.lis = lis
		return s, nil
	}
	if s.lis, err = listenUnix(listenPath); err != nil {
		_ = upstream.Close()
		return nil, err
	}
	s.listenPath = listenPath
	if err := matchSocket(listenPath, runtimePath); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("cannot listen: %w", err)
	}
	return s, nil
}

// Serve answers CRI calls until ctx ends, then stops: calls in flight get
// Options.ShutdownGrace to finish. It removes the socket and releases the shim
// when it returns; it returns nil after a clean stop. It runs once: a
// second call, or a call after [Shim.Close], returns an error wrapping
// [ErrClosed] at once.
func (s *Shim) Serve(ctx context.Context) error {
	if s.served.Swap(true) {
		return fmt.Errorf("%w: Serve was called before (it runs once)", ErrClosed)
	}
	if s.closed.Load() {
		return fmt.Errorf("%w: Close released it", ErrClosed)
	}
	defer func() { _ = s.Close() }()
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.log.Info("serving", "listen", s.lis.Addr().String(), "runtime", s.runtimePath)
	if !s.loaded.Load() {
		wg.Go(func() { s.awaitRules(ctx, retryInterval) })
	}
	wg.Go(func() { s.watchRuntime(ctx) })
	if s.metricsLis != nil {
		srv := &http.Server{
			Handler:           s.Handler(),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		}
		s.log.Info("serving metrics", "addr", s.metricsLis.Addr().String())
		wg.Go(func() { _ = srv.Serve(s.metricsLis) })
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			if srv.Shutdown(sctx) != nil {
				_ = srv.Close()
			}
		}()
	}
	if err := s.serveCRI(ctx); err != nil {
		s.log.Error("stopped", "err", err)
		return err
	}
	s.log.Info("stopped")
	return nil
}

// serveCRI serves the CRI on s.lis until ctx ends, then stops the gRPC
// server gracefully (GOAWAY: no new calls) and cuts off the calls still
// open after the shutdown grace.
func (s *Shim) serveCRI(ctx context.Context) error {
	srv := s.newServer()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(s.lis) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve on %s: %w", s.lis.Addr(), err)
	case <-ctx.Done():
	}
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	timer := time.NewTimer(s.grace)
	defer timer.Stop()
	select {
	case <-stopped:
	case <-timer.C:
		s.log.Warn("calls still open at shutdown, cutting them off", "after", s.grace)
		srv.Stop()
		<-stopped
	}
	// Serve returns nil once stopped, or ErrServerStopped when the stop
	// came first.
	if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("serve on %s: %w", s.lis.Addr(), err)
	}
	return nil
}

// MetricsAddr returns the address the metrics are served on, nil without
// Options.MetricsListen.
func (s *Shim) MetricsAddr() net.Addr {
	if s.metricsLis == nil {
		return nil
	}
	return s.metricsLis.Addr()
}

// Collector returns the shim's own metrics (the sandboxpin_shim_ ones in
// the package doc, without the Go and process collectors) as a
// [prometheus.Collector], to register on a registry of one's own, such as
// prometheus.DefaultRegisterer, instead of serving [Shim.Handler].
func (s *Shim) Collector() prometheus.Collector { return s.metrics }

// Handler returns the shim's HTTP handler: GET /metrics (Prometheus text)
// and GET /healthz, 200 "ok" once the shim has pin rules, 503 before.
func (s *Shim) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.loaded.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "waiting for pin rules: the runtime has not answered yet\n")
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// Close releases a shim that will not serve, or no longer does: its
// listeners, its socket (a file only when it made it: not for
// Options.Listener) and its runtime connection. Serve calls it. It returns
// the first error of releasing them (a socket file already gone is none);
// a second Close returns nil.
func (s *Shim) Close() error {
	var errs []error
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.lis != nil {
			errs = append(errs, ignoreClosed(s.lis.Close()))
		}
		if s.listenPath != "" {
			if err := os.Remove(s.listenPath); !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		if s.metricsLis != nil {
			errs = append(errs, ignoreClosed(s.metricsLis.Close()))
		}
		errs = append(errs, s.upstream.Close())
	})
	return errors.Join(errs...)
}

// ignoreClosed drops the error of closing a listener that is closed
// already (the gRPC and HTTP servers close theirs as they stop).
func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
