// Command shimmain runs a crishim.Shim with the flags of `sandboxpin shim`
// (Options.AddFlags), for the package's tests that need a process of its
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
)

func main() {
	var o crishim.Options
	fs := flag.NewFlagSet("shimmain", flag.ExitOnError)
	o.AddFlags(fs)
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	s, err := crishim.New(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shimmain:", err)
		os.Exit(2)
	}
	go s.ReloadOn(ctx, hup)
	if err := s.Serve(ctx); err != nil {
		os.Exit(1)
	}
}
