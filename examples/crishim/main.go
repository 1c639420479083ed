// Command crishim is a CRI proxy for node operators whose container runtime
// pins too little: containerd before 1.6.22 and 1.7.3 never sets
// Image.Pinned, and containerd 2.x and cri-dockerd compare the configured
// sandbox image as a raw string, so "k8s.gcr.io/pause:3.10.1" does not protect
// the same image stored as "registry.k8s.io/pause:3.10.1". Since kubelet 1.29
// that flag is all that keeps the image garbage collector away from the pause
// image.
//
// The shim listens on its own socket and forwards every RuntimeService and
// ImageService call to the runtime unchanged, methods this build does not know
// included. In the answers to ListImages, ImageStatus and StreamImages it sets
// Pinned on the images that the node's resolved sandbox image and pinned
// images (package resolve), or a --pin pattern, pin; it never clears a Pinned
// the runtime set itself.
//
//	go run ./examples/crishim \
//		--listen unix:///run/crishim.sock \
//		--runtime-endpoint unix:///run/containerd/containerd.sock \
//		--pin 'registry.example.com/infra/*'
//
// Then point the kubelet (--container-runtime-endpoint) and crictl
// (--runtime-endpoint, --image-endpoint) at the shim's socket.
//
// Once it has rules, the shim relays each connection from a client to a
// connection of its own to the runtime, HTTP/2 frame by frame: it holds
// back only the answers it may change, one message at a time, and reads
// the images in them as they arrive, so that the kubelet's calls cost
// little more than they do straight to the runtime (TestHopTable prints
// the figures). --grpc-proxy ends each call at the shim and makes it again
// to the runtime instead, as the shim did before the relay: slower, and
// kept for a client the relay cannot serve.
//
// SIGHUP resolves the node again (files under --root and what the runtime
// reports) and swaps in the new rules; when that fails (a config file became
// malformed, the runtime is down) the old rules stay and the log says why.
// SIGINT and SIGTERM stop it and remove the socket. It logs to stderr.
//
// The runtime may come and go. When it stops, the shim closes the
// connections it relayed to it, as the runtime's own socket would, and
// calls fail with Unavailable until the client reconnects after the
// runtime's return. When its socket does not exist yet at start, the shim
// serves anyway (so the kubelet finds the shim's socket) and retries every
// second: until the rules load, ListImages, ImageStatus and StreamImages fail
// with Unavailable rather than answer with the pause image unpinned (which
// could let the kubelet's image GC delete it), and other calls are forwarded
// (and fail as the runtime's absence makes them fail). A node configuration
// that does not resolve at start is an error (exit 2).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
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

// Exit codes.
const (
	exitOK    = 0
	exitServe = 1 // the server failed after start-up
	exitUsage = 2 // bad flags, or the shim could not start
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the parsed flags.
type options struct {
	listen          string   // the shim's socket, unix:///path or /path
	runtimeEndpoint string   // the runtime's socket
	root            string   // the node's root file system
	pins            []string // extra pin patterns (strict mode)
	debug           bool     // log every image the shim pins
	grpcProxy       bool     // the gRPC proxy for every connection, not the relay
}

// stringsFlag is a repeatable string flag.
type stringsFlag []string

func (s *stringsFlag) String() string { return strings.Join(*s, ",") }

func (s *stringsFlag) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// parseFlags reads args; the error is flag.ErrHelp after --help.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("crishim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", "", "the shim's CRI socket, unix:///path (required)")
	fs.StringVar(&o.runtimeEndpoint, "runtime-endpoint", "", "the runtime's CRI socket, unix:///path (required)")
	fs.StringVar(&o.root, "root", "/", "the node's root file system, read to resolve the sandbox image")
	fs.Var((*stringsFlag)(&o.pins), "pin", "an extra pin `pattern` (repeatable): reference, digest, prefix* or *keyword*")
	fs.BoolVar(&o.debug, "debug", false, "log each image the shim pins and the rule that pinned it")
	fs.BoolVar(&o.grpcProxy, "grpc-proxy", false, "end each call at the shim and make it again to the runtime, instead of relaying HTTP/2 frames (slower)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: crishim --listen unix:///path/shim.sock --runtime-endpoint unix:///path/runtime.sock [--pin PATTERN]... [--root DIR]\n\n"+
			"A CRI proxy that forwards every call to the runtime and sets Image.Pinned on the\n"+
			"node's sandbox image and on --pin patterns. SIGHUP reloads; SIGINT/SIGTERM stop.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.listen == "":
		return o, errors.New("--listen is required")
	case o.runtimeEndpoint == "":
		return o, errors.New("--runtime-endpoint is required")
	}
	return o, nil
}

