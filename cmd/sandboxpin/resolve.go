package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve"
)

func runResolve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("resolve", flag.ContinueOnError)
	var n nodeFlags
	n.register(fs, true)
	output := fs.String("o", "text", "output format: text or json")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sandboxpin resolve [--root DIR] [--runtime-endpoint URL] [--kubeadm-version V] [-o text|json]")
		fmt.Fprintln(fs.Output(), "\nThe sandbox image the runtime really uses, every candidate with its source and origin, conflicts, notes, pins and the pre-pull list. Exit 0, or 2 on error.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *output != "text" && *output != "json" {
		return fail(stderr, "resolve: -o %q: want text or json", *output)
	}
	client, err := n.dial(ctx)
	if err != nil {
		return fail(stderr, "resolve: %v", err)
	}
	if client != nil {
		defer client.Close()
	}
	res, err := n.resolve(ctx, client)
	if err != nil {
		return fail(stderr, "resolve: %v", err)
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fail(stderr, "resolve: %v", err)
		}
		return exitOK
	}
	printResult(stdout, res)
	return exitOK
}

// printResult writes resolve's text: the answer first, then the one fix,
// then how it was found.
func printResult(w io.Writer, res *resolve.Result) {
	runtime := res.Runtime
	if runtime == "" {
		runtime = "no runtime found"
	}
	if res.SandboxImage == "" {
		fmt.Fprintf(w, "Sandbox image: cannot be told (%s)\n", runtime)
	} else {
		fmt.Fprintf(w, "Sandbox image: %s (%s)\n", res.SandboxImage, runtime)
	}
	if f := res.Fix; f != nil {
		fmt.Fprintf(w, "Fix: %s\n", f.Message)
	}
	fmt.Fprintf(w, "Versions: %s\n", versionsLine(res))

	fmt.Fprintln(w, "\nCandidates:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  IMAGE\tSOURCE\tROLE\tORIGIN")
	for _, c := range res.Candidates {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Image, c.Source, c.Role, c.Origin)
	}
	_ = tw.Flush()

	fmt.Fprintf(w, "\nConflicts: %d\n", len(res.Conflicts))
	for _, c := range res.Conflicts {
		fmt.Fprintf(w, "  ! %s\n", c.Message)
	}
	if len(res.Notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range res.Notes {
			fmt.Fprintf(w, "  - %s\n", n.Message)
		}
	}
	how := "strict: compared as canonical references, registry aliases applied"
	if res.PinMode == pin.CRIOCompat {
		how = "as CRI-O compares them: raw strings up to case, x* anywhere in the name"
	}
	fmt.Fprintf(w, "\nPins (%s): %s\n", how, orNone(res.Pins))
	fmt.Fprintf(w, "Pre-pull: %s\n", orNone(res.Prepull))
}

// versionFlags are the flags that give each component's version.
var versionFlags = map[string]string{
	"kubelet": "--kubelet-version",
	"kubeadm": "--kubeadm-version",
}

// versionsLine says which version of the runtime, the kubelet and kubeadm
// was used and from where, and for each unknown one the flag that gives it.
func versionsLine(res *resolve.Result) string {
	var parts []string
	for _, comp := range []string{res.Runtime, "kubelet", "kubeadm"} {
		if comp == "" {
			continue
		}
		part := comp + " unknown (give " + cmp.Or(versionFlags[comp], "--runtime-version or --runtime-endpoint") + ")"
		for _, v := range res.Versions {
			if v.Used && v.Component == comp {
				part = comp + " " + v.Version + " (" + v.Origin
				if v.Assumed {
					part += ", assumed"
				}
				part += ")"
			}
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ", ")
}

func runPrepull(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("prepull", flag.ContinueOnError)
	var n nodeFlags
	n.register(fs, true)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sandboxpin prepull [--root DIR] [--kubeadm-version V]")
		fmt.Fprintln(fs.Output(), "\nThe images an installer must pre-pull for this node to start pods offline, one a line: every exact name a consumer looks up "+
			"(the runtime's sandbox image as configured, kubeadm's pause image as kubeadm names it, the runtime's exact pinned images). "+
			"Two spellings of one image are both listed; a note on stderr says how to pull once and store it under both names.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	client, err := n.dial(ctx)
	if err != nil {
		return fail(stderr, "prepull: %v", err)
	}
	if client != nil {
		defer client.Close()
	}
	res, err := n.resolve(ctx, client)
	if err != nil {
		return fail(stderr, "prepull: %v", err)
	}
	for _, p := range res.Prepull {
		fmt.Fprintln(stdout, p)
	}
	for _, n := range res.Notes {
		if n.Kind == resolve.PrepullTwoNames {
			fmt.Fprintf(stderr, "note: %s\n", n.Message)
		}
	}
	return exitOK
}
