package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sandboxpin/sandboxpin/crishim"
)

// exitServe is shim's exit code when serving failed after start-up.
const exitServe = 1

// shimExitGrace is how long `sandboxpin shim` may take to stop once
// SIGINT or SIGTERM has cancelled its context: the calls in flight get
// crishim.ShutdownGrace to finish, and a little more to close.
const shimExitGrace = crishim.ShutdownGrace + time.Second

func runShim(ctx context.Context, args []string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("shim", flag.ContinueOnError)
	var o crishim.Options
	o.AddFlags(fs)
	debug := fs.Bool("debug", false, "log each image the shim pins and the rule that pinned it")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sandboxpin shim --listen unix:///path/shim.sock --runtime-endpoint unix:///path/runtime.sock [--pin PATTERN]... [--root DIR] [--metrics-listen ADDR]")
		fmt.Fprintln(fs.Output(), "\nA CRI proxy that forwards every call to the runtime and sets Image.Pinned on the node's sandbox image and on --pin patterns. Point the kubelet's --container-runtime-endpoint at --listen. SIGHUP reloads the rules; SIGINT/SIGTERM stop it. Exit: 0 stopped, 1 serving failed, 2 could not start. Logs go to stderr.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return fail(stderr, "shim: unexpected arguments %q", fs.Args())
	case o.Listen == "":
		return fail(stderr, "shim: --listen is required")
	case o.RuntimeEndpoint == "":
		return fail(stderr, "shim: --runtime-endpoint is required")
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	o.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return serveShim(ctx, o, hup)
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
	go s.ReloadOn(ctx, hup)
	if s.Serve(ctx) != nil {
		return exitServe
	}
	return exitOK
}