// run is the program: it parses args, serves until SIGINT or SIGTERM and
// reloads on SIGHUP, and returns the exit code.
func run(args []string, _, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "crishim: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return runShim(ctx, o, hup, stderr)
}

// runShim starts the shim described by o and serves until ctx is done,
// reloading its rules whenever hup receives. It logs to stderr.
func runShim(ctx context.Context, o options, hup <-chan os.Signal, stderr io.Writer) int {
	level := slog.LevelInfo
	if o.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	fail := func(msg string, err error) int {
		log.Error(msg, "err", err)
		return exitUsage
	}

	listenPath, err := socketPath(o.listen)
	if err != nil {
		return fail("bad --listen", err)
	}
	runtimePath, err := socketPath(o.runtimeEndpoint)
	if err != nil {
		return fail("bad --runtime-endpoint", err)
	}
	extra, err := pin.Compile(o.pins, pin.WithSource("--pin"))
	if err != nil {
		return fail("bad --pin", err)
	}

	upstream, err := dialRuntime(runtimePath)
	if err != nil {
		return fail("cannot reach the runtime", err)
	}
	defer func() { _ = upstream.Close() }()

	load := nodeLoader(o.runtimeEndpoint, resolve.DirFS(o.root), extra, log)
	s := newWaitingShim(upstream, load, log)
	s.grpcOnly = o.grpcProxy
	waiting := false
	if err := s.reload(ctx); err != nil {
		if !errors.Is(err, cri.ErrNoSocket) {
			return fail("cannot start", err)
		}
		// The runtime is not up yet (the shim started first, or the
		// runtime restarts): serve anyway, so that the kubelet finds the
		// socket, and answer image calls Unavailable until the rules load.
		log.Warn("the runtime is not reachable yet: serving, image calls fail with Unavailable until it is",
			"runtime", runtimePath, "retry", retryInterval, "err", err)
		waiting = true
	}
	lis, err := listenUnix(listenPath)
	if err != nil {
		return fail("cannot listen", err)
	}
	defer func() { _ = os.Remove(listenPath) }()
	log.Info("serving", "listen", listenPath, "runtime", runtimePath)
	if waiting {
		go s.awaitRules(ctx, retryInterval)
	}

	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				log.Info("SIGHUP: reloading pin rules")
				if err := s.reload(ctx); err != nil {
					log.Error("reload failed", "err", err)
				}
			}
		}
	}()

	if err := s.serve(ctx, lis); err != nil {
		log.Error("stopped", "err", err)
		return exitServe
	}
	log.Info("stopped")
	return exitOK
}

// nodeLoader returns a loader that resolves the node (files under root and
// what the runtime at endpoint reports) and pins its resolved pins (in
// their mode) and what extra pins. Each load connects to the runtime
// anew, so a runtime that restarted or appeared late is found. It logs
// what it found.
func nodeLoader(endpoint string, root fs.FS, extra *pin.Matcher, log *slog.Logger) loader {
	return func(ctx context.Context) (*pin.Matcher, error) {
		ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		defer cancel()
		live, err := cri.Dial(ctx, endpoint)
		if err != nil {
			return nil, fmt.Errorf("reach the runtime: %w", err)
		}
		defer func() { _ = live.Close() }()
		res, err := resolve.Resolve(ctx, resolve.Options{Root: root, Live: live})
		if err != nil {
			return nil, fmt.Errorf("resolve the node: %w", err)
		}
		m, err := pin.Compile(res.Pins, pin.WithMode(res.PinMode), pin.WithSource("node ("+res.Runtime+")"))
		if err != nil {
			return nil, fmt.Errorf("compile the resolved pins %q: %w", res.Pins, err)
		}
		log.Info("pin rules loaded", "runtime", res.Runtime, "sandboxImage", res.SandboxImage,
			"pins", res.Pins, "mode", res.PinMode, "conflicts", len(res.Conflicts))
		for _, c := range res.Conflicts {
			log.Warn("node conflict", "message", c.Message)
		}
		if res.PinMode != pin.Strict && res.SandboxImage != "" {
			// CRIOCompat reproduces CRI-O, which pins the pause image only
			// under the exact name configured (seen live on 1.36.3): the
			// shim is there to pin it under any spelling it is stored as,
			// so the sandbox image is also a Strict, alias-aware rule.
			sm, err := pin.Compile([]string{res.SandboxImage}, pin.WithSource("sandbox image ("+res.Runtime+")"))
			if err != nil {
				return nil, fmt.Errorf("compile the sandbox image %q: %w", res.SandboxImage, err)
			}
			m = pin.Join(m, sm)
		}
		return pin.Join(m, extra), nil
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
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("%s: another server listens there", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return lis, nil
}
