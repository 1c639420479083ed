package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const (
	exitOK    = 0
	exitCheck = 1
	exitError = 2
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) int
	// grace replaces exitGrace for this command when not zero.
	grace time.Duration
}

func commands() []command {
	return []command{
		{"resolve", "the sandbox image this node really uses, every source of it, conflicts and pins", runResolve, 0},
		{"check", "whether images are pinned, and by which rule", runCheck, 0},
		{"normalize", "the canonical form of image references", runNormalize, 0},
		{"audit", "the runtime's images: its own pinned flag beside sandboxpin's verdict", runAudit, 0},
		{"serve", "a Prometheus exporter of the audit, for a DaemonSet", runServe, serveExitGrace},
		{"shim", "a CRI proxy that pins the sandbox image for runtimes that do not", runShim, shimExitGrace},
		{"prepull", "the images an installer must pre-pull for this node", runPrepull, 0},
		{"version", "the version of this program", runVersion, 0},
	}
}

// exitGrace is how long a command may take to return once SIGINT or
// SIGTERM has cancelled its context, before the process exits anyway (with
// exitError): a write to a pipe that nobody reads, or any other call that
// takes no context, must not keep it alive. With it the command ends within
// a second of the signal in every state; shim, which lets the calls in
// flight finish, has a grace of its own.
const exitGrace = 500 * time.Millisecond

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	grace := exitGrace
	for _, c := range commands() {
		if len(os.Args) > 1 && c.name == os.Args[1] && c.grace != 0 {
			grace = c.grace
		}
	}
	go func() {
		<-ctx.Done() // a signal, or stop below
		time.Sleep(grace)
		os.Exit(exitError)
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: tests call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitError
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "sandboxpin: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitError
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: sandboxpin COMMAND [FLAGS] [ARGS]")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'sandboxpin COMMAND --help' for a command's flags. Exit: 0 ok, 1 check failed, 2 error.")
}
