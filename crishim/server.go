package crishim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// ErrInvalidOptions is wrapped by the errors of [New] for [Options] that
// cannot work: a missing or relative endpoint, a bad --pin pattern.
var ErrInvalidOptions = errors.New("invalid shim options")

// ShutdownGrace is how long [Shim.Serve] waits, once its context ends, for
// the calls in flight before it cuts them off. Streams such as
// GetContainerEvents never end by themselves.
const ShutdownGrace = shutdownGrace

// Options configures a [Shim]. A zero field means "not given"; Listen and
// RuntimeEndpoint are required.
type Options struct {
	// Listen is the shim's socket, unix:///path or /path.
	Listen string
	// RuntimeEndpoint is the runtime's socket, unix:///path or /path.
	RuntimeEndpoint string
	// Root is the node's root directory, read (confined, as by
	// resolve.DirFS) to resolve the sandbox image; "" is "/".
	Root string
	// Pins are extra pin patterns, in pin's Strict mode.
	Pins []string
	// GRPCProxy ends each call at the shim and makes it again to the
	// runtime, instead of relaying HTTP/2 frames: slower, and kept for a
	// client the relay cannot serve.
	GRPCProxy bool
	// MetricsListen is the host:port to serve /metrics and /healthz on;
	// "" serves neither.
	MetricsListen string
	// Logger receives the shim's log; nil discards it. With debug
	// enabled, each image the shim pins is logged with its rule.
	Logger *slog.Logger
}

// stringsFlag is a repeatable string flag.
type stringsFlag []string

func (s *stringsFlag) String() string { return strings.Join(*s, ",") }

func (s *stringsFlag) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// AddFlags defines the flags of `sandboxpin shim` on fs, writing into o:
// --listen, --runtime-endpoint, --root, --pin (repeatable), --grpc-proxy
// and --metrics-listen. Logging flags are the caller's.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Listen, "listen", o.Listen, "the shim's CRI socket, unix:///path (required)")
	fs.StringVar(&o.RuntimeEndpoint, "runtime-endpoint", o.RuntimeEndpoint, "the runtime's CRI socket, unix:///path (required)")
	if o.Root == "" {
		o.Root = "/"
	}
	fs.StringVar(&o.Root, "root", o.Root, "the node's root file system, read to resolve the sandbox image")
	fs.Var((*stringsFlag)(&o.Pins), "pin", "an extra pin `pattern` (repeatable): reference, digest, prefix* or *keyword*")
	fs.BoolVar(&o.GRPCProxy, "grpc-proxy", o.GRPCProxy, "end each call at the shim and make it again to the runtime, instead of relaying HTTP/2 frames (slower)")
	fs.StringVar(&o.MetricsListen, "metrics-listen", o.MetricsListen, "serve Prometheus /metrics and /healthz on this host:port (default: none)")
}

// Shim is a CRI proxy that sets Image.Pinned in the runtime's answers. Make
// one with [New], run it with [Serve]; [Reload] may be called from any
// goroutine meanwhile.
type Shim struct {
	s          *shim
	upstream   *grpc.ClientConn
	lis        net.Listener
	listenPath string
	metricsLis net.Listener
	waiting    bool
	closeOnce  sync.Once
}

