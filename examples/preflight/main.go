// Command preflight is what a cluster installer runs on a node before
// `kubeadm init` or `kubeadm join`: it resolves which sandbox ("pause") image
// the node's container runtime really uses, prints the images to pre-pull so
// that an offline node can start pods, and stops the installation when the
// runtime, the kubelet and kubeadm disagree, saying what to change where.
//
//	go run ./examples/preflight --root examples/testdata/node --kubeadm-version v1.36.3
//	go run ./examples/preflight --kubeadm-version v1.35.0 --runtime-endpoint unix:///run/containerd/containerd.sock
//
// It reads the node's files under --root (containerd, CRI-O and cri-dockerd
// configuration, the kubelet's kubeadm-flags.env, an optional kubeadm
// ClusterConfiguration) and, with --runtime-endpoint, what the running
// runtime reports. The exit code is 0 when the node is ready, 1 when there is
// a real conflict (printed with its message), and 2 on error. -o json prints
// the same for programs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// timeout bounds the whole run, whose only slow part is the runtime's socket.
const timeout = 30 * time.Second

// Exit codes.
const (
	exitOK       = 0
	exitConflict = 1
	exitError    = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the parsed flags.
type options struct {
	root            string // the node's root file system
	kubeadmVersion  string // the kubeadm that will install the node
	kubeadmConfig   string // a ClusterConfiguration inside root
	runtimeEndpoint string // the runtime's CRI socket, optional
	output          string // "text" or "json"
}

// parseFlags reads args; the error is flag.ErrHelp after --help.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("preflight", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.root, "root", "/", "the node's root file system")
	fs.StringVar(&o.kubeadmVersion, "kubeadm-version", "", "the kubeadm version that installs the node (v1.31.2); selects the pause image kubeadm pulls")
	fs.StringVar(&o.kubeadmConfig, "kubeadm-config", "", "a kubeadm ClusterConfiguration file inside --root (/etc/kubernetes/kubeadm.yaml)")
	fs.StringVar(&o.runtimeEndpoint, "runtime-endpoint", "", "the runtime's CRI socket (unix:///path); when given, what the runtime reports wins over its files")
	fs.StringVar(&o.output, "o", "text", "output format: text or json")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: preflight [--root DIR] [--kubeadm-version V] [--kubeadm-config FILE] [--runtime-endpoint URL] [-o text|json]\n\n"+
			"Checks the node's sandbox image before kubeadm init: prints the images to pre-pull and\n"+
			"each conflict with what to change. Exit 0: ready; 1: a conflict; 2: an error.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.output != "text" && o.output != "json" {
		return o, fmt.Errorf("-o %q: want text or json", o.output)
	}
	return o, nil
}

// run is the program: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "preflight: %v\n", err)
		return exitError
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := check(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "preflight: %v\n", err)
		return exitError
	}
	if o.output == "json" {
		err = writeJSON(stdout, res)
	} else {
		err = writeText(stdout, res)
	}
	if err != nil {
		fmt.Fprintf(stderr, "preflight: %v\n", err)
		return exitError
	}
	if len(res.Conflicts) > 0 {
		return exitConflict
	}
	return exitOK
}

// check resolves the node that o describes.
func check(ctx context.Context, o options) (*resolve.Result, error) {
	if fi, err := os.Stat(o.root); err != nil {
		return nil, fmt.Errorf("--root: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("--root %s: not a directory", o.root)
	}
	if o.kubeadmVersion != "" {
		// Resolve only notes a kubeadm version it does not know; an installer
		// that cannot tell what kubeadm pulls must stop.
		if _, err := resolve.KubeadmPauseImage(o.kubeadmVersion, ""); err != nil {
			return nil, fmt.Errorf("--kubeadm-version: %w", err)
		}
	}
	opts := resolve.Options{
		Root:              resolve.DirFS(o.root),
		KubeadmVersion:    o.kubeadmVersion,
		KubeadmConfigPath: o.kubeadmConfig,
	}
	if o.runtimeEndpoint != "" {
		c, err := cri.Dial(ctx, o.runtimeEndpoint)
		if err != nil {
			return nil, fmt.Errorf("runtime: %w", err)
		}
		defer func() { _ = c.Close() }()
		opts.Live = c
	}
	res, err := resolve.Resolve(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("resolve the sandbox image: %w", err)
	}
	return res, nil
}

// report is the JSON output.
type report struct {
	OK           bool                `json:"ok"` // no conflicts: kubeadm may run
	SandboxImage string              `json:"sandboxImage"`
	Runtime      string              `json:"runtime"`
	Prepull      []string            `json:"prepull"`
	Conflicts    []resolve.Conflict  `json:"conflicts"`
	Notes        []resolve.Note      `json:"notes"`
	Candidates   []resolve.Candidate `json:"candidates"`
}

func writeJSON(w io.Writer, res *resolve.Result) error {
	r := report{
		OK:           len(res.Conflicts) == 0,
		SandboxImage: res.SandboxImage,
		Runtime:      string(res.Runtime),
		Prepull:      nonNil(res.Prepull),
		Conflicts:    nonNil(res.Conflicts),
		Notes:        nonNil(res.Notes),
		Candidates:   nonNil(res.Candidates),
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// nonNil returns s, or an empty slice for nil, so that JSON says [] rather
// than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// writeText prints res for an operator: the sandbox image and where it comes
// from, the pre-pull list, each conflict with its two sides, the notes, and
// a verdict.
func writeText(w io.Writer, res *resolve.Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	img, from := res.SandboxImage, ""
	if img == "" {
		img = "(unknown: no runtime configuration found)"
	}
	// Where the image is set: the file line that states the winner's image
	// (a live report agrees with it), else the winner itself.
	if w := res.Winner; !w.IsZero() {
		at := w
		for _, c := range res.Candidates {
			if c.Role == resolve.RoleRuntimeUses && c.Image == w.Image && c.Path != "" {
				at = c
				break
			}
		}
		from = fmt.Sprintf(" (%s, %s)", at.Source, at.Origin)
	}
	runtime := string(res.Runtime)
	if !res.Runtime.Known() {
		runtime = "(none found)"
	}
	fmt.Fprintf(tw, "runtime\t%s\n", runtime)
	fmt.Fprintf(tw, "sandbox image\t%s%s\n", img, from)
	for i, p := range res.Prepull {
		label := ""
		if i == 0 {
			label = "pre-pull"
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, p)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	for i, c := range res.Conflicts {
		fmt.Fprintf(tw, "\nCONFLICT %d: %s\n", i+1, c.Message)
		for _, side := range []resolve.Candidate{c.A, c.B} {
			if !side.IsZero() {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", side.Source, side.Role, side.Image, side.Origin)
			}
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	if len(res.Notes) > 0 {
		fmt.Fprintln(w)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "note: %s\n", n.Message)
	}
	var err error
	switch n := len(res.Conflicts); n {
	case 0:
		_, err = fmt.Fprintf(w, "\nOK: the node is ready for kubeadm; pre-pull %s\n", strings.Join(res.Prepull, " "))
	default:
		_, err = fmt.Fprintf(w, "\nFAIL: %d conflict(s); fix them before running kubeadm\n", n)
	}
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}
