package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxpin/sandboxpin/crishim"
	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// exitServe is shim's exit code when serving failed after start-up.
const exitServe = 1

// shimGrace is the shim's crishim.Options.ShutdownGrace: how long the calls
// in flight get to finish once SIGINT or SIGTERM has cancelled its context.
const shimGrace = 5 * time.Second

// shimExitGrace is how long `sandboxpin shim` may take to stop: shimGrace,
// and a little more to close.
const shimExitGrace = shimGrace + time.Second

func newShimCmd(ctx context.Context) *cobra.Command {
	var (
		o     = crishim.Options{ShutdownGrace: shimGrace}
		root  string
		debug bool
	)
	c := &cobra.Command{
		Use:   "shim --listen unix:///path/shim.sock --runtime-endpoint unix:///path/runtime.sock",
		Short: "A CRI proxy that pins the sandbox image for runtimes that do not",
		Long: "A CRI proxy that forwards every call to the runtime and sets Image.Pinned on the node's sandbox image\n" +
			"and on --pin patterns. Point the kubelet's --container-runtime-endpoint at --listen. SIGHUP reloads the\n" +
			"rules; SIGINT/SIGTERM stop it. Exit: 0 stopped, 1 serving failed, 2 could not start. Logs go to stderr.\n" +
			"deploy/systemd holds its unit and a kubelet drop-in.",
		Args: noArgs,
	}
	fs := c.Flags()
	fs.StringVar(&o.Listen, "listen", "", "the shim's CRI socket `URL`, unix:///path (required)")
	fs.StringVar(&o.RuntimeEndpoint, "runtime-endpoint", "", "the runtime's CRI socket `URL`, unix:///path (required)")
	fs.StringVar(&root, "root", "/", "the node's root file system `DIR`, read to resolve the sandbox image")
	o.PinsSource = resolve.ExtraSource // "--pin", as check labels them
	fs.StringArrayVar(&o.Pins, "pin", nil, "an extra pin `PATTERN` (repeatable): a reference, a digest, prefix* or *keyword*")
	fs.StringVar(&o.MetricsListen, "metrics-listen", "", "serve Prometheus /metrics and /healthz on this `ADDR` (host:port; default: none)")
	fs.BoolVar(&debug, "debug", false, "log each image the shim pins and the rule that pinned it")
	c.RunE = func(c *cobra.Command, _ []string) error {
		switch {
		case o.Listen == "":
			return &usageError{errors.New("--listen is required")}
		case o.RuntimeEndpoint == "":
			return &usageError{errors.New("--runtime-endpoint is required")}
		}
		// Mistakes in the command line's words; crishim.New names its
		// Options' fields.
		for flag, ep := range map[string]string{"--listen": o.Listen, "--runtime-endpoint": o.RuntimeEndpoint} {
			if !strings.HasPrefix(strings.TrimPrefix(ep, "unix://"), "/") {
				return &usageError{fmt.Errorf("%s %q: want unix:///path or /path", flag, ep)}
			}
		}
		if _, err := pin.Compile(o.Pins); err != nil {
			return &usageError{fmt.Errorf("--pin: %w", err)}
		}
		level := slog.LevelInfo
		if debug {
			level = slog.LevelDebug
		}
		o.Logger = slog.New(slog.NewTextHandler(c.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
		o.Node = &resolve.Options{Root: resolve.DirFS(root)}
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		return exit(serveShim(ctx, o, hup))
	}
	return c
}

// serveShim runs the shim o describes until ctx ends, reloading its rules
// whenever hup receives, and returns the exit code.
func serveShim(ctx context.Context, o crishim.Options, hup <-chan os.Signal) int {
	log := o.Logger
	s, err := crishim.New(ctx, o)
	if err != nil {
		log.Error("cannot start", "err", err)
		return exitError
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				log.Info("SIGHUP: reloading pin rules")
				if err := s.Reload(ctx); err != nil && !errors.Is(err, context.Canceled) {
					log.Error("reload failed", "err", err)
				}
			}
		}
	}()
	if s.Serve(ctx) != nil {
		return exitServe
	}
	return exitOK
}
