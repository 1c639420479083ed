package crishim

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// retryInterval is how often a shim that started before its runtime tries
// to load its rules.
const retryInterval = time.Second

// resolveTimeout bounds one resolution of the node, whose live part is a
// Version and a Status call to the runtime.
const resolveTimeout = 10 * time.Second

// joinLoader returns a loader that pins what load's matcher pins and what
// extra (Options.Pins, compiled once) pins; met gets the number of rules
// of each matcher it returns.
func joinLoader(load Loader, extra *pin.Matcher, met *metrics) loader {
	return func(ctx context.Context) (*pin.Matcher, error) {
		m, err := callLoader(ctx, load)
		if err != nil {
			return nil, err
		}
		all := pin.Join(m, extra)
		met.setRules(all.Len())
		return all, nil
	}
}

// callLoader calls load, and returns an error wrapping ErrLoader when it
// panics or returns neither a matcher nor an error: a shim that went on
// would pin nothing, or crash the kubelet's runtime endpoint.
func callLoader(ctx context.Context, load Loader) (m *pin.Matcher, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("%w: the Loader panicked: %v", ErrLoader, r)
		}
	}()
	m, err = load(ctx)
	if err == nil && m == nil {
		return nil, fmt.Errorf("%w: the Loader returned no matcher and no error (the zero pin.Matcher pins nothing)", ErrLoader)
	}
	return m, err
}

// nodeLoader returns a loader that resolves the node (opts, with what the
// runtime at endpoint reports as Live) and pins what the result's
// [resolve.Result.Matcher] pins. Each load connects to the runtime anew,
// so a runtime that restarted or appeared late is found. It logs what it
// found.
func nodeLoader(endpoint string, opts resolve.Options, log *slog.Logger) Loader {
	return func(ctx context.Context) (*pin.Matcher, error) {
		ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		defer cancel()
		live, err := cri.Dial(ctx, endpoint)
		if err != nil {
			return nil, fmt.Errorf("reach the runtime: %w", err)
		}
		defer func() { _ = live.Close() }()
		opts := opts
		opts.Live = live
		res, err := resolve.Resolve(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("resolve the node: %w", err)
		}
		m, err := res.Matcher()
		if err != nil {
			return nil, err
		}
		log.Info("pin rules loaded", "runtime", res.Runtime, "sandboxImage", res.SandboxImage,
			"pins", res.Pins, "mode", res.PinMode, "conflicts", len(res.Conflicts))
		for _, c := range res.Conflicts {
			log.Warn("node conflict", "message", c.Message)
		}
		return m, nil
	}
}

// socketPath returns the path of a "unix:///path" or "/path" endpoint.
func socketPath(endpoint string) (string, error) {
	p, _ := strings.CutPrefix(endpoint, "unix://")
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("endpoint %q: want unix:///path or /path", endpoint)
	}
	return p, nil
}

// listenUnix listens on the unix socket path, first removing a stale socket
// that nothing answers on (left by a shim that was killed). A socket that
// answers, or a file that is not a socket, is an error.
func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%w: Listen %s: exists and is not a socket", ErrListen, path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("%w: %w: Listen %s: another server listens there", ErrListen, ErrInUse, path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("%w: Listen %s: remove stale socket: %w", ErrListen, path, err)
		}
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, listenError("Listen "+path, err)
	}
	return lis, nil
}
