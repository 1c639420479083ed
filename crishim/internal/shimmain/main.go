// Command shimmain runs a crishim.Shim with flags like those of
// `sandboxpin shim`, for the package's tests that need a process of its
// own: the load test measures its peak memory, and the binary test sends
// it signals. SIGHUP reloads; SIGINT and SIGTERM stop it. Exit 0 after a
// clean stop, 1 when serving failed, 2 when it could not start.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/sandboxpin/sandboxpin/crishim"
	"github.com/sandboxpin/sandboxpin/resolve"
)

func main() {
	var (
		o    crishim.Options
		root string
	)
	fs := flag.NewFlagSet("shimmain", flag.ExitOnError)
	fs.StringVar(&o.Listen, "listen", "", "the shim's socket")
	fs.StringVar(&o.RuntimeEndpoint, "runtime-endpoint", "", "the runtime's socket")
	fs.StringVar(&root, "root", "/", "the node's root")
	fs.StringVar(&o.MetricsListen, "metrics-listen", "", "host:port for /metrics")
	fs.Func("pin", "an extra pattern (repeatable)", func(p string) error { o.Pins = append(o.Pins, p); return nil })
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	o.Node = &resolve.Options{Root: resolve.DirFS(root)}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	s, err := crishim.New(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shimmain:", err)
		os.Exit(2)
	}
	go func() {
		for range hup {
			if err := s.Reload(ctx); err != nil {
				o.Logger.Error("reload failed", "err", err)
			}
		}
	}()
	if err := s.Serve(ctx); err != nil {
		os.Exit(1)
	}
}