// New checks o, connects to the runtime, loads the rules and listens on
// o.Listen (and o.MetricsListen), with the mode, owner and group of the
// runtime's socket when it exists. A runtime whose socket does not exist
// yet is no error: the shim serves anyway, answers the image calls
// Unavailable and loads the rules once the runtime answers. A node
// configuration that does not resolve is an error. Errors about o wrap
// [ErrInvalidOptions].
func New(ctx context.Context, o Options) (*Shim, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	listenPath, err := socketPath(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("%w: --listen: %w", ErrInvalidOptions, err)
	}
	runtimePath, err := socketPath(o.RuntimeEndpoint)
	if err != nil {
		return nil, fmt.Errorf("%w: --runtime-endpoint: %w", ErrInvalidOptions, err)
	}
	extra, err := pin.Compile(o.Pins, pin.WithSource("--pin"))
	if err != nil {
		return nil, fmt.Errorf("%w: --pin: %w", ErrInvalidOptions, err)
	}
	root := o.Root
	if root == "" {
		root = "/"
	}
	upstream, err := dialRuntime(runtimePath)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the runtime: %w", err)
	}
	met := newMetrics()
	load := nodeLoader(o.RuntimeEndpoint, resolve.DirFS(root), extra, countRules(o.Pins), met, log)
	s := newWaitingShim(upstream, load, log)
	s.grpcOnly = o.GRPCProxy
	s.metrics = met
	sh := &Shim{s: s, upstream: upstream, listenPath: listenPath}
	if err := s.reload(ctx); err != nil {
		if !errors.Is(err, cri.ErrNoSocket) {
			_ = upstream.Close()
			return nil, fmt.Errorf("cannot start: %w", err)
		}
		// The runtime is not up yet (the shim started first, or the
		// runtime restarts): serve anyway, so that the kubelet finds the
		// socket, and answer image calls Unavailable until the rules load.
		log.Warn("the runtime is not reachable yet: serving, image calls fail with Unavailable until it is",
			"runtime", runtimePath, "retry", retryInterval, "err", err)
		sh.waiting = true
	}
	if sh.lis, err = listenUnix(listenPath); err != nil {
		_ = upstream.Close()
		return nil, fmt.Errorf("cannot listen: %w", err)
	}
	if err := matchSocket(listenPath, runtimePath); err != nil {
		sh.Close()
		return nil, fmt.Errorf("cannot listen: %w", err)
	}
	if o.MetricsListen != "" {
		if sh.metricsLis, err = (&net.ListenConfig{}).Listen(ctx, "tcp", o.MetricsListen); err != nil {
			sh.Close()
			return nil, fmt.Errorf("cannot listen for metrics: %w", err)
		}
	}
	return sh, nil
}

// countRules returns how many of the --pin patterns are rules ("" is none).
func countRules(pins []string) int {
	n := 0
	for _, p := range pins {
		if p != "" {
			n++
		}
	}
	return n
}

// Serve answers CRI calls until ctx ends, then stops: calls in flight get
// [ShutdownGrace] to finish. It removes the socket and releases the shim
// when it returns; it returns nil after a clean stop.
func (sh *Shim) Serve(ctx context.Context) error {
	defer sh.Close()
	log := sh.s.log
	log.Info("serving", "listen", sh.listenPath, "runtime", sh.s.runtimePath)
	if sh.waiting {
		go sh.s.awaitRules(ctx, retryInterval)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if sh.metricsLis != nil {
		srv := &http.Server{
			Handler:           sh.Handler(),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
		log.Info("serving metrics", "addr", sh.metricsLis.Addr().String())
		wg.Go(func() { _ = srv.Serve(sh.metricsLis) })
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			if srv.Shutdown(sctx) != nil {
				_ = srv.Close()
			}
		}()
	}
	if err := sh.s.serve(ctx, sh.lis); err != nil {
		log.Error("stopped", "err", err)
		return err
	}
	log.Info("stopped")
	return nil
}

// Reload resolves the node again and swaps in the new rules. When that
// fails, the previous rules stay and the error says why.
func (sh *Shim) Reload(ctx context.Context) error {
	return sh.s.reload(ctx)
}

// ReloadOn calls Reload each time hup receives (SIGHUP, for `sandboxpin
// shim`), until ctx ends, logging a failed reload; run it beside Serve.
func (sh *Shim) ReloadOn(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			sh.s.log.Info("SIGHUP: reloading pin rules")
			if err := sh.Reload(ctx); err != nil && !errors.Is(err, context.Canceled) {
				sh.s.log.Error("reload failed", "err", err)
			}
		}
	}
}

// MetricsAddr returns the address the metrics are served on, nil without
// Options.MetricsListen.
func (sh *Shim) MetricsAddr() net.Addr {
	if sh.metricsLis == nil {
		return nil
	}
	return sh.metricsLis.Addr()
}

// Handler returns the shim's HTTP handler: GET /metrics (Prometheus text)
// and GET /healthz, 200 "ok" once the shim has pin rules, 503 before.
func (sh *Shim) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", sh.s.metrics.handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !sh.s.loaded.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "waiting for pin rules: the runtime has not answered yet\n")
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// Close releases a shim that will not serve, or no longer does: its
// listeners, its socket and its runtime connection. Serve calls it.
func (sh *Shim) Close() {
	sh.closeOnce.Do(func() {
		if sh.lis != nil {
			_ = sh.lis.Close()
			_ = os.Remove(sh.listenPath)
		}
		if sh.metricsLis != nil {
			_ = sh.metricsLis.Close()
		}
		_ = sh.upstream.Close()
	})
}
