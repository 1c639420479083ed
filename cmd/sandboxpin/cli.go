package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Exit codes (README.md, "Exit codes").
const (
	exitOK    = 0 // success: every image pinned, the sandbox image protected
	exitCheck = 1 // a verdict: an image is not pinned, the sandbox image not protected
	exitError = 2 // an error: a usage mistake, an unreadable config, an unreachable runtime
	// exitUnknown: the sandbox image cannot be told (no runtime found, no
	// config names it and its version is unknown); the output says which
	// flag would tell.
	exitUnknown = 3
)

// codeError ends a command with an exit code; err, when not nil, is
// printed on stderr.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *codeError) Unwrap() error { return e.err }

// fail is an error that ends the command with code and says why.
func fail(code int, format string, args ...any) error {
	return &codeError{code: code, err: fmt.Errorf(format, args...)}
}

// exit ends the command with code and nothing more to say (a verdict that
// the output already shows).
func exit(code int) error {
	if code == exitOK {
		return nil
	}
	return &codeError{code: code}
}

// usageError is a mistake on the command line: exit 2, with a pointer to
// the command's help.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// commands returns the subcommands, each built for one run.
func commands(ctx context.Context) []*cobra.Command {
	return []*cobra.Command{
		newResolveCmd(ctx), newCheckCmd(ctx), newNormalizeCmd(), newAuditCmd(ctx),
		newServeCmd(ctx), newShimCmd(ctx), newPrepullCmd(ctx), newFixCmd(ctx), newRolloutCmd(ctx), newVersionCmd(),
	}
}

// newRoot returns the sandboxpin command, writing to stdout and stderr.
func newRoot(ctx context.Context, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "sandboxpin",
		Short: "Which sandbox (pause) image this node really uses, and whether its runtime pins it",
		Long: "sandboxpin tells which sandbox (\"pause\") image a Kubernetes node's container runtime really uses,\n" +
			"from every source that names one, and whether the runtime pins it, so that the kubelet's image\n" +
			"garbage collector leaves it alone.\n\n" + exitCodesHelp,
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("sandboxpin {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.AddCommand(commands(ctx)...)
	return root
}

const exitCodesHelp = "Exit codes: 0 success; 1 a verdict (an image is not pinned, the sandbox image is not protected);\n" +
	"2 an error (a usage mistake, an unreadable config, an unreachable runtime); 3 the sandbox image\n" +
	"cannot be told (the output says which flag would tell)."

// run is main without the process: tests call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(ctx, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	var ce *codeError
	if errors.As(err, &ce) {
		if ce.err != nil {
			fmt.Fprintf(stderr, "sandboxpin %s: %v\n", cmd.Name(), ce.err)
		}
		return ce.code
	}
	// A usage mistake: cobra's own (an unknown command, a flag it does
	// not know) or one of ours.
	name := "sandboxpin"
	if cmd != nil && cmd != root {
		name = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, name)
	return exitError
}

// noArgs refuses positional arguments, naming the first.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &usageError{fmt.Errorf("unexpected argument %q: this command takes flags only", args[0])}
	}
	return nil
}

// minArgs wants at least one positional argument, what names.
func minArgs(what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return &usageError{fmt.Errorf("give at least one %s", what)}
		}
		return nil
	}
}

// output is the -o flag of a command, with the formats it takes.
type output struct {
	format  string
	formats []string
}

// addOutput registers c's -o/--output with formats (the first is the
// default) and their shell completion.
func addOutput(c *cobra.Command, formats ...string) *output {
	o := &output{formats: formats}
	c.Flags().StringVarP(&o.format, "output", "o", formats[0], "output `FORMAT`: "+strings.Join(formats, ", "))
	_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	return o
}

// check refuses a format the command does not print.
func (o *output) check() error {
	if !slices.Contains(o.formats, o.format) {
		return &usageError{fmt.Errorf("--output %q: want %s", o.format, strings.Join(o.formats, ", "))}
	}
	return nil
}

// print writes v to w as JSON (indented) or YAML (as kubectl prints it:
// sigs.k8s.io/yaml, from the same field names as JSON), or calls text for
// any other format.
func (o *output) print(w io.Writer, v any, text func()) error {
	var err error
	switch o.format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(v)
	case "yaml":
		var b []byte
		if b, err = yaml.Marshal(v); err == nil {
			_, err = w.Write(b)
		}
	default:
		text()
	}
	if err != nil {
		return fail(exitError, "%v", err)
	}
	return nil
}

// versionString is the module version and VCS revision of this build.
func versionString() string {
	version, goVersion := "(unknown)", ""
	if info, ok := debug.ReadBuildInfo(); ok {
		version, goVersion = info.Main.Version, info.GoVersion
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				version += " " + s.Value
			}
		}
	}
	return strings.TrimSpace(version + " " + goVersion)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "The version of this program (also: sandboxpin --version)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintf(c.OutOrStdout(), "sandboxpin %s\n", versionString())
			return nil
		},
	}
}

// exitGrace is how long a command may take to return once SIGINT or
// SIGTERM has cancelled its context, before the process exits anyway (with
// exitError): a write to a pipe that nobody reads, or any other call that
// takes no context, must not keep it alive. With it the command ends within
// a second of the signal in every state, with most of that second left for
// a loaded machine's scheduling (CI saw 0.66 s of it with a 0.5 s grace);
// serve and shim, which stop cleanly, have graces of their own.
const exitGrace = 200 * time.Millisecond

// graceOf returns the exit grace of the command args name.
func graceOf(args []string) time.Duration {
	if len(args) > 0 {
		switch args[0] {
		case "serve":
			return serveExitGrace
		case "shim":
			return shimExitGrace
		}
	}
	return exitGrace
}
